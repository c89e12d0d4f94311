"""The sweep loop: deletes Idempotency-Key records past their 24 hours."""

from __future__ import annotations

import logging
import threading

from flask import Flask

from console.db.outages import Outage
from console.extensions import db
from console.idempotency.services import SWEEP_BATCH, delete_expired

log = logging.getLogger(__name__)


class SweepLoop:
    """Every minute, delete expired records (a request finding an expired key frees it itself too)."""

    name = "idempotency-sweep"
    poll_seconds = 60.0
    batch = SWEEP_BATCH

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.outage = Outage(log, "Idempotency sweep")

    def run_once(self) -> int:
        """Delete what has expired, in a fresh app context; return how many rows went."""
        with self.app.app_context():
            swept = 0
            try:
                # One transaction per batch, so a large backlog never holds a long write lock.
                while True:
                    deleted = delete_expired(self.batch)
                    db.session.commit()
                    swept += deleted
                    if deleted < self.batch:
                        break
                self.outage.answered()
            except Exception:
                # A database hiccup must not kill the loop; the rows are still expired at the next pass.
                db.session.rollback()
                self.outage.failed("at the next pass")
            finally:
                db.session.remove()
        if swept:
            log.info("Swept %d expired Idempotency-Key records", swept)
        return swept

    def run_forever(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.run_once()
            stop.wait(self.poll_seconds)
