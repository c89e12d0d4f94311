"""Capping the request log per workspace: the worker deletes a workspace's oldest rows past `REQUEST_LOG_KEEP`.

Without a cap the log grew with every API call until the whole workspace was collected (a noisy tenant's
minute of calls cost the database ~11 MB). Now each workspace keeps its `REQUEST_LOG_KEEP` newest rows (0: no
cap), plus, for each console step (`RequestLogEntry.step`), its newest row and its newest 2xx row: the pages
that show a step's last exchange (`latest`) or tick it off once it succeeded (`succeeded`) keep working however
many calls came after. The deletes go in batches of `PRUNE_BATCH` rows, one transaction each
(`console.db.capping`), so the SQLite write gate is held for one batch at a time and request writers get
their turn in between; the usage counts (`KeyUsageDay`) are kept whole.
"""

from __future__ import annotations

import logging
import threading
import uuid

from flask import Flask, current_app
from sqlalchemy import select

from console.db import capping
from console.extensions import db
from console.requestlog.models import RequestLogEntry

log = logging.getLogger(__name__)

DEFAULT_KEEP = 10_000
# Rows deleted per transaction: a few milliseconds of the write gate on SQLite.
PRUNE_BATCH = 500


def keep_per_workspace() -> int:
    """How many rows each workspace keeps (its newest); 0 when the log is not capped."""
    return max(0, int(current_app.config.get("REQUEST_LOG_KEEP", DEFAULT_KEEP)))


def _spared(workspace_id: uuid.UUID) -> set[uuid.UUID]:
    """Each console step's newest row and newest 2xx row: what `latest` and `succeeded` read."""
    steps = db.session.scalars(
        select(RequestLogEntry.step)
        .where(RequestLogEntry.workspace_id == workspace_id, RequestLogEntry.step != "")
        .distinct()
    ).all()
    spared: set[uuid.UUID] = set()
    newest = (RequestLogEntry.created_at.desc(), RequestLogEntry.id.desc())
    for step in steps:
        of_step = (RequestLogEntry.workspace_id == workspace_id, RequestLogEntry.step == step)
        for extra in ((), (RequestLogEntry.status >= 200, RequestLogEntry.status < 300)):
            found = db.session.scalars(
                select(RequestLogEntry.id).where(*of_step, *extra).order_by(*newest).limit(1)
            ).first()
            if found is not None:
                spared.add(found)
    return spared


def prune_workspace(workspace_id: uuid.UUID, keep: int, *, batch: int = PRUNE_BATCH) -> int:
    """Delete the workspace's rows older than its `keep` newest (sparing each step's last ones), `batch`
    rows a transaction; return how many went."""
    return capping.delete_older(
        RequestLogEntry,
        RequestLogEntry.workspace_id,
        workspace_id,
        at=RequestLogEntry.created_at,
        keep=keep,
        batch=batch,
        spared=_spared(workspace_id),
    )


def prune(*, batch: int = PRUNE_BATCH) -> int:
    """One pass over every workspace past the cap; how many rows went."""
    keep = keep_per_workspace()
    if not keep:
        return 0
    workspaces = capping.over_cap(RequestLogEntry.workspace_id, keep)
    db.session.rollback()
    total = 0
    for workspace_id in workspaces:
        try:
            total += prune_workspace(workspace_id, keep, batch=batch)
        except Exception:
            db.session.rollback()
            log.exception(
                "Could not prune the request log of workspace %s; trying again at the next pass", workspace_id
            )
    if total:
        log.info("Pruned %d request log rows past %d per workspace", total, keep)
    return total


class PruneLoop:
    """A worker loop: cap every workspace's request log at start, then every `interval_seconds`."""

    name = "request-log-pruning"
    interval_seconds = 60.0

    def __init__(self, app: Flask) -> None:
        self.app = app

    def run_once(self) -> int:
        with self.app.app_context():
            try:
                return prune()
            except Exception:  # a database hiccup must not kill the loop; the rows are still there next pass
                db.session.rollback()
                log.exception("Request log pruning failed; retrying at the next pass")
                return 0
            finally:
                db.session.remove()

    def run_forever(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.run_once()
            stop.wait(self.interval_seconds)
