"""The built-in webhook receiver: an unguessable URL per workspace that verifies and keeps what arrives.

The URL carries the workspace id signed with the app's secret key, so it can be neither guessed
nor forged, and needs no table of its own. A delivery is authenticated the way a customer's
receiver would do it: by its `x-service-signature`, checked with `console.webhooks.verify`
against the secrets of the workspace's keys.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from typing import Any

from flask import current_app, url_for
from sqlalchemy import or_, select

from console.clock.services import now as clock_now
from console.conformance.sender import CONFORMANCE_HEADER
from console.core import jsontext
from console.core.errors import FieldError, ValidationFailed
from console.core.timeutil import utcnow
from console.events.models import EVENT_TYPES
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from console.requestlog.models import RequestLogEntry
from console.versions import LATEST_VERSION
from console.web.shared import keyset
from console.web.shared.apiclient import ApiClient, api_root
from console.web.webhooks import queries as webhooklist
from console.web.webhooks.models import InboxMessage, InboxSetting
from console.webhooks import WebhookVerificationError, own_inbox, verify
from console.webhooks.models import ACTIVE
from console.workspaces.models import Workspace

# Headers worth keeping from a delivery; the rest (Host, Accept-Encoding...) is transport noise.
KEPT_HEADERS = (
    "content-type",
    "user-agent",
    "x-service-signature",
    "x-service-webhook-id",
    "x-timestamp",
    "service-version",
    CONFORMANCE_HEADER,
)
MAX_BODY_CHARS = 64_000

# How the inbox answers a verified delivery, so anyone can watch retries, timeouts and the pause.
OK, FAIL, SLOW, TIMEOUT = "ok", "fail", "slow", "timeout"
SLOW_SECONDS = 3.0
BEHAVIOURS = {
    OK: "Answer 200 OK at once",
    FAIL: "Answer 500 (every delivery fails and is retried)",
    SLOW: f"Answer 200 OK after {SLOW_SECONDS:g} s",
    TIMEOUT: "Do not answer before the sender's timeout (each attempt times out)",
}


def inbox_token(workspace_id: uuid.UUID) -> str:
    return own_inbox.token_for(current_app.config["SECRET_KEY"], workspace_id)


def workspace_id_of(token: str) -> uuid.UUID | None:
    """The workspace an inbox token belongs to, or None for a forged or damaged one."""
    return own_inbox.workspace_of_token(current_app.config["SECRET_KEY"], token)


def inbox_url(workspace: Workspace) -> str:
    """Where the webhook worker posts this workspace's events (delivered in-process: `own_inbox`)."""
    return api_root() + url_for("console.inbox_receive", token=inbox_token(workspace.id))


def is_inbox_url(workspace: Workspace, url: str | None) -> bool:
    """Whether `url` is the workspace's built-in inbox (the domain's rule, own_inbox.is_inbox_of)."""
    return own_inbox.is_inbox_of(current_app.config["SECRET_KEY"], workspace.id, url)


def is_registered(workspace: Workspace, mode: str = "sandbox") -> bool:
    """Whether an active webhook of the workspace already points at its inbox."""
    return any(
        is_inbox_url(workspace, w.url) and w.status == ACTIVE
        for w in webhooklist.list_webhooks(workspace.id, mode)
    )


def register(client: ApiClient, workspace: Workspace) -> RequestLogEntry | None:
    """Register the inbox as a webhook for every event type, through the API (once: None if it is)."""
    if is_registered(workspace):
        return None
    body = {
        "url": inbox_url(workspace),
        "status": "active",
        "enabled_events": list(EVENT_TYPES),
        "version": LATEST_VERSION,
    }
    return client.call("POST", "/webhooks", body=body, step="webhook")


def _verify_with_keys(
    workspace: Workspace, headers: Mapping[str, str], raw_body: bytes
) -> tuple[str | None, str | None]:
    """(last four of the key that verifies the delivery, None) or (None, the reason none does)."""
    keys = db.session.scalars(
        select(ApiKey).where(ApiKey.workspace_id == workspace.id).order_by(ApiKey.created_at.desc())
    )
    reason = "the workspace has no API key to verify with"
    for key in keys:
        secret = secret_of(key)
        # The sender may stamp deliveries on the workspace clock; a receiver on real time would
        # then see a time-travelled timestamp as "in the future", so both clocks are accepted.
        for moment in (None, clock_now(workspace)):
            try:
                verify(secret, headers, raw_body, now=moment)
                return key.secret_last4, None
            except WebhookVerificationError as exc:
                reason = str(exc)
    return None, reason


def behaviour(workspace_id: uuid.UUID) -> str:
    """How the workspace's inbox answers now (OK unless set otherwise)."""
    value = db.session.scalars(
        select(InboxSetting.behaviour).where(InboxSetting.workspace_id == workspace_id)
    ).first()
    return value or OK


def set_behaviour(workspace_id: uuid.UUID, value: Any) -> str:
    """Choose how the inbox answers from now on; the caller commits."""
    if value not in BEHAVIOURS:
        raise ValidationFailed([FieldError("behaviour", f"must be one of {', '.join(BEHAVIOURS)}")])
    setting = db.session.scalars(
        select(InboxSetting).where(InboxSetting.workspace_id == workspace_id)
    ).first()
    if setting is None:
        setting = InboxSetting(workspace_id=workspace_id, behaviour=value)
        db.session.add(setting)
    setting.behaviour = value
    setting.updated_at = utcnow()
    db.session.flush()
    return value


def answer(message: InboxMessage) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, JSON body, extra headers) for a stored delivery, as the inbox is set to answer.

    A bad signature is answered 400 whatever the setting: retrying will not fix it. A held answer
    is only asked for (`own_inbox.DELAY_HEADER`): the in-process sender waits, the view never does.
    """
    if not message.verified:
        return 400, {"error": f"signature not verified: {message.verify_error}"}, {}
    if message.behaviour == FAIL:
        return 500, {"error": "the inbox is set to answer 500 (Webhooks page, Inbox)"}, {}
    received = {"received": True, "event_id": message.event_id, "duplicate": message.duplicate}
    if message.behaviour == SLOW:
        return 200, received, {own_inbox.DELAY_HEADER: f"{SLOW_SECONDS:g}"}
    if message.behaviour == TIMEOUT:
        return 200, received, {own_inbox.DELAY_HEADER: own_inbox.HOLD_PAST_TIMEOUT}
    return 200, received, {}


def _label(value: Any) -> str | None:
    """A short string from the delivery's envelope, storable in any database: a NUL (which PostgreSQL text
    cannot hold) and a lone surrogate escaped in the JSON (`"\\ud800"`, which no UTF-8 text can) become U+FFFD."""
    if not value:
        return None
    return jsontext.LONE_SURROGATE.sub("\ufffd", str(value)[:64].replace("\x00", "\ufffd"))


def receive(workspace: Workspace, headers: Mapping[str, str], raw_body: bytes) -> InboxMessage:
    """Verify and store one delivery; a repeated event_id is kept and marked as a duplicate."""
    kept = {k.lower(): v for k, v in headers.items() if k.lower() in KEPT_HEADERS}
    key_last4, reason = _verify_with_keys(workspace, headers, raw_body)
    parsed: Any = None
    with contextlib.suppress(ValueError):  # not JSON, or nested too deep to be a delivery
        parsed = jsontext.loads(raw_body)
    envelope = parsed if isinstance(parsed, dict) else {}
    event_id = _label(envelope.get("event_id"))
    duplicate = False
    if event_id and key_last4:
        duplicate = (
            db.session.scalars(
                select(InboxMessage.id)
                .where(
                    InboxMessage.workspace_id == workspace.id,
                    InboxMessage.event_id == event_id,
                    InboxMessage.verified.is_(True),
                    # One answered 500 was refused, as a real receiver would have rolled it back.
                    or_(InboxMessage.behaviour.is_(None), InboxMessage.behaviour != FAIL),
                )
                .limit(1)
            ).first()
            is not None
        )
    message = InboxMessage(
        workspace_id=workspace.id,
        headers=kept,
        # NUL cannot be stored in PostgreSQL text; shown as U+FFFD like undecodable bytes.
        body=raw_body.decode("utf-8", errors="replace")[:MAX_BODY_CHARS].replace("\x00", "\ufffd"),
        event_id=event_id,
        event_type=_label(envelope.get("event")),
        webhook_id=_label(
            kept.get("x-service-webhook-id")
        ),  # its column is 64 characters; headers keep it whole
        verified=key_last4 is not None,
        verify_error=reason[:255] if key_last4 is None and reason else None,
        key_last4=key_last4,
        duplicate=duplicate,
        conformance=kept.get(CONFORMANCE_HEADER) == "true",
        # The mode it met; a bad signature is answered 400 whatever the mode, so it met none.
        behaviour=None if key_last4 is None or (current := behaviour(workspace.id)) == OK else current,
    )
    db.session.add(message)
    db.session.flush()
    return message


def _scope(workspace_id: uuid.UUID):
    return select(InboxMessage).where(InboxMessage.workspace_id == workspace_id)


COLUMNS = (InboxMessage.received_at, InboxMessage.id)


def page(workspace_id: uuid.UUID, cursor: str | None = None, limit: int = 20) -> keyset.Page:
    """Messages newest first."""
    return keyset.newest_first(
        _scope(workspace_id),
        COLUMNS,
        cursor=cursor,
        limit=limit,
        key=lambda m: keyset.cursor_of(m, "received_at"),
    )


def newer(workspace_id: uuid.UUID, cursor: str | None) -> list[InboxMessage]:
    return keyset.newer_than(_scope(workspace_id), COLUMNS, cursor)


def live_cursor(messages: list[InboxMessage], previous: str | None = None) -> str:
    """Where the next live poll starts: the newest message shown, or where the last poll was."""
    if messages:
        return keyset.cursor_of(messages[0], "received_at")
    return previous or keyset.encode_start(COLUMNS)


def get(workspace_id: uuid.UUID, message_id: str) -> InboxMessage | None:
    try:
        message = db.session.get(InboxMessage, uuid.UUID(str(message_id)))
    except ValueError:
        return None
    return message if message is not None and message.workspace_id == workspace_id else None


def latest_for_webhook(workspace_id: uuid.UUID, webhook_id: uuid.UUID) -> InboxMessage | None:
    """The newest message a webhook delivered here (by its `x-service-webhook-id`)."""
    return db.session.scalars(
        _scope(workspace_id)
        .where(InboxMessage.webhook_id == str(webhook_id))
        .order_by(InboxMessage.received_at.desc(), InboxMessage.id.desc())
        .limit(1)
    ).first()


def has_verified(workspace_id: uuid.UUID) -> bool:
    """Whether a real event arrived verified (the conformance check's sample traffic does not count)."""
    return (
        db.session.scalars(
            select(InboxMessage.id)
            .where(
                InboxMessage.workspace_id == workspace_id,
                InboxMessage.verified.is_(True),
                InboxMessage.conformance.is_(False),
            )
            .limit(1)
        ).first()
        is not None
    )
