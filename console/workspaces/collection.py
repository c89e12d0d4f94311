"""Collecting idle visitor workspaces: the worker deletes them with everything they own.

A workspace is collected when it is not kept (an anonymous console visitor's, never named), is not
the demo workspace, and has seen no console visit or API call for `WORKSPACE_IDLE_DAYS` (0 turns
collection off). What is due is read from the database each time (`last_active_at`), so a restart
loses nothing and several workers can run the loop: each deletion re-checks its conditions on the
locked row and commits on its own.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy import select

from console.core.timeutil import utcnow
from console.extensions import db
from console.workspaces.models import Workspace
from console.workspaces.services import delete_workspace

log = logging.getLogger(__name__)

DEFAULT_IDLE_DAYS = 30


def idle_after() -> timedelta | None:
    """How long a visitor workspace may sit unused, or None when collection is off."""
    days = float(current_app.config.get("WORKSPACE_IDLE_DAYS", DEFAULT_IDLE_DAYS))
    return timedelta(days=days) if days > 0 else None


def _collectable(cutoff: datetime):
    return (
        Workspace.kept.is_(False),
        Workspace.is_demo.is_(False),
        Workspace.last_active_at < cutoff,
    )


def collect_idle(now: datetime | None = None, *, limit: int = 100) -> list[uuid.UUID]:
    """Delete up to `limit` idle visitor workspaces, one transaction each; return their ids."""
    idle = idle_after()
    if idle is None:
        return []
    cutoff = (now or utcnow()) - idle
    candidates = list(
        db.session.scalars(
            select(Workspace.id).where(*_collectable(cutoff)).order_by(Workspace.last_active_at).limit(limit)
        )
    )
    db.session.rollback()
    deleted = []
    for workspace_id in candidates:
        try:
            if delete_workspace(workspace_id, *_collectable(cutoff)):
                deleted.append(workspace_id)
            db.session.commit()
        except Exception:
            db.session.rollback()
            log.exception("Could not collect idle workspace %s; trying again at the next run", workspace_id)
    if deleted:
        log.info("Collected %d idle workspace(s) unused for %s", len(deleted), idle)
    return deleted


class CollectionLoop:
    """Collect idle workspaces at start, then every `interval_seconds`."""

    name = "workspace-collection"
    interval_seconds = 3600.0

    def __init__(self, app: Flask) -> None:
        self.app = app

    def run_once(self) -> int:
        with self.app.app_context():
            try:
                total = 0
                while True:  # batches until nothing idle is left, so a backlog clears in one run
                    batch = collect_idle()
                    total += len(batch)
                    if len(batch) < 100:
                        return total
            except Exception:
                db.session.rollback()
                log.exception("Workspace collection failed; retrying at the next run")
                return 0
            finally:
                db.session.remove()

    def run_forever(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.run_once()
            stop.wait(self.interval_seconds)
