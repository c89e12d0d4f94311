"""Job timelines per Link token and per account: transitions on the workspace clock, their events,
delivery status, and what is scheduled next."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.orm import selectinload

from console.accounts.models import Account
from console.clock.services import now as clock_now
from console.core.errors import NotFound
from console.db.lookup import get_scoped
from console.events.models import Event
from console.extensions import db
from console.jobs.models import Job, JobTransition
from console.link_tokens.models import LinkToken
from console.link_tokens.services import has_expired
from console.scheduler.models import PENDING as TASK_PENDING
from console.scheduler.models import ScheduledTask
from console.web.events import deliveries
from console.web.shared import keyset
from console.workspaces.models import Workspace

# How a scheduled task reads on the timeline (kinds from console.jobs.plans).
NEXT_STEP_LABELS = {"job.retry": "Next retry due", "job.federal_review": "Agency review due"}


@dataclass(frozen=True)
class Entry:
    """One transition of a job, with the event it emitted and that event's delivery status."""

    transition: JobTransition
    event: Event | None
    delivery_status: str | None


@dataclass(frozen=True)
class NextStep:
    label: str
    due_at: datetime
    seconds_left: float


@dataclass(frozen=True)
class JobTimeline:
    job: Job
    entries: list[Entry]
    next_step: NextStep | None


@dataclass(frozen=True)
class Timeline:
    kind: str  # "link_token" | "account"
    subject_id: uuid.UUID
    link_token: LinkToken | None
    accounts: list[Account]
    account_events: list[Event]
    jobs: list[JobTimeline]
    now: datetime

    @property
    def link_token_expired(self) -> bool:
        """Its Link token no longer opens Link (False on an account's timeline)."""
        return self.link_token is not None and has_expired(self.link_token, self.now)


def _next_steps(workspace: Workspace, job_ids: list[uuid.UUID]) -> dict[str, ScheduledTask]:
    """The earliest pending task per job id.

    Only these jobs' tasks are read: a workspace may have thousands pending (an open Link token's expiry
    each, a day of hourly retries), and reading them all made every timeline render load every one."""
    wanted = {str(j) for j in job_ids}
    if not wanted:
        return {}
    tasks = db.session.scalars(
        select(ScheduledTask)
        .where(
            ScheduledTask.workspace_id == workspace.id,
            ScheduledTask.status == TASK_PENDING,
            ScheduledTask.kind.in_(tuple(NEXT_STEP_LABELS)),
            ScheduledTask.payload["job_id"].as_string().in_(sorted(wanted)),
        )
        .order_by(ScheduledTask.due_at)
    )
    found: dict[str, ScheduledTask] = {}
    for task in tasks:
        job_id = str((task.payload or {}).get("job_id", ""))
        if job_id in wanted and job_id not in found:
            found[job_id] = task
    return found


def _job_timelines(workspace: Workspace, jobs: list[Job], now: datetime) -> list[JobTimeline]:
    transitions = [t for job in jobs for t in job.transitions]
    event_ids = [t.event_id for t in transitions if t.event_id]
    events = (
        {e.id: e for e in db.session.scalars(select(Event).where(Event.id.in_(event_ids)))}
        if event_ids
        else {}
    )
    statuses = deliveries.status_by_event(event_ids)
    tasks = _next_steps(workspace, [j.id for j in jobs])
    result = []
    for job in jobs:
        entries = [
            Entry(t, events.get(t.event_id), statuses.get(t.event_id) if t.event_id else None)
            for t in job.transitions
        ]
        task = tasks.get(str(job.id))
        next_step = None
        if task is not None:
            label = NEXT_STEP_LABELS.get(task.kind, task.kind)
            next_step = NextStep(label, task.due_at, (task.due_at - now).total_seconds())
        result.append(JobTimeline(job, entries, next_step))
    return result


def _other_events(workspace: Workspace, mode: str, column, value: uuid.UUID) -> list[Event]:
    """Events other than job transitions (account.added, employment.added...) for one token or account.

    Sorted here, not in SQL: an ORDER BY would tempt SQLite into the (created_at) index and a scan,
    where the equality index finds the few rows directly.
    """
    rows = db.session.scalars(
        select(Event).where(
            Event.workspace_id == workspace.id,
            Event.mode == mode,
            column == value,
            Event.job_id.is_(None),
        )
    )
    return sorted(rows, key=lambda e: (e.created_at, e.id))


def for_link_token(workspace: Workspace, mode: str, link_token_id: str) -> Timeline | None:
    """Everything that happened through one Link token (None if it is not this workspace's)."""
    try:
        link_token = get_scoped(LinkToken, workspace.id, mode, link_token_id, "Link token")
    except NotFound:
        return None
    jobs = list(
        db.session.scalars(
            select(Job)
            .where(Job.workspace_id == workspace.id, Job.mode == mode, Job.link_token_id == link_token.id)
            .options(selectinload(Job.transitions))
            .order_by(Job.created_at, Job.id)
        )
    )
    account_ids = {j.account_id for j in jobs}
    if link_token.account_id:
        account_ids.add(link_token.account_id)
    accounts = list(
        db.session.scalars(
            select(Account)
            .where(
                Account.workspace_id == workspace.id,
                Account.mode == mode,
                or_(Account.link_token_id == link_token.id, Account.id.in_(account_ids)),
            )
            .order_by(Account.created_at)
        )
    )
    now = clock_now(workspace)
    events = _other_events(workspace, mode, Event.link_token_id, link_token.id)
    return Timeline(
        "link_token", link_token.id, link_token, accounts, events, _job_timelines(workspace, jobs, now), now
    )


def workspace_jobs(workspace: Workspace, mode: str, limit: int = 4) -> list[JobTimeline]:
    """The newest `limit` jobs of the workspace (oldest first), with their steps: the stage's panel, where one
    run holds every customer's switch (a story with two customers shows both, not only the newest token's)."""
    newest = list(
        db.session.scalars(
            select(Job)
            .where(Job.workspace_id == workspace.id, Job.mode == mode)
            .options(selectinload(Job.transitions))
            .order_by(Job.created_at.desc(), Job.id.desc())
            .limit(limit)
        )
    )
    return _job_timelines(workspace, list(reversed(newest)), clock_now(workspace))


def for_account(workspace: Workspace, mode: str, account_id: str) -> Timeline | None:
    """Every job of one account, across the Link tokens that used it (on-demand updates included)."""
    try:
        account = get_scoped(Account, workspace.id, mode, account_id, "account")
    except NotFound:
        return None
    jobs = list(
        db.session.scalars(
            select(Job)
            .where(Job.workspace_id == workspace.id, Job.mode == mode, Job.account_id == account.id)
            .options(selectinload(Job.transitions))
            .order_by(Job.created_at, Job.id)
        )
    )
    now = clock_now(workspace)
    events = _other_events(workspace, mode, Event.account_id, account.id)
    return Timeline("account", account.id, None, [account], events, _job_timelines(workspace, jobs, now), now)


@dataclass(frozen=True)
class TokenRow:
    link_token: LinkToken
    jobs: list[Job]
    expired: bool  # on the workspace clock: Link no longer opens with it


def recent_link_tokens(
    workspace: Workspace, mode: str, cursor: str | None = None
) -> tuple[list[TokenRow], str | None]:
    """Link tokens newest first, each with its jobs, for the timeline index."""
    query = select(LinkToken).where(LinkToken.workspace_id == workspace.id, LinkToken.mode == mode)
    found = keyset.newest_first(query, (LinkToken.created_at, LinkToken.id), cursor=cursor, limit=20)
    ids = [t.id for t in found.rows]
    jobs: dict[uuid.UUID, list[Job]] = {i: [] for i in ids}
    if ids:
        for job in db.session.scalars(
            select(Job)
            .where(Job.workspace_id == workspace.id, Job.mode == mode, Job.link_token_id.in_(ids))
            .order_by(Job.created_at)
        ):
            jobs[job.link_token_id].append(job)
    now = clock_now(workspace)
    return [TokenRow(t, jobs[t.id], has_expired(t, now)) for t in found.rows], found.next_cursor
