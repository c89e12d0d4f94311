"""Capping the built-in inbox per workspace: the worker deletes a workspace's oldest messages past `INBOX_KEEP`.

Anyone holding a workspace's inbox URL can POST to it (a bad signature is kept too, to be shown), up to 64,000
characters a message, and nothing else bounded how many stayed. Each workspace keeps its `INBOX_KEEP` newest
messages (0: no cap), plus its newest verified event (the walkthrough's "events arrive, signatures verified",
`inbox.has_verified`) and, per webhook, its newest verified message (the endpoint page's last delivery,
`inbox.latest_for_webhook`): only verified ones, since anyone can send any `x-service-webhook-id`. A later copy
of an event whose earlier copies went is no longer marked a duplicate. Deleted `PRUNE_BATCH` rows a
transaction (`console.db.capping`).
"""

from __future__ import annotations

import uuid

from sqlalchemy import select

from console.db import capping
from console.extensions import db
from console.web.webhooks.models import InboxMessage

DEFAULT_KEEP = 1000
PRUNE_BATCH = 200  # messages are up to 64 KB: fewer a transaction than the request log's rows


def _spared(workspace_id: uuid.UUID) -> set[uuid.UUID]:
    verified = (InboxMessage.workspace_id == workspace_id, InboxMessage.verified.is_(True))
    newest = (InboxMessage.received_at.desc(), InboxMessage.id.desc())
    spared: set[uuid.UUID] = set()
    event = db.session.scalars(
        select(InboxMessage.id)
        .where(*verified, InboxMessage.conformance.is_(False))
        .order_by(*newest)
        .limit(1)
    ).first()
    if event is not None:
        spared.add(event)
    webhooks = db.session.scalars(
        select(InboxMessage.webhook_id).where(*verified, InboxMessage.webhook_id.is_not(None)).distinct()
    ).all()
    for webhook_id in webhooks:
        found = db.session.scalars(
            select(InboxMessage.id)
            .where(*verified, InboxMessage.webhook_id == webhook_id)
            .order_by(*newest)
            .limit(1)
        ).first()
        if found is not None:
            spared.add(found)
    return spared


CAP = capping.Cap(
    model=InboxMessage,
    at=InboxMessage.received_at,
    setting="INBOX_KEEP",
    default=DEFAULT_KEEP,
    batch=PRUNE_BATCH,
    what="inbox messages",
    spared=_spared,
)


class InboxPruneLoop(capping.CapLoop):
    """A worker loop: cap every workspace's inbox at start, then every minute."""

    name = "inbox-pruning"
    cap = CAP
