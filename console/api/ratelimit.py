"""Per-key request rate limits, on the `limits` library.

Counters live in memory by default and in Redis when `RATELIMIT_STORAGE_URI`
names it, so several API processes share one budget per key.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from flask import Flask, current_app
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_after: int  # seconds until a request would be allowed again


class RateLimiter:
    def __init__(self, storage_uri: str, limits_by_mode: dict[str, str]) -> None:
        self.storage = storage_from_string(storage_uri)
        self.strategy = MovingWindowRateLimiter(self.storage)
        self.limits = {mode: parse(text) for mode, text in limits_by_mode.items()}

    def hit(self, mode: str, key_id: str) -> Verdict:
        item = self.limits[mode]
        allowed = self.strategy.hit(item, "api-key", key_id)
        stats = self.strategy.get_window_stats(item, "api-key", key_id)
        reset_after = max(1, math.ceil(stats.reset_time - time.time()))
        return Verdict(allowed, item.amount, stats.remaining, reset_after)


def init_app(app: Flask) -> None:
    app.extensions["ratelimiter"] = RateLimiter(
        app.config["RATELIMIT_STORAGE_URI"], app.config["RATE_LIMITS"]
    )


def limiter() -> RateLimiter:
    return current_app.extensions["ratelimiter"]
