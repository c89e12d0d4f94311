"""Requests sent at the same moment to a real threaded server on 127.0.0.1: the tests of races (two creates both
counting room for one, two completions of one token, two reports of one attempt) use these."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import requests
from werkzeug.serving import make_server

from tests.conftest import VERSION


def at_once(app, count: int, send: Callable[[str], Any]) -> list:
    """Run `send(base_url)` (base_url ends in /sandbox/v1) from `count` threads at once against `app` served by
    a threaded server; their answers, in the order they came."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}/sandbox/v1"
    answers: list = []
    try:
        senders = [threading.Thread(target=lambda: answers.append(send(base))) for _ in range(count)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
    finally:
        server.shutdown()
    return answers


def posting(path: str, secret: str, json: Any = None) -> Callable[[str], requests.Response]:
    """A `send` for `at_once`: POST `path` (after the base URL) with `secret` and the API version."""
    headers = {"x-api-secret": secret, "Service-Version": VERSION}
    return lambda base: requests.post(base + path, json=json, headers=headers, timeout=60)


def meeting_before(function: Callable[..., Any], parties: int = 2) -> Callable[..., Any]:
    """`function`, each call of it first waiting at one `meeting` of `parties` (monkeypatched over the step that
    must not run before the others have read what it would change)."""
    meet = meeting(parties)

    def met_first(*args: Any, **kwargs: Any) -> Any:
        meet()
        return function(*args, **kwargs)

    return met_first


def meeting_after(function: Callable[..., Any], parties: int = 2) -> Callable[..., Any]:
    """`function`, each call of it then waiting at one `meeting` of `parties` (monkeypatched over a quota's count or
    a lookup, so that without a lock every request has read before any writes)."""
    meet = meeting(parties)

    def met_after(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        meet()
        return result

    return met_after


def meeting(parties: int) -> Callable[[], None]:
    """A wait for the other requests to reach the same point, given up after 2 s: with a lock the others cannot
    get there (they wait for this one's commit); without it all of them read before any writes."""
    barrier = threading.Barrier(parties, timeout=2)

    def meet() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()

    return meet
