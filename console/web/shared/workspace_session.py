"""Which workspace a visitor is in: its id lives in the signed session cookie.

Reading a page never writes: a visitor (or a crawler) without a workspace sees every page in its
empty state, rendered against an unsaved blank workspace that owns nothing. The first action (any
console POST) creates the workspace with a sandbox key and the built-in inbox registered as its
webhook, so there is still nothing to configure.

The cookie holds the workspace id, the CSRF token, the hour it was last refreshed and, once this browser
has created a presenter profile or a cohort, a random browser id (the owner the per-browser caps count;
`browser_id`), nothing more:
Link token strings live sealed in the database (`console.web.link.tokens`). It is re-signed at most
once an hour, which is what moves its idle expiry (`CONSOLE_SESSION_IDLE_DAYS`, checked by Flask on
the signature's age) without a Set-Cookie on every poll that could overwrite a newer cookie.
"""

from __future__ import annotations

import secrets
import time
import uuid

from flask import g, session
from sqlalchemy import or_, select

from console.core.timeutil import utcnow
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import create_key, still_opens
from console.modes import SANDBOX
from console.training import cohorts
from console.web.shared import throttle
from console.web.shared.apiclient import ApiClient
from console.web.webhooks import inbox
from console.workspaces.models import Workspace
from console.workspaces.services import create_visitor_workspace, delete_workspace, note_activity

SESSION_KEY = "workspace_id"
# The workspace this browser opened with an API secret ("Open its workspace"): someone's backend holds its keys,
# so this browser's Reset (or a presenter run) leaves it, never deletes it.
OPENED_KEY = "opened_workspace_id"
# The key whose secret opened it: the browser keeps the workspace only while that key still opens it
# (`keys.services.still_opens`: not revoked or rolled out, and no key of a stronger mode in the workspace).
OPENED_WITH_KEY = "opened_with_key_id"
BROWSER_KEY = "browser_id"
REFRESHED_KEY = "refreshed_hour"
# Keys older versions kept in the cookie (Link token strings): dropped from any cookie still carrying them.
LEGACY_KEYS = ("link_tokens",)
REFRESH_SECONDS = 3600
VISITOR_WORKSPACE_NAME = "Console workspace"
# The blank workspace's id: no row has it, so every scoped query finds nothing.
BLANK_ID = uuid.UUID(int=0)


def current_workspace() -> Workspace | None:
    """The visitor's saved workspace, or None before the first action (or after it was deleted, or once the
    secret this browser opened it with no longer opens it)."""
    if g.get("console_workspace_saved"):
        return g.console_workspace
    try:
        ident = uuid.UUID(str(session.get(SESSION_KEY)))
    except ValueError:
        return None
    workspace = db.session.get(Workspace, ident)
    if workspace is not None and opened_here(workspace) and opening_key(workspace) is None:
        # Checked on every request, not only when opened: the key was revoked or rolled since, or the owner
        # added development or production keys, whose secrets the console would reveal to this browser.
        for name in (SESSION_KEY, OPENED_KEY, OPENED_WITH_KEY):
            session.pop(name, None)
        return None
    return workspace


def may_use_secret(key: ApiKey | None) -> bool:
    """Whether this browser may see or sign with `key`'s secret: any key of its workspace, except in a workspace it
    opened with a secret, where only that key. The others' secrets reach more than the secret it showed: their
    holder could copy them all, sign as any of them in the debugger, and keep access once the owner revoked the
    leaked one."""
    workspace = g.console_workspace
    if key is None or key.workspace_id != workspace.id:
        return False
    return not opened_here(workspace) or key == opening_key(workspace)


def opening_key(workspace: Workspace) -> ApiKey | None:
    """The key this browser opened `workspace` with, while it still opens it; else None."""
    try:
        key = db.session.get(ApiKey, uuid.UUID(str(session.get(OPENED_WITH_KEY))))
    except ValueError:
        return None
    return key if still_opens(key, workspace.id) else None


def browser_id() -> str:
    """This browser's random id, made on first need and kept in its signed session: the owner that
    per-browser caps count (presenter profiles, cohorts). A bot that drops its cookie gets a new one, and
    meets the per-address limit on creating requests instead (console.web.shared.throttle)."""
    value = session.get(BROWSER_KEY)
    if not isinstance(value, str) or len(value) < 16:
        value = secrets.token_urlsafe(16)
        session[BROWSER_KEY] = value
        session.permanent = True
    return value


def blank_workspace() -> Workspace:
    """What pages render against before the first action: never added to the database session."""
    return Workspace(
        id=BLANK_ID,
        name=VISITOR_WORKSPACE_NAME,
        is_demo=False,
        clock_offset_seconds=0.0,
        kept=False,
        last_active_at=None,
    )


def _use(workspace: Workspace | None) -> Workspace:
    g.console_workspace = workspace if workspace is not None else blank_workspace()
    g.console_workspace_saved = workspace is not None
    return g.console_workspace


def has_workspace() -> bool:
    return bool(g.get("console_workspace_saved"))


def _refresh_session() -> None:
    for key in LEGACY_KEYS:
        session.pop(key, None)
    hour = int(time.time() // REFRESH_SECONDS)
    if SESSION_KEY in session and session.get(REFRESHED_KEY) != hour:
        session[REFRESHED_KEY] = hour
        session.permanent = True


def load_workspace() -> Workspace:
    """Every console request: the visitor's workspace or the blank one; writes only activity, hourly."""
    _refresh_session()
    workspace = current_workspace()
    if workspace is not None and note_activity(workspace):
        db.session.commit()
    return _use(workspace)


def ensure_workspace() -> Workspace:
    """The visitor's workspace, creating (and fully setting up) one on the first action."""
    workspace = current_workspace()
    if workspace is None:
        return start_new_workspace()
    return _use(workspace)


def start_new_workspace() -> Workspace:
    """Create a visitor workspace with a sandbox key, hold it in the session and register the inbox."""
    workspace = create_visitor_workspace(VISITOR_WORKSPACE_NAME, throttle.client_address())
    create_key(workspace.id, SANDBOX, "Console")
    return enter_workspace(workspace)


def enter_workspace(workspace: Workspace, *, register_inbox: bool = True) -> Workspace:
    """Hold a new workspace (with its sandbox key) in the session and register the console's inbox (not when
    `register_inbox` is false: a training join form sent twice enters the workspace its first sending made)."""
    db.session.commit()
    # Not session.clear(): the CSRF token the open page holds must stay valid.
    session[SESSION_KEY] = str(workspace.id)
    session[REFRESHED_KEY] = int(time.time() // REFRESH_SECONDS)
    session.permanent = True
    _use(workspace)
    g.console_workspace_created = True
    if register_inbox:
        inbox.register(api_client(workspace), workspace)
    db.session.commit()
    return workspace


def open_workspace(workspace: Workspace, key: ApiKey) -> Workspace:
    """Hold an existing workspace in this browser's session (the owner of `key` showed its secret), for as long
    as that key still opens it (`opening_key`).

    Only this browser's session changes; the workspace it left stays as it was (an unnamed one is
    collected once idle). Nothing is registered: the workspace is shown as its owner left it.
    """
    session[SESSION_KEY] = str(workspace.id)
    session[OPENED_KEY] = str(workspace.id)
    session[OPENED_WITH_KEY] = str(key.id)
    session[REFRESHED_KEY] = int(time.time() // REFRESH_SECONDS)
    session.permanent = True
    return _use(workspace)


def opened_here(workspace: Workspace) -> bool:
    """Whether this browser holds `workspace` because it was opened with one of its secrets."""
    return session.get(OPENED_KEY) == str(workspace.id)


def reset_workspace() -> Workspace:
    """Start over: delete the visitor's workspace with all it owns, then a new one. A kept one stays, and so does
    one opened with its secret (its owner's backend holds its keys): this browser only leaves them. A trainee
    starts over in their class (`cohorts.start_over`)."""
    workspace = current_workspace()
    # Asked first: a trainee's workspace opened here with its secret is the trainee's, not this browser's to
    # start over (start_over deleted it, with the keys the trainee's backend uses, and moved their row).
    mine = workspace is not None and not opened_here(workspace)
    fresh = cohorts.start_over(workspace) if mine else None
    if fresh is not None:
        return enter_workspace(fresh)
    if mine and not workspace.kept:
        delete_workspace(workspace.id, Workspace.kept.is_(False))
        db.session.commit()
    session.pop(SESSION_KEY, None)
    session.pop(OPENED_KEY, None)
    session.pop(OPENED_WITH_KEY, None)
    _use(None)
    return start_new_workspace()


def console_key(workspace: Workspace, mode: str = SANDBOX) -> ApiKey | None:
    """The key the console calls the API with: the newest active key of the mode. A rolled key in its grace
    period is on its way out (the Keys page says so): it is used only while no other key is left, and not
    past its end. Taking the newest unrevoked one put such a key back in every console page once its
    replacement was revoked, and new webhooks were registered under it."""
    return db.session.scalars(
        select(ApiKey)
        .where(
            ApiKey.workspace_id == workspace.id,
            ApiKey.mode == mode,
            ApiKey.revoked_at.is_(None),
            or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > utcnow()),
        )
        .order_by(ApiKey.expires_at.is_not(None), ApiKey.created_at.desc(), ApiKey.id.desc())
        .limit(1)
    ).first()


def api_client(workspace: Workspace, mode: str = SANDBOX) -> ApiClient:
    """An API client for the workspace; without an active key its calls get the API's 401."""
    return ApiClient(workspace.id, mode, console_key(workspace, mode))
