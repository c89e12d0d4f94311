"""The background worker: scheduled tasks, webhook deliveries and collecting idle workspaces.

Each loop is a class built with the app (`Loop(app)`) whose `run_forever(stop)` returns once the
`stop` event is set and its in-flight work is done. Loops build their own app contexts and pass
ids, not ORM objects, between transactions.
"""

from __future__ import annotations

import importlib
import logging
import signal
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from flask import Flask

log = logging.getLogger(__name__)

# Dotted names, imported lazily so a loop's module is only loaded when a worker starts.
LOOPS = (
    "console.scheduler.worker.SchedulerLoop",
    "console.webhooks.worker.DeliveryLoop",
    "console.workspaces.collection.CollectionLoop",
)
JOIN_SECONDS = 30


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
    """Start the worker loops as daemon threads of this process (used by `console run`)."""
    return start(app, loops)


def run_forever(app: Flask, loops: Iterable[str] = LOOPS) -> None:
    """Run the worker loops in the foreground until SIGTERM/SIGINT (used by `console worker`)."""
    # A foreground process logs to stderr unless the host configured logging already (no-op then).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker = Worker()

    def request_stop(signum: int, _frame: object) -> None:
        log.info("Received %s; stopping after in-flight work", signal.Signals(signum).name)
        worker.stop_event.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    start(app, loops, daemon=False, worker=worker)
    log.info("Worker running: %s", ", ".join(t.name for t in worker.threads))
    # Waiting on the event (not join) keeps the main thread responsive to signals.
    while not worker.stop_event.wait(1.0):
        if not any(t.is_alive() for t in worker.threads):
            log.error("Every worker loop has exited; stopping")
            break
    worker.stop()
    log.info("Worker stopped")
