"""Conformance runs: queued by a request, executed by the worker's RunLoop, picked up again after a dead worker."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import update

from bench.webhooks import Receiver
from console.conformance import runs
from console.conformance.models import DONE, QUEUED, RUNNING, ConformanceRun
from console.core.errors import Conflict, RateLimited
from console.core.timeutil import utcnow
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import services
from console.webhooks.delivery_loop import ledger_for
from console.webhooks.own_inbox import OwnInbox
from tests.waiting import wait_for

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]


@pytest.fixture
def hook(app, workspace):
    app.config.update(WEBHOOK_TIMEOUT_SECONDS=3)
    with app.app_context(), Receiver() as rx:
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        created = services.create_webhook(
            key,
            {"url": rx.url, "status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"},
        )
        db.session.commit()
        yield created, rx


def status(run_id):
    db.session.expire_all()
    return db.session.get(ConformanceRun, run_id).status


def test_the_worker_executes_a_queued_run_and_keeps_its_report(app, hook):
    webhook, rx = hook
    run = runs.start(app, webhook)
    db.session.commit()
    assert run.status == QUEUED and not rx.requests  # queuing sends nothing: the request thread never waits
    stop = threading.Event()
    loop = threading.Thread(target=runs.RunLoop(app).run_forever, args=(stop,))
    loop.start()
    try:
        assert wait_for(lambda: status(run.id) == DONE, 20)
    finally:
        stop.set()
        loop.join(10)
    done = db.session.get(ConformanceRun, run.id)
    assert done.report["webhook_id"] == str(webhook.id) and rx.requests
    assert ledger_for(app).total == 0  # every sender given back


def test_one_active_run_per_webhook_and_a_few_per_workspace(app, hook):
    webhook, _rx = hook
    app.config["CONFORMANCE_RUNS_PER_WORKSPACE"] = 1
    runs.start(app, webhook)
    db.session.commit()
    with pytest.raises(Conflict) as conflict:
        runs.start(app, webhook)
    assert conflict.value.retry_after == 5  # the 3 s timeout, the 1 s grace, a second more
    db.session.rollback()
    other = services.create_webhook(
        db.session.get(ApiKey, webhook.api_key_id),
        {
            "url": webhook.url,
            "status": "active",
            "enabled_events": ["account.added"],
            "version": "2023-11-22",
        },
    )
    db.session.commit()
    with pytest.raises(RateLimited):
        runs.start(app, other)


def test_a_run_whose_worker_died_is_claimed_again_after_its_lease(app, hook):
    webhook, _rx = hook
    run = runs.start(app, webhook)
    db.session.commit()
    inbox = OwnInbox.from_config(app.config)
    run_id, dead_token, _plan, slots = runs.claim_next(app, inbox)  # a worker claims it, then dies
    for slot in slots:
        ledger_for(app).release(slot)
    assert status(run_id) == RUNNING
    assert runs.claim_next(app, inbox) is None  # the lease holds: nobody runs it twice at once
    db.session.execute(
        update(ConformanceRun)
        .where(ConformanceRun.id == run_id)
        .values(claimed_until=utcnow() - timedelta(seconds=1))
    )
    db.session.commit()
    again = runs.claim_next(app, inbox)
    assert again is not None and again[0] == run.id and again[1] != dead_token
    with ThreadPoolExecutor(1) as pool:
        loop = runs.RunLoop(app)
        pool.submit(loop._execute, *again).result(30)
    assert status(run.id) == DONE
    assert runs.finish(run.id, dead_token, again[2], {"passed": True}) is False  # the dead worker's late save
    assert db.session.get(ConformanceRun, run.id).attempts == 2


def test_a_webhook_keeps_its_newest_runs_and_no_more(app, hook, monkeypatch):
    """Re-running a webhook around the clock must not grow the database: the oldest finished runs go."""
    webhook, _rx = hook
    monkeypatch.setattr(runs, "KEEP_RUNS_PER_WEBHOOK", 3)
    started = []
    for n in range(5):
        run_id = runs.start(app, webhook).id
        started.append(run_id)
        db.session.commit()
        # Done, and dated in the past in order (one after another, whatever the clock's resolution).
        earlier = utcnow() - timedelta(seconds=100 - n)
        done = (
            update(ConformanceRun).where(ConformanceRun.id == run_id).values(status=DONE, created_at=earlier)
        )
        db.session.execute(done)
        db.session.commit()
    kept = {r.id for r in db.session.query(ConformanceRun).filter_by(webhook_id=webhook.id)}
    assert kept == set(started[-3:])
    # An active run is never deleted, however many newer ones there would be.
    db.session.execute(update(ConformanceRun).where(ConformanceRun.id == started[-3]).values(status=QUEUED))
    db.session.commit()
    with pytest.raises(Conflict):
        runs.start(app, webhook)  # one active run per webhook, as before
    db.session.rollback()
    assert {r.id for r in db.session.query(ConformanceRun).filter_by(webhook_id=webhook.id)} == kept
