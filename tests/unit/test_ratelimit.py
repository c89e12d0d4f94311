"""Rate-limit counters: per key and mode, and shared across processes through Redis."""

from __future__ import annotations

import os
import uuid

import pytest

from console.api.ratelimit import RateLimiter

REDIS_URL = os.environ.get("TEST_REDIS_URL")


def test_memory_limiter_counts_per_key():
    limiter = RateLimiter("memory://", {"sandbox": "2/minute"})
    assert [limiter.hit("sandbox", "a").allowed for _ in range(3)] == [True, True, False]
    assert limiter.hit("sandbox", "b").allowed
    verdict = limiter.hit("sandbox", "a")
    assert verdict.limit == 2 and verdict.remaining == 0 and verdict.reset_after >= 1


@pytest.mark.skipif(not REDIS_URL, reason="TEST_REDIS_URL not set (.ci/run sets it when Redis answers)")
def test_two_limiters_on_redis_share_one_budget():
    """Two API processes = two limiter instances on one Redis: the budget is shared."""
    first = RateLimiter(REDIS_URL, {"sandbox": "3/minute"})
    second = RateLimiter(REDIS_URL, {"sandbox": "3/minute"})
    key = f"test-{uuid.uuid4()}"
    results = [
        first.hit("sandbox", key).allowed,
        second.hit("sandbox", key).allowed,
        first.hit("sandbox", key).allowed,
    ]
    assert results == [True, True, True]
    assert not second.hit("sandbox", key).allowed
    assert not first.hit("sandbox", key).allowed
