"""Waiting in browser tests for what the server, its worker or the page does, without fixed sleeps.

Playwright's own waits (`locator.wait_for`, `expect(...)`, `page.expect_response`) cover what a page shows.
`poll` is `expect.poll` for what only a function can look at (a page reloaded until it shows something, a
count of requests seen): it asks again until the answer is right, and fails with the last answer. Its
timeout is a backstop for a broken system, never the verdict: on a fast machine it returns at the first
right answer, and on a slow one it waits longer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# A backstop far beyond what a working system needs on a busy 2-core machine; reached only when broken.
BACKSTOP_SECONDS = 30.0


def poll(
    probe: Callable[[], T],
    until: Callable[[T], object] = bool,
    *,
    timeout: float = BACKSTOP_SECONDS,
    interval: float = 0.1,
    what: str = "",
) -> T:
    """The first answer of `probe()` that satisfies `until`, asked every `interval` seconds.

    Fails (AssertionError, with `what` and the last answer) when none did within `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if until(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what or 'condition'} not met within {timeout} s; last seen: {value!r}")
        time.sleep(interval)


# Resolves in the page after `ms` of the page's own timers. The HTML standard runs a page's timers in order
# of their due time among those set before (a timer set earlier with a shorter or equal delay runs first), so
# when this resolves, every timer the page had set for at most `ms` from now has run: a negative check after
# it ("autoplay did not advance") is bounded by the page's event loop, not by the test machine's speed.
_AFTER_PAGE_TIMERS = "ms => new Promise(resolve => window.setTimeout(resolve, ms))"


def after_page_timers(page, ms: int) -> None:
    """Return once every timer `page` had set to run within `ms` milliseconds has run."""
    page.evaluate(_AFTER_PAGE_TIMERS, ms)
