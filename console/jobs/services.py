"""Switch jobs: the one outcome state machine, starting a switch, and the tasks that resolve it.

`transition` is the only way an outcome changes. Each transition is recorded (the console's
timeline reads it) and writes exactly one `direct_deposit_switch.added` event in the same
transaction. Services flush; the caller commits.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, select

from console.accounts.models import Account
from console.clock.business_days import add_business_days
from console.clock.services import now
from console.core.errors import Conflict, FieldError, ValidationFailed
from console.db.lookup import get_scoped
from console.events.services import record_event
from console.extensions import db
from console.jobs import plans
from console.jobs.models import Job, JobTransition
from console.jobs.plans import ERROR, FAILURE, OUTCOMES, PENDING, PROCESSING, SENT, SUCCESS
from console.jobs.serializers import JOB_COLUMNS, clean_params, job_payload
from console.link_tokens.models import LinkToken
from console.scheduler.models import ScheduledTask
from console.scheduler.services import TaskKind, schedule
from console.workspaces.models import Workspace

__all__ = ["IllegalTransition", "job_payload", "start_switch", "transition"]

EVENT_TYPE = "direct_deposit_switch.added"
# Spec, States and transitions; None is "(job created)". Nothing else is legal.
TRANSITIONS: dict[str | None, frozenset[str]] = {
    None: frozenset({SUCCESS, ERROR, PENDING, PROCESSING, FAILURE}),
    PENDING: frozenset({SUCCESS, ERROR}),
    PROCESSING: frozenset({SENT, ERROR, FAILURE}),
}


class IllegalTransition(Conflict):
    """An outcome change the spec's transition tables do not allow (409 `CONFLICT` if it reaches the API)."""


def can_transition(from_outcome: str | None, to_outcome: str) -> bool:
    """Whether the spec allows `from_outcome` -> `to_outcome` (None: the job is being created)."""
    return to_outcome in TRANSITIONS.get(from_outcome, frozenset())


def transition(job: Job, to_outcome: str, *, at: datetime, reason: str = "") -> JobTransition:
    """Move the job to `to_outcome` at `at` (workspace clock), recording it and its one event."""
    from_outcome = job.outcome
    if not can_transition(from_outcome, to_outcome):
        raise IllegalTransition(
            f"A job cannot go from {from_outcome or '(created)'} to {to_outcome}.",
        )
    job.outcome = to_outcome
    job.timestamp = at
    db.session.add(job)
    db.session.flush()
    event = record_event(
        workspace_id=job.workspace_id,
        mode=job.mode,
        type=EVENT_TYPE,
        payload=job_payload(job),
        at=at,
        link_token_id=job.link_token_id,
        account_id=job.account_id,
        end_user_id=job.end_user_id,
        job_id=job.id,
        via_platform_matching=job.via_platform_matching,
    )
    step = JobTransition(
        sequence=len(job.transitions) + 1,
        from_outcome=from_outcome,
        to_outcome=to_outcome,
        at=at,
        reason=reason,
        event_id=event.id,
    )
    job.transitions.append(step)
    db.session.flush()
    return step


def start_switch(
    *,
    link_token: LinkToken,
    account: Account,
    params: dict[str, Any],
    scenario: str,
    via_platform_matching: bool = False,
) -> Job:
    """Create the switch job in its scenario's first outcome and schedule what follows."""
    plan = plans.get_plan(scenario, link_token.mode)
    if (account.workspace_id, account.mode) != (link_token.workspace_id, link_token.mode):
        raise ValueError("the account and the Link token belong to different workspaces or modes")
    workspace = db.session.get(Workspace, link_token.workspace_id)
    at = now(workspace)
    job = Job(
        workspace_id=link_token.workspace_id,
        mode=link_token.mode,
        account_id=account.id,
        link_token_id=link_token.id,
        end_user_id=link_token.end_user_id or account.end_user_id,
        name="direct_deposit_switch",
        params=clean_params(params),
        scenario=plan.name,
        timestamp=at,
        first_attempt_at=at,
        via_platform_matching=via_platform_matching,
    )
    transition(job, plan.first_outcome, at=at, reason=plan.first_reason)
    if plan.first_outcome == PENDING:
        due = plans.next_retry_at(plan, at, at)
        schedule(workspace, plans.RETRY_KIND, due, {"job_id": str(job.id), "attempt": 1})
    elif plan.first_outcome == PROCESSING:
        due = add_business_days(at, plans.FEDERAL_REVIEW_BUSINESS_DAYS)
        schedule(workspace, plans.FEDERAL_REVIEW_KIND, due, {"job_id": str(job.id)})
    return job


def _locked_job(task: ScheduledTask) -> Job | None:
    """The task's job, row-locked on PostgreSQL so no other writer changes it meanwhile."""
    query = select(Job).where(Job.id == uuid.UUID(task.payload["job_id"])).with_for_update()
    return db.session.scalars(query.execution_options(populate_existing=True)).first()


def run_retry(task: ScheduledTask, workspace: Workspace) -> dict[str, Any]:
    """Retry a pending job: resolve it, or record the attempt and schedule the next one."""
    job = _locked_job(task)
    attempt = int(task.payload.get("attempt", 1))
    if job is None or job.outcome != PENDING:
        return {"summary": f"Retry {attempt} skipped: the job is no longer pending", "attempt": attempt}
    plan = plans.PLANS[job.scenario]
    # The attempt happens at its due moment, so an advance that fires a chain records each step at its own time.
    at = task.due_at
    decision = plans.retry_decision(plan, at, job.first_attempt_at)
    if decision is not None:
        outcome, reason = decision
        transition(job, outcome, at=at, reason=reason)
        return {
            "summary": f"Job {job.id} retried the switch (attempt {attempt}): pending → {outcome} ({reason})",
            "attempt": attempt,
            "job_id": str(job.id),
        }
    due = plans.next_retry_at(plan, at, job.first_attempt_at)
    schedule(workspace, plans.RETRY_KIND, due, {"job_id": str(job.id), "attempt": attempt + 1})
    return {
        "summary": f"Job {job.id} retried the switch (attempt {attempt}): could not complete, still pending",
        "attempt": attempt,
        "job_id": str(job.id),
    }


def describe_retry(task: ScheduledTask) -> str:
    job = db.session.get(Job, uuid.UUID(task.payload["job_id"]))
    attempt = int(task.payload.get("attempt", 1))
    if job is None or job.outcome != PENDING:
        return f"Retry {attempt} of a job that is no longer pending (does nothing)"
    decision = plans.retry_decision(plans.PLANS[job.scenario], task.due_at, job.first_attempt_at)
    if decision is None:
        return f"Job {job.id} retries the switch (attempt {attempt}): stays pending, retries again later"
    return f"Job {job.id} retries the switch (attempt {attempt}): pending → {decision[0]}"


def run_federal_review(task: ScheduledTask, workspace: Workspace) -> dict[str, Any]:
    """Finish a federal benefits review: the switch is sent to the agency, or fails."""
    job = _locked_job(task)
    if job is None or job.outcome != PROCESSING:
        return {"summary": "Agency review skipped: the job is no longer processing"}
    outcome = plans.PLANS[job.scenario].resolves_to
    if outcome == SENT:
        # The agency accepted a full switch; the second event says so (spec, federal benefits).
        job.params = {**job.params, "action": "full_switch"}
    transition(job, outcome, at=task.due_at, reason=plans.REVIEW_REASONS[outcome])
    return {"summary": f"Job {job.id} agency review ended: processing → {outcome}", "job_id": str(job.id)}


def describe_federal_review(task: ScheduledTask) -> str:
    job = db.session.get(Job, uuid.UUID(task.payload["job_id"]))
    if job is None or job.outcome != PROCESSING:
        return "Agency review of a job that is no longer processing (does nothing)"
    outcome = plans.PLANS[job.scenario].resolves_to
    return f"Job {job.id} agency review ends: processing → {outcome}"


def get_job(workspace_id: uuid.UUID, mode: str, job_id: str) -> Job:
    """One job of a workspace and mode (NotFound for anything else, including malformed ids)."""
    return get_scoped(Job, workspace_id, mode, job_id, "job")


JOB_FILTERS = ("link_token_id", "account_id", "end_user_id", "outcome")


def jobs_query(workspace_id: uuid.UUID, mode: str, filters: dict[str, str]) -> tuple[Select, dict[str, Any]]:
    """The job list's SELECT (the columns of the API's Job object) for these filters, validated first,
    and its parameters: the statement is built once per combination of filters and reused."""
    errors: list[FieldError] = []
    values: dict[str, Any] = {}
    for name in ("link_token_id", "account_id"):
        if (value := filters.get(name)) is not None:
            try:
                values[name] = uuid.UUID(value)
            except ValueError:
                errors.append(FieldError(name, "must be a UUID"))
    if (value := filters.get("end_user_id")) is not None:
        if not value or len(value) > 255:
            errors.append(FieldError("end_user_id", "must be 1 to 255 characters"))
        values["end_user_id"] = value
    if (value := filters.get("outcome")) is not None:
        if value not in OUTCOMES:
            errors.append(FieldError("outcome", f"must be one of {', '.join(OUTCOMES)}"))
        values["outcome"] = value
    if errors:
        raise ValidationFailed(errors)
    return _list_statement(tuple(values)), {"workspace_id": workspace_id, "mode": mode, **values}


@functools.cache
def _list_statement(filter_names: tuple[str, ...]) -> Select:
    """The job list's SELECT for one combination of filters, with their values left as parameters.

    Built once per combination: composing a statement costs more than running it. Table columns, not
    ORM attributes, so it runs as plain Core (see `console.api.pagination`, `columns=True`).
    """
    table = Job.__table__
    query = select(*JOB_COLUMNS, table.c.created_at).where(
        table.c.workspace_id == bindparam("workspace_id"), table.c.mode == bindparam("mode")
    )
    for name in filter_names:
        query = query.where(table.c[name] == bindparam(name))
    return query


def timeline(job: Job) -> list[dict[str, Any]]:
    """The job's transitions, oldest first, for the console's timeline."""
    return [
        {"sequence": t.sequence, "from": t.from_outcome, "to": t.to_outcome, "at": t.at, "reason": t.reason}
        for t in job.transitions
    ]


# The scheduled task kinds this module runs (registered by create_app: console.scheduler.services).
TASKS = (
    TaskKind(plans.RETRY_KIND, run_retry, describe_retry),
    TaskKind(plans.FEDERAL_REVIEW_KIND, run_federal_review, describe_federal_review),
)
