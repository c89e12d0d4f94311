"""Rate-limit counters: per key and mode, shared across processes (an mmap file, Redis), and Redis outages."""

from __future__ import annotations

import itertools
import logging
import math
import multiprocessing
import os
import socket
import threading
import time
import uuid

import pytest
from limits import parse
from limits.errors import StorageError
from limits.storage import MemoryStorage

from console import config
from console.api.ratelimit import FallbackCounters, LimitsCounters, RateLimiter, TableCounters
from console.config import from_environment
from tests.waiting import wait_for

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


# --- mmap:// (the default): one budget per key for every process of this machine ---


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _table(tmp_path, capacity=10, slots=8192, clock=None):
    return TableCounters(tmp_path / "rl.mmap", capacity, slots=slots, clock=clock or FakeClock())


def test_the_default_storage_is_the_shared_file_in_the_instance_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("RATELIMIT_STORAGE_URI", raising=False)
    monkeypatch.setenv("SECRET_KEY", "not-written-to-the-instance-folder")
    assert from_environment()["RATELIMIT_STORAGE_URI"] == "mmap://"
    monkeypatch.setattr(config, "INSTANCE_DIR", tmp_path)
    limiter = RateLimiter("mmap://", {"sandbox": "10/second"})
    assert isinstance(limiter.counters, TableCounters)
    assert limiter.counters.path == tmp_path / "ratelimits.mmap"
    assert limiter.health() == {"ok": True, "storage": "mmap", "shared": True, "fallback": False}


def test_memory_counters_are_the_same_table_in_this_process_and_start_no_thread(monkeypatch):
    """`memory://` (and Redis's fallback) count in an anonymous map, with no file, no lock between processes
    and no timer thread (`limits`' MemoryStorage started one every 10 ms under load)."""
    clock = FakeClock()
    limiter = RateLimiter("memory://", {"sandbox": "3/second"})
    assert isinstance(limiter.counters, TableCounters) and limiter.counters.path is None
    limiter.counters.clock = clock
    started = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self))
    assert [limiter.hit("sandbox", "k").allowed for _ in range(4)] == [True, True, True, False]
    assert limiter.hit("sandbox", "other").allowed  # a budget per key
    clock.now += 1.0
    verdict = limiter.hit("sandbox", "k")
    assert verdict.allowed and verdict.remaining == 2
    assert started == []
    assert limiter.health() == {"ok": True, "storage": "memory", "shared": False, "fallback": False}


def test_shared_file_is_a_moving_window(tmp_path):
    clock = FakeClock()
    table = _table(tmp_path, clock=clock)
    item = parse("3/second")
    verdicts = []
    for step in (0.0, 0.25, 0.25, 0.25):  # t = 0, 0.25, 0.5, 0.75 (binary fractions: exact sums)
        clock.now += step
        verdicts.append(table.hit(item, "a"))
    assert [v.allowed for v in verdicts] == [True, True, True, False]
    assert [v.remaining for v in verdicts] == [2, 1, 0, 0]
    assert all(v.limit == 3 and v.reset_after == 1 for v in verdicts)
    clock.now += 0.125  # t = 0.875: the request at t = 0 is still inside the window
    assert not table.hit(item, "a").allowed
    clock.now += 0.125  # t = 1.0: it has left the window; one request is allowed again
    verdict = table.hit(item, "a")
    assert verdict.allowed and verdict.remaining == 0
    assert not table.hit(item, "a").allowed
    assert table.hit(item, "b").allowed  # another key has its own budget
    clock.now += 1.0
    assert table.hit(item, "a").remaining == 2  # a whole window later the budget is full again


def test_a_machine_up_for_less_than_the_window_allows_the_budget(tmp_path):
    """The times are time.monotonic(), seconds since boot: an unused ring entry is not a request at time 0."""
    clock = FakeClock(now=30.0)  # booted 30 s ago
    table = _table(tmp_path, clock=clock)
    verdicts = [table.hit(parse("3/minute"), "a") for _ in range(4)]
    assert [(v.allowed, v.remaining) for v in verdicts] == [(True, 2), (True, 1), (True, 0), (False, 0)]
    assert [table.hit(parse("2/hour"), "b").allowed for _ in range(3)] == [True, True, False]


def test_shared_file_counts_per_limit(tmp_path):
    table = _table(tmp_path, capacity=50)
    sandbox, production = parse("10/second"), parse("50/second")
    assert sum(table.hit(sandbox, "k").allowed for _ in range(60)) == 10
    assert sum(table.hit(production, "k").allowed for _ in range(60)) == 50
    with pytest.raises(ValueError, match="capacity"):
        table.hit(parse("51/second"), "k")


def test_two_openings_of_the_file_share_one_budget(tmp_path):
    first, second = _table(tmp_path), _table(tmp_path)
    item = parse("4/second")
    results = [(first if i % 2 else second).hit(item, "k").allowed for i in range(6)]
    assert results == [True] * 4 + [False] * 2


def test_many_keys_fit_and_old_ones_make_room(tmp_path):
    """More keys than slots: expired slots are reused, busy ones are kept or least-recently-used taken over."""
    clock = FakeClock()
    table = _table(tmp_path, slots=64, clock=clock)
    item = parse("2/second")
    for round_ in range(3):
        assert all(table.hit(item, f"key-{round_}-{i}").allowed for i in range(500))
        clock.now += 1.0
    assert [table.hit(item, "hot").allowed for _ in range(3)] == [True, True, False]


def test_a_file_from_before_a_reboot_or_of_another_shape_starts_afresh(tmp_path):
    clock = FakeClock(now=5000.0)
    table = _table(tmp_path, clock=clock)
    item = parse("2/second")
    assert [table.hit(item, "k").allowed for _ in range(3)] == [True, True, False]
    clock.now = 10.0  # monotonic time restarts at boot: times "in the future" do not count
    assert table.hit(item, "k").allowed
    bigger = _table(tmp_path, capacity=20)
    assert bigger.path.stat().st_size == bigger.size != table.size
    assert [bigger.hit(parse("20/second"), "k").allowed for _ in range(21)] == [True] * 20 + [False]
    # The file was replaced, not resized under the first table's mapping, which keeps working.
    clock.now += 1.0
    assert table.hit(item, "k").allowed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rl.mmap"]


def _hammer(path: str, key: str, start: float, hits: int) -> int:
    # Per hour: the processes' spawning (seconds on a loaded machine) cannot outlast the window.
    limiter = RateLimiter(f"mmap://{path}", {"sandbox": "25/hour"})
    while time.time() < start:
        time.sleep(0.001)
    return sum(limiter.hit("sandbox", key).allowed for _ in range(hits))


def test_processes_hitting_one_key_at_once_share_one_budget(tmp_path):
    """Four processes race on one key: exactly the limit is allowed in total, not four times it."""
    context = multiprocessing.get_context("spawn")
    start = time.time() + 1.5
    with context.Pool(4) as pool:
        allowed = pool.starmap(_hammer, [(str(tmp_path / "rl.mmap"), "race", start, 40)] * 4)
    assert sum(allowed) == 25, allowed
    assert _hammer(str(tmp_path / "rl.mmap"), "race", 0, 1) == 0


def test_a_shared_file_hit_costs_microseconds(tmp_path):
    limiter = RateLimiter(f"mmap://{tmp_path / 'rl.mmap'}", {"production": "50/second"})
    keys = [f"key-{i}" for i in range(300)]
    for key in keys:
        limiter.hit("production", key)
    # This thread's CPU time, not the wall clock: what a hit costs, whatever else the machine runs meanwhile.
    started = time.thread_time()
    for i in range(5000):
        limiter.hit("production", keys[i % 300])
    per_hit = (time.thread_time() - started) / 5000
    print(f"\nshared-file rate limit: {per_hit * 1e6:.1f} us of CPU per hit")
    assert per_hit < 0.0005  # microseconds (about 15 us here); a lock or a syscall per hit would not be


# --- Redis: the limiter protects, it is not a dependency ---


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_redis_falls_back_to_per_process_counters(caplog):
    limiter = RateLimiter(f"redis://127.0.0.1:{_closed_port()}/0", {"sandbox": "3/minute"})
    assert isinstance(limiter.counters, FallbackCounters)
    primary = limiter.counters.primary
    tries = []
    real_hit = primary.hit
    primary.hit = lambda *args: (tries.append(1), real_hit(*args))[1]
    with caplog.at_level(logging.WARNING, logger="console.api.ratelimit"):
        results = [limiter.hit("sandbox", "k").allowed for _ in range(20)]
    assert results == [True] * 3 + [False] * 17  # still limited, per process
    assert len(tries) == 1  # one failed connect, then memory (its retry is 60 s away): no wait per request
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()
    health = limiter.health()
    assert health["fallback"] is True and health["shared"] is False and health["ok"] is True
    assert "unreachable_since" in health


class FlakyStorage(MemoryStorage):
    """Memory counters that fail (as wrapped Redis errors do) while `down` is set, counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.calls = 0

    def _answer(self) -> None:
        self.calls += 1
        if self.down:
            raise StorageError(ConnectionError("refused"))

    def acquire_entry(self, *args, **kwargs):
        self._answer()
        return super().acquire_entry(*args, **kwargs)

    def get_moving_window(self, *args, **kwargs):
        self._answer()
        return super().get_moving_window(*args, **kwargs)

    def check(self) -> bool:
        self.calls += 1
        return not self.down


def test_fallback_warns_once_per_interval_and_retries_after_it(caplog):
    storage = FlakyStorage()
    counters = FallbackCounters(
        LimitsCounters(storage, "redis"), TableCounters(None, 1000), retry_seconds=0.3
    )
    item = parse("1000/second")
    assert counters.hit(item, "k").allowed and not counters.falling_back
    storage.down = True
    tried_at: list[float] = []
    real_answer = storage._answer
    storage._answer = lambda: (tried_at.append(time.monotonic()), real_answer())[1]
    hits = 0

    def hit_until_three_retries() -> bool:
        nonlocal hits
        assert counters.hit(item, "k").allowed
        hits += 1
        return len(tried_at) >= 4  # the first failure and three retries

    with caplog.at_level(logging.WARNING, logger="console.api.ratelimit"):
        assert wait_for(hit_until_three_retries, 60, 0.005)
        warnings = [r.getMessage() for r in caplog.records]
    # One try (and one warning) per interval, not one per request: tries at least the interval apart.
    assert len(warnings) == len(tried_at) == 4, warnings
    assert all(b - a >= 0.3 for a, b in itertools.pairwise(tried_at)), tried_at
    assert hits > len(tried_at)  # the requests between the tries were counted per process
    assert counters.health()["fallback"] is True
    storage.down = False
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="console.api.ratelimit"):
        time.sleep(0.35)  # past the interval: the next request tries the storage again
        counters.hit(item, "k")
    assert not counters.falling_back
    assert counters.health() == {"ok": True, "storage": "redis", "shared": True, "fallback": False}
    assert any("answers again" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(not REDIS_URL, reason="TEST_REDIS_URL not set (.ci/run sets it when Redis answers)")
def test_reachable_redis_is_shared_and_healthy():
    limiter = RateLimiter(REDIS_URL, {"sandbox": "2/minute"})
    key = f"test-{uuid.uuid4()}"
    assert [limiter.hit("sandbox", key).allowed for _ in range(3)] == [True, True, False]
    assert limiter.health() == {"ok": True, "storage": "redis", "shared": True, "fallback": False}


@pytest.mark.skipif(not REDIS_URL, reason="TEST_REDIS_URL not set (.ci/run sets it when Redis answers)")
def test_redis_hit_in_one_round_trip_answers_as_the_limits_strategy_does():
    """RedisCounters (one script) and `limits`' own two scripts: same verdicts, same keys, one budget."""
    from limits.storage import storage_from_string

    from console.api.ratelimit import RedisCounters

    ours = RateLimiter(REDIS_URL, {"sandbox": "3/minute"}).counters.primary
    assert isinstance(ours, RedisCounters)
    theirs = LimitsCounters(storage_from_string(REDIS_URL), "redis")
    item = parse("3/minute")
    first, second = f"test-{uuid.uuid4()}", f"test-{uuid.uuid4()}"
    started = time.monotonic()
    mine = [ours.hit(item, first) for _ in range(4)]
    reference = [theirs.hit(item, second) for _ in range(4)]
    spent = math.ceil(time.monotonic() - started)
    assert [(v.allowed, v.limit, v.remaining) for v in mine] == [
        (v.allowed, v.limit, v.remaining) for v in reference
    ]
    assert [v.allowed for v in mine] == [True, True, True, False]
    assert all(
        60 - spent - 1 <= v.reset_after <= 60 for v in mine + reference
    )  # the window, less the hits' time
    # A first hit waits the whole window, never a second more (Redis rounds the stored time to 0.1 ms).
    assert {ours.hit(item, f"test-{uuid.uuid4()}").reset_after for _ in range(50)} == {60}
    # The same list per key: hits counted by either are one budget.
    third = f"test-{uuid.uuid4()}"
    assert theirs.hit(item, third).allowed and ours.hit(item, third).remaining == 1
    assert theirs.hit(item, third).remaining == 0 and not ours.hit(item, third).allowed


@pytest.mark.skipif(not REDIS_URL, reason="TEST_REDIS_URL not set (.ci/run sets it when Redis answers)")
def test_redis_hits_survive_a_script_flush_and_a_dropped_connection_without_falling_back():
    """Connections are kept between hits: Redis forgetting the script (a restart, SCRIPT FLUSH) or closing
    a connection (a restart, an idle timeout) costs a reload or a reconnect, never the shared budget."""
    import redis

    limiter = RateLimiter(REDIS_URL, {"sandbox": "5/minute"})
    counters, item, key = limiter.counters, parse("5/minute"), f"test-{uuid.uuid4()}"
    admin = redis.Redis.from_url(REDIS_URL)
    assert counters.primary.hit(item, key).remaining == 4
    admin.script_flush()
    assert counters.primary.hit(item, key).remaining == 3
    mine = counters.primary._idle[-1]  # the connection the next hit takes
    mine.send_command("CLIENT", "ID")
    admin.client_kill_filter(_id=mine.read_response())
    assert limiter.hit("sandbox", key).remaining == 2
    assert counters.health()["shared"] and not counters.falling_back
    # One budget for hits running at once, each on a connection of its own.
    verdicts: list = []
    threads = [
        threading.Thread(target=lambda: verdicts.append(limiter.hit("sandbox", key))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(v.allowed for v in verdicts) == [False, False, True, True]
    assert not counters.falling_back
    admin.close()


@pytest.mark.skipif(not REDIS_URL, reason="TEST_REDIS_URL not set (.ci/run sets it when Redis answers)")
def test_a_redis_hit_cut_short_never_leaves_its_reply_for_the_next_one():
    """A hit stopped between sending and reading (here by an exception) must not leave its reply to be read
    as the next hit's: the connection is dropped and the next hit counts right."""
    from console.api.ratelimit import RedisCounters

    limiter = RateLimiter(REDIS_URL, {"sandbox": "5/minute"})
    counters = limiter.counters.primary
    assert isinstance(counters, RedisCounters)
    item, used, fresh = parse("5/minute"), f"test-{uuid.uuid4()}", f"test-{uuid.uuid4()}"
    assert [counters.hit(item, used).remaining for _ in range(3)] == [4, 3, 2]
    connection = counters._idle[-1]  # the connection the next hit takes
    real_read = connection.read_response

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # the reply (1 remaining, for `used`) stays on the socket, unread

    connection.read_response = interrupted
    with pytest.raises(KeyboardInterrupt):
        counters.hit(item, used)
    connection.read_response = real_read
    # A fresh key's first hit answers its own reply (4 remaining), not the one left unread.
    assert counters.hit(item, fresh).remaining == 4


@pytest.mark.skipif(not REDIS_URL, reason="TEST_REDIS_URL not set (.ci/run sets it when Redis answers)")
def test_kept_redis_connections_are_closed_with_their_counters():
    """A limiter that goes (an app rebuilt, a test's) closes the connections it kept: none is left to the
    garbage collector as an unclosed socket."""
    import gc
    import warnings

    limiter = RateLimiter(REDIS_URL, {"sandbox": "5/minute"})
    threads = [
        threading.Thread(target=limiter.hit, args=("sandbox", f"test-{uuid.uuid4()}")) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = list(limiter.counters.primary._idle)
    assert kept and all(c._sock is not None for c in kept)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        del limiter, threads
        gc.collect()
    assert all(c._sock is None for c in kept)
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_redis_counters_fail_over_like_the_others(caplog):
    """An unreachable Redis raises StorageError from the one-script hit too, so the fallback takes over."""
    from console.api.ratelimit import RedisCounters

    limiter = RateLimiter(f"redis://127.0.0.1:{_closed_port()}/0", {"sandbox": "1/minute"})
    assert isinstance(limiter.counters.primary, RedisCounters)
    with pytest.raises(StorageError):
        limiter.counters.primary.hit(parse("1/minute"), "k")
    with caplog.at_level(logging.WARNING, logger="console.api.ratelimit"):
        assert [limiter.hit("sandbox", "k").allowed for _ in range(2)] == [True, False]


def test_the_shared_file_has_its_place_on_disk_from_the_start(tmp_path):
    """A sparse file's pages got their disk blocks at their first write through the mapping: on a full disk
    that write is SIGBUS, which killed each serving process at its first call (tried on a full tmpfs: Granian
    saw them die one after the other and stopped the whole server)."""
    table = _table(tmp_path)
    assert os.stat(tmp_path / "rl.mmap").st_blocks * 512 >= table.size


def test_a_shared_file_the_disk_cannot_hold_falls_back_to_per_process_counting(tmp_path, monkeypatch, caplog):
    """No room for the file (a full disk) or no right to write it: the server serves, counting per process,
    says so once on its log and in /healthz (degraded, as on Redis's fallback), and never crashes."""
    import errno

    from console.api.ratelimit import counters_for

    def no_room(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", no_room)
    with caplog.at_level(logging.WARNING, logger="console.api.ratelimit"):
        counters = counters_for(f"mmap://{tmp_path / 'rl.mmap'}", 10)
    health = counters.health()
    assert health["ok"] is False and health["fallback"] is True and health["shared"] is False
    assert "No space left on device" in health["error"]
    assert str(tmp_path) not in health["error"]  # /healthz answers anyone: the file's name, not its folder
    assert str(tmp_path) in caplog.text and "counting per process" in caplog.text
    assert counters.hit(parse("10/second"), "key").allowed
