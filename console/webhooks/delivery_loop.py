"""The delivery loop: claim due deliveries, send them on a thread pool, record results in batches.

One coordinating thread owns the database (claims and records); sender threads only do HTTP.
A claim sets `delivering` with a lease; a worker that dies leaves the lease to expire and the
delivery is sent again with the same `event_id` (at least once). On PostgreSQL the claim takes
`FOR UPDATE SKIP LOCKED`, so several workers share the work without sending a delivery twice
at once; on SQLite the claim is a single guarded UPDATE, which the database serializes.

Senders are shared fairly (`fairness`): caps per workspace, destination and webhook, a reserve for
quiet workspaces, and claims round-robin across workspaces; the ledger of what is in flight is the
worker process's one (`ledger_for`), which the conformance loop takes its senders from too.
"""

from __future__ import annotations

import collections
import functools
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

from flask import Flask
from sqlalchemy import and_, bindparam, false, or_, select, update

from console.core.timeutil import utcnow
from console.db.outages import Outage
from console.events.models import Event
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.secrets import unseal
from console.webhooks import delivery
from console.webhooks.delivery import Job, Result, Transport
from console.webhooks.fairness import Caps, Ledger, Round, Slot, destination, round_robin
from console.webhooks.models import DELIVERING, PENDING, Webhook, WebhookDelivery
from console.webhooks.own_inbox import OwnInbox
from console.workspaces.models import Workspace

log = logging.getLogger(__name__)
D = WebhookDelivery
# A claim polls again without the workspaces (and destinations) its candidates filled, at most this often.
MAX_POLLS_PER_CLAIM = 8
SECRET_CACHE_SECONDS = 60.0  # a key's secret never changes (rolling makes a new key); this bounds memory only
# Claimed jobs waiting per sender the caps allow (`DeliveryLoop.waiting`). Each waits for at most this many
# attempts ahead of it (a timeout each, 15 s) before its own, so fewer when the lease would not cover that.
AHEAD = 2


def settings(app: Flask) -> dict[str, float]:
    """Delivery settings from app.config, with defaults."""
    cfg = app.config
    timeout = float(cfg.get("WEBHOOK_TIMEOUT_SECONDS", delivery.DEFAULT_TIMEOUT_SECONDS))
    return {
        "timeout": timeout,
        # Longer than an attempt can last (plus queueing), so a live worker never loses its claim.
        "lease": float(cfg.get("WEBHOOK_LEASE_SECONDS", 2 * timeout + 30)),
        # Sender threads mostly wait on sockets; many of them cost memory, not CPU.
        "threads": int(cfg.get("WEBHOOK_THREADS", 128)),
        "poll_interval": float(cfg.get("WEBHOOK_POLL_INTERVAL_SECONDS", 0.01)),
        # With nothing due and nothing in flight, the poll slows down (doubling) to this: an idle worker
        # polling every 10 ms cost ~9% of a core, taken from the serving processes on a small machine.
        "idle_poll_interval": float(cfg.get("WEBHOOK_IDLE_POLL_SECONDS", 0.1)),
        "batch": int(cfg.get("WEBHOOK_CLAIM_BATCH", 128)),
    }


class Claimer:
    """Claims due deliveries and turns them into sendable jobs (secrets cached briefly, in memory)."""

    def __init__(self, lease_seconds: float, lease_check_seconds: float = 1.0) -> None:
        self.lease = lease_seconds
        self.lease_check = lease_check_seconds
        self._next_lease_check = 0.0
        self._secrets: dict[uuid.UUID, tuple[str, float]] = {}

    def claim(self, limit: int, *, fair: Round | None = None, inbox: OwnInbox | None = None) -> list[Job]:
        """Claim up to `limit` due deliveries within the caps of `fair` (none: no caps); the caller commits."""
        return self.take(self.find(limit, fair=fair, inbox=inbox))

    def find(self, limit: int, *, fair: Round | None = None, inbox: OwnInbox | None = None) -> list[Job]:
        """Due deliveries to claim, read without writing (on SQLite no lock is held yet).

        Round-robin across workspaces, within the caps of `fair` (which counts what it chose). The poll
        leaves out workspaces and webhooks already at a cap; when a poll's candidates fill a workspace's
        (or destination's) share, the poll is repeated without it, so one workspace's backlog never hides
        another's due work from this claim: a workspace with room has its due delivery claimed in this
        very round, as long as a sender is free for it.
        """
        fair = fair or Ledger(Caps(limit, limit, limit, limit, reserve=0)).round()  # no caps
        postgres = db.session.get_bind().dialect.name == "postgresql"
        polls = ["due"]
        if time.monotonic() >= self._next_lease_check:  # rare: once a second is plenty
            self._next_lease_check = time.monotonic() + self.lease_check
            polls.insert(0, "expired")
        connection = db.session.connection()
        hosts: dict[uuid.UUID, Hashable] = {}  # webhook -> destination, as seen in this claim
        chosen: list[uuid.UUID] = []
        seen: set[uuid.UUID] = set()
        for poll in polls:
            for _ in range(MAX_POLLS_PER_CLAIM):
                room = min(limit - len(chosen), fair.free)
                if room <= 0:
                    break
                full_hosts = fair.full_hosts()
                params = {
                    "now": utcnow(),
                    "workspaces": fair.blocked_workspaces(),
                    "webhooks": list(fair.full_webhooks() | {w for w, h in hosts.items() if h in full_hosts}),
                    "limit": limit,
                }
                rows = connection.execute(_poll_statement(poll, postgres), params).all()
                excluded_before = (len(params["workspaces"]), len(params["webhooks"]))
                for delivery_id, webhook_id, workspace_id, url in fair_order(rows):
                    if delivery_id in seen:
                        continue
                    if webhook_id not in hosts:
                        own = inbox is not None and inbox.workspace_of(url) == workspace_id
                        hosts[webhook_id] = destination(url, workspace_id, own_inbox=own)
                    if len(chosen) < limit and fair.take(Slot(workspace_id, hosts[webhook_id], webhook_id)):
                        seen.add(delivery_id)
                        chosen.append(delivery_id)
                full_hosts = fair.full_hosts()
                excluded_after = (
                    len(fair.blocked_workspaces()),
                    len(fair.full_webhooks() | {w for w, h in hosts.items() if h in full_hosts}),
                )
                # Nothing more due, or nothing newly at a cap (polling again would read the same rows).
                if len(rows) < limit or excluded_after == excluded_before:
                    break
        return self.jobs(chosen) if chosen else []

    def take(self, jobs: list[Job]) -> list[Job]:
        """Mark `jobs` delivering under one lease; returns those still claimable (the guard decides)."""
        if not jobs:
            return []
        values = delivery.claim_values(self.lease)
        params = {
            "ids": [j.delivery_id for j in jobs],
            "now": utcnow(),
            "token": values["claim_token"],
            "until": values["claimed_until"],
        }
        claimed = set(db.session.connection().execute(_TAKE, params).scalars())
        for job in jobs:
            job.claim_token = values["claim_token"]
        return [job for job in jobs if job.delivery_id in claimed]

    def jobs(self, ids: list[uuid.UUID]) -> list[Job]:
        rows = db.session.connection().execute(_DETAILS, {"ids": ids}).all()
        secrets = self._secrets_for({row.api_key_id for row in rows})
        return [
            Job(
                delivery_id=row.id,
                claim_token=None,
                event_id=row.event_id,
                event_type=row.type,
                payload=row.payload,
                via_platform_matching=row.via_platform_matching,
                webhook_id=row.webhook_id,
                workspace_id=row.workspace_id,
                mode=row.mode,
                url=row.url,
                version=row.version,
                secret=secrets[row.api_key_id],
                clock_offset=row.clock_offset_seconds or 0.0,
                attempt_count=row.attempt_count,
                round_attempts=row.round_attempts,
                first_attempt_at=row.first_attempt_at,
                is_test=row.is_test,
            )
            for row in rows
        ]

    def _secrets_for(self, key_ids: set[uuid.UUID]) -> dict[uuid.UUID, str]:
        now = time.monotonic()
        missing = [k for k in key_ids if k not in self._secrets or self._secrets[k][1] < now]
        if missing:
            for key_id, sealed in db.session.execute(
                select(ApiKey.id, ApiKey.secret_ciphertext).where(ApiKey.id.in_(missing))
            ):
                self._secrets[key_id] = (unseal(sealed), now + SECRET_CACHE_SECONDS)
        return {k: self._secrets[k][0] for k in key_ids}


# The hot statements, built once: building SQLAlchemy expressions costs more than running them here.
T = WebhookDelivery.__table__
# Relayed rows are never the worker's: their listener fetches them (`relay.poll`).
_DUE = and_(T.c.status == PENDING, T.c.relayed == false(), T.c.run_after <= bindparam("now"))
_EXPIRED = and_(  # a dead worker's lease
    T.c.status == DELIVERING, T.c.relayed == false(), T.c.claimed_until <= bindparam("now")
)
_TAKE = (
    update(T)
    .where(T.c.id.in_(bindparam("ids", expanding=True)), or_(_DUE, _EXPIRED))
    .values(status=DELIVERING, claim_token=bindparam("token"), claimed_until=bindparam("until"))
    .returning(T.c.id)
)
_DETAILS = (
    select(
        T.c.id,
        T.c.event_id,
        T.c.webhook_id,
        T.c.attempt_count,
        T.c.round_attempts,
        T.c.first_attempt_at,
        T.c.is_test,
        Event.type,
        Event.payload,
        Event.via_platform_matching,
        Webhook.url,
        Webhook.version,
        Webhook.mode,
        Webhook.api_key_id,
        Webhook.workspace_id,
        Workspace.clock_offset_seconds,
    )
    .join(Event, Event.id == T.c.event_id)
    .join(Webhook, Webhook.id == T.c.webhook_id)
    .join(Workspace, Workspace.id == Webhook.workspace_id)
    .where(T.c.id.in_(bindparam("ids", expanding=True)))
)


@functools.cache
def _poll_statement(kind: str, postgres: bool):
    condition, order = (_DUE, T.c.run_after) if kind == "due" else (_EXPIRED, T.c.claimed_until)
    query = (
        select(T.c.id, T.c.webhook_id, T.c.workspace_id, Webhook.url)
        .join(Webhook, Webhook.id == T.c.webhook_id)
        .where(
            condition,
            T.c.workspace_id.not_in(bindparam("workspaces", expanding=True)),
            T.c.webhook_id.not_in(bindparam("webhooks", expanding=True)),
        )
        .order_by(order)
        .limit(bindparam("limit"))
    )
    if postgres:  # locked until commit; other workers skip these rows (the webhook rows stay unlocked)
        query = query.with_for_update(skip_locked=True, of=T)
    return query


def fair_order(rows):
    """Candidates (id, webhook, workspace, url) round-robin across workspaces, each in due order."""
    return round_robin(rows, key=lambda row: row[2])


def ledger_for(app: Flask) -> Ledger:
    """The worker process's one sender ledger (made with the first loop that needs it, never at import)."""
    with _LEDGER_LOCK:
        ledger = app.extensions.get("webhook_senders")
        if ledger is None:
            ledger = app.extensions["webhook_senders"] = Ledger(Caps.from_config(app.config))
        return ledger


_LEDGER_LOCK = threading.Lock()


def release(jobs: list[Job]) -> None:
    """Hand claimed but unsent deliveries back at once (shutdown), instead of waiting out the lease."""
    for job in jobs:
        db.session.execute(
            update(D.__table__)
            .where(D.id == job.delivery_id, D.claim_token == job.claim_token)
            .values(status=PENDING, claim_token=None, claimed_until=None)
        )
    db.session.commit()


def _safe_send(job: Job, transport: Transport, timeout: float) -> Result:
    try:
        return delivery.send(job, transport, timeout)
    except Exception:  # a bug must not lose the delivery: record it as a retryable failure
        log.exception("webhook send failed unexpectedly (delivery %s)", job.delivery_id)
        at = utcnow() + timedelta(seconds=job.clock_offset)
        return Result(job, at, int(time.time()), None, 0, None, "internal error", None, None, True)


def deliver_due(app: Flask, *, max_rounds: int = 100) -> int:
    """Send everything due now and record it (tests, CLI); returns the number of attempts made."""
    cfg = settings(app)
    claimer = Claimer(cfg["lease"], lease_check_seconds=0)
    transport = Transport(app)
    total = 0
    try:
        with ThreadPoolExecutor(int(cfg["threads"])) as pool:
            for _ in range(max_rounds):
                jobs = claimer.claim(int(cfg["batch"]))
                db.session.commit()
                if not jobs:
                    break
                results = list(pool.map(lambda j: _safe_send(j, transport, cfg["timeout"]), jobs))
                delivery.record(results, cfg["timeout"])
                db.session.commit()
                total += len(results)
    finally:
        transport.close()
    return total


class DeliveryLoop:
    """The worker loop for webhook deliveries (`run_forever(stop)`; returns after in-flight attempts)."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.cfg = settings(app)
        self.threads = int(self.cfg["threads"])
        self.inbox = OwnInbox.from_config(app.config)
        self.results: queue.Queue[Result] = queue.Queue()
        # Shared with the conformance loop of this process: both take senders under the same caps.
        self.inflight = ledger_for(app)
        self.futures: dict[Future, Job] = {}
        # Claimed jobs waiting for a sender of their own slot (at most AHEAD per sender the caps allow): a
        # sender that finishes goes on with the next of its slot at once, instead of idling until the next
        # loop turn records its result and claims again. Capped at 24 in flight per webhook, a turn (a
        # transaction, 10-30 ms) between sends halved one webhook's throughput (718 / 522 against 1,188 /
        # 1,421 deliveries/s with the caps at 64, alternated).
        self.waiting: dict[Slot, collections.deque[Job]] = {}
        self._waiting_lock = threading.Lock()
        self._stopping = False
        # The attempts ahead of a waiting job and its own must end within its lease (5 s to spare).
        self.ahead = max(0, min(AHEAD, int((self.cfg["lease"] - 5) // self.cfg["timeout"]) - 1))
        self.outage = Outage(log, "Webhook delivery bookkeeping")

    def _send(self, job: Job, slot: Slot, transport: Transport) -> None:
        while True:
            try:
                result = _safe_send(job, transport, self.cfg["timeout"])
            finally:
                following = self._next_waiting(slot)
                if following is None:
                    self.inflight.release(slot)  # the sender is free the moment the answer (or timeout) is in
            self.results.put(result)
            if following is None:
                return
            job = following  # the same slot: it stays counted in flight

    def _next_waiting(self, slot: Slot) -> Job | None:
        with self._waiting_lock:
            jobs = self.waiting.get(slot)
            if not jobs or self._stopping:
                return None
            job = jobs.popleft()
            if not jobs:
                del self.waiting[slot]
            return job

    def _claim_round(self) -> Round:
        """What a claim may take: the ledger's caps times `AHEAD + 1`, counting what is in flight and waits."""
        fair = self.inflight.round()
        caps, times = fair.caps, self.ahead + 1
        doubled = Caps(
            threads=times * caps.threads,
            per_workspace=times * caps.per_workspace,
            per_host=times * caps.per_host,
            per_webhook=times * caps.per_webhook,
            reserve=caps.reserve,
            reserve_share=caps.reserve_share,
        )
        with self._waiting_lock:
            for slot, jobs in self.waiting.items():
                fair.total += len(jobs)
                fair.workspaces[slot.workspace_id] += len(jobs)
                fair.hosts[slot.host] += len(jobs)
                fair.webhooks[slot.webhook_id] += len(jobs)
        return Round(doubled, fair.total, fair.workspaces, fair.hosts, fair.webhooks)

    def _dispatch(self, jobs: list[Job], pool: ThreadPoolExecutor, transport: Transport) -> None:
        """Send what the caps allow now; the rest waits for a sender of its slot (or the next turn)."""
        with self._waiting_lock:
            earlier = [job for jobs_ in self.waiting.values() for job in jobs_]
            self.waiting.clear()
        for job in [*earlier, *jobs]:
            slot = self._slot(job)
            if self.inflight.try_acquire([slot]):
                self.futures[pool.submit(self._send, job, slot, transport)] = job
            else:
                with self._waiting_lock:
                    self.waiting.setdefault(slot, collections.deque()).append(job)

    def _slot(self, job: Job) -> Slot:
        own = self.inbox.workspace_of(job.url) == job.workspace_id
        return Slot(job.workspace_id, destination(job.url, job.workspace_id, own_inbox=own), job.webhook_id)

    def _collect(self, wait: float) -> list[Result]:
        """The results ready now, waiting up to `wait` for the first; they pile up while we write."""
        batch: list[Result] = []
        try:
            batch.append(self.results.get(timeout=wait) if wait > 0 else self.results.get_nowait())
            while len(batch) < 1000:
                batch.append(self.results.get_nowait())
        except queue.Empty:
            pass
        if batch:
            self.futures = {f: j for f, j in self.futures.items() if not f.done()}
        return batch

    def _step(self, batch: list[Result], claimer: Claimer, *, claim: bool) -> list[Job]:
        """Record `batch` and claim more in one transaction (one commit, one fsync on SQLite).

        Reads come first and writes last, so on SQLite the write lock is held as briefly as possible.
        """
        fair = self._claim_round()
        capacity = min(fair.free, int(self.cfg["batch"]))
        jobs: list[Job] = []
        try:
            if claim and capacity > 0:
                jobs = claimer.find(capacity, fair=fair, inbox=self.inbox)
            if batch:
                delivery.record(batch, self.cfg["timeout"])
            jobs = claimer.take(jobs)
            db.session.commit()
        except Exception:
            # Unrecorded attempts keep their lease: they are sent again when it expires (at least once).
            self.outage.failed(
                f"at the next poll ({len(batch)} results unrecorded, sent again after their lease)"
            )
            db.session.rollback()
            return []
        self.outage.answered()
        return jobs

    def run_forever(self, stop: threading.Event) -> None:
        with self.app.app_context():
            claimer = Claimer(self.cfg["lease"])
            transport = Transport(self.app)
            pool = ThreadPoolExecutor(self.threads, thread_name_prefix="webhook-send")
            wait = 0.0
            try:
                while not stop.is_set():
                    jobs = self._step(self._collect(wait), claimer, claim=True)
                    self._dispatch(jobs, pool, transport)
                    wait = self._next_wait(len(jobs), wait)
                self._shutdown(claimer)
            finally:
                pool.shutdown(wait=True)
                self._step(self._collect(0), claimer, claim=False)
                transport.close()
                db.session.remove()

    def _next_wait(self, claimed: int, wait: float) -> float:
        """How long to wait for a result before polling again.

        A full claim means more may be due: go again at once. Work claimed or in flight: the normal
        poll. Idle: each empty poll doubles the wait, up to `idle_poll_interval`.
        """
        if claimed >= int(self.cfg["batch"]):
            return 0.0
        poll = self.cfg["poll_interval"]
        if claimed or self.inflight or self.waiting:
            return poll
        return min(max(wait * 2, poll), max(poll, self.cfg["idle_poll_interval"]))

    def _shutdown(self, claimer: Claimer) -> None:
        """Stop: unsent jobs go back at once, attempts in flight finish and are recorded."""
        unsent = [job for future, job in self.futures.items() if future.cancel()]
        for job in unsent:
            self.inflight.release(self._slot(job))
        with self._waiting_lock:
            self._stopping = True  # a sender that finishes now stops instead of going on with these
            unsent += [job for jobs in self.waiting.values() for job in jobs]
            self.waiting.clear()
        try:
            release(unsent)
        except Exception:
            log.exception("releasing %d unsent webhook deliveries failed", len(unsent))
            db.session.rollback()
        while any(not f.done() for f in self.futures) or not self.results.empty():
            self._step(self._collect(self.cfg["poll_interval"]), claimer, claim=False)


def main() -> None:
    """`python -m console.webhooks.delivery_loop`: the delivery loop alone, until SIGTERM or SIGINT."""
    from console import create_app

    app = create_app()
    for name in (
        "WEBHOOK_TIMEOUT_SECONDS",
        "WEBHOOK_LEASE_SECONDS",
        "WEBHOOK_THREADS",
        "WEBHOOK_POLL_INTERVAL_SECONDS",
        "WEBHOOK_IDLE_POLL_SECONDS",
        "WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE",
        "WEBHOOK_MAX_IN_FLIGHT_PER_HOST",
        "WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK",
        "WEBHOOK_RESERVED_SENDERS",
        "WEBHOOK_RESERVED_SHARE",
    ):
        if os.environ.get(name):
            app.config[name] = float(os.environ[name])
    from console.core.stopsignals import stop_on_signals

    DeliveryLoop(app).run_forever(stop_on_signals())


if __name__ == "__main__":
    main()
