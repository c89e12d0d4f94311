"""The Job object as the API shows it and as switch events carry it."""

from __future__ import annotations

import copy
from typing import Any

from console.core.timeutil import isoformat
from console.jobs.models import Job


def clean_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of `params` following the spec: no allocation type or value when `action` is absent."""
    cleaned = copy.deepcopy(params or {})
    allocation = cleaned.get("allocation")
    if "action" not in cleaned and isinstance(allocation, dict):
        allocation.pop("type", None)
        allocation.pop("value", None)
    return cleaned


def serialize_job(job: Job) -> dict[str, Any]:
    """The spec's Job object (the job list omits `end_user_id`)."""
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
