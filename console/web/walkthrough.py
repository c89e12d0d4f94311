"""The walkthrough's checklist: each step is ticked from what really exists, never from clicks."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from console.accounts.models import Account
from console.extensions import db
from console.keys.models import ApiKey
from console.link_tokens.models import LinkToken
from console.modes import SANDBOX
from console.web import inbox, requestlog, webhooklist
from console.workspaces.models import Workspace
from console.world.models import Employer, Platform

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


def latest_account_id(workspace_id, mode: str = SANDBOX) -> str | None:
    """The newest connected account, for the on-demand update preset."""
    account_id = db.session.scalars(
        select(Account.id)
        .where(Account.workspace_id == workspace_id, Account.mode == mode)
        .order_by(Account.created_at.desc())
        .limit(1)
    ).first()
    return str(account_id) if account_id else None


def form_choices() -> dict:
    """Platforms (payroll first) and employers for the Link token form's routing selects."""
    return {
        "platforms": list(db.session.scalars(select(Platform).order_by(Platform.type.desc(), Platform.name))),
        "employers": list(db.session.scalars(select(Employer).order_by(Employer.name))),
    }
