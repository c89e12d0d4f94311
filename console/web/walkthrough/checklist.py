"""The walkthrough's checklist: each step is ticked from what really exists, never from clicks."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from console.accounts.models import Account
from console.extensions import db
from console.keys.models import ApiKey
from console.link_tokens.models import LinkToken
from console.modes import SANDBOX
from console.web.requests import queries as requestlog
from console.web.webhooks import inbox
from console.web.webhooks import queries as webhooklist
from console.workspaces.models import Workspace
from console.world.models import Employer, Person, Platform

JOBS_STEP = "jobs"


@dataclass(frozen=True)
class Step:
    number: int
    key: str
    title: str
    done: bool


def _exists(query) -> bool:
    return db.session.scalars(query.limit(1)).first() is not None


def checklist(workspace: Workspace, mode: str = SANDBOX) -> list[Step]:
    """The six steps, each done when its evidence is in the database."""
    ws = workspace.id
    has_key = _exists(
        select(ApiKey.id).where(ApiKey.workspace_id == ws, ApiKey.mode == mode, ApiKey.revoked_at.is_(None))
    )
    has_token = _exists(select(LinkToken.id).where(LinkToken.workspace_id == ws, LinkToken.mode == mode))
    # Link was really used once a person logged in through it: that creates the account.
    has_account = _exists(select(Account.id).where(Account.workspace_id == ws, Account.mode == mode))
    return [
        Step(1, "key", "Your API key", has_key),
        Step(2, "webhook", "A webhook", webhooklist.has_active_webhook(ws, mode)),
        Step(3, "link_token", "Create a Link token", has_token),
        Step(4, "link", "Open Link", has_account),
        Step(5, "inbox", "Events arrive, signatures verified", inbox.has_verified(ws)),
        Step(6, "jobs", "Query jobs by Link token id", requestlog.succeeded(ws, JOBS_STEP)),
    ]


def current_step(steps: list[Step]) -> int:
    """The first step not done yet (the last one when all are)."""
    return next((s.number for s in steps if not s.done), steps[-1].number)


@dataclass(frozen=True)
class OnDemandChoice:
    """The account the on-demand update preset names, what else it must send, and why (shown on the page)."""

    account_id: str
    platform_matching: dict[str, str] | None
    note: str


def _identity(person: Person) -> dict[str, str]:
    """The person's `end_user.platform_matching`, as the Link token request spells it."""
    return {
        "social_security_number": person.ssn,
        "first_name": person.first_name,
        "last_name": person.last_name,
        "date_of_birth": person.date_of_birth.isoformat(),
        "mobile_phone_number": person.phone,
        "home_address_zip_code": person.zip,
        "email": person.email,
    }


def on_demand_choice(workspace_id, mode: str = SANDBOX) -> OnDemandChoice | None:
    """The newest account an on-demand update can be requested for, with what its platform needs.

    A partner platform deletes the person's matching data after each flow, so the API requires
    `end_user.platform_matching` again (spec section 8): filled in from the world person behind the
    account when the console knows it; otherwise the newest account elsewhere is chosen instead.
    """
    rows = db.session.execute(
        select(Account, Platform)
        .join(Platform, Platform.id == Account.platform_id)
        .where(Account.workspace_id == workspace_id, Account.mode == mode)
        .order_by(Account.created_at.desc(), Account.id.desc())
        .limit(50)
    ).all()
    skipped: Platform | None = None
    for account, platform in rows:
        newest = "your newest connected account" if skipped is None else "your newest account elsewhere"
        if not platform.is_partner:
            note = f"account_id is {newest}, on {platform.name}."
            if skipped is not None:
                note = (
                    f"Your newest account is on {skipped.name}, a partner platform that needs the person's "
                    f"matching data again, which the console does not know for it; so {note}"
                )
            return OnDemandChoice(str(account.id), None, note)
        person = db.session.get(Person, account.person_id) if account.person_id else None
        if person is not None:
            return OnDemandChoice(
                str(account.id),
                _identity(person),
                f"account_id is {newest}, on {platform.name}, a partner platform: it deletes the person's "
                f"matching data after each flow, so the preset sends end_user.platform_matching again "
                f"({person.full_name}'s).",
            )
        skipped = skipped or platform
    return None


def form_choices() -> dict:
    """Platforms (payroll first) and employers for the Link token form's routing selects."""
    return {
        "platforms": list(db.session.scalars(select(Platform).order_by(Platform.type.desc(), Platform.name))),
        "employers": list(db.session.scalars(select(Employer).order_by(Employer.name))),
    }
