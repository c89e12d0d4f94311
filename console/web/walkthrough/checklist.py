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
from console.world.models import BENEFITS, Employer, Person, Platform

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
    """The account the on-demand update preset names, what else it must send, why (shown on the page), and
    the accounts the person may choose instead (id, label), newest first."""

    account_id: str
    platform_matching: dict[str, str] | None
    note: str
    options: tuple[tuple[str, str], ...] = ()


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


def _label(account: Account, platform: Platform) -> str:
    kind = "benefits" if platform.type == BENEFITS else "payroll"
    return f"{platform.name} ({kind}), connected {account.created_at:%d %b %H:%M}, …{str(account.id)[-6:]}"


def on_demand_choice(
    workspace_id, mode: str = SANDBOX, account_id: str | None = None
) -> OnDemandChoice | None:
    """The account an on-demand update is requested for, with what its platform needs, and the note saying
    which account and why; None when the workspace has no account yet.

    `account_id`, when it is one of the workspace's accounts, is the person's own choice. Otherwise the
    preset takes the newest *payroll* account: an on-demand update refreshes payroll data (income, employment,
    allocations), so after a federal benefits run it does not silently take the Social Security account.
    A partner platform deletes the person's matching data after each flow, so the API requires
    `end_user.platform_matching` again (spec section 8): filled in from the world person behind the account
    when the console knows it; an account whose person the console cannot know is skipped by the default.
    """
    rows = db.session.execute(
        select(Account, Platform)
        .join(Platform, Platform.id == Account.platform_id)
        .where(Account.workspace_id == workspace_id, Account.mode == mode)
        .order_by(Account.created_at.desc(), Account.id.desc())
        .limit(50)
    ).all()
    if not rows:
        return None
    options = tuple((str(account.id), _label(account, platform)) for account, platform in rows)

    def matching(account: Account, platform: Platform) -> tuple[bool, dict[str, str] | None, str]:
        """Whether the console can fill this account's request, its platform_matching, and a note's tail."""
        if not platform.is_partner:
            return True, None, ""
        person = db.session.get(Person, account.person_id) if account.person_id else None
        if person is None:
            return False, None, ""
        return (
            True,
            _identity(person),
            f", a partner platform: it deletes the person's matching data after each flow, so the preset sends "
            f"end_user.platform_matching again ({person.full_name}'s)",
        )

    chosen = next(((a, p) for a, p in rows if account_id and str(a.id) == account_id), None)
    if chosen is not None:
        usable, identity, tail = matching(*chosen)
        note = f"account_id is the account you chose, on {chosen[1].name}{tail}."
        if not usable:
            note += (
                " It is on a partner platform that needs the person's matching data again, which the console "
                "does not know for it: fill in end_user.platform_matching below."
            )
        return OnDemandChoice(str(chosen[0].id), identity, note, options)

    newest_platform = rows[0][1]
    ordered = [r for r in rows if r[1].type != BENEFITS] + [r for r in rows if r[1].type == BENEFITS]
    for account, platform in ordered:
        usable, identity, tail = matching(account, platform)
        if not usable:
            continue
        note = f"account_id is your newest connected account, on {platform.name}{tail}."
        if account is not rows[0][0] and newest_platform.type == BENEFITS and platform.type != BENEFITS:
            note = (
                f"Your newest account is on {newest_platform.name}, a benefits program, and an on-demand update "
                f"refreshes payroll data; so account_id is your newest payroll account, on {platform.name}{tail}."
            )
        elif account is not rows[0][0]:
            note = (
                f"Your newest account is on {newest_platform.name}, a partner platform that needs the person's "
                f"matching data again, which the console does not know for it; so account_id is your newest "
                f"account elsewhere, on {platform.name}{tail}."
            )
        return OnDemandChoice(str(account.id), identity, note, options)
    return OnDemandChoice(
        "",
        None,
        "No account here can be filled in by the console: choose one below and add its matching data.",
        options,
    )


def form_choices() -> dict:
    """Platforms (payroll first) and employers for the Link token form's routing selects."""
    return {
        "platforms": list(db.session.scalars(select(Platform).order_by(Platform.type.desc(), Platform.name))),
        "employers": list(db.session.scalars(select(Employer).order_by(Employer.name))),
    }
