"""A webhook host's DNS lookup, with a deadline and a share per workspace.

Why: a webhook's host is resolved when the webhook is registered or changed, on a serving thread (the
API's `POST`/`PUT /v1/webhooks`, the console's webhook forms). Its DNS servers are the tenant's to choose,
and a lookup (`getaddrinfo`) cannot be interrupted: a zone that answers slowly, or never, held the thread
for the resolver's own timeouts (glibc's defaults: 5 s a try, 2 tries a server, up to 3 servers) and,
meanwhile, one of its process's run slots, so a few such requests stalled every tenant's calls in that
process. Now each lookup runs on a thread of its own; the caller waits at most `timeout` seconds, giving
its run slot back meanwhile (`console.runslots.released`), and a name that has not resolved by then is
refused as not resolving in time. A lookup given up on keeps its thread until the resolver gives up, so at
most `PER_OWNER` lookups of one workspace run at once, those given up on included: a tenant's slow zone
costs threads of its own share, and its next registration is told to try again, never queued.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager

from flask import current_app, has_app_context

from console import runslots

PER_OWNER = 2  # lookups of one workspace running at once (given-up ones included)
DEFAULT_TIMEOUT = 3.0  # seconds a caller waits for an answer (`WEBHOOK_DNS_SECONDS`)


class TooSlow(Exception):
    """The name did not resolve within the deadline."""


class TooMany(Exception):
    """This owner already has `PER_OWNER` lookups running."""


# app.extensions[WAITING_OUTSIDE]: what a request gives back while it waits (`runslots.released` by default);
# the console's pages hold a page slot as well, and `console.web.shared.pageslots.init_app` wires its
# `slot_released`, which gives back both (this package cannot import the web layer).
WAITING_OUTSIDE = "waiting_outside"

_running: Counter[str] = Counter()  # owner -> its lookups running now
_mutex = threading.Lock()


def lookup(resolve: Callable[[], list[str]], owner: str, timeout: float) -> list[str]:
    """`resolve()`'s answer (or its exception) if it comes within `timeout` seconds, on a thread of its own.

    Raises `TooSlow` past the deadline and `TooMany` when `owner` has `PER_OWNER` lookups running. An empty
    owner (the worker's delivery-time check: its senders are shared per workspace already) has a deadline
    and no cap.
    """
    with _mutex:
        if owner and _running[owner] >= PER_OWNER:
            raise TooMany
        _running[owner] += 1
    answer: list[list[str]] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            answer.append(resolve())
        except BaseException as exc:  # handed to the caller, who decides
            failure.append(exc)
        finally:
            with _mutex:
                _running[owner] -= 1
                if not _running[owner]:
                    del _running[owner]
            done.set()

    threading.Thread(target=run, name="webhook-dns", daemon=True).start()
    with _waiting_outside():  # a serving thread's turn runs another request meanwhile
        finished = done.wait(timeout)
    if not finished:
        raise TooSlow
    if failure:
        raise failure[0]
    return answer[0]


def _waiting_outside() -> AbstractContextManager[None]:
    released = current_app.extensions.get(WAITING_OUTSIDE) if has_app_context() else None
    return (released or runslots.released)()


def running(owner: str) -> int:
    """How many lookups of `owner` are running (tests, and the refusal's wording)."""
    with _mutex:
        return _running[owner]
