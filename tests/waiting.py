"""Waiting in tests for something another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], seconds: float = 10.0, interval: float = 0.05) -> T | None:
    """The first truthy value of `predicate()` within `seconds`, checked every `interval`; else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None
