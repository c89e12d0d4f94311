"""`stop_when_orphaned`: a process `console run`'s master started stops itself once that master is gone.

Why: a master killed outright (SIGKILL, the kernel's OOM killer) cannot stop what it started. Its serving
processes went on answering on the port (measured: `/healthz` answered 200 six seconds after the master's
SIGKILL) and its worker went on running; a `console run` started next binds the same port beside them
(`SO_REUSEPORT`), so requests would be split between the old code and the new. Each such process watches its
parent once a second and, when the parent is no longer the one that started it, sends itself SIGTERM: the
master's own way of stopping it, so requests in flight finish and the worker's current step ends cleanly.

Not `prctl(PR_SET_PDEATHSIG)`: Linux-only (through ctypes), and it fires when the *thread* that started the
process exits, not the process (the worker is started from the master's supervision thread). A look at the
parent once a second costs nothing and needs only `os.getppid`.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

log = logging.getLogger(__name__)

# Set by the master in the worker process's environment: the pid the worker must outlive no longer than ~1 s.
MASTER_PID_ENV = "CONSOLE_MASTER_PID"
CHECK_SECONDS = 1.0


def stop_when_orphaned(parent: int, every: float = CHECK_SECONDS) -> threading.Thread:
    """Watch (on a daemon thread) for this process's parent to stop being `parent`; then SIGTERM ourselves."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        log.warning(
            "The process that started this one (pid %d) is gone: stopping (pid %d)", parent, os.getpid()
        )
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="orphan-watch", daemon=True)
    thread.start()
    return thread


def master_from_environment() -> int | None:
    """The master's pid `console run` put in this process's environment, or None (started some other way)."""
    value = os.environ.get(MASTER_PID_ENV, "")
    return int(value) if value.isdigit() else None
