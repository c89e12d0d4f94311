"""One delivery end to end: headers and signature, each response class, and retries driven by the clock."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
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
from console.webhooks.models import WebhookAttempt, WebhookDelivery
from console.workspaces.models import Workspace

VERSION = "2023-11-22"


@pytest.fixture
def ctx(app, workspace):
    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 0.5
    with app.app_context():
        yield workspace


def make_hook(ws, url, *, mode="sandbox", events=("account.added",), version=VERSION):
    key = db.session.get(ApiKey, __import__("uuid").UUID(ws.key_ids[mode]))
    hook = services.create_webhook(
        key, {"url": url, "status": "active", "enabled_events": list(events), "version": version}
    )
    db.session.commit()
    return hook


def emit(ws, type_="account.added", payload=None, *, mode="sandbox", **kw):
    workspace = db.session.get(Workspace, __import__("uuid").UUID(ws.id))
    event = record_event(
        workspace_id=workspace.id, mode=mode, type=type_, payload=payload or {"n": 1}, at=now(workspace), **kw
    )
    db.session.commit()
    return event


def the_delivery(event):
    db.session.expire_all()
    return db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == event.id)).one()


def attempts_of(delivery):
    return list(
        db.session.scalars(
            select(WebhookAttempt)
            .where(WebhookAttempt.delivery_id == delivery.id)
            .order_by(WebhookAttempt.number)
        )
    )


def run_until_settled(app, ws, event, max_rounds=20):
    """Deliver, then advance the clock to each retry until the delivery is final."""
    workspace = db.session.get(Workspace, __import__("uuid").UUID(ws.id))
    deliver_due(app)
    for _ in range(max_rounds):
        delivery = the_delivery(event)
        if delivery.status != "pending":
            return delivery
        db.session.refresh(workspace)
        wait = (delivery.due_at - now(workspace)).total_seconds()
        advance(workspace, seconds=max(wait, 0) + 1)
        deliver_due(app)
    raise AssertionError("delivery never settled")


def test_headers_and_signature_match_an_independent_hmac(app, ctx):
    with Receiver() as rx:
        hook = make_hook(ctx, rx.url)
        event = emit(ctx, payload={"account_id": "a1", "end_user_id": "u1"})
        not_before = int(time.time())
        assert deliver_due(app) == 1
        not_after = time.time()
    (request,) = rx.requests
    headers = {k.lower(): v for k, v in request["headers"].items()}
    body = request["body"]
    expected = hmac.new(
        ctx.secrets["sandbox"].encode(),
        b"v2:" + headers["x-timestamp"].encode() + b":" + body,
        hashlib.sha256,
    ).hexdigest()
    assert headers["x-service-signature"] == f"v2={expected}"
    assert headers["x-service-webhook-id"] == str(hook.id)
    assert headers["service-version"] == VERSION
    assert headers["content-type"] == "application/json"
    assert not_before <= int(headers["x-timestamp"]) <= not_after  # the moment of sending
    assert json.loads(body) == {
        "event": "account.added",
        "event_id": str(event.id),
        "payload": {"account_id": "a1", "end_user_id": "u1"},
    }
    delivery = the_delivery(event)
    assert (delivery.status, delivery.attempt_count, delivery.last_status_code) == ("delivered", 1, 200)
    (attempt,) = attempts_of(delivery)
    assert attempt.outcome == "delivered" and attempt.response_excerpt == "ok" and attempt.error is None


def test_5xx_every_time_makes_six_attempts_within_15_minutes_then_fails(app, ctx):
    with Receiver(lambda r: (503, b"down")) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        delivery = run_until_settled(app, ctx, event)
    assert delivery.status == "failed"
    attempts = attempts_of(delivery)
    assert len(attempts) == 6 == len(rx.requests)
    assert [a.outcome for a in attempts] == ["retry"] * 5 + ["failed"]
    assert attempts[-1].at - attempts[0].at <= timedelta(minutes=15)
    gaps = [(b.at - a.at).total_seconds() for a, b in itertools.pairwise(attempts)]
    assert all(later > earlier for earlier, later in itertools.pairwise(gaps)), gaps  # exponential
    assert {json.loads(r["body"])["event_id"] for r in rx.requests} == {str(event.id)}
    assert attempts[0].status_code == 503 and attempts[0].response_excerpt == "down"


def test_an_advance_past_the_15_minute_window_leaves_one_more_attempt(app, ctx):
    """docs/jobs.md: a +1 hour makes the due retry once, at the new time; its window is over, so it fails."""
    with Receiver(lambda r: (503, b"down")) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        deliver_due(app)
        assert the_delivery(event).status == "pending"
        advance(db.session.get(Workspace, __import__("uuid").UUID(ctx.id)), seconds=3600)
        deliver_due(app)
        delivery = the_delivery(event)
    assert (delivery.status, delivery.attempt_count, len(rx.requests)) == ("failed", 2, 2)
    first, second = attempts_of(delivery)
    assert second.at - first.at >= timedelta(hours=1) and second.outcome == "failed"


def test_5xx_then_200_is_delivered_on_attempt_2(app, ctx):
    answers = iter([(500, b"oops"), (200, b"ok")])
    with Receiver(lambda r: next(answers)) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        delivery = run_until_settled(app, ctx, event)
    assert (delivery.status, delivery.attempt_count) == ("delivered", 2)
    assert [a.status_code for a in attempts_of(delivery)] == [500, 200]
    assert len(rx.requests) == 2


@pytest.mark.parametrize("status", [400, 404, 410, 301, 307])
def test_3xx_and_4xx_are_recorded_and_not_retried(app, ctx, status):
    with Receiver(lambda r: (status, b"no")) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        delivery = run_until_settled(app, ctx, event)
    assert delivery.status == "failed" and len(rx.requests) == 1
    (attempt,) = attempts_of(delivery)
    assert attempt.status_code == status and str(status) in attempt.error


def test_redirects_are_not_followed(app, ctx):
    with Receiver() as target, Receiver(lambda r: (302, b"", {"Location": target.url})) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        deliver_due(app)
    assert the_delivery(event).status == "failed"
    assert target.requests == []


def test_other_2xx_is_delivered_with_a_warning(app, ctx):
    with Receiver(lambda r: (204, b"")) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        deliver_due(app)
    delivery = the_delivery(event)
    assert delivery.status == "delivered" and len(rx.requests) == 1
    (attempt,) = attempts_of(delivery)
    assert "204" in attempt.warning and "200" in attempt.warning
    assert delivery.warning == attempt.warning  # shown per delivery in GET /v1/events too


def test_the_delivery_warning_is_its_latest_attempts(app, ctx):
    from console.events.queries import resend

    answers = iter([204, 200])
    with Receiver(lambda r: (next(answers), b"")) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        deliver_due(app)
        assert "answered 204" in the_delivery(event).warning
        resend(event, db.session.get(Workspace, event.workspace_id))
        db.session.commit()
        deliver_due(app)
    delivery = the_delivery(event)
    assert len(rx.requests) == 2 and delivery.last_status_code == 200 and delivery.warning is None
    assert [a.warning is not None for a in attempts_of(delivery)] == [True, False]


def test_a_timeout_is_retried(app, ctx):
    def hang_once(record, calls=[]):  # noqa: B006  (state across calls)
        calls.append(1)
        if len(calls) == 1:
            rx.released.wait(60)  # answers only once released, after the attempt timed out
        return 200, b"ok"

    with Receiver(hang_once) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        deliver_due(app)  # returns while the endpoint still hangs: the attempt's timeout ended it
        first = the_delivery(event)
        assert first.status == "pending" and "timeout" in first.last_error
        rx.release()
        delivery = run_until_settled(app, ctx, event)
    assert delivery.status == "delivered" and delivery.attempt_count == 2


def test_network_error_is_retried(app, ctx):
    with Receiver() as rx:
        url = rx.url
    make_hook(ctx, url)  # the server is gone: connection refused
    event = emit(ctx)
    deliver_due(app)
    delivery = the_delivery(event)
    assert delivery.status == "pending" and delivery.round_attempts == 1
    assert delivery.last_error.startswith("connection failed") and url not in delivery.last_error


def test_response_excerpt_is_capped_at_1_kb(app, ctx):
    with Receiver(lambda r: (500, b"x" * 5000)) as rx:
        make_hook(ctx, rx.url)
        event = emit(ctx)
        deliver_due(app)
    (attempt,) = attempts_of(the_delivery(event))
    assert len(attempt.response_excerpt) == 1024


def test_only_subscribed_events_are_sent(app, ctx):
    with Receiver() as rx:
        make_hook(ctx, rx.url, events=["direct_deposit_switch.added"])
        emit(ctx, "account.added")
        wanted = emit(ctx, "direct_deposit_switch.added", {"params": {"action": "full_switch"}})
        emit(ctx, "account.added", mode="development")
        deliver_due(app)
    assert rx.event_ids() == [str(wanted.id)]


def test_paused_webhook_gets_skipped_deliveries(app, ctx):
    with Receiver() as rx:
        hook = make_hook(ctx, rx.url)
        workspace = db.session.get(Workspace, hook.workspace_id)
        services.update_webhook(hook, workspace, {"status": "paused"})
        db.session.commit()
        event = emit(ctx)
        deliver_due(app)
    delivery = the_delivery(event)
    assert (delivery.status, delivery.skip_reason) == ("skipped", "webhook paused")
    assert rx.requests == []


def test_old_version_flags_prime_events_but_delivers_them(app, ctx):
    with Receiver() as rx:
        make_hook(ctx, rx.url, events=["direct_deposit_switch.added"], version="2023-04-18")
        payload = {"id": "j1", "params": {"allocation": {"target": {"account_type": "checking"}}}}
        event = emit(ctx, "direct_deposit_switch.added", payload, via_platform_matching=True)
        deliver_due(app)
    delivery = the_delivery(event)
    assert delivery.status == "delivered" and "not valid for version 2023-04-18" in delivery.warning.lower()
    assert json.loads(rx.requests[0]["body"])["payload"] == payload
    assert rx.requests[0]["headers"]["service-version"] == "2023-04-18"


def test_delivery_time_ssrf_check_refuses_a_name_that_now_resolves_privately(app, ctx, monkeypatch):
    from console.webhooks import urls

    answers = {"hooks.example.com": ["93.184.216.34"]}
    monkeypatch.setattr(urls, "resolve", lambda host, port: answers[host])
    hook = make_hook(ctx, "https://hooks.example.com/in", mode="development")
    answers["hooks.example.com"] = ["10.0.0.7"]  # DNS changed after registration
    event = emit(ctx, mode="development")
    deliver_due(app)
    delivery = the_delivery(event)
    assert delivery.webhook_id == hook.id and delivery.status == "pending"
    assert "10.0.0.7" in delivery.last_error and "private" in delivery.last_error
