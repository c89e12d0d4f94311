"""Per-key request rate limits: a moving window per key, counted where `RATELIMIT_STORAGE_URI` says.

- `mmap://` (the default): a fixed-size table in a memory-mapped file in the instance folder, under an
  `fcntl` lock, so every serving process of `console run` on this machine shares one budget per key
  with no extra service. `mmap:///some/path` puts the file elsewhere.
- `redis://…`: counters in Redis (the `limits` library's keys and moving window, a hit in one script
  call: `RedisCounters`), shared by every machine. Redis protects, it is not a dependency: while it does
  not answer (connect and socket timeouts of 100 ms) this process counts in its own memory, warns at
  most once per `REDIS_RETRY_SECONDS`, and tries Redis again after that.
- `memory://`: the same table in this process's own memory, this process only (tests).

Every storage applies the same rule, `limits`' moving window: a request is allowed when fewer than
`amount` requests of this key were allowed in the last `expiry` seconds.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import logging
import math
import mmap
import os
import struct
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import RedisStorage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError

log = logging.getLogger(__name__)

NAMESPACE = "api-key"
REDIS_TIMEOUT_SECONDS = 0.1
REDIS_RETRY_SECONDS = 60.0
SHARED_FILE_NAME = "ratelimits.mmap"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_after: int  # seconds until a request would be allowed again


def _reset_after(window_start: float, expiry: float, now: float) -> int:
    return max(1, math.ceil(window_start + expiry - now))


class LimitsCounters:
    """Counters in a `limits` storage (memory, Redis, …), with its moving-window strategy."""

    def __init__(self, storage: Any, name: str) -> None:
        self.storage = storage
        self.name = name
        self.strategy = MovingWindowRateLimiter(storage)

    def hit(self, item: RateLimitItem, key_id: str) -> Verdict:
        allowed = self.strategy.hit(item, NAMESPACE, key_id)
        stats = self.strategy.get_window_stats(item, NAMESPACE, key_id)
        return Verdict(allowed, item.amount, stats.remaining, _reset_after(stats.reset_time, 0, time.time()))

    def health(self) -> dict[str, Any]:
        return {"ok": True, "storage": self.name, "shared": False, "fallback": False}


# `limits`' two moving-window scripts (acquire_moving_window.lua, then moving_window.lua for the headers'
# numbers) as one: the same list per key (timestamps, newest first, at most `limit` long), the same rule,
# one round trip instead of two. Returns {allowed (0/1), entries in the window, the oldest of them,
# this hit's time as stored}.
_HIT_AND_COUNT = """
-- As stored: Redis keeps a Lua number with 14 significant digits (0.1 ms here), so compare like with like.
local timestamp = tonumber(tostring(tonumber(ARGV[1])))
local limit = tonumber(ARGV[2])
local expiry = tonumber(ARGV[3])
local start = timestamp - expiry
local allowed = 0
local entry = redis.call('lindex', KEYS[1], limit - 1)
if not (entry and tonumber(entry) >= start) then
    redis.call('lpush', KEYS[1], timestamp)
    redis.call('ltrim', KEYS[1], 0, limit - 1)
    redis.call('expire', KEYS[1], expiry)
    allowed = 1
end
local items = redis.call('lrange', KEYS[1], 0, limit - 1)
local count, oldest = 0, timestamp
for i = 1, #items do
    local value = tonumber(items[i])
    if value < start then break end
    count = count + 1
    oldest = value
end
return {allowed, count, tostring(oldest), tostring(timestamp)}
"""


class RedisCounters(LimitsCounters):
    """`limits`' Redis storage, its keys and its moving window, with a hit in one round trip (see above), sent
    on a connection these counters keep (one per hit running at once).

    Under load on the scale-out form, the two scripts' round trips (and their replies parsed in Python)
    were a fifth of a serving process's time. Through the client, even one script call cost ~142 µs of CPU
    in-process (185 µs wall): the pool's check-out and return took ~43 µs of it, the client's command
    layer most of the rest. Written and read on a connection kept here, the same call costs ~57 µs
    (93 µs wall). The connection is made by the client's pool, with its settings (the 100 ms timeouts),
    and, as before, a timeout is not retried. A connection found closed is tried once more on a fresh one
    (Redis restarted, or dropped it idle); any other failure disconnects it (the next hit connects afresh)
    and raises `StorageError`, so the fallback takes over as before.
    """

    def __init__(self, storage: Any, name: str) -> None:
        super().__init__(storage, name)
        client = storage.get_connection()
        self._script = client.register_script(_HIT_AND_COUNT)
        self._pool = client.connection_pool
        # Connections between hits: a hit takes one and gives it back (deque's pop and append are atomic),
        # so there are as many as hits ran at once. Closed when these counters go, not left to the collector.
        self._idle: deque[Any] = deque()
        self._pid = os.getpid()
        weakref.finalize(self, _disconnect_all, self._idle)

    def _take(self) -> Any:
        if self._pid != os.getpid():  # made before a fork: the parent's connections are never shared
            self._idle, self._pid = deque(), os.getpid()
        try:
            return self._idle.pop()
        except IndexError:
            return self._pool.make_connection()

    def hit(self, item: RateLimitItem, key_id: str) -> Verdict:
        key = self.storage.prefixed_key(item.key_for(NAMESPACE, key_id))
        connection = self._take()
        for attempt in (1, 2):
            try:
                reply = self._run(connection, (1, key, time.time(), item.amount, item.get_expiry()))
                break
            except RedisConnectionError as exc:
                connection.disconnect()
                if attempt == 2:
                    raise StorageError(exc) from exc
                # Once more on a fresh connection: a kept one is found closed when Redis restarted or
                # dropped it idle, which is not Redis being unreachable (a refused connect fails again).
                # The other kept ones are as old: closed too.
                _disconnect_all(self._idle)
                connection = self._pool.make_connection()
            except self.storage.base_exceptions as exc:
                connection.disconnect()  # a reply may be left unread: never given back to another hit
                raise StorageError(exc) from exc
            except BaseException:
                connection.disconnect()  # whatever stopped it: a stale reply must never be read as ours
                raise
        self._idle.append(connection)
        allowed, count, oldest, now = reply
        # Both times as Redis stored them: a hit's own entry gives exactly `expiry`, not a rounding above it.
        reset_after = _reset_after(float(oldest) - float(now), item.get_expiry(), 0.0)
        return Verdict(bool(allowed), item.amount, item.amount - int(count), reset_after)

    def _run(self, connection: Any, args: tuple) -> Any:
        try:
            connection.send_command("EVALSHA", self._script.sha, *args)
            return connection.read_response()
        except NoScriptError:  # Redis restarted or flushed its scripts: load it again, then run it
            connection.send_command("SCRIPT", "LOAD", self._script.script)
            connection.read_response()
            connection.send_command("EVALSHA", self._script.sha, *args)
            return connection.read_response()


def _disconnect_all(connections: deque[Any]) -> None:
    while connections:
        try:
            connections.pop().disconnect()
        except IndexError:  # another thread took the last one meanwhile
            break


class FallbackCounters:
    """A networked storage (Redis) that falls back to per-process counters while it does not answer."""

    def __init__(
        self, primary: LimitsCounters, fallback: TableCounters, *, retry_seconds: float = REDIS_RETRY_SECONDS
    ) -> None:
        self.primary = primary
        self.fallback = fallback
        self.retry_seconds = retry_seconds
        self._lock = threading.Lock()
        self._down_since: float | None = None  # wall time, for /healthz
        self._retry_at = 0.0  # monotonic; while down, the first request after it tries the storage again

    @property
    def falling_back(self) -> bool:
        return self._down_since is not None

    def hit(self, item: RateLimitItem, key_id: str) -> Verdict:
        if self.falling_back and not self._claim_retry():
            return self.fallback.hit(item, key_id)
        try:
            verdict = self.primary.hit(item, key_id)
        except StorageError as exc:
            self._failed(exc)
            return self.fallback.hit(item, key_id)
        self._answered()
        return verdict

    def health(self) -> dict[str, Any]:
        # Cheap: a ping only while the storage is believed up (or its retry is due), never more than one
        # connect timeout.
        if not self.falling_back or self._claim_retry():
            if self.primary.storage.check():
                self._answered()
            else:
                self._failed(None)
        # Falling back is still "ok": every request is limited, only per process instead of shared.
        state: dict[str, Any] = {
            "ok": True,
            "storage": self.primary.name,
            "shared": not self.falling_back,
            "fallback": self.falling_back,
        }
        if self._down_since is not None:
            state["unreachable_since"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._down_since))
            state["note"] = f"counting per process until {self.primary.name} answers again"
        return state

    def _claim_retry(self) -> bool:
        """True for exactly one caller once the retry interval has passed (the others keep falling back)."""
        with self._lock:
            now = time.monotonic()
            if now < self._retry_at:
                return False
            self._retry_at = now + self.retry_seconds
            return True

    def _failed(self, exc: Exception | None) -> None:
        with self._lock:
            first = self._down_since is None
            if first:
                self._down_since = time.time()
            self._retry_at = time.monotonic() + self.retry_seconds
        # At most one warning per interval: on the first failure, then once per failed retry.
        log.warning(
            "Rate-limit storage %s %s (%s); counting per process, next try in %.0f s",
            self.primary.name,
            "is unreachable" if first else "is still unreachable",
            type(exc.__cause__ or exc).__name__ if exc else "no answer to ping",
            self.retry_seconds,
        )

    def _answered(self) -> None:
        if self._down_since is None:  # the common case: no lock taken
            return
        with self._lock:
            was_down, self._down_since = self._down_since is not None, None
        if was_down:
            log.warning("Rate-limit storage %s answers again; counters are shared again", self.primary.name)


class TableCounters:
    """Moving-window counters in a fixed-size table: in a memory-mapped file shared by the processes of one
    machine (`mmap://`), or in this process's own memory (`path` None: `memory://`, and Redis's fallback).

    Not `limits`' MemoryStorage for this process's own counters: it starts a timer thread to expire its
    entries every 10 ms while requests come, and a request that starts one waits for it to run (up to a
    GIL switch interval, 5 ms, under load).

    The table is a header and a fixed number of slots. A slot holds one key (a 64-bit hash of the key
    and its limit), its limit, and a ring of the times of its last `amount` allowed requests; a
    request is allowed when the oldest of them is at least `expiry` seconds old. A key's slot is found
    by open addressing over `PROBES` neighbours; a slot whose newest request is older than its expiry
    is free. When every neighbour is busy the least recently used one is taken over, which can only
    forget a key that has thousands of others active within the same second.

    One `flock` on a file serialises processes (a thread lock serialises this process's threads,
    since `flock` is per open file): a hit is a few struct reads and writes, microseconds. Times are
    `time.monotonic()` (system-wide on Linux); a time in the future (a file from before a reboot)
    counts as free.
    """

    MAGIC = b"PCCRLv01"
    HEADER = struct.Struct("<8sII")  # magic, slot count, ring capacity
    HEADER_SIZE = 64
    SLOT = struct.Struct("<QIId")  # key hash, ring head, amount, expiry
    PROBES = 8

    def __init__(self, path: Path | None, capacity: int, slots: int = 8192, clock=time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self.capacity = capacity
        self.slots = slots
        self.slot_size = self.SLOT.size + 8 * capacity
        self.size = self.HEADER_SIZE + slots * self.slot_size
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        if path is None:
            self._map = mmap.mmap(-1, self.size)  # anonymous, zeroed: every slot empty
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = self._open()
        try:
            self._reserve()
        except OSError:
            os.close(self._fd)
            raise
        self._map = mmap.mmap(self._fd, self.size)

    def _reserve(self) -> None:
        """Give every page of the file its place on disk now. A sparse file's pages get theirs when first
        written, through the mapping: on a full disk that write is SIGBUS, which killed each serving process
        at its first rate-limited call, and Granian, seeing them die one after the other, stopped the server.
        Raises OSError (ENOSPC) when the disk cannot hold it; a filesystem without `fallocate` stays sparse."""
        try:
            os.posix_fallocate(self._fd, 0, self.size)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise

    def _open(self) -> int:
        """Open the file, making it this table's shape first if it is new or of another shape.

        A file of another shape (other limits, an older version) is replaced, never resized: another
        process may still have it mapped, and touching a mapping beyond a file's end kills the process.
        """
        header = self.HEADER.pack(self.MAGIC, self.slots, self.capacity)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                ready = self._ready(fd, header)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if ready:
                return fd
            os.close(fd)  # the path now names another file: open that one

    def _ready(self, fd: int, header: bytes) -> bool:
        """True when `fd` (locked) is the table; False when the path was (or has just been) replaced."""
        if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
            return False
        size = os.fstat(fd).st_size
        if size == self.size and os.pread(fd, len(header), 0) == header:
            return True
        if size == 0:  # new: nobody has mapped it yet
            self._shape(fd, header)
            return True
        fresh = self.path.with_name(f"{self.path.name}.{os.getpid()}.new")
        fresh_fd = os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            self._shape(fresh_fd, header)
        finally:
            os.close(fresh_fd)
        os.replace(fresh, self.path)
        return False

    def _shape(self, fd: int, header: bytes) -> None:
        os.ftruncate(fd, self.size)  # sparse: pages cost memory only once a key lands on them
        os.pwrite(fd, header, 0)

    def __enter__(self) -> None:  # `with self:` holds the table: this process's threads, then processes
        self._thread_lock.acquire()
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *_exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread_lock.release()

    def hit(self, item: RateLimitItem, key_id: str) -> Verdict:
        amount, expiry = item.amount, float(item.get_expiry())
        if amount > self.capacity:
            raise ValueError(f"limit {item} exceeds the table's capacity of {self.capacity}")
        digest = hashlib.blake2b(f"{NAMESPACE}/{key_id}/{item}".encode(), digest_size=8).digest()
        key = int.from_bytes(digest, "little") or 1  # 0 marks an empty slot
        ring_format = f"<{amount}d"
        with self:
            now = self.clock()
            offset, head = self._slot(key, amount, expiry, now)
            ring_at = offset + self.SLOT.size
            ring = list(struct.unpack_from(ring_format, self._map, ring_at))
            # 0.0 is a ring entry never used (not a request at time 0: on a machine up for less than the
            # window, that denied every first request); a time in the future is from before a reboot.
            oldest = ring[head] if 0.0 < ring[head] <= now else -math.inf
            allowed = oldest <= now - expiry
            if allowed:
                ring[head] = now
                struct.pack_into("<d", self._map, ring_at + 8 * head, now)
                struct.pack_into("<I", self._map, offset + 8, (head + 1) % amount)
        window = [t for t in ring if t > 0.0 and now - expiry < t <= now]
        start = min(window) if window else now
        return Verdict(allowed, amount, amount - len(window), _reset_after(start, expiry, now))

    def _slot(self, key: int, amount: int, expiry: float, now: float) -> tuple[int, int]:
        """The offset and ring head of `key`'s slot, claiming one (emptied) if it has none."""
        first = key % self.slots
        claim, claim_newest = None, math.inf
        for probe in range(self.PROBES):
            offset = self.HEADER_SIZE + ((first + probe) % self.slots) * self.slot_size
            slot_key, head, slot_amount, slot_expiry = self.SLOT.unpack_from(self._map, offset)
            if slot_key == key:
                return offset, head
            if slot_key == 0:
                newest = -math.inf
            else:
                newest_at = offset + self.SLOT.size + 8 * ((head - 1) % slot_amount)
                (newest,) = struct.unpack_from("<d", self._map, newest_at)
                if newest > now or newest <= now - slot_expiry:
                    newest = -math.inf  # expired (or from before a reboot): free
            if newest < claim_newest:
                claim, claim_newest = offset, newest
        assert claim is not None
        self.SLOT.pack_into(self._map, claim, key, 0, amount, expiry)
        self._map[claim + self.SLOT.size : claim + self.SLOT.size + 8 * amount] = bytes(8 * amount)
        return claim, 0

    unusable: str | None = None  # why the shared file could not be used (this table replaces it)

    def health(self) -> dict[str, Any]:
        if self.unusable:
            return {"ok": False, "storage": "mmap", "shared": False, "fallback": True, "error": self.unusable}
        shared = self.path is not None
        return {"ok": True, "storage": "mmap" if shared else "memory", "shared": shared, "fallback": False}


class RateLimiter:
    def __init__(self, storage_uri: str, limits_by_mode: dict[str, str]) -> None:
        self.limits = {mode: parse(text) for mode, text in limits_by_mode.items()}
        self.counters = counters_for(storage_uri, max(item.amount for item in self.limits.values()))

    def hit(self, mode: str, key_id: str) -> Verdict:
        return self.counters.hit(self.limits[mode], key_id)

    def health(self) -> dict[str, Any]:
        return self.counters.health()


def counters_for(storage_uri: str, capacity: int, *, table: str = "") -> FallbackCounters | TableCounters:
    """Counters where `storage_uri` says. `table` names another set of counters of another capacity (the
    console's per-address limits): for `mmap://` its own file beside the API's (`ratelimits.mmap.<table>`),
    since a table's file has one shape; other storages keep every set apart by its keys."""
    scheme = storage_uri.partition("://")[0]
    if scheme == "mmap":
        from console.config import INSTANCE_DIR

        path = storage_uri[len("mmap://") :]
        file = Path(path) if path else INSTANCE_DIR / SHARED_FILE_NAME
        file = file.with_name(f"{file.name}.{table}") if table else file
        try:
            return TableCounters(file, capacity)
        except OSError as exc:
            # A full disk or a read-only folder: serve, counting in this process's memory (each process's
            # budget is its own meanwhile, as on Redis's fallback), and say so on the log and in /healthz.
            log.warning(
                "Rate-limit file %s cannot be used (%s); counting per process until a restart",
                file,
                exc.strerror,
            )
            unshared = TableCounters(None, capacity)
            unshared.unusable = f"{file.name}: {exc.strerror}"  # /healthz is public: no folder path
            return unshared
    if scheme == "memory":
        return TableCounters(None, capacity)
    options: dict[str, Any] = {}
    if scheme.startswith(("redis", "valkey")):
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        # A limiter that waits on Redis slows every request: fail fast, once, and fall back.
        options = {
            "socket_connect_timeout": REDIS_TIMEOUT_SECONDS,
            "socket_timeout": REDIS_TIMEOUT_SECONDS,
            "retry": Retry(NoBackoff(), 0),
        }
    storage = storage_from_string(storage_uri, wrap_exceptions=True, **options)
    fallback = TableCounters(None, capacity)
    if isinstance(storage, RedisStorage):
        return FallbackCounters(RedisCounters(storage, scheme), fallback)
    return FallbackCounters(LimitsCounters(storage, scheme), fallback)


def init_app(app: Flask) -> None:
    app.extensions["ratelimiter"] = RateLimiter(
        app.config["RATELIMIT_STORAGE_URI"], app.config["RATE_LIMITS"]
    )


def limiter() -> RateLimiter:
    return current_app.extensions["ratelimiter"]
