"""Run slots: at most `RUN_CONCURRENCY` requests run at once in a serving process, API calls first.

Why: a request spends most of its time in Python holding the GIL, so requests running side by side in
one process take turns on one core, and each turn costs a GIL hand-off; a request holding SQLite's write
gate also waited for the GIL between its statements while every writer waited for it (the gate was held
450 us per write with 8 threads per process, 290 us with 1). Measured with `python -m bench.api`: Granian's
own pool cut to 2 threads served GET 2,211 and POST 1,482 requests/s, 8 threads 1,911 and 1,089. Yet a
process needs many threads for requests that wait on something outside it (a webhook to arrive, a
listener's answer, a trainee's backend, a rate limit's reset): with 2 threads, two of those stall the
process for seconds. So the server keeps many threads (`--threads`) and this gate lets
`RUN_CONCURRENCY` of them run; a request that waits on something outside gives its slot back meanwhile
(`released`). Turns taken here cost most of the throughput gain back (a thread wakes twice: for
Granian, then for its turn); they keep a lower tail and the order below, which took the API's p99
under 48 page clients from 130-200 ms to 32-36 ms.

The slots are handed over in order of arrival (a release wakes exactly the next waiter; letting any
thread take a free slot made GET's p99 2.3 times worse), and API calls (`/v1` paths) and `/healthz` are
handed a slot before waiting console pages, so a room loading pages does not queue a customer's call
behind them. A request made from inside a running one (the console's in-process API calls) runs on its
caller's slot.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from console.modes import is_api_path

HEALTH_PATH = "/healthz"  # a load balancer's check is not queued behind pages either
_held = threading.local()  # .slots: the RunSlots this thread's request holds a slot of, if any


class RunSlots:
    """`size` slots, handed to waiting threads in order of arrival, preferred waiters first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._mutex = threading.Lock()
        self._waiting: dict[bool, deque[threading.Lock]] = {True: deque(), False: deque()}

    def acquire(self, preferred: bool = False) -> None:
        with self._mutex:
            if self._free and not self._waiting[True] and (preferred or not self._waiting[False]):
                self._free -= 1
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiting[preferred].append(turn)
        turn.acquire()  # released by the `release` that hands this thread its slot

    def release(self) -> None:
        with self._mutex:
            for preferred in (True, False):
                if self._waiting[preferred]:
                    self._waiting[preferred].popleft().release()  # the slot passes on directly
                    return
            self._free += 1

    def in_use(self) -> int:
        with self._mutex:
            return self.size - self._free


class RunSlotsMiddleware:
    """WSGI middleware: each request runs holding one of `slots` (API calls get theirs first)."""

    def __init__(self, app: Callable[..., Iterable[bytes]], slots: RunSlots) -> None:
        self.app = app
        self.slots = slots

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if getattr(_held, "slots", None) is not None:
            # A request made from inside one that runs (the console's in-process API calls): it runs on
            # its caller's slot; waiting for a second one could wait for good.
            return self.app(environ, start_response)
        path = environ.get("PATH_INFO", "")
        preferred = is_api_path(path) or path == HEALTH_PATH
        self.slots.acquire(preferred)
        _held.slots, _held.preferred = self.slots, preferred
        try:
            return self.app(environ, start_response)
        finally:
            _held.slots = None
            self.slots.release()


@contextlib.contextmanager
def released() -> Iterator[None]:
    """Give this request's run slot back while it waits on something outside the process."""
    slots = getattr(_held, "slots", None)
    if slots is None:  # not under the middleware (tests, the CLI, the worker), or given back already
        yield
        return
    preferred = _held.preferred
    _held.slots = None
    slots.release()
    try:
        yield
    finally:
        slots.acquire(preferred)
        _held.slots = slots
