"""Small helpers for console tests: run scenarios, deliver signed events to the inbox."""

from __future__ import annotations

import json
import time
import uuid
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import select

from console.events.models import Event
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from console.web.webhooks.inbox import inbox_token
from console.webhooks import sign


def run_headless(visitor, key: str) -> str:
    """Run a gallery scenario headlessly; return the Link token id of the timeline it lands on."""
    response = visitor.post(f"/scenarios/{key}/run", {"via": "headless"})
    assert response.status_code == 302, response.get_data(as_text=True)
    location = urlsplit(response.headers["Location"])
    assert location.path.startswith("/timeline/link-tokens/")
    assert parse_qs(location.query)["exchanges"]
    return location.path.rsplit("/", 1)[1]


def sandbox_secret(app, workspace_id: uuid.UUID) -> str:
    with app.app_context():
        key = db.session.scalars(
            select(ApiKey).where(ApiKey.workspace_id == workspace_id, ApiKey.revoked_at.is_(None))
        ).first()
        return secret_of(key)


def deliver_to_inbox(
    app, client, workspace_id: uuid.UUID, event: dict, *, secret: str | None = None, timestamp=None
):
    """POST one delivery to the workspace's inbox, signed as the webhook worker signs it."""
    body = json.dumps(event, separators=(",", ":")).encode()
    stamp = int(time.time()) if timestamp is None else timestamp
    secret = secret or sandbox_secret(app, workspace_id)
    with app.app_context():
        token = inbox_token(workspace_id)
    headers = {
        "x-service-signature": sign(secret, stamp, body),
        "x-timestamp": str(stamp),
        "x-service-webhook-id": str(uuid.uuid4()),
        "service-version": "2023-11-22",
    }
    return client.post(f"/inbox/{token}", data=body, headers=headers, content_type="application/json")


def deliver_workspace_events(app, client, workspace_id: uuid.UUID) -> int:
    """Stand in for the webhook worker: deliver every event of the workspace to its inbox."""
    with app.app_context():
        events = db.session.scalars(
            select(Event).where(Event.workspace_id == workspace_id).order_by(Event.created_at)
        ).all()
        documents = [{"event": e.type, "event_id": str(e.id), "payload": e.payload} for e in events]
    for document in documents:
        assert deliver_to_inbox(app, client, workspace_id, document).status_code == 200
    return len(documents)
