"""Collecting idle visitor workspaces: the worker deletes them with everything they own.

A workspace is collected when it is not the demo workspace and has seen no console visit or API call for
- `WORKSPACE_IDLE_DAYS` (30; 0 turns this off), when it is not kept (an anonymous console visitor's, never
  named, or a trainee's once their class is archived);
- `WORKSPACE_NAMED_IDLE_DAYS` (365; 0 turns this off), when a visitor named it in the console ("Keep this
  workspace"). Naming is free and a bot can name what it creates, so a named workspace is an anonymous thing
  too and needs a lifecycle; a longer one, as someone came back to it on purpose.
Workspaces an operator made (the CLI's, the demo workspace, a running class's trainees') are never collected.
What is due is read from the database each time (`last_active_at`), so a restart loses nothing and several
workers can run the loop: each deletion re-checks its conditions on the locked row and commits on its own.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy import and_, or_, select

from console.core.timeutil import utcnow
from console.extensions import db
from console.workspaces.models import Workspace
from console.workspaces.services import delete_workspace

log = logging.getLogger(__name__)

DEFAULT_IDLE_DAYS = 30
DEFAULT_NAMED_IDLE_DAYS = 365


def _days(setting: str, default: float) -> timedelta | None:
    days = float(current_app.config.get(setting, default))
    return timedelta(days=days) if days > 0 else None


def idle_after() -> timedelta | None:
    """How long an unnamed visitor workspace may sit unused, or None when its collection is off."""
    return _days("WORKSPACE_IDLE_DAYS", DEFAULT_IDLE_DAYS)


def named_idle_after() -> timedelta | None:
    """How long a workspace named in the console may sit unused, or None when its collection is off."""
    return _days("WORKSPACE_NAMED_IDLE_DAYS", DEFAULT_NAMED_IDLE_DAYS)


def _collectable(now: datetime):
    """The condition on a workspace row that makes it due, or None when no collection is on."""
    due = []
    if (idle := idle_after()) is not None:
        due.append(and_(Workspace.kept.is_(False), Workspace.last_active_at < now - idle))
    if (named_idle := named_idle_after()) is not None:
        due.append(and_(Workspace.named_in_console.is_(True), Workspace.last_active_at < now - named_idle))
    if not due:
        return None
    return and_(Workspace.is_demo.is_(False), or_(*due))


def collect_idle(now: datetime | None = None, *, limit: int = 100) -> list[uuid.UUID]:
    """Delete up to `limit` idle visitor workspaces, one transaction each; return their ids."""
    collectable = _collectable(now or utcnow())
    if collectable is None:
        return []
    candidates = list(
        db.session.scalars(
            select(Workspace.id).where(collectable).order_by(Workspace.last_active_at).limit(limit)
        )
    )
    db.session.rollback()
    deleted = []
    for workspace_id in candidates:
        try:
            if delete_workspace(workspace_id, collectable):
                deleted.append(workspace_id)
            db.session.commit()
        except Exception:
            db.session.rollback()
            log.exception("Could not collect idle workspace %s; trying again at the next run", workspace_id)
    if deleted:
        log.info("Collected %d idle workspace(s)", len(deleted))
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
