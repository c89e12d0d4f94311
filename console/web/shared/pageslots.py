"""At most `CONSOLE_PAGE_CONCURRENCY` console pages run at once in a serving process; API calls never wait here.

Why: a room loading console pages as fast as it can keeps every request thread of a process busy in
Python, and CPython hands the GIL round the runnable threads in 5 ms slices, so a customer's API call in
the same process waited a whole round at each of its GIL hand-offs (each database call, each socket
write): measured under gunicorn, an API p99 of 580 ms under 48 page clients. Pages past the cap wait on
a semaphore, where they do not compete for the GIL; the API call then shares its process with the few
pages that run. The pages' own throughput does not drop: they were bound by the CPU already. Under
Granian (`console run` now), the cap still halves the API's p99 under that crowd (measured 130-145 ms
against 170-320 ms uncapped); what remains is the API call's wait for one of the process's threads.

Not capped: API paths (a customer's calls, and the console's own in-process calls, made from inside a page
that holds its slot), `/healthz` (load balancers), static files and the inbox receiver (the worker's
deliveries). A page that sleeps (waiting for an event, or out a rate limit) gives its slot back meanwhile
(`slot_released`). A page that cannot get a slot within `PAGE_WAIT_SECONDS` gets the 503 page.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from flask import Flask, g, has_request_context, render_template, request

from console import runslots
from console.modes import is_api_path
from console.web.shared import throttle
from console.webhooks import dns

PAGE_WAIT_SECONDS = 30
RETRY_AFTER_SECONDS = 2
UNCAPPED_ENDPOINTS = frozenset({"static", "health.healthz", "console.inbox_receive"})
_SLOT = "_console_page_slot"


def init_app(app: Flask) -> None:
    slots = threading.BoundedSemaphore(int(app.config["CONSOLE_PAGE_CONCURRENCY"]))
    # A page waiting for a webhook host's DNS gives its page slot back too, not only its run slot.
    app.extensions[dns.WAITING_OUTSIDE] = slot_released

    @app.before_request
    def take_slot():
        if is_api_path(request.path) or request.endpoint in UNCAPPED_ENDPOINTS:
            return None
        wait = throttle.page_wait()  # before any wait or rendering: a flood's refusals cost next to nothing
        if wait is not None:
            content_type, body = runslots.page_refusal(request.environ, wait)
            return body, 429, {"Retry-After": str(wait), "Content-Type": content_type}
        if not slots.acquire(timeout=PAGE_WAIT_SECONDS):
            page = render_template(
                "unavailable.html",
                message="The console is busy right now. Try again in a few seconds.",
                retry_after=RETRY_AFTER_SECONDS,
            )
            return page, 503, {"Retry-After": str(RETRY_AFTER_SECONDS)}
        setattr(g, _SLOT, slots)
        return None

    @app.teardown_request
    def give_slot_back(_error: BaseException | None) -> None:
        taken = g.pop(_SLOT, None)
        if taken is not None:
            taken.release()


@contextlib.contextmanager
def slot_released() -> Iterator[None]:
    """Let another page run while this one sleeps (its page slot and its run slot); it waits for both again
    afterwards."""
    slots = g.get(_SLOT) if has_request_context() else None
    if slots is None:
        with runslots.released():
            yield
        return
    slots.release()
    try:
        with runslots.released():
            yield
    finally:
        slots.acquire()
