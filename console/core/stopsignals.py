"""`stop_on_signals`: a `threading.Event` set when SIGINT or SIGTERM arrives, never from the signal handler.

Why: Python runs a signal handler in the main thread between two of its bytecodes, which can be inside
`Event.wait` or `Event.set` while they hold the event's lock, or inside another handler. A handler that
set the event itself then waits for a lock its own thread holds, forever: a quick double Ctrl-C (or
Ctrl-C's SIGINT and a supervisor's SIGTERM together) could hang the process (seen in the worker, under
`console run`). Here the handler does nothing: Python's C-level handler writes each signal's number to a
wakeup pipe (`signal.set_wakeup_fd`), and a daemon thread reading the pipe sets the event, like any other
thread would. Used by `console worker`, `console listen` and the standalone delivery worker.
"""

from __future__ import annotations

import os
import signal
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_on_signals(
    event: threading.Event | None = None, received: list[int] | None = None
) -> threading.Event:
    """An event set (by a helper thread) at the first SIGINT or SIGTERM; call from the main thread.

    `received`, if given, gets each signal's number appended before the event is set (for a log line).
    """
    stop = event if event is not None else threading.Event()
    read, write = os.pipe()
    os.set_blocking(write, False)  # set_wakeup_fd's requirement: a full pipe must never block a signal
    for signum in STOP_SIGNALS:
        signal.signal(signum, _noted_by_the_wakeup_pipe)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def relay() -> None:
        while signum := os.read(read, 1):  # one byte per signal received: its number
            if received is not None:
                received.append(signum[0])
            stop.set()

    threading.Thread(target=relay, name="stop-signals", daemon=True).start()
    return stop


def _noted_by_the_wakeup_pipe(_signum: int, _frame: object) -> None:
    """Nothing to do here: the wakeup pipe already carries the signal to the relay thread."""
