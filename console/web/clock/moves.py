"""The console's clock moves: what a form asks for, the API call that does it, where it would land.

A move is one of the preset buttons, an amount of a unit, a jump to a moment, or "the next scheduled
item". Before moving, the console works out the moment the clock would reach, so it can list the open
Link tokens that would expire on the way (`console.link.expiry.open_tokens_expiring_by`) and ask first.

The clock is the workspace's (one offset): a move made from a Link token's (or an account's) timeline runs
everything in the workspace that is due by then, not only that token's. So on a timeline the console says
so, and works with a `Scope` (what that timeline owns: its token, its jobs, their events): "next" there is
the timeline's own next item (`next_own`, a jump to it), the controls count the items of others due, and
the list of what fired marks what ran elsewhere in the workspace.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import g
from sqlalchemy import select

from console.clock import moves
from console.clock import services as clock
from console.clock.business_days import add_business_days
from console.core.timeutil import parse_datetime
from console.extensions import db
from console.scheduler import agenda
from console.scheduler.models import ScheduledTask
from console.web.shared.apiclient import response_json
from console.workspaces.models import Workspace

# The preset buttons: key -> (label, body of POST /v1/sandbox/clock/advance).
PRESETS = {
    "hour": ("+1 hour", {"hours": 1}),
    "business_day": ("+1 business day", {"business_days": 1}),
    "day": ("+24 hours", {"hours": 24}),
    "month": ("+30 days", {"days": 30}),
}
UNIT_LABELS = {"seconds": "seconds", "hours": "hours", "days": "days", "business_days": "business days"}
# Form fields a move carries (repeated in the confirmation form).
FIELDS = ("by", "amount", "unit", "to")


@dataclass(frozen=True)
class Scope:
    """What one timeline owns, by id: its Link token(s), its jobs and the events they emitted."""

    noun: str  # "this Link token" / "this account", for the page's sentences
    link_token_ids: frozenset[str] = frozenset()
    job_ids: frozenset[str] = frozenset()
    event_ids: frozenset[str] = frozenset()

    def owns(self, payload: Mapping[str, Any] | None) -> bool:
        """Whether a scheduled item (by its payload) belongs to this timeline."""
        payload = payload or {}
        return (
            str(payload.get("link_token_id", "")) in self.link_token_ids
            or str(payload.get("job_id", "")) in self.job_ids
            or str(payload.get("event_id", "")) in self.event_ids
        )


# How many of the tasks a move ran its result box lists (a day of hourly retries for many jobs is thousands:
# every one as a list item made the page megabytes long); the count says how many ran in all.
FIRED_SHOWN = 50
# How many of the open Link tokens a move would expire its confirmation lists (a CI run may leave hundreds).
CONFIRM_SHOWN = 20

# How many upcoming items the console looks through for a timeline's own and the others' (a sandbox
# workspace has few pending items; past this the counts say "at least").
SCOPE_LOOKAHEAD = 200


def _upcoming(workspace: Workspace) -> list[agenda.Item]:
    if not workspace.id:
        return []
    return agenda.upcoming(workspace, limit=SCOPE_LOOKAHEAD, after=clock.now(workspace))


def _ceil_second(moment: datetime) -> datetime:
    """The moment rounded up to a whole second: a jump (whole seconds) to it must not stop short of it."""
    if moment.microsecond:
        return moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment


@dataclass(frozen=True)
class Move:
    """A requested clock move: the API call, and where the clock would land (None when unknown)."""

    path: str
    body: dict[str, Any]
    target: datetime | None
    form: dict[str, str] = field(default_factory=dict)  # the fields to resend when confirmed


class FormError(ValueError):
    """A move the form cannot express; `field` names the input to show it on."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


def _target_of(workspace: Workspace, body: dict[str, Any]) -> datetime | None:
    [(unit, amount)] = body.items()
    current = clock.now(workspace)
    try:
        if unit == "business_days":
            return add_business_days(current, int(amount)) if 0 < amount <= moves.MAX_ADVANCE.days else None
        return current + timedelta(seconds=amount * moves.SECONDS_PER[unit])
    except (OverflowError, ValueError):
        return None


def parse(workspace: Workspace, form: Mapping[str, str], scope: Scope | None = None) -> Move:
    """The move a clock form asks for (FormError for what the form itself can tell is wrong).

    `next_own` (a timeline's "To this token's next item") needs the timeline's `scope`: a jump to the moment
    its own next item is due."""
    by = form.get("by", "")
    kept = {name: form.get(name, "") for name in FIELDS}
    if by in PRESETS:
        body = dict(PRESETS[by][1])
        return Move("/sandbox/clock/advance", body, _target_of(workspace, body), kept)
    if by == "amount":
        unit = form.get("unit", "")
        if unit not in UNIT_LABELS:
            raise FormError("unit", f"must be one of {', '.join(UNIT_LABELS.values())}")
        text = (form.get("amount") or "").strip()
        try:
            amount: float = int(text) if unit == "business_days" else float(text)
        except ValueError:
            message = "must be a whole number" if unit == "business_days" else "must be a number"
            raise FormError("amount", message) from None
        if amount != amount:  # "nan" parses as a float
            raise FormError("amount", "must be a number")
        if not amount > 0:
            raise FormError("amount", "must be more than 0")
        if amount == float("inf"):  # "1e309", "inf": what the API would refuse as too far
            raise FormError("amount", f"moves the clock more than {moves.MAX_ADVANCE.days} days")
        body = {unit: amount}
        return Move("/sandbox/clock/advance", body, _target_of(workspace, body), kept)
    if by == "jump":
        text = (form.get("to") or "").strip()
        try:
            moment = parse_datetime(text)
        except (ValueError, OverflowError):
            raise FormError("to", "must be a date and time, e.g. 2026-11-24T14:00") from None
        # isoformat, not strftime: "%Y" does not pad years before 1000, and the API refuses "1-01-01".
        iso = moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
        return Move("/sandbox/clock/jump", {"to": iso}, moment, kept)
    if by == "next":
        target = agenda.next_due_at(workspace, after=clock.now(workspace))
        return Move("/sandbox/clock/advance_to_next", {}, target, kept)
    if by == "next_own" and scope is not None:
        own = next((item for item in _upcoming(workspace) if scope.owns(item.payload)), None)
        if own is None:
            raise FormError("amount", f"nothing of {scope.noun} is scheduled")
        moment = _ceil_second(own.due_at.astimezone(UTC) if own.due_at.tzinfo else own.due_at)
        iso = moment.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
        return Move("/sandbox/clock/jump", {"to": iso}, moment, kept)
    raise FormError("by", "is not a clock move")


def _mark_elsewhere(fired: list[dict], scope: Scope) -> list[dict]:
    """Each fired task with `elsewhere`: True when it belonged to another token of the workspace."""
    ids = []
    for f in fired:
        try:
            ids.append(uuid.UUID(str(f.get("task_id"))))
        except ValueError:
            continue
    payloads = (
        dict(
            db.session.execute(
                select(ScheduledTask.id, ScheduledTask.payload).where(ScheduledTask.id.in_(ids))
            ).all()
        )
        if ids
        else {}
    )
    by_id = {str(k): v for k, v in payloads.items()}
    return [{**f, "elsewhere": not scope.owns(by_id.get(str(f.get("task_id"))))} for f in fired]


def move_context(advance=None, confirm=None, form_error=None, form=None, scope: Scope | None = None) -> dict:
    """What the clock controls and their result box need (see _clock_controls.html, _fired.html)."""
    answer = (response_json(advance.row) or {}) if advance is not None else {}
    fired = (answer.get("data") or {}).get("fired", []) if advance is not None else []
    if scope is not None and fired:
        fired = _mark_elsewhere(fired, scope)
    fired_shown = fired[:FIRED_SHOWN]
    upcoming = _upcoming(g.console_workspace) if scope is not None else []
    api_error = (answer.get("error") or {}).get("message") if advance is not None else None
    # Errors beside the input they are about: the form's own, or the fields the API named.
    form_errors = {form_error.field: str(form_error)} if form_error is not None else {}
    for bad in (answer.get("error") or {}).get("fields") or []:
        form_errors["to" if bad.get("name") == "to" else "amount"] = bad.get("message", "")
    return {
        "presets": PRESETS,
        "units": UNIT_LABELS,
        "advance": advance,
        "fired": fired,
        "fired_shown": fired_shown,
        "fired_more": len(fired) - len(fired_shown),
        "api_error": api_error,
        "confirm": confirm,
        "confirm_shown": CONFIRM_SHOWN,
        # The clock is the whole workspace's: the modes other than sandbox whose tokens the move would expire.
        "confirm_other_modes": list(
            dict.fromkeys(t.link_token.mode for t in confirm["tokens"] if t.link_token.mode != "sandbox")
        )
        if confirm
        else [],
        "form_errors": form_errors,
        "form": form or {},
        "next_item": _next_item()
        if scope is None
        else next((i for i in upcoming if scope.owns(i.payload)), None),
        "scope": scope,
        "others_scheduled": sum(1 for i in upcoming if not scope.owns(i.payload)) if scope is not None else 0,
        # The count looked only this far: a full look means there may be more.
        "others_at_least": len(upcoming) >= SCOPE_LOOKAHEAD,
        "fired_elsewhere": sum(1 for f in fired if f.get("elsewhere")),
        "jump_default": (clock.now(g.console_workspace) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
        "advanced_to": (answer.get("data") or {}).get("advanced_to") if advance is not None else None,
    }


def _next_item() -> agenda.Item | None:
    workspace = g.console_workspace
    if not workspace.id:
        return None
    return next(iter(agenda.upcoming(workspace, limit=1, after=clock.now(workspace))), None)
