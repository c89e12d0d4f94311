"""The scheduler loop: runs due scheduled tasks until told to stop."""

from __future__ import annotations

import logging
import threading

from flask import Flask

from console.db.outages import Outage
from console.extensions import db
from console.scheduler.services import run_due

log = logging.getLogger(__name__)


class SchedulerLoop:
    """Poll for due tasks and run them, each in its own transaction."""

    name = "scheduler"
    poll_seconds = 0.25
    batch = 50

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.outage = Outage(log, "Scheduler batch")

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Run one batch of due tasks in a fresh app context; return how many ran."""
        with self.app.app_context():
            try:
                ran = len(run_due(limit=self.batch, stop=stop))
                self.outage.answered()
                return ran
            except Exception:
                # A database hiccup must not kill the loop; unclaimed tasks stay pending for the next poll.
                db.session.rollback()
                self.outage.failed("at the next poll")
                return 0
            finally:
                db.session.remove()

    def run_forever(self, stop: threading.Event) -> None:
        """Run batches until `stop` is set; the batch in flight finishes its current task first."""
        while not stop.is_set():
            # A full batch means more may be waiting: go again without sleeping.
            if self.run_once(stop) < self.batch:
                stop.wait(self.poll_seconds)
