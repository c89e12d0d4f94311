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
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from console.modes import is_api_path

HEALTH_PATH = "/healthz"  # a load balancer's check is not queued behind pages either
# Not counted by the per-address page rate (`refuse`): static files, the inbox receiver (and /healthz, preferred).
UNCOUNTED_PREFIXES = ("/static/", "/inbox/")
RATE_CHECKED = "console.page_rate_checked"
_held = threading.local()  # .slots: the RunSlots this thread's request holds a slot of, if any


class RunSlots:
    """`size` slots, handed to waiting threads in order of arrival, preferred waiters first.

    Pages (waiters not preferred) hold at most `size - 1` slots at once (all of them when `size` is 1), so an
    API call or a health check never waits for a page to finish: at worst it shares the process with the
    pages that run. Waiting pages are queued per client address and served round-robin across addresses, so
    one address loading pages as fast as it can (a room behind one NAT, a bot) makes another visitor's page
    wait for at most one of its pages per turn, not for its whole queue.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.page_limit = size - 1 if size > 1 else size
        self._free = size
        self._pages = 0  # slots held by pages
        self._mutex = threading.Lock()
        self._preferred: deque[threading.Lock] = deque()
        # address -> its waiting pages; the address served last moves to the end (round-robin)
        self._pages_waiting: OrderedDict[str, deque[threading.Lock]] = OrderedDict()

    def acquire(self, preferred: bool = False, address: str = "") -> bool:
        """Take a slot, waiting for one's turn if none is free; True if it had to wait."""
        with self._mutex:
            if self._free and not self._preferred:
                if preferred:
                    self._free -= 1
                    return False
                if not self._pages_waiting and self._pages < self.page_limit:
                    self._free -= 1
                    self._pages += 1
                    return False
            turn = threading.Lock()
            turn.acquire()
            if preferred:
                self._preferred.append(turn)
            else:
                self._pages_waiting.setdefault(address, deque()).append(turn)
        turn.acquire()  # released by the `release` that hands this thread its slot
        return True

    def release(self, preferred: bool = False) -> None:
        with self._mutex:
            if not preferred:
                self._pages -= 1
            self._free += 1
            while self._free:
                if self._preferred:
                    turn = self._preferred.popleft()
                elif self._pages_waiting and self._pages < self.page_limit:
                    address, queue = self._pages_waiting.popitem(last=False)
                    turn = queue.popleft()
                    if queue:
                        self._pages_waiting[address] = queue  # its next page after the other addresses' next
                    self._pages += 1
                else:
                    return
                self._free -= 1
                turn.release()  # the slot passes on directly

    def in_use(self) -> int:
        with self._mutex:
            return self.size - self._free

    def queued(self) -> int:
        """How many threads wait for a slot."""
        with self._mutex:
            return len(self._preferred) + sum(len(q) for q in self._pages_waiting.values())


class RunSlotsMiddleware:
    """WSGI middleware: each request runs holding one of `slots` (API calls get theirs first)."""

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        slots: RunSlots,
        address_of: Callable[[dict[str, Any]], str] | None = None,
        refuse: Callable[[dict[str, Any], str], int | None] | None = None,
    ) -> None:
        self.app = app
        self.slots = slots
        # For a page request and its client address: None, or the seconds to wait (a 429 at once, no turn taken).
        self.refuse = refuse
        # Who sent a request (the console's client address, `TRUSTED_PROXIES` applied): pages queue per address.
        self.address_of = address_of or (lambda environ: environ.get("REMOTE_ADDR", ""))

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if getattr(_held, "slots", None) is not None or getattr(_held, "owed", None) is not None:
            # A request made from inside one that runs (the console's in-process API calls): it runs on
            # its caller's slot (or, in a write its caller began without one, on none); waiting for a
            # second one could wait for good.
            return self.app(environ, start_response)
        path = environ.get("PATH_INFO", "")
        preferred = is_api_path(path) or path == HEALTH_PATH
        address = "" if preferred else self.address_of(environ)
        if not preferred and self.refuse is not None and not path.startswith(UNCOUNTED_PREFIXES):
            wait = self.refuse(environ, address)
            environ[RATE_CHECKED] = True  # counted once: the page hooks do not count it again
            if wait is not None:
                content_type, body = page_refusal(environ, wait)
                headers = [("Content-Type", content_type), ("Retry-After", str(wait)),
                           ("Content-Length", str(len(body)))]  # fmt: skip
                start_response("429 Too Many Requests", headers)
                return [body]
        started = time.perf_counter()
        queued = ""
        if self.slots.acquire(preferred, address):
            # A request that waited for its turn says so, and how long: what tests and operators tell a queue
            # behind pages by, not by timing.
            queued = f'runslot;desc="queued";dur={(time.perf_counter() - started) * 1000:.1f}, '
        start_response = _with_timing(start_response, queued)
        _held.slots, _held.preferred, _held.address = self.slots, preferred, address
        try:
            return self.app(environ, start_response)
        finally:
            held, _held.slots, _held.owed = _held.slots, None, None
            if held is not None:  # not if it ended in a write it began without its slot (`give_back`)
                self.slots.release(preferred)


REFUSAL_TEXT = "Too many console requests from your address; try again in {wait} s.\n"
# A browser loading a page: words instead of a line of text, and the page loads again by itself (a meta refresh:
# no script, so the CSP has nothing to refuse), so a stage on a projector recovers without anyone at the keys.
REFUSAL_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<meta http-equiv="refresh" content="{wait}"><title>One moment · Payroll Connect console</title>'
    '<link rel="stylesheet" href="{root}/static/console.css"></head><body><main id="main">'
    '<h1>One moment</h1><p class="callout" role="status">Many console requests are coming from your address '
    "(another browser or program on this machine or network), so the console is pacing them. This page loads "
    "again by itself in {wait} s.</p></main></body></html>"
)


def page_refusal(environ: dict[str, Any], wait: int) -> tuple[str, bytes]:
    """The per-address page rate's 429 body and its content type: a short page that reloads itself after
    `wait` seconds for a browser loading a page (`Sec-Fetch-Dest: document`), else one line of text (htmx
    swaps, the stage's own requests, Link's frame and scripts read it as it always was). Built without
    Flask: a flood's refusals must cost next to nothing."""
    if environ.get("HTTP_SEC_FETCH_DEST") == "document":
        root = environ.get("SCRIPT_NAME", "").rstrip("/")
        return "text/html; charset=utf-8", REFUSAL_PAGE.format(wait=int(wait), root=root).encode()
    return "text/plain; charset=utf-8", REFUSAL_TEXT.format(wait=int(wait)).encode()


def _with_timing(start_response: Callable[..., Any], queued: str) -> Callable[..., Any]:
    """Every answer says what its request cost the server (`Server-Timing`, as browsers' developer tools show
    it): `app`, the wall time from its turn to its answer's head, and `cpu`, the CPU this thread spent on it,
    after a `runslot` entry when it waited for its turn. What a slow answer's time was spent on: the app's
    work (`cpu` near `app`), a wait inside it (a lock, the GIL, the database: `app` well above `cpu`), its
    turn (`runslot`), or outside the app altogether (the client's time well above all of them: the server's
    HTTP layer, the GIL before the app is called, the network; `python -m bench.neighbours` splits a
    quiet tenant's calls this way)."""
    began, cpu_began = time.perf_counter(), time.thread_time()

    def with_timing(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        app_ms, cpu_ms = (time.perf_counter() - began) * 1000, (time.thread_time() - cpu_began) * 1000
        timing = f"{queued}app;dur={app_ms:.1f}, cpu;dur={cpu_ms:.1f}"
        return start_response(status, [*headers, ("Server-Timing", timing)], exc_info)

    return with_timing


@contextlib.contextmanager
def released() -> Iterator[None]:
    """Give this request's run slot back while it waits on something outside the process."""
    slots = getattr(_held, "slots", None)
    if slots is None:  # not under the middleware (tests, the CLI, the worker), or given back already
        yield
        return
    preferred, address = _held.preferred, _held.address
    _held.slots = None
    slots.release(preferred)
    try:
        yield
    finally:
        slots.acquire(preferred, address)
        _held.slots = slots


@contextlib.contextmanager
def released_by_api_call() -> Iterator[None]:
    """`released`, for an API call only (waiting at the database's write gate). A page keeps its slot: to
    resume, it would queue behind the other waiting pages while holding what it waited for."""
    if getattr(_held, "slots", None) is None or not _held.preferred:
        yield
        return
    with released():
        yield


class Owed:
    """A run slot an API call gave back to wait at the database's write gate, and takes back after it."""

    def __init__(self, slots: RunSlots, preferred: bool, address: str) -> None:
        self.slots, self.preferred, self.address = slots, preferred, address
        self.thread = threading.get_ident()


def give_back() -> Owed | None:
    """For an API call about to wait at the write gate: give its run slot back (None if it holds none, or is a page).

    It does not take the slot back when the gate is its own (`take_back`, once it has left the gate): the gate's
    holder waiting for a slot held every writer of every process behind the slot's whole queue, that is behind
    every request waiting in this process (`bench.neighbours` stalls: a serving process's 28 requests queued for
    its 2 slots, none running, while the one thread holding the gate and the file lock waited among them). So a
    write that had to wait runs to its commit without a slot: at most one thread per process more than
    `RUN_CONCURRENCY` (the gate is one writer per process), for the length of one transaction.
    """
    slots = getattr(_held, "slots", None)
    if slots is None or not _held.preferred:
        return None
    owed = Owed(slots, _held.preferred, _held.address)
    _held.slots, _held.owed = None, owed
    slots.release(owed.preferred)
    return owed


def take_back(owed: Owed | None) -> None:
    """Take back the slot `give_back` gave (after the gate is left). Only on the thread that gave it: the
    gate may be left elsewhere (a pool's event); that request then runs its last steps without a slot."""
    if owed is None or owed.thread != threading.get_ident() or getattr(_held, "owed", None) is not owed:
        return
    _held.owed = None
    owed.slots.acquire(owed.preferred, owed.address)
    _held.slots = owed.slots
