"""Creating and finding workspaces."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from console.core.errors import NotFound
from console.extensions import db
from console.workspaces.models import Workspace

DEMO_NAME = "Demo workspace"


def create_workspace(name: str | None = None, *, is_demo: bool = False) -> Workspace:
    workspace = Workspace(name=(name or "Workspace").strip()[:120] or "Workspace", is_demo=is_demo)
    db.session.add(workspace)
    db.session.flush()
    return workspace


def get_workspace(workspace_id: uuid.UUID | str) -> Workspace:
    try:
        key = uuid.UUID(str(workspace_id))
    except ValueError as exc:
        raise NotFound(f"No workspace with id {workspace_id}.") from exc
    workspace = db.session.get(Workspace, key)
    if workspace is None:
        raise NotFound(f"No workspace with id {workspace_id}.")
    return workspace


def demo_workspace() -> Workspace:
    """The demo workspace, created on first use."""
    workspace = db.session.scalars(
        select(Workspace).where(Workspace.is_demo.is_(True)).order_by(Workspace.created_at)
    ).first()
    return workspace or create_workspace(DEMO_NAME, is_demo=True)
