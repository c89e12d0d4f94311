"""Factories shared by tests: the rows a Link flow would have made, and switches started from them."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import select

from console.accounts.models import Account
from console.core.timeutil import utcnow
from console.extensions import db
from console.jobs.models import Job
from console.jobs.services import start_switch
from console.link_tokens.models import LinkToken
from console.workspaces.models import Workspace
from console.world.models import Platform

# A deposit target and platform-matching identity as a customer sends them in a Link token's body.
TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "1234567890"}
MATCHING = {
    "social_security_number": "123456789",
    "first_name": "Ada",
    "last_name": "Lovelace",
    "date_of_birth": "1990-05-17",
    "mobile_phone_number": "5551234567",
    "home_address_zip_code": "94107",
    "email": "ada@example.com",
}
# The smallest valid `POST /v1/link_tokens` body (one target, no options).
LINK_TOKEN = {
    "org_name": "Acme",
    "end_user_id": "user-1",
    "required_jobs": ["direct_deposit_switch"],
    "allocation": {"targets": [TARGET]},
}


def webhook_body(url: str, events: tuple[str, ...] = ("account.added",)) -> dict:
    """A `POST /v1/webhooks` body: an active webhook at `url` for `events`."""
    return {"url": url, "status": "active", "enabled_events": list(events), "version": "2023-11-22"}


PARAMS = {
    "action": "partial_switch",
    "allocation": {"type": "amount", "value": 12500, "target": {"account_type": "checking"}},
}


def make_parties(workspace_id, mode: str = "sandbox", end_user_id: str | None = "user-1"):
    """A Link token and an account to start switches with (what the Link flow would have made)."""
    workspace_id = uuid.UUID(str(workspace_id))
    platform = db.session.scalars(select(Platform).order_by(Platform.slug)).first()
    token = LinkToken(
        workspace_id=workspace_id,
        mode=mode,
        token_hash=uuid.uuid4().hex,
        org_name="Acme",
        end_user_id=end_user_id,
        required_jobs=["direct_deposit_switch"],
        targets=[],
        expires_at=utcnow() + timedelta(hours=1),
    )
    db.session.add(token)
    db.session.flush()
    account = Account(
        workspace_id=workspace_id,
        mode=mode,
        end_user_id=end_user_id,
        link_token_id=token.id,
        platform_id=platform.id,
        platform_name=platform.name,
    )
    db.session.add(account)
    db.session.flush()
    return token, account


def new_switch(workspace_id, scenario: str, *, mode: str = "sandbox", params=None, **kw) -> Job:
    """Start a switch and commit it."""
    token, account = make_parties(workspace_id, mode, **kw)
    job = start_switch(link_token=token, account=account, params=params or PARAMS, scenario=scenario)
    db.session.commit()
    return job


def set_clock(workspace_id, moment: datetime) -> Workspace:
    """Put the workspace clock at `moment` (tests start from a known calendar date)."""
    workspace = db.session.get(Workspace, uuid.UUID(str(workspace_id)))
    workspace.clock_offset_seconds = (moment - utcnow()).total_seconds()
    db.session.commit()
    return workspace
