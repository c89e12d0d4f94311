"""The `link_token.expire` task: ends a token's flow at its expiry, erasing its platform matching data.

Flows end (and erase) on their own when a step runs after expiry; this task covers tokens that were
never opened or were abandoned mid-flow; `console.link_tokens.services` schedules it at creation.
Also here: which open tokens a clock move would expire, so the console can warn before it does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from console.clock.services import now as clock_now
from console.extensions import db
from console.link import flow as link_flow
from console.link.models import TERMINAL, LinkSession
from console.link_tokens.models import LinkToken
from console.link_tokens.services import EXPIRE_TASK_KIND
from console.scheduler.models import ScheduledTask
from console.scheduler.services import TaskKind
from console.workspaces.models import Workspace


def _session_of(link_token_id: uuid.UUID) -> LinkSession | None:
    return db.session.scalar(select(LinkSession).where(LinkSession.link_token_id == link_token_id))


def _screen(state: str) -> str:
    return f"the {state.replace('_', ' ')} screen" if state else "its first screen"


def expire_link_token(task: ScheduledTask, workspace: Workspace) -> dict[str, Any]:
    """Stop the token's flow if it is still running; loading an expired flow ends it."""
    link_token = db.session.get(LinkToken, uuid.UUID(task.payload["link_token_id"]))
    if link_token is None:
        return {"summary": "Link token no longer exists: nothing to expire"}
    session = _session_of(link_token.id)
    before = session.state if session is not None else None  # read now: loading the flow changes the row
    had_matching_data = link_token.platform_matching is not None  # and erases this
    link_flow.load(link_token)
    if before is None:
        summary = f"Link token {link_token.id} expired unused"
    elif before in TERMINAL:
        summary = f"Link token {link_token.id} expired; its flow had already ended ({before})"
    else:
        summary = f"Link token {link_token.id} expired mid-flow on {_screen(before)}"
        if had_matching_data:  # a standard switch's token has none: saying it was erased misled
            summary += "; its matching data was erased"
    return {"summary": summary, "link_token_id": str(link_token.id)}


def describe_expiry(task: ScheduledTask) -> str:
    link_token = db.session.get(LinkToken, uuid.UUID(task.payload["link_token_id"]))
    if link_token is None:
        return "A deleted Link token's expiry (does nothing)"
    session = _session_of(link_token.id)
    if session is None:
        return f"Link token {link_token.id} will expire unused"
    if session.state in TERMINAL:
        return f"Link token {link_token.id} expires; its flow already ended ({session.state}), so nothing changes"
    return f"Link token {link_token.id} will expire mid-flow (open on {_screen(session.state)})"


@dataclass(frozen=True)
class OpenToken:
    """A Link token still usable (never opened, or its flow in progress) and when it expires."""

    link_token: LinkToken
    state: str | None  # the flow's screen, None when never opened

    @property
    def described(self) -> str:
        where = "never opened" if self.state is None else f"open on {_screen(self.state)}"
        return f"Link token {self.link_token.id} ({where})"


def open_tokens_expiring_by(workspace: Workspace, until: datetime) -> list[OpenToken]:
    """Tokens of the workspace (any mode) that are open now and would expire by `until` on its clock."""
    rows = db.session.execute(
        select(LinkToken, LinkSession.state)
        .outerjoin(LinkSession, LinkSession.link_token_id == LinkToken.id)
        .where(
            LinkToken.workspace_id == workspace.id,
            LinkToken.expires_at > clock_now(workspace),
            LinkToken.expires_at <= until,
        )
        .order_by(LinkToken.expires_at, LinkToken.id)
    )
    return [OpenToken(token, state) for token, state in rows if state not in TERMINAL]


# The scheduled task kinds this module runs (registered by create_app: console.scheduler.services).
TASKS = (TaskKind(EXPIRE_TASK_KIND, expire_link_token, describe_expiry),)
