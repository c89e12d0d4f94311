"""Which workspace a visitor is in: its id lives in the signed session cookie.

A first visit creates a workspace with a sandbox key and the built-in inbox registered as
its webhook, so the walkthrough starts with nothing to configure.
"""

from __future__ import annotations

import uuid

from flask import g, session
from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import create_key
from console.modes import SANDBOX
from console.web import inbox
from console.web.apiclient import ApiClient
from console.workspaces.models import Workspace
from console.workspaces.services import create_workspace

SESSION_KEY = "workspace_id"
LINK_TOKENS_KEY = "link_tokens"
# The opaque Link token strings the API returned, newest last: the API shows each one only once.
MAX_REMEMBERED_TOKENS = 10


def current_workspace() -> Workspace | None:
    """The visitor's workspace, or None before the first visit (or after it was deleted)."""
    if "console_workspace" in g:
        return g.console_workspace
    try:
        ident = uuid.UUID(str(session.get(SESSION_KEY)))
    except ValueError:
        return None
    return db.session.get(Workspace, ident)


def ensure_workspace() -> Workspace:
    """The visitor's workspace, creating (and fully setting up) one on the first visit."""
    workspace = current_workspace()
    if workspace is None:
        workspace = start_new_workspace()
    g.console_workspace = workspace
    return workspace


def start_new_workspace() -> Workspace:
    """Create a workspace with a sandbox key, hold it in the session and register the inbox."""
    workspace = create_workspace("Console workspace")
    create_key(workspace.id, SANDBOX, "Console")
    db.session.commit()
    session.clear()
    session[SESSION_KEY] = str(workspace.id)
    session.permanent = True
    g.console_workspace = workspace
    inbox.register(api_client(workspace), workspace)
    db.session.commit()
    return workspace


def console_key(workspace: Workspace, mode: str = SANDBOX) -> ApiKey | None:
    """The key the console calls the API with: the newest active key of the mode."""
    return db.session.scalars(
        select(ApiKey)
        .where(ApiKey.workspace_id == workspace.id, ApiKey.mode == mode, ApiKey.revoked_at.is_(None))
        .order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
        .limit(1)
    ).first()


def api_client(workspace: Workspace, mode: str = SANDBOX) -> ApiClient:
    """An API client for the workspace; without an active key its calls get the API's 401."""
    return ApiClient(workspace.id, mode, console_key(workspace, mode))


def remember_link_token(link_token_id: str, token: str) -> None:
    """Keep a Link token string so the launcher can open Link with it later in this session."""
    tokens = dict(session.get(LINK_TOKENS_KEY) or {})
    tokens.pop(link_token_id, None)
    tokens[link_token_id] = token
    session[LINK_TOKENS_KEY] = dict(list(tokens.items())[-MAX_REMEMBERED_TOKENS:])


def link_token_string(link_token_id: str | None) -> str | None:
    """The token string for an id this session created (None if not, or if unknown)."""
    tokens = session.get(LINK_TOKENS_KEY) or {}
    if link_token_id is None:
        return None
    return tokens.get(str(link_token_id))


def latest_link_token_id() -> str | None:
    tokens = session.get(LINK_TOKENS_KEY) or {}
    return next(reversed(tokens), None) if tokens else None
