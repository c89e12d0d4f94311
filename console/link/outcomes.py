"""What the Link flow produces: the account at login, the allocation chosen, and the switch job.

Kept apart from the state machine so `flow.py` reads as screens and transitions only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import select

from console.accounts.models import Account
from console.accounts.services import create_account
from console.extensions import db
from console.jobs.models import Job
from console.jobs.serializers import serialize_job
from console.jobs.services import start_switch
from console.link.models import LinkSession
from console.link_tokens.models import LinkToken
from console.link_tokens.validation import MAX_AMOUNT_CENTS
from console.world import allocations
from console.world.models import BENEFITS, PAYROLL, Platform

FULL, AMOUNT, PERCENT = "full", "amount", "percent"


class FlowState(Protocol):
    """What the outcomes read of a Link flow (`console.link.flow.Flow` is the one there is).

    Declared here so that the flow imports the outcomes and nothing imports back.
    """

    token: LinkToken
    row: LinkSession
    at: datetime  # the workspace clock's time of this request

    @property
    def platform(self) -> Platform | None: ...

    @property
    def sandbox(self) -> bool: ...


def login_account(flow: FlowState) -> Account:
    """The account a completed login stands for: the token's own for an update, else a new one."""
    row, token = flow.row, flow.token
    if token.account_id is not None:
        account = db.session.get(Account, token.account_id)
        assert account is not None
        return account
    platform = flow.platform
    assert platform is not None
    return create_account(
        link_token=token,
        platform=platform,
        at=flow.at,
        employer_id=row.employer_id,
        person_id=row.person_id,
        employment_id=row.employment_id,
        sandbox_username=row.sandbox_username,
        via_platform_matching=row.via_platform_matching,
    )


def _int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"Enter {what}.")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"Enter {what}.") from None
    if not low <= number <= high:
        raise ValueError(f"Enter {what}.")
    return number


def clean_allocation(flow: FlowState, kind: str, value: Any, target_index: Any) -> dict[str, Any]:
    """The person's choice, checked; a pre-configured amount or disabled splitting overrides it."""
    targets = flow.token.targets
    index = _int(
        target_index if target_index not in (None, "") else 0, "which account to use", 0, len(targets) - 1
    )
    preset = flow.token.preconfigured_allocation
    if preset:
        return {"type": preset["type"], "value": preset["value"], "target_index": index}
    if flow.token.disable_direct_deposit_splitting or kind == FULL:
        return {"type": FULL, "value": None, "target_index": index}
    if kind == AMOUNT:
        cents = _int(value, f"an amount between $0.01 and ${MAX_AMOUNT_CENTS // 100:,}", 1, MAX_AMOUNT_CENTS)
        return {"type": AMOUNT, "value": cents, "target_index": index}
    if kind == PERCENT:
        return {
            "type": PERCENT,
            "value": _int(value, "a percentage from 1 to 100", 1, 100),
            "target_index": index,
        }
    raise ValueError("Choose how much of your paycheck to deposit.")


def target(token: LinkToken, allocation: dict[str, Any] | None) -> dict[str, Any]:
    """The token's target account the allocation points at (the first for federal benefits)."""
    index = (allocation or {}).get("target_index") or 0
    return token.targets[index if index < len(token.targets) else 0]


def job_params(flow: FlowState) -> dict[str, Any]:
    """The spec's `params`; partner platforms report neither the action nor the amount."""
    platform = flow.platform
    assert platform is not None
    allocation = flow.row.allocation or {"type": FULL}
    target_part = {"account_type": target(flow.token, allocation)["type"]}
    if platform.is_partner:
        return {"allocation": {"target": target_part}}
    if allocation["type"] == FULL:
        return {"action": "full_switch", "allocation": {"type": "remainder", "target": target_part}}
    return {
        "action": "partial_switch",
        "allocation": {"type": allocation["type"], "value": allocation["value"], "target": target_part},
    }


def allocation_event(flow: FlowState) -> dict[str, Any]:
    """The `input_allocation` client event payload: the job params it will produce."""
    return job_params(flow)


def token_has_job(token: LinkToken) -> bool:
    return db.session.scalar(select(Job.id).where(Job.link_token_id == token.id).limit(1)) is not None


def submit_switch(flow: FlowState) -> Job:
    """Start the job; outside the sandbox a payroll success first really changes the deposit split."""
    row, token = flow.row, flow.token
    account = db.session.get(Account, row.account_id)
    platform = flow.platform
    assert account is not None and platform is not None and row.scenario is not None
    allocation = row.allocation or {"type": FULL}
    if not flow.sandbox and platform.type == PAYROLL and row.employment_id and row.scenario == "success":
        change = (
            None if allocation["type"] == FULL else {"type": allocation["type"], "value": allocation["value"]}
        )
        before, after = allocations.apply_switch(
            token.workspace_id, token.mode, row.employment_id, target(token, allocation), change, now=flow.at
        )
        row.allocations_before, row.allocations_after = before, after
    return start_switch(
        link_token=token,
        account=account,
        params=job_params(flow),
        scenario=row.scenario,
        via_platform_matching=row.via_platform_matching,
    )


def success_payload(flow: FlowState, job: Job) -> dict[str, Any]:
    """The `success` client event: the account and the job as the API shows it."""
    platform = flow.platform
    assert platform is not None
    return {
        "account_id": str(job.account_id),
        "link_token_id": str(flow.token.id),
        "platform_id": str(platform.id),
        "platform_name": platform.name,
        "job": serialize_job(job),
    }


def is_benefits(flow: FlowState) -> bool:
    platform = flow.platform
    return platform is not None and platform.type == BENEFITS
