"""The `link_token.expire` task: ends a token's flow at its expiry, erasing its platform matching data.

Flows end (and erase) on their own when a step runs after expiry; this task covers tokens that were
never opened or were abandoned mid-flow; `console.link_tokens.services` schedules it at creation.
"""

from __future__ import annotations

import uuid
from typing import Any

from console.extensions import db
from console.link import flow as link_flow
from console.link_tokens.models import LinkToken
from console.link_tokens.services import EXPIRE_TASK_KIND
from console.scheduler.models import ScheduledTask
from console.scheduler.services import task_handler
from console.workspaces.models import Workspace


@task_handler(EXPIRE_TASK_KIND)
def expire_link_token(task: ScheduledTask, workspace: Workspace) -> dict[str, Any]:
    """Stop the token's flow if it is still running; loading an expired flow ends it."""
    link_token = db.session.get(LinkToken, uuid.UUID(task.payload["link_token_id"]))
    if link_token is None:
        return {"summary": "Link token no longer exists"}
    flow = link_flow.load(link_token)
    return {
        "summary": f"Link token {link_token.id}: flow {flow.row.state}",
        "link_token_id": str(link_token.id),
    }
