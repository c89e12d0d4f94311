"""Keeping an owner's newest N rows of a table: the worker's caps per workspace (request log, inbox, events).

A `Cap` describes one (its table, order, setting, batch size and what it spares) and runs its passes;
`CapLoop` is the worker loop that runs a cap's pass every minute. `over_cap` finds the owners past the cap (one
grouped read); `cap_every_owner` runs one pass over them (one owner's failure logged and left for the next
pass); `delete_older` deletes one owner's rows older than its N newest, `batch` rows a transaction, committing
after each, so the SQLite write gate is held for one batch at a time and other writers get their turn in
between. Order is (time, id), newest first, as the pages that list these rows read them. Works the same on
SQLite and PostgreSQL (a LIMITed subquery in the DELETE).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from flask import current_app
from sqlalchemy import and_, delete, func, or_, select

from console.db.outages import Outage
from console.extensions import db

log = logging.getLogger(__name__)


def over_cap(owner: Any, keep: int) -> list[uuid.UUID]:
    """The owners (values of the `owner` column) with more than `keep` rows."""
    return list(db.session.scalars(select(owner).group_by(owner).having(func.count() > keep)))


def delete_older(
    model: Any,
    owner: Any,
    owner_id: uuid.UUID,
    *,
    at: Any,
    keep: int,
    batch: int,
    spared: Iterable[uuid.UUID] = (),
    unless: Any = None,
) -> int:
    """Delete `owner_id`'s rows older than its `keep` newest by (`at`, id), except the `spared` ids and the rows
    `unless` (a condition on the row, checked by each batch's DELETE itself, at the moment it deletes) holds
    for, `batch` rows a transaction; return how many went. Ends the session's transaction first and commits
    each batch."""
    ident = model.id
    oldest_kept = db.session.execute(
        select(at, ident).where(owner == owner_id).order_by(at.desc(), ident.desc()).offset(keep - 1).limit(1)
    ).first()
    db.session.rollback()  # end the reads: no transaction is left open between the batches
    if oldest_kept is None:
        return 0
    moment, last_id = oldest_kept
    older = [owner == owner_id, or_(at < moment, and_(at == moment, ident < last_id))]
    spared = set(spared)
    if spared:
        older.append(ident.not_in(spared))
    if unless is not None:
        older.append(~unless)
    deleted_total = 0
    while True:
        chunk = select(ident).where(*older).order_by(at, ident).limit(batch)
        deleted = db.session.execute(
            delete(model).where(ident.in_(chunk)).execution_options(synchronize_session=False)
        ).rowcount
        db.session.commit()  # hands the write gate back: other writers go between two batches
        deleted_total += deleted
        if deleted < batch:
            return deleted_total
        time.sleep(0)  # and the GIL, to this process's other threads


def cap_every_owner(owner: Any, keep: int, cap_one: Callable[[uuid.UUID], int], what: str) -> int:
    """One pass: `cap_one(owner_id)` for each owner with more than `keep` rows (none when `keep` is 0); how
    many rows went. An owner that fails is logged and tried again at the next pass; the others go on."""
    if not keep:
        return 0
    owners = over_cap(owner, keep)
    db.session.rollback()
    total = 0
    for owner_id in owners:
        try:
            total += cap_one(owner_id)
        except Exception:
            db.session.rollback()
            log.exception(
                "Could not cap the %s of workspace %s; trying again at the next pass", what, owner_id
            )
    if total:
        log.info("Deleted %d %s past %d per workspace", total, what, keep)
    return total


@dataclass(frozen=True)
class Cap:
    """One table capped per workspace: each workspace keeps its newest `app.config[setting]` rows (`default`
    when unset; 0: no cap) by (`at`, id), deleted `batch` a transaction. `spared(workspace_id)` names rows
    kept whatever their age (read once per workspace and pass); `unless()` is a condition on the row that
    each batch's DELETE checks as it deletes."""

    model: Any
    at: Any
    setting: str
    default: int
    batch: int
    what: str  # what it caps, for the log
    spared: Callable[[uuid.UUID], set[uuid.UUID]] | None = None
    unless: Callable[[], Any] | None = None

    def keep(self) -> int:
        """How many rows each workspace keeps (its newest); 0 when the table is not capped."""
        return max(0, int(current_app.config.get(self.setting, self.default)))

    def cap_workspace(self, workspace_id: uuid.UUID, keep: int, *, batch: int | None = None) -> int:
        """Delete the workspace's rows older than its `keep` newest (but the spared ones); how many went."""
        return delete_older(
            self.model,
            self.model.workspace_id,
            workspace_id,
            at=self.at,
            keep=keep,
            batch=batch or self.batch,
            spared=self.spared(workspace_id) if self.spared else (),
            unless=self.unless() if self.unless else None,
        )

    def prune(self, *, batch: int | None = None) -> int:
        """One pass over every workspace past the cap; how many rows went."""
        keep = self.keep()
        return cap_every_owner(
            self.model.workspace_id,
            keep,
            lambda workspace_id: self.cap_workspace(workspace_id, keep, batch=batch),
            self.what,
        )


class CapLoop:
    """A worker loop (`console.worker.LOOPS`) that runs its cap's pass at start, then every `interval_seconds`."""

    name = ""
    cap: Cap
    interval_seconds = 60.0

    def __init__(self, app: Any) -> None:
        self.app = app
        self.outage = Outage(log, f"Capping the {self.cap.what}")

    def prune(self) -> int:
        return self.cap.prune()

    def run_once(self) -> int:
        with self.app.app_context():
            try:
                pruned = self.prune()
                self.outage.answered()
                return pruned
            except Exception:  # a database hiccup must not kill the loop; the rows are still there next pass
                db.session.rollback()
                self.outage.failed("at the next pass")
                return 0
            finally:
                db.session.remove()

    def run_forever(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.run_once()
            stop.wait(self.interval_seconds)
