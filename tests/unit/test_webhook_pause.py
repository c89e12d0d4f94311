"""Pausing after 30 days without a 200 OK (workspace clock), skipped events, and reactivation."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from bench.webhooks import Receiver
from console.clock.moves import advance
from console.clock.services import now
from console.events.services import record_event
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import services
from console.webhooks.delivery_loop import deliver_due
from console.webhooks.models import Webhook, WebhookDelivery
from console.workspaces.models import Workspace

DAY = 86400


@pytest.fixture
def ctx(app, workspace):
    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 0.5
    with app.app_context():
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        yield ws, key


def make_hook(key, url):
    hook = services.create_webhook(
        key, {"url": url, "status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"}
    )
    db.session.commit()
    return hook.id


def emit(ws):
    db.session.refresh(ws)
    event = record_event(workspace_id=ws.id, mode="sandbox", type="account.added", payload={}, at=now(ws))
    db.session.commit()
    return event.id


def webhook(hook_id) -> Webhook:
    db.session.expire_all()
    return db.session.get(Webhook, hook_id)


def delivery_status(event_id):
    db.session.expire_all()
    return db.session.scalars(
        select(WebhookDelivery.status).where(WebhookDelivery.event_id == event_id)
    ).one()


def test_30_days_without_200_pauses_even_without_new_events(app, ctx):
    ws, key = ctx
    with Receiver(lambda r: (500, b"down")) as rx:
        hook_id = make_hook(key, rx.url)
        emit(ws)
        deliver_due(app)
        first_failure = webhook(hook_id).failing_since
        assert first_failure is not None and webhook(hook_id).status == "active"
        advance(ws, seconds=29 * DAY)
        assert webhook(hook_id).status == "active"
        advance(ws, seconds=2 * DAY)  # only the scheduled check runs: no event, no delivery
        hook = webhook(hook_id)
        assert (hook.status, hook.pause_reason) == ("paused", "failing")
        # Paused when the 30 days were up, not when the advance (a day later on the clock) got to it.
        assert hook.paused_at - first_failure == timedelta(days=30)

        skipped = emit(ws)
        assert delivery_status(skipped) == "skipped"
        sent = len(rx.requests)
        deliver_due(app)
        assert len(rx.requests) == sent

        rx.respond = lambda r: (200, b"ok")
        services.reactivate(webhook(hook_id), now(ws))
        db.session.commit()
        hook = webhook(hook_id)
        assert hook.status == "active" and hook.failing_since is None and hook.paused_at is None
        fresh = emit(ws)
        deliver_due(app)
        assert delivery_status(fresh) == "delivered" and webhook(hook_id).last_success_at is not None


def test_a_200_within_30_days_starts_the_count_over(app, ctx):
    ws, key = ctx
    answers = iter([(500, b"")] + [(200, b"ok")] + [(500, b"")] * 20)
    with Receiver(lambda r: next(answers)) as rx:
        hook_id = make_hook(key, rx.url)
        emit(ws)
        deliver_due(app)  # 500
        advance(ws, seconds=20 * DAY)
        deliver_due(app)  # the retry answers 200
        assert webhook(hook_id).failing_since is None
        emit(ws)
        deliver_due(app)  # 500 again: a new failing run starts at day 20
        advance(ws, seconds=15 * DAY)
        assert webhook(hook_id).status == "active"
        advance(ws, seconds=16 * DAY)
        assert webhook(hook_id).status == "paused"
        assert len(rx.requests) >= 3


def test_pending_deliveries_are_skipped_when_paused(app, ctx):
    ws, key = ctx
    with Receiver(lambda r: (503, b"")) as rx:
        hook_id = make_hook(key, rx.url)
        event_id = emit(ws)
        deliver_due(app)
        assert delivery_status(event_id) == "pending"  # a retry is scheduled
        services.update_webhook(webhook(hook_id), ws, {"status": "paused"})
        db.session.commit()
        assert delivery_status(event_id) == "skipped"
        advance(ws, seconds=3600)
        deliver_due(app)
        assert len(rx.requests) == 1


def test_a_failed_attempt_after_30_days_pauses_at_once(app, ctx):
    ws, key = ctx
    hook_id = make_hook(key, "http://127.0.0.1:9/")  # nothing listens: every attempt fails
    hook = webhook(hook_id)
    hook.failing_since = now(ws) - timedelta(days=31)
    db.session.commit()
    emit(ws)
    deliver_due(app)
    assert webhook(hook_id).status == "paused"


def test_paused_while_in_flight_the_retry_is_skipped(app, ctx):
    from console.webhooks import delivery
    from console.webhooks.delivery_loop import Claimer

    ws, key = ctx
    with Receiver(lambda r: (503, b"")) as rx:
        hook_id = make_hook(key, rx.url)
        event_id = emit(ws)
        (job,) = Claimer(lease_seconds=30).claim(10)
        db.session.commit()
        services.update_webhook(webhook(hook_id), ws, {"status": "paused"})  # while the attempt is out
        db.session.commit()
        transport = delivery.Transport(app)
        try:
            result = delivery.send(job, transport, timeout=2)
        finally:
            transport.close()
        delivery.record([result])
        db.session.commit()
    assert result.status_code == 503 and len(rx.requests) == 1
    assert delivery_status(event_id) == "skipped"


def test_unsubscribed_while_in_flight_the_retry_is_skipped(app, ctx):
    """Only subscribed events are sent: a type dropped while its attempt is out gets no retry (the update skipped
    only the pending ones); a type kept retries as usual."""
    from console.webhooks import delivery
    from console.webhooks.delivery_loop import Claimer

    ws, key = ctx
    with Receiver(lambda r: (503, b"")) as rx:
        hook = services.create_webhook(
            key,
            {
                "url": rx.url,
                "status": "active",
                "enabled_events": ["account.added", "income.added"],
                "version": "2023-11-22",
            },
        )
        db.session.commit()
        dropped = record_event(
            workspace_id=ws.id, mode="sandbox", type="income.added", payload={}, at=now(ws)
        )
        kept = record_event(workspace_id=ws.id, mode="sandbox", type="account.added", payload={}, at=now(ws))
        db.session.commit()
        dropped_id, kept_id = dropped.id, kept.id
        jobs = Claimer(lease_seconds=30).claim(10)
        db.session.commit()
        # The attempts are out: the update skips only what is pending.
        services.update_webhook(webhook(hook.id), ws, {"enabled_events": ["account.added"]})
        db.session.commit()
        transport = delivery.Transport(app)
        try:
            results = [delivery.send(job, transport, timeout=2) for job in jobs]
        finally:
            transport.close()
        delivery.record(results)
        db.session.commit()
    assert len(rx.requests) == 2
    assert (delivery_status(dropped_id), delivery_status(kept_id)) == ("skipped", "pending")
