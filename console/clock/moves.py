"""Moving a workspace clock: advancing it, jumping to a moment or to the next scheduled item.

Each move rewrites when the workspace's pending work runs (the rows of SCHEDULE_TABLES) and runs what
became due, in due order, with the scheduler.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update

from console.clock.business_days import add_business_days
from console.clock.services import now, real_time_of
from console.core.errors import Conflict, FieldError, ValidationFailed
from console.core.timeutil import utcnow
from console.extensions import db
from console.scheduler import agenda
from console.scheduler.models import ScheduledTask
from console.scheduler.services import fired_since, run_due
from console.webhooks.models import WebhookDelivery
from console.workspaces.models import Workspace

# Models holding work due on a workspace clock: each has workspace_id, due_at, run_after and status.
# Moving a clock rewrites run_after (= due_at - offset) of their pending rows, so the worker, which polls
# run_after against real time, sees the new due moments.
SCHEDULE_TABLES = (ScheduledTask, WebhookDelivery)
# Longest single advance: enough for a 30-day webhook pause and a year of retries, small enough to stay quick.
MAX_ADVANCE = timedelta(days=400)
# Most tasks one advance runs itself; anything beyond is left to the worker.
ADVANCE_TASK_LIMIT = 5000
# How far ahead of real time a workspace clock may run: a century covers any demo or test and keeps every moment
# on the clock far inside datetime's range. Without it, ~7,300 advances of 400 days reached year 9999, and from
# then on every clock read of the workspace (its pages, its API calls, its moves) raised OverflowError: a 500.
MAX_OFFSET = timedelta(days=36525)
MAX_OFFSET_YEARS = 100


def _reschedule(workspace: Workspace) -> None:
    """Rewrite run_after (= due_at - offset) of the workspace's pending rows in every schedule table."""
    for model in SCHEDULE_TABLES:
        rows = db.session.scalars(
            select(model).where(model.workspace_id == workspace.id, model.status == "pending")
        )
        for row in rows:
            row.run_after = real_time_of(workspace, row.due_at)
    db.session.flush()


def _refuse_past_limit(workspace: Workspace, seconds: float, field: str | None) -> None:
    """A field error on `field` (a Conflict when the move names none) if it takes the clock past MAX_OFFSET."""
    if (workspace.clock_offset_seconds or 0.0) + seconds <= MAX_OFFSET.total_seconds():
        return
    message = (
        f"moves the clock more than {MAX_OFFSET_YEARS} years ahead of real time, the most a workspace clock "
        "may run ahead (Reset the workspace to start over)"
    )
    if field is None:
        raise Conflict(f"This {message}.", code="CLOCK_LIMIT_REACHED")
    raise ValidationFailed([FieldError(field, message)])


def advance(workspace: Workspace, *, seconds: float, field: str | None = None) -> list[dict]:
    """Move the workspace clock forward, run everything that became due in due order; commits. A move past
    MAX_OFFSET is refused on `field` (see `_refuse_past_limit`)."""
    if not 0 < seconds <= MAX_ADVANCE.total_seconds():
        raise ValueError(f"an advance must be more than 0 and at most {MAX_ADVANCE.days} days")
    _refuse_past_limit(workspace, seconds, field)
    started = utcnow()
    # One UPDATE, so concurrent advances add up instead of overwriting each other (it also locks the row).
    db.session.execute(
        update(Workspace)
        .where(Workspace.id == workspace.id)
        .values(clock_offset_seconds=Workspace.clock_offset_seconds + seconds)
        .execution_options(synchronize_session=False)
    )
    db.session.refresh(workspace)
    # Twice: a worker mid-task during the first pass may have scheduled follow-ups with the old offset.
    for _ in range(2):
        _reschedule(workspace)
        db.session.commit()
        run_due(limit=ADVANCE_TASK_LIMIT, workspace_id=workspace.id, wait_for_locked=True)
    # Report from the database, so tasks a background worker ran during the advance are listed too.
    return fired_since(workspace.id, started)


def advance_business_days(workspace: Workspace, n: int) -> list[dict]:
    """Advance to the same time of day n US federal business days later (see business_days)."""
    current = now(workspace)
    return advance(
        workspace, seconds=(add_business_days(current, n) - current).total_seconds(), field="business_days"
    )


UNITS = ("seconds", "hours", "days", "business_days")
SECONDS_PER = {"seconds": 1, "hours": 3600, "days": 86400}


def advance_by(workspace: Workspace, unit: str, amount: float) -> list[dict]:
    """Advance by `amount` of `unit` (one of UNITS), refusing more than MAX_ADVANCE (field error)."""
    too_far = ValidationFailed([FieldError(unit, f"moves the clock more than {MAX_ADVANCE.days} days")])
    limit = MAX_ADVANCE.total_seconds()
    if unit == "business_days":
        # Checked before counting so a huge number cannot make the calendar walk take long.
        if amount > MAX_ADVANCE.days:
            raise too_far
        current = now(workspace)
        seconds = (add_business_days(current, int(amount)) - current).total_seconds()
    else:
        seconds = amount * SECONDS_PER[unit]
    if seconds > limit:
        raise too_far
    return advance(workspace, seconds=seconds, field=unit)


def jump_to(workspace: Workspace, moment: datetime) -> list[dict]:
    """Move the clock to `moment` (later than its now, at most MAX_ADVANCE ahead); field error `to` otherwise."""
    current = now(workspace)
    if moment <= current:
        raise ValidationFailed(
            [FieldError("to", f"must be later than the workspace clock ({current:%Y-%m-%d %H:%M:%S} UTC)")]
        )
    if moment - current > MAX_ADVANCE:
        raise ValidationFailed([FieldError("to", f"moves the clock more than {MAX_ADVANCE.days} days")])
    return advance(workspace, seconds=(moment - current).total_seconds(), field="to")


def advance_to_next(workspace: Workspace) -> tuple[Any, list[dict]]:
    """Move the clock to the soonest item scheduled after its now, and run what is due then (that item,
    and any due at the same moment); returns (the item, what fired).

    Items already due are the worker's (a delivery being sent), so they are not "next". Conflict
    NOTHING_SCHEDULED when nothing is scheduled later than now.
    """
    upcoming = agenda.upcoming(workspace, limit=1, after=now(workspace))
    if not upcoming:
        raise Conflict("Nothing is scheduled later than the workspace clock.", code="NOTHING_SCHEDULED")
    item = upcoming[0]
    seconds = (item.due_at - now(workspace)).total_seconds()
    if seconds > MAX_ADVANCE.total_seconds():
        raise Conflict(
            f"The next scheduled item is more than {MAX_ADVANCE.days} days away; advance in steps.",
            code="NEXT_ITEM_TOO_FAR",
        )
    # A hair's breadth could pass between reading the clock and moving it: never move by zero.
    return item, advance(workspace, seconds=max(seconds, 1e-6))
