"""Sharing the worker's sender threads fairly between workspaces and destinations.

Everything the worker sends to a tenant's endpoint (deliveries, conformance runs) holds a sender
while it waits, and the `Ledger` counts what is in flight per workspace, per destination (an
origin: scheme, host and port; a workspace's own built-in inbox counts as its own destination) and
per webhook. Before a sender is taken, `Round.take` checks the caps:

- a workspace holds at most `per_workspace` senders, a destination `per_host`, a webhook `per_webhook`;
- the last `reserve` free senders go only to workspaces holding fewer than `reserve_share`: however
  many workspaces have endpoints that never answer, they hold at most `threads - reserve` senders
  between them, and a quiet workspace always finds one at once.

Due work is taken round-robin across workspaces (`round_robin`), so a workspace with a long backlog
does not crowd out one with a single due delivery in the same claim. This module is pure
bookkeeping (no database, no network); the delivery loop and the conformance loop apply it.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")

DEFAULT_THREADS = 128
DEFAULT_PER_WORKSPACE = 32
DEFAULT_PER_HOST = 24
DEFAULT_PER_WEBHOOK = 24
DEFAULT_RESERVE = 16
DEFAULT_RESERVE_SHARE = 4


@dataclass(frozen=True)
class Caps:
    threads: int = DEFAULT_THREADS
    per_workspace: int = DEFAULT_PER_WORKSPACE
    per_host: int = DEFAULT_PER_HOST
    per_webhook: int = DEFAULT_PER_WEBHOOK
    reserve: int = DEFAULT_RESERVE
    reserve_share: int = DEFAULT_RESERVE_SHARE

    @classmethod
    def from_config(cls, cfg) -> Caps:
        threads = int(cfg.get("WEBHOOK_THREADS", DEFAULT_THREADS))
        return cls(
            threads=threads,
            per_workspace=int(cfg.get("WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE", DEFAULT_PER_WORKSPACE)),
            per_host=int(cfg.get("WEBHOOK_MAX_IN_FLIGHT_PER_HOST", DEFAULT_PER_HOST)),
            per_webhook=int(cfg.get("WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK", DEFAULT_PER_WEBHOOK)),
            # Never the whole pool: a reserve as large as the pool would leave nothing to the others.
            reserve=min(int(cfg.get("WEBHOOK_RESERVED_SENDERS", DEFAULT_RESERVE)), max(threads - 1, 0)),
            reserve_share=int(cfg.get("WEBHOOK_RESERVED_SHARE", DEFAULT_RESERVE_SHARE)),
        )


@dataclass(frozen=True)
class Slot:
    """What one request in flight counts against."""

    workspace_id: uuid.UUID
    host: Hashable
    webhook_id: uuid.UUID


def destination(url: str, workspace_id: uuid.UUID, *, own_inbox: bool) -> Hashable:
    """The destination a cap applies to: the URL's origin, or the workspace's own inbox (in-process)."""
    if own_inbox:
        return ("inbox", workspace_id)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return (scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80))


class Ledger:
    """What is in flight now, shared by the loops of one worker process (thread-safe)."""

    def __init__(self, caps: Caps) -> None:
        self.caps = caps
        self._lock = threading.Lock()
        # Held by whoever decides from a snapshot (`round`) and then acquires what it decided.
        self.claiming = threading.Lock()
        self.total = 0
        self.workspaces: Counter = Counter()
        self.hosts: Counter = Counter()
        self.webhooks: Counter = Counter()

    def round(self) -> Round:
        """A claim round over a snapshot of what is in flight."""
        with self._lock:
            return Round(
                self.caps, self.total, Counter(self.workspaces), Counter(self.hosts), Counter(self.webhooks)
            )

    def acquire(self, slots: Iterable[Slot]) -> None:
        """Count `slots` as in flight (after a round decided they may go)."""
        with self._lock:
            for slot in slots:
                self.total += 1
                self.workspaces[slot.workspace_id] += 1
                self.hosts[slot.host] += 1
                self.webhooks[slot.webhook_id] += 1

    def try_acquire(self, slots: Sequence[Slot]) -> bool:
        """Count all of `slots` as in flight if the caps allow every one of them now, else none."""
        with self.claiming, self._lock:
            trial = Round(
                self.caps, self.total, Counter(self.workspaces), Counter(self.hosts), Counter(self.webhooks)
            )
            if not all(trial.take(slot) for slot in slots):
                return False
            self.total, self.workspaces, self.hosts, self.webhooks = (
                trial.total,
                trial.workspaces,
                trial.hosts,
                trial.webhooks,
            )
            return True

    def release(self, slot: Slot) -> None:
        with self._lock:
            self.total -= 1
            for counter, key in (
                (self.workspaces, slot.workspace_id),
                (self.hosts, slot.host),
                (self.webhooks, slot.webhook_id),
            ):
                counter[key] -= 1
                if counter[key] <= 0:
                    del counter[key]

    def __bool__(self) -> bool:
        return self.total > 0


class Round:
    """The caps applied to one claim: counts what it takes on top of what was in flight."""

    def __init__(
        self, caps: Caps, total: int, workspaces: Counter, hosts: Counter, webhooks: Counter
    ) -> None:
        self.caps = caps
        self.total = total
        self.workspaces = workspaces
        self.hosts = hosts
        self.webhooks = webhooks

    @property
    def free(self) -> int:
        return self.caps.threads - self.total

    def workspace_room(self, workspace_id: uuid.UUID) -> bool:
        """Whether the workspace may take one more sender (its cap, the reserve)."""
        held = self.workspaces[workspace_id]
        if self.free <= 0 or held >= self.caps.per_workspace:
            return False
        return self.free > self.caps.reserve or held < self.caps.reserve_share

    def allows(self, slot: Slot) -> bool:
        return (
            self.workspace_room(slot.workspace_id)
            and self.hosts[slot.host] < self.caps.per_host
            and self.webhooks[slot.webhook_id] < self.caps.per_webhook
        )

    def take(self, slot: Slot) -> bool:
        """Count `slot` if the caps allow it; whether they did."""
        if not self.allows(slot):
            return False
        self.total += 1
        self.workspaces[slot.workspace_id] += 1
        self.hosts[slot.host] += 1
        self.webhooks[slot.webhook_id] += 1
        return True

    def blocked_workspaces(self) -> list[uuid.UUID]:
        return [w for w in self.workspaces if not self.workspace_room(w)]

    def full_hosts(self) -> set[Hashable]:
        return {h for h, n in self.hosts.items() if n >= self.caps.per_host}

    def full_webhooks(self) -> set[uuid.UUID]:
        return {w for w, n in self.webhooks.items() if n >= self.caps.per_webhook}


def round_robin(items: Iterable[T], key) -> list[T]:
    """`items` interleaved across `key` (each group keeps its order): a, b, c, a, b, a, ..."""
    groups: dict[Hashable, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    out: list[T] = []
    queues = [iter(g) for g in groups.values()]
    while queues:
        alive = []
        for q in queues:
            item = next(q, None)
            if item is not None:
                out.append(item)
                alive.append(q)
        queues = alive
    return out
