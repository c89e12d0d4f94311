"""Accounts: creating one when a person logs in through Link, and the reads the API serves.

Sandbox accounts stand on test credentials, so their employment and income are mock data derived
from the employer chosen in Link; development and production read the world person's employment.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import Select, select

from console.accounts.models import Account
from console.core.errors import NotFound, ServiceError
from console.core.timeutil import isodate, isoformat
from console.db.lookup import get_scoped
from console.events.services import record_event
from console.extensions import db
from console.link_tokens.models import LinkToken
from console.world import services as world
from console.world.models import BENEFITS, Employer, Platform

MONITORING_UNAVAILABLE = "unavailable"
PERIODS_PER_YEAR = {"weekly": 52, "biweekly": 26, "semimonthly": 24, "monthly": 12}
# Sandbox mock employment (spec: "Endpoints return mock data").
SANDBOX_START_DATE = date(2021, 1, 4)
SANDBOX_TITLE = "Associate"
SANDBOX_ANNUAL_INCOME_CENTS = 5_200_000
SANDBOX_PAY_FREQUENCY = "biweekly"


def create_account(
    *,
    link_token: LinkToken,
    platform: Platform,
    at: datetime,
    employer_id: uuid.UUID | None = None,
    person_id: uuid.UUID | None = None,
    employment_id: uuid.UUID | None = None,
    sandbox_username: str | None = None,
    via_platform_matching: bool = False,
) -> Account:
    """Write the account and its `account.added` event, plus `employment.added` and `income.added`
    when the platform provides them."""
    benefits = platform.type == BENEFITS
    account = Account(
        workspace_id=link_token.workspace_id,
        mode=link_token.mode,
        end_user_id=link_token.end_user_id,
        link_token_id=link_token.id,
        platform_id=platform.id,
        platform_name=platform.name,
        employer_id=employer_id,
        person_id=person_id,
        employment_id=employment_id,
        sandbox_username=sandbox_username,
        kind=BENEFITS if benefits else "payroll",
        # Federal benefits accounts hold no login to keep connected (spec, Account: connected false).
        connected=not benefits,
        # Monitoring is not offered, so every account says so rather than pretend.
        monitoring_status=MONITORING_UNAVAILABLE,
        created_at=at,
    )
    db.session.add(account)
    db.session.flush()
    payload: dict[str, Any] = {
        "account_id": str(account.id),
        "end_user_id": account.end_user_id,
        "link_token_id": str(link_token.id),
        "platform_id": str(platform.id),
        "created_at": isoformat(at),
        "connected": account.connected,
    }
    if benefits:
        payload["platform_name"] = account.platform_name
        payload["monitoring_status"] = account.monitoring_status
    _record(account, "account.added", payload, at, via_platform_matching)
    employment = employment_data(account)
    if employment is not None and platform.supports_jobs(["employment"]):
        extra = {"end_user_id": account.end_user_id, "link_token_id": str(link_token.id)}
        _record(account, "employment.added", serialize_employment(account, employment) | extra, at,
                via_platform_matching)  # fmt: skip
    if employment is not None and platform.supports_jobs(["income"]):
        extra = {"end_user_id": account.end_user_id, "link_token_id": str(link_token.id)}
        _record(
            account, "income.added", serialize_income(account, employment) | extra, at, via_platform_matching
        )
    return account


def _record(account: Account, type_: str, payload: dict, at: datetime, via_platform_matching: bool) -> None:
    record_event(
        workspace_id=account.workspace_id,
        mode=account.mode,
        type=type_,
        payload=payload,
        at=at,
        link_token_id=account.link_token_id,
        account_id=account.id,
        end_user_id=account.end_user_id,
        via_platform_matching=via_platform_matching,
    )


def accounts_query(
    workspace_id: uuid.UUID,
    mode: str,
    *,
    end_user_id: str | None = None,
    link_token_id: uuid.UUID | None = None,
) -> Select[tuple[Account]]:
    """A pageable select of a workspace's accounts in one mode, optionally filtered."""
    stmt = select(Account).where(Account.workspace_id == workspace_id, Account.mode == mode)
    if end_user_id is not None:
        stmt = stmt.where(Account.end_user_id == end_user_id)
    if link_token_id is not None:
        stmt = stmt.where(Account.link_token_id == link_token_id)
    return stmt


def get_account(workspace_id: uuid.UUID, mode: str, account_id: uuid.UUID | str) -> Account:
    return get_scoped(Account, workspace_id, mode, account_id, "account")


def serialize_account(account: Account) -> dict[str, Any]:
    """The spec's Account object."""
    return {
        "id": str(account.id),
        "end_user_id": account.end_user_id,
        "link_token_id": str(account.link_token_id),
        "platform_id": str(account.platform_id),
        "platform_name": account.platform_name,
        "created_at": isoformat(account.created_at),
        "connected": account.connected,
        "monitoring_status": account.monitoring_status,
    }


def _sandbox_employer(account: Account) -> Employer | None:
    if account.employer_id is not None:
        return world.get_employer(account.employer_id)
    return db.session.scalars(world.list_employers(platform_id=account.platform_id).limit(1)).first()


def employment_data(account: Account) -> dict[str, Any] | None:
    """The employment behind an account as plain data, or None (benefits, or nothing known)."""
    if account.kind == BENEFITS:
        return None
    if account.employment_id is not None:
        job = world.get_employment(account.employment_id)
        if job is None:
            return None
        return {
            "employer_id": job.employer_id,
            "employer_name": job.employer.name,
            "status": job.status,
            "start_date": job.start_date,
            "end_date": job.end_date,
            "job_title": job.job_title,
            "annual_income_cents": job.annual_income_cents,
            "pay_frequency": job.pay_frequency,
        }
    employer = _sandbox_employer(account) if account.mode == "sandbox" else None
    if employer is None:
        return None
    return {
        "employer_id": employer.id,
        "employer_name": employer.name,
        "status": "active",
        "start_date": SANDBOX_START_DATE,
        "end_date": None,
        "job_title": SANDBOX_TITLE,
        "annual_income_cents": SANDBOX_ANNUAL_INCOME_CENTS,
        "pay_frequency": SANDBOX_PAY_FREQUENCY,
    }


def _resource_id(account: Account, kind: str) -> str:
    # Stable per account, so the same employment seen through two accounts has two resource ids.
    return str(uuid.uuid5(account.id, kind))


def serialize_employment(account: Account, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": _resource_id(account, "employment"),
        "account_id": str(account.id),
        "employer_id": str(data["employer_id"]),
        "employer_name": data["employer_name"],
        "status": data["status"],
        "start_date": isodate(data["start_date"]),
        "end_date": isodate(data["end_date"]),
        "job_title": data["job_title"],
        "created_at": isoformat(account.created_at),
    }


def _require_job(account: Account, job: str) -> None:
    platform = world.get_platform(account.platform_id)
    if platform is None or not platform.supports_jobs([job]):
        raise ServiceError(
            f"{account.platform_name} does not provide {job} data, so account {account.id} has none.",
            code=f"{job.upper()}_NOT_SUPPORTED",
        )


def get_employment(account: Account) -> dict[str, Any]:
    """GET /accounts/{id}/employment: the Employment object."""
    _require_job(account, "employment")
    data = employment_data(account)
    if data is None:
        raise NotFound(f"No employment is known for account {account.id}.")
    return serialize_employment(account, data)


def get_income(account: Account) -> dict[str, Any]:
    """GET /accounts/{id}/income: pay figures in cents (USD)."""
    _require_job(account, "income")
    data = employment_data(account)
    if data is None:
        raise NotFound(f"No income is known for account {account.id}.")
    return serialize_income(account, data)


def serialize_income(account: Account, data: dict[str, Any]) -> dict[str, Any]:
    """The Income object: pay figures in cents (USD)."""
    periods = PERIODS_PER_YEAR.get(data["pay_frequency"], 26)
    return {
        "id": _resource_id(account, "income"),
        "account_id": str(account.id),
        "employer_name": data["employer_name"],
        "currency": "USD",
        "annual_income": data["annual_income_cents"],
        "pay_frequency": data["pay_frequency"],
        "pay_period_income": data["annual_income_cents"] // periods,
        "created_at": isoformat(account.created_at),
    }
