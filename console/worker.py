"""The background worker: scheduled tasks, webhook deliveries, the sweep of expired Idempotency-Keys,
collecting idle workspaces, capping each workspace's request log and inbox, and (on SQLite) checkpointing the write-ahead log.

Each loop is a class built with the app (`Loop(app)`) whose `run_forever(stop)` returns once the
`stop` event is set and its in-flight work is done. Loops build their own app contexts and pass
ids, not ORM objects, between transactions.

`console worker` (and the worker process `console run` supervises) runs `run_forever`: the loops as
threads, plus a heartbeat in the database every few seconds while all of them are alive (`/healthz`
reads it). `start_in_process` runs the loops as threads of the caller (tests, screenshots).
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from flask import Flask

from console.core.stopsignals import stop_on_signals
from console.db.outages import Outage

log = logging.getLogger(__name__)

# Dotted names, imported lazily so a loop's module is only loaded when a worker starts.
LOOPS = (
    "console.scheduler.loop.SchedulerLoop",
    "console.webhooks.delivery_loop.DeliveryLoop",
    "console.conformance.runs.RunLoop",
    "console.idempotency.sweep_loop.SweepLoop",
    "console.workspaces.collection.CollectionLoop",
    "console.requestlog.pruning.PruneLoop",
    "console.web.webhooks.inbox_pruning.InboxPruneLoop",
    "console.events.pruning.EventPruneLoop",
    "console.db.sqlite.CheckpointLoop",
)
JOIN_SECONDS = 30
# How often the foreground worker looks at its loops and heartbeat (a stop signal wakes it at once).
STOP_POLL_SECONDS = 0.1


def load_loop(dotted: str) -> type:
    """The loop class named `module.Class`, with a clear error when its module does not exist."""
    module_name, _, class_name = dotted.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only the loop's own module (or its package) missing means "not there yet"; re-raise anything else.
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise RuntimeError(
                f"Worker loop {dotted} is not available: module {module_name} does not exist."
            ) from exc
        raise
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise RuntimeError(
            f"Worker loop {dotted} is not available: {module_name} has no {class_name}."
        ) from None


@dataclass
class Worker:
    """Running loops: their threads and the event that stops them."""

    stop_event: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def stop(self, timeout: float = JOIN_SECONDS) -> None:
        """Ask every loop to stop and wait for them to finish their in-flight work."""
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("Worker loop %s did not stop within %s s", thread.name, timeout)


def start(
    app: Flask, loops: Iterable[str] = LOOPS, *, daemon: bool = True, worker: Worker | None = None
) -> Worker:
    """Start one thread per loop and return the handle that stops them."""
    classes = [load_loop(dotted) for dotted in loops]  # every import fails before any thread starts
    worker = worker or Worker()
    for cls in classes:
        thread = threading.Thread(
            target=cls(app).run_forever,
            args=(worker.stop_event,),
            name=f"worker-{cls.__name__}",
            daemon=daemon,
        )
        thread.start()
        worker.threads.append(thread)
    return worker


def start_in_process(app: Flask, loops: Iterable[str] = LOOPS) -> Worker:
    """Start the worker loops as daemon threads of this process (tests and screenshots)."""
    return start(app, loops)


class Heartbeat:
    """Writes this process's heartbeat row every `HEARTBEAT_SECONDS` (a failed write is logged, not fatal)."""

    def __init__(self, app: Flask) -> None:
        from console.health.services import new_worker_id

        self.app = app
        self.worker_id = new_worker_id()
        self._next = 0.0
        self.outage = Outage(log, "Writing the worker heartbeat")

    def maybe_beat(self) -> None:
        from console.health.services import HEARTBEAT_SECONDS, beat

        if time.monotonic() < self._next:
            return
        self._next = time.monotonic() + HEARTBEAT_SECONDS
        failed = self._write(beat)
        # Like the loops: a database outage is a line at its start, one a minute and one at its end. The
        # heartbeat logged its whole traceback every 5 s (1,600 lines of log in a 67 s outage).
        if failed is None:
            self.outage.answered()
        else:
            self.outage.failed(f"in {HEARTBEAT_SECONDS:g} s", failed)

    def forget(self) -> None:
        """Remove this worker's heartbeat (a clean stop): `/healthz` no longer counts it as running."""
        from console.health.services import forget

        if self._write(forget) is not None:
            log.warning("Could not remove the worker heartbeat; /healthz shows it until it is stale")

    def _write(self, change: Callable[[str], object]) -> Exception | None:
        """Apply `change(worker_id)` and commit, in a session of its own; the error if it failed (rolled back)."""
        from console.extensions import db

        with self.app.app_context():
            try:
                change(self.worker_id)
                db.session.commit()
                return None
            except Exception as error:
                db.session.rollback()
                return error
            finally:
                db.session.remove()


def run_forever(app: Flask, loops: Iterable[str] = LOOPS) -> int:
    """Run the worker loops in the foreground until SIGTERM/SIGINT (used by `console worker`).

    Returns the exit status: 0 after a requested stop, 1 when a loop died on its own (so a supervisor
    restarts the whole worker rather than keep a half-working one).
    """
    # A foreground process logs to stderr unless the host configured logging already (no-op then).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker = Worker()
    # Set by a helper thread, never by a signal handler (see console.core.stopsignals): a handler that set
    # the event itself deadlocked when `console run`'s Ctrl-C (SIGINT) and the master's SIGTERM came
    # together, the second running inside the first one's `Event.set`.
    received: list[int] = []
    stop = stop_on_signals(received=received)
    start(app, loops, daemon=False, worker=worker)
    # As in a serving process: the app and the loops' modules out of the collector's reach, so that a full
    # collection walks only what the loops made since.
    from console.serving import settle_heap

    settle_heap()
    heartbeat = Heartbeat(app)
    log.info("Worker running (pid %s): %s", os.getpid(), ", ".join(t.name for t in worker.threads))
    status = 0
    while not stop.wait(STOP_POLL_SECONDS):
        if not all(t.is_alive() for t in worker.threads):
            dead = [t.name for t in worker.threads if not t.is_alive()]
            log.error("Worker loop %s exited on its own; stopping the worker", ", ".join(dead))
            status = 1
            break
        heartbeat.maybe_beat()
    for signum in dict.fromkeys(received):  # each kind once: Ctrl-C under `console run` brings two or three
        log.info("Received %s; stopping after in-flight work", signal.Signals(signum).name)
    worker.stop()
    heartbeat.forget()
    log.info("Worker stopped")
    return status
