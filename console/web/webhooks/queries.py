"""Read-only queries over a workspace's webhooks, for the console's pages and checklist."""

from __future__ import annotations

import uuid

from console.extensions import db
from console.webhooks.models import ACTIVE, Webhook
from console.webhooks.services import list_query


def list_webhooks(workspace_id: uuid.UUID, mode: str) -> list[Webhook]:
    """The workspace's live (not deleted) webhooks in a mode, oldest first."""
    return list(db.session.scalars(list_query(workspace_id, mode).order_by(Webhook.created_at, Webhook.id)))


def has_active_webhook(workspace_id: uuid.UUID, mode: str) -> bool:
    query = list_query(workspace_id, mode).where(Webhook.status == ACTIVE).with_only_columns(Webhook.id)
    return db.session.scalars(query.limit(1)).first() is not None
