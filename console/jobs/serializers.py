"""The Job object as the API shows it and as switch events carry it."""

from __future__ import annotations

from typing import Any

from console.core.timeutil import isoformat
from console.jobs.models import Job

# What `serialize_job` reads: the job list selects only these (rows, not ORM objects). Table columns,
# not ORM attributes: a Core select of them is cheaper to run (no ORM adaptation of each result).
JOB_COLUMNS = tuple(
    Job.__table__.c[name]
    for name in ("id", "account_id", "link_token_id", "name", "timestamp", "outcome", "params")
)


def clean_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of `params` following the spec: no allocation type or value when `action` is absent.

    Only the levels it changes are copied (every job in a list goes through here); deeper values are
    shared with `params`, which nothing changes in place.
    """
    cleaned = dict(params or {})
    allocation = cleaned.get("allocation")
    if "action" not in cleaned and isinstance(allocation, dict):
        cleaned["allocation"] = {k: v for k, v in allocation.items() if k not in ("type", "value")}
    return cleaned


def serialize_job(job: Job) -> dict[str, Any]:
    """The spec's Job object (the job list omits `end_user_id`); `job` may be a row of JOB_COLUMNS."""
    return {
        "id": str(job.id),
        "account_id": str(job.account_id),
        "link_token_id": str(job.link_token_id),
        "name": job.name,
        "timestamp": isoformat(job.timestamp),
        "outcome": job.outcome,
        "params": clean_params(job.params),
    }


def job_payload(job: Job) -> dict[str, Any]:
    """The `direct_deposit_switch.added` payload: the Job object plus `end_user_id`."""
    payload = serialize_job(job)
    payload["end_user_id"] = job.end_user_id
    return payload
