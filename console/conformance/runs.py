"""Conformance runs: asked for by a request, executed by the worker, never on a serving thread.

`start` queues a run (at most one active per webhook, `CONFORMANCE_RUNS_PER_WORKSPACE` per workspace;
past that a 409 / 429 with `Retry-After`); the caller commits and answers at once. `RunLoop` (a worker
loop) claims queued runs under a lease, as deliveries are claimed, takes one sender per check from the
worker's sender ledger (the same caps as deliveries: `console.webhooks.fairness`), runs the suite
(`services.run`), and stores the report on the run and as the webhook's latest, in one commit. A run
whose worker died is claimed again when its lease runs out.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from flask import Flask
from sqlalchemy import delete, func, or_, select, update

from console.conformance import services
from console.conformance.checks import suite
from console.conformance.models import ACTIVE, DONE, QUEUED, RUNNING, ConformanceRun
from console.core.errors import Conflict, NotFound, RateLimited, shown
from console.core.timeutil import isoformat, utcnow
from console.db.locking import lock_row
from console.db.outages import Outage
from console.extensions import db
from console.webhooks.delivery_loop import ledger_for, settings
from console.webhooks.fairness import Slot, destination
from console.webhooks.models import Webhook
from console.webhooks.own_inbox import OwnInbox
from console.workspaces.models import Workspace

log = logging.getLogger(__name__)
DEFAULT_RUNS_PER_WORKSPACE = 2
# Finished runs kept per webhook (the newest); an older one goes when a new run is started. Each keeps its
# report (a few KB to ~70 KB): kept forever, a tenant re-running a slow endpoint around the clock grew the
# database for as long as it kept going.
KEEP_RUNS_PER_WEBHOOK = 10
DEFAULT_WORKER_RUNS = 4
POLL_SECONDS = 0.2


def _limits(app: Flask) -> dict[str, float]:
    cfg = app.config
    timeout = settings(app)["timeout"]
    return {
        "per_workspace": int(cfg.get("CONFORMANCE_RUNS_PER_WORKSPACE", DEFAULT_RUNS_PER_WORKSPACE)),
        "worker_runs": int(cfg.get("CONFORMANCE_WORKER_RUNS", DEFAULT_WORKER_RUNS)),
        # Longer than a run can last (the timeout, the grace, saving), so a live worker keeps its claim.
        "lease": float(cfg.get("CONFORMANCE_LEASE_SECONDS") or 2 * timeout + 30),
        "timeout": timeout,
    }


def retry_after(app: Flask) -> int:
    """Seconds after which a run started now is surely over (the header of a 409 / 429)."""
    return int(settings(app)["timeout"] + services.GRACE_SECONDS + 1)


def start(app: Flask, webhook: Webhook) -> ConformanceRun:
    """Queue a run of `webhook` (flushed; the caller commits), or Conflict / RateLimited past the limits."""
    # Counted one start after the other: two at once both counted no active run, and the second insert broke
    # the partial unique index (a 500), or both passed the workspace's runs at a time.
    lock_row(Workspace, webhook.workspace_id)
    active = select(func.count()).select_from(ConformanceRun).where(ConformanceRun.status.in_(ACTIVE))
    if db.session.scalar(active.where(ConformanceRun.webhook_id == webhook.id)):
        error = Conflict(f"A conformance run of webhook {webhook.id} is already queued or running; poll it.")
        error.retry_after = retry_after(app)
        raise error
    limit = _limits(app)["per_workspace"]
    if db.session.scalar(active.where(ConformanceRun.workspace_id == webhook.workspace_id)) >= limit:
        raise RateLimited(
            f"At most {limit} conformance runs per workspace at a time; try again when one has finished.",
            retry_after=retry_after(app),
        )
    run = ConformanceRun(
        workspace_id=webhook.workspace_id,
        mode=webhook.mode,
        webhook_id=webhook.id,
        status=QUEUED,
        created_at=utcnow(),
        attempts=0,
    )
    db.session.add(run)
    db.session.flush()  # the partial unique index stays the backstop of the lock above
    _forget_old_runs(webhook.id)
    return run


def _forget_old_runs(webhook_id: uuid.UUID) -> None:
    """Delete the webhook's finished runs beyond the newest `KEEP_RUNS_PER_WEBHOOK` (the new one included)."""
    kept = (
        select(ConformanceRun.id)
        .where(ConformanceRun.webhook_id == webhook_id)
        .order_by(ConformanceRun.created_at.desc(), ConformanceRun.id.desc())
        .limit(KEEP_RUNS_PER_WEBHOOK)
    )
    db.session.execute(
        delete(ConformanceRun)
        .where(
            ConformanceRun.webhook_id == webhook_id,
            ConformanceRun.status == DONE,
            ConformanceRun.id.not_in(kept.scalar_subquery()),
        )
        .execution_options(synchronize_session=False)
    )


def get(webhook: Webhook, run_id: str | uuid.UUID | None = None) -> ConformanceRun:
    """One run of `webhook` (the latest when `run_id` is None), or NotFound."""
    query = select(ConformanceRun).where(ConformanceRun.webhook_id == webhook.id)
    if run_id is not None:
        try:
            query = query.where(ConformanceRun.id == uuid.UUID(str(run_id)))
        except ValueError:
            raise NotFound(f"No conformance run with id {shown(run_id)}.") from None
    run = db.session.scalars(query.order_by(ConformanceRun.created_at.desc()).limit(1)).first()
    if run is None:
        raise NotFound(
            f"No conformance run with id {shown(run_id)}."
            if run_id
            else f"Webhook {webhook.id} has no conformance run yet: POST /v1/sandbox/webhooks/{webhook.id}/conformance."
        )
    return run


def serialize(run: ConformanceRun) -> dict[str, Any]:
    return {
        "id": str(run.id),
        "webhook_id": str(run.webhook_id),
        "status": run.status,
        "created_at": isoformat(run.created_at),
        "started_at": isoformat(run.started_at) if run.started_at else None,
        "finished_at": isoformat(run.finished_at) if run.finished_at else None,
        "passed": run.passed,
        "report": run.report,
    }


# The worker side ------------------------------------------------------------------------------


def _claimable():
    now = utcnow()
    return or_(
        ConformanceRun.status == QUEUED,
        (ConformanceRun.status == RUNNING) & (ConformanceRun.claimed_until <= now),  # a dead worker's
    )


def claim_next(app: Flask, inbox: OwnInbox, exclude: set[uuid.UUID] = frozenset()):
    """Claim the oldest claimable run whose checks fit the sender caps now: (run id, plan, slots) or None.

    Commits the claim (status `running`, a lease) before anything is sent.
    """
    limits = _limits(app)
    query = (
        select(ConformanceRun)
        .where(_claimable(), ConformanceRun.id.not_in(list(exclude)))
        .order_by(ConformanceRun.created_at)
        .limit(8)
    )
    if db.session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    ledger = ledger_for(app)
    for run in db.session.scalars(query).all():
        webhook = db.session.get(Webhook, run.webhook_id)
        workspace = db.session.get(Workspace, run.workspace_id)
        if webhook is None or webhook.deleted_at is not None or workspace is None:
            run.status, run.finished_at, run.claimed_until = DONE, utcnow(), None
            continue
        plan = services.plan(app, webhook, workspace)
        own = inbox.workspace_of(webhook.url) == webhook.workspace_id
        host = destination(webhook.url, webhook.workspace_id, own_inbox=own)
        slots = [Slot(webhook.workspace_id, host, webhook.id) for _ in suite(plan)]
        if not ledger.try_acquire(slots):
            continue  # its workspace or destination is at a cap: another run, or later
        token = uuid.uuid4()
        run.status, run.claim_token = RUNNING, token
        run.claimed_until = utcnow() + timedelta(seconds=limits["lease"])
        run.started_at = run.started_at or utcnow()
        run.attempts += 1
        run_id = run.id
        try:
            db.session.commit()
        except Exception:
            for slot in slots:
                ledger.release(slot)
            raise
        return run_id, token, plan, slots
    db.session.commit()
    return None


def finish(run_id: uuid.UUID, token: uuid.UUID, plan, report: dict[str, Any]) -> bool:
    """Store the report on the run (if this worker still holds it) and as the webhook's latest; commits."""
    done = db.session.execute(
        update(ConformanceRun)
        .where(ConformanceRun.id == run_id, ConformanceRun.claim_token == token)
        .values(status=DONE, finished_at=utcnow(), claimed_until=None, passed=report["passed"], report=report)
    ).rowcount
    if done:
        services.save(plan, report)
    db.session.commit()
    return bool(done)


class RunLoop:
    """The worker loop executing conformance runs (`run_forever(stop)`; finishes the runs in flight)."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.outage = Outage(log, "Claiming a conformance run")
        self.limits = _limits(app)
        self.inbox = OwnInbox.from_config(app.config)
        self.ledger = ledger_for(app)
        self._running: set[uuid.UUID] = set()
        self._lock = threading.Lock()

    def _execute(self, run_id, token, plan, slots) -> None:
        try:
            with self.app.app_context():
                report = services.run(self.app, plan)
                try:
                    finish(run_id, token, plan, report)
                except Exception:  # the lease runs out and the run is claimed again
                    log.exception("saving conformance run %s failed", run_id)
                    db.session.rollback()
                finally:
                    db.session.remove()
        finally:
            for slot in slots:
                self.ledger.release(slot)
            with self._lock:
                self._running.discard(run_id)

    def step(self, pool: ThreadPoolExecutor) -> Future | None:
        """Claim and start one run on `pool` if there is room; its future, or None when none started."""
        with self._lock:
            if len(self._running) >= self.limits["worker_runs"]:
                return None
            running = set(self._running)
        with self.app.app_context():
            try:
                claimed = claim_next(self.app, self.inbox, running)
                self.outage.answered()
            except Exception:
                self.outage.failed("at the next poll")
                db.session.rollback()
                claimed = None
            finally:
                db.session.remove()
        if claimed is None:
            return None
        with self._lock:
            self._running.add(claimed[0])
        return pool.submit(self._execute, *claimed)

    def run_forever(self, stop: threading.Event) -> None:
        pool = ThreadPoolExecutor(self.limits["worker_runs"], thread_name_prefix="conformance-run")
        try:
            while not stop.is_set():
                if self.step(pool) is None:
                    stop.wait(POLL_SECONDS)
        finally:
            pool.shutdown(wait=True)  # a run in flight lasts at most the timeout plus a second


def run_due(app: Flask, *, max_runs: int = 100) -> int:
    """Execute the claimable runs one after another, each on a worker thread, as the RunLoop would; returns
    how many ran. For tests, where no worker runs (`RUN_WORKER` off), as `deliver_due` is for deliveries."""
    loop = RunLoop(app)
    ran = 0
    with ThreadPoolExecutor(1, thread_name_prefix="conformance-run") as pool:
        while ran < max_runs:
            future = loop.step(pool)
            if future is None:
                break
            future.result()
            ran += 1
    return ran
