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

import logging
import threading
import uuid

from flask import Flask, current_app
from sqlalchemy import select

from console.db import capping
from console.extensions import db
from console.web.webhooks.models import InboxMessage

log = logging.getLogger(__name__)

DEFAULT_KEEP = 1000
PRUNE_BATCH = 200  # messages are up to 64 KB: fewer a transaction than the request log's rows


def keep_per_workspace() -> int:
    """How many messages each workspace keeps (its newest); 0 when the inbox is not capped."""
    return max(0, int(current_app.config.get("INBOX_KEEP", DEFAULT_KEEP)))


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


def prune_workspace(workspace_id: uuid.UUID, keep: int, *, batch: int = PRUNE_BATCH) -> int:
    return capping.delete_older(
        InboxMessage,
        InboxMessage.workspace_id,
        workspace_id,
        at=InboxMessage.received_at,
        keep=keep,
        batch=batch,
        spared=_spared(workspace_id),
    )


def prune(*, batch: int = PRUNE_BATCH) -> int:
    """One pass over every workspace past the cap; how many messages went."""
    keep = keep_per_workspace()
    if not keep:
        return 0
    workspaces = capping.over_cap(InboxMessage.workspace_id, keep)
    db.session.rollback()
    total = 0
    for workspace_id in workspaces:
        try:
            total += prune_workspace(workspace_id, keep, batch=batch)
        except Exception:
            db.session.rollback()
            log.exception(
                "Could not prune the inbox of workspace %s; trying again at the next pass", workspace_id
            )
    if total:
        log.info("Pruned %d inbox messages past %d per workspace", total, keep)
    return total


class InboxPruneLoop:
    """A worker loop: cap every workspace's inbox at start, then every `interval_seconds`."""

    name = "inbox-pruning"
    interval_seconds = 60.0

    def __init__(self, app: Flask) -> None:
        self.app = app

    def run_once(self) -> int:
        with self.app.app_context():
            try:
                return prune()
            except Exception:  # a database hiccup must not kill the loop; the rows are still there next pass
                db.session.rollback()
                log.exception("Inbox pruning failed; retrying at the next pass")
                return 0
            finally:
                db.session.remove()

    def run_forever(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.run_once()
            stop.wait(self.interval_seconds)
