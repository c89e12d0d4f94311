"""The relay for sandbox webhooks: listeners, polls, reported answers, leases and ad-hoc round trips."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from console.api.ratelimit import RateLimiter
from console.conformance import runs
from console.extensions import db
from console.webhooks import relay, signing
from console.webhooks.delivery_loop import deliver_due
from console.webhooks.models import WebhookAttempt, WebhookDelivery
from tests.conftest import assert_error
from tests.factories import webhook_body

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def listen(api, **body):
    response = api.post("/sandbox/listen", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def test_event(api, webhook_id, event="account.added"):
    response = api.post(f"/sandbox/webhooks/{webhook_id}/test", json={"event": event})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]["id"]


test_event.__test__ = False  # a helper, not a test


def poll(api, webhook_id):
    response = api.post(f"/sandbox/listen/{webhook_id}/poll", json={})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]["requests"]


def report(api, webhook_id, attempt_id, **result):
    return api.post(f"/sandbox/listen/{webhook_id}/deliveries/{attempt_id}/result", json=result)


def event_delivery(api, event_id):
    response = api.get(f"/events/{event_id}")
    assert response.status_code == 200
    [delivery] = response.get_json()["data"]["deliveries"]
    return delivery


def test_listen_creates_one_relayed_webhook_per_key_and_reuses_it(api):
    first = listen(api)
    assert first["created"] is True and first["relayed"] is True
    assert first["url"] == "relay://console-listen" and first["listener_connected"] is True
    assert set(first["enabled_events"]) >= {"account.added", "direct_deposit_switch.added"}
    again = listen(api, enabled_events=["account.added"], version="2023-11-22")
    assert again["id"] == first["id"] and again["created"] is False
    assert again["enabled_events"] == ["account.added"]
    listed = api.get("/webhooks").get_json()["data"]
    assert [w["id"] for w in listed] == [first["id"]] and listed[0]["relayed"] is True


def test_listen_is_sandbox_only_and_validates_its_body(api, api_for):
    assert_error(api_for("production").post("/sandbox/listen", json={}), 403, "FORBIDDEN", "SANDBOX_ONLY")
    error = assert_error(
        api.post("/sandbox/listen", json={"enabled_events": ["nope"]}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert error["fields"][0]["name"] == "enabled_events[0]"


def test_relay_url_cannot_be_registered_or_changed_by_hand(api, monkeypatch):
    body = {
        "url": "relay://console-listen",
        "status": "active",
        "enabled_events": ["account.added"],
        "version": "2023-11-22",
    }
    error = assert_error(api.post("/webhooks", json=body), 400, "INVALID_REQUEST_PARAMETERS")
    assert "POST /v1/sandbox/listen" in error["fields"][0]["message"]
    hook = listen(api)
    error = assert_error(
        api.put(f"/webhooks/{hook['id']}", json={"url": "http://localhost:3000/x"}),
        400,
        "INVALID_REQUEST_PARAMETERS",
    )
    assert error["fields"] == [{"name": "url", "message": error["fields"][0]["message"]}]
    assert "keeps its url" in error["fields"][0]["message"]


def test_a_relayed_webhook_sent_back_as_read_is_updated_and_a_new_url_is_refused_without_a_lookup(api):
    """A PUT of the object as GET answered it (a generated client's read-modify-write) changes no url, so it
    is no refusal; a different url is refused as a relayed webhook's before any DNS lookup of its host."""
    hook = listen(api)
    sent_back = {name: hook[name] for name in ("url", "status", "enabled_events", "version")}
    response = api.put(f"/webhooks/{hook['id']}", json={**sent_back, "status": "paused"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"]["status"] == "paused"
    assert response.get_json()["data"]["url"] == "relay://console-listen"
    response = api.put(f"/webhooks/{hook['id']}", json={"url": hook["url"]})
    assert response.status_code == 200, response.get_json()
    error = assert_error(
        api.put(f"/webhooks/{hook['id']}", json={"url": "https://no-such-host.invalid/x", "version": "x"}),
        400,
        "INVALID_REQUEST_PARAMETERS",
    )
    by_name = {f["name"]: f["message"] for f in error["fields"]}
    assert "keeps its url" in by_name["url"] and "version" in by_name  # every bad field, at once


def test_a_delivery_waits_for_the_listener_signed_as_a_direct_one_and_is_recorded(app, api, workspace):
    hook = listen(api)
    event_id = test_event(api, hook["id"])
    with app.app_context():
        assert deliver_due(app) == 0  # the worker never sends a relayed delivery
    assert event_delivery(api, event_id)["status"] == "pending"
    [item] = poll(api, hook["id"])
    assert item["kind"] == "delivery" and item["event_id"] == event_id and item["method"] == "POST"
    headers = item["headers"]
    assert set(headers) == {
        "Content-Type",
        "User-Agent",
        "x-service-signature",
        "x-service-webhook-id",
        "x-timestamp",
        "service-version",
    }
    assert headers["x-service-webhook-id"] == hook["id"]
    # Verifies with the key's own secret, exactly as the endpoint would verify a direct delivery.
    payload = signing.verify(workspace.secrets["sandbox"], headers, item["body"])
    assert payload["event_id"] == event_id
    assert poll(api, hook["id"]) == []  # handed out under a lease: not twice
    recorded = report(
        api, hook["id"], item["attempt_id"], status_code=200, latency_ms=12, response_excerpt="ok"
    )
    assert recorded.status_code == 200 and recorded.get_json()["data"]["status"] == "delivered"
    delivery = api.get(f"/events/{event_id}").get_json()["data"]["deliveries"][0]
    assert delivery["status"] == "delivered" and delivery["attempt_count"] == 1
    [attempt] = delivery["attempts"]
    assert (
        attempt["outcome"],
        attempt["status_code"],
        attempt["latency_ms"],
        attempt["response_excerpt"],
    ) == ("delivered", 200, 12, "ok")
    with app.app_context():
        row = db.session.get(WebhookAttempt, db.session.query(WebhookAttempt.id).scalar())
        assert str(row.sent_timestamp) == headers["x-timestamp"]
    # Reported twice: the second is refused, nothing recorded again.
    assert_error(
        report(api, hook["id"], item["attempt_id"], status_code=200, latency_ms=1),
        409,
        "INVALID_REQUEST_PARAMETERS",
        "RELAY_LEASE_LOST",
    )


def test_a_500_is_a_failed_attempt_retried_with_the_usual_backoff(api):
    hook = listen(api)
    event_id = test_event(api, hook["id"])
    [item] = poll(api, hook["id"])
    answer = report(
        api, hook["id"], item["attempt_id"], status_code=500, latency_ms=3, response_excerpt="boom"
    )
    data = answer.get_json()["data"]
    assert data["status"] == "pending" and data["next_attempt_at"]
    delivery = event_delivery(api, event_id)
    assert delivery["status"] == "pending" and delivery["last_status_code"] == 500
    assert poll(api, hook["id"]) == []  # the retry is not due yet (20 s +/- 20%)
    assert api.post("/sandbox/clock/advance", json={"seconds": 30}).status_code == 200
    [retry] = poll(api, hook["id"])
    assert retry["event_id"] == event_id and retry["attempt_id"] != item["attempt_id"]
    assert (
        report(
            api,
            hook["id"],
            retry["attempt_id"],
            error="connection failed: could not connect to localhost:3000",
            latency_ms=1,
        ).status_code
        == 200
    )
    attempts = api.get(f"/events/{event_id}").get_json()["data"]["deliveries"][0]["attempts"]
    assert [(a["outcome"], a["status_code"]) for a in attempts] == [("retry", 500), ("retry", None)]
    assert attempts[1]["error"] == "via listener: connection failed: could not connect to localhost:3000"


def test_a_lease_that_runs_out_hands_the_delivery_out_again(app, api):
    app.config["WEBHOOK_RELAY_LEASE_SECONDS"] = 0.0
    hook = listen(api)
    test_event(api, hook["id"])
    [first] = poll(api, hook["id"])
    [second] = poll(api, hook["id"])  # the first listener "died": its lease has run out
    assert second["delivery_id"] == first["delivery_id"] and second["attempt_id"] != first["attempt_id"]
    assert_error(
        report(api, hook["id"], first["attempt_id"], status_code=200, latency_ms=1),
        409,
        "INVALID_REQUEST_PARAMETERS",
        "RELAY_LEASE_LOST",
    )
    assert report(api, hook["id"], second["attempt_id"], status_code=200, latency_ms=1).status_code == 200


def test_result_body_needs_exactly_one_of_status_code_and_error(api):
    hook = listen(api)
    test_event(api, hook["id"])
    [item] = poll(api, hook["id"])
    for body in ({"latency_ms": 1}, {"latency_ms": 1, "status_code": 200, "error": "x"}):
        error = assert_error(
            report(api, hook["id"], item["attempt_id"], **body), 400, "INVALID_REQUEST_PARAMETERS"
        )
        assert {f["name"] for f in error["fields"]} == {"status_code", "error"}
    assert_error(
        report(api, hook["id"], item["attempt_id"], status_code=99, latency_ms=1),
        400,
        "INVALID_REQUEST_PARAMETERS",
    )


def test_poll_and_report_only_for_the_workspaces_relayed_webhooks(app, api, client):
    from tests.conftest import Api

    direct = api.post("/webhooks", json=webhook_body("http://localhost:3000/h")).get_json()["data"]
    assert_error(api.post(f"/sandbox/listen/{direct['id']}/poll", json={}), 404, "RECORD_NOT_FOUND")
    hook = listen(api)
    with app.app_context():
        from console.keys.services import create_key
        from console.workspaces.services import create_workspace

        other = create_workspace("Other")
        secret = create_key(other.id, "sandbox", "x").secret
        db.session.commit()
    stranger = Api(client, secret)
    assert_error(stranger.post(f"/sandbox/listen/{hook['id']}/poll", json={}), 404, "RECORD_NOT_FOUND")
    assert_error(
        stranger.post(
            f"/sandbox/listen/{hook['id']}/deliveries/{uuid.uuid4()}/result",
            json={"status_code": 200, "latency_ms": 1},
        ),
        404,
        "RECORD_NOT_FOUND",
    )


def test_a_poll_whose_webhook_is_deleted_meanwhile_is_a_404_not_a_500(app, api, monkeypatch):
    """Seen when a trainer deleted a training class while trainees' listeners polled: the poll had read the
    webhook, the class's deletion took it (and its workspace) away, and the poll's update of the webhook
    matched no row: a 500 (StaleDataError) in every listener's terminal."""
    from sqlalchemy import delete

    from console.core.timeutil import utcnow
    from console.webhooks.models import Webhook

    hook = listen(api)
    real = relay._note_seen

    def deleted_meanwhile(webhook):
        real(webhook)
        webhook.listener_seen_at = utcnow()  # the poll's own write, pending
        with db.engine.begin() as connection:  # another request: the class's deletion
            connection.execute(delete(Webhook).where(Webhook.id == uuid.UUID(hook["id"])))

    monkeypatch.setattr(relay, "_note_seen", deleted_meanwhile)
    assert_error(api.post(f"/sandbox/listen/{hook['id']}/poll", json={}), 404, "RECORD_NOT_FOUND")


def test_deliveries_to_a_direct_webhook_are_not_relayed(app, api):
    direct = api.post("/webhooks", json=webhook_body("http://localhost:3000/h")).get_json()["data"]
    hook = listen(api)
    test_event(api, direct["id"])
    assert poll(api, hook["id"]) == []
    with app.app_context():
        assert [d.relayed for d in db.session.query(WebhookDelivery)] == [False]


def _answer_when_asked(api, webhook_id, seen: list, status=202):
    deadline = time.monotonic() + 60  # a backstop: it answers the first request it fetches
    while time.monotonic() < deadline:
        items = poll(api, webhook_id)
        if items:
            seen.extend(items)
            for item in items:
                report(
                    api,
                    webhook_id,
                    item["attempt_id"],
                    status_code=status,
                    latency_ms=7,
                    response_excerpt="seen",
                )
            return
        time.sleep(0.05)


def test_round_trip_sends_one_request_through_the_listener_and_returns_its_answer(app, api):
    hook = listen(api)
    seen: list = []
    helper = threading.Thread(target=_answer_when_asked, args=(api, hook["id"], seen))
    helper.start()
    with app.app_context():
        answer = relay.round_trip(hook["id"], "post", {"x-test": "1"}, b'{"a": 1}', timeout=60)
    helper.join()
    assert answer == relay.Answer(202, 7, "seen", None)
    assert [(i["kind"], i["method"], i["headers"], i["body"]) for i in seen] == [
        ("round_trip", "POST", {"x-test": "1"}, '{"a": 1}')
    ]
    with app.app_context():  # nothing left behind
        assert db.session.query(relay.RelayRoundTrip).count() == 0


def test_round_trip_without_a_listener_times_out_with_a_clear_error(app, api):
    hook = listen(api)
    with app.app_context():
        answer = relay.round_trip(hook["id"], "POST", {}, "{}", timeout=0.3)
    assert answer.status_code is None and "no listener fetched the request" in answer.error
    assert answer.timed_out  # what a conformance check's report records as reason "timeout"


def _conforming_listener(api, webhook_id, secret, stop, answered):
    """A listener whose endpoint verifies like a correct receiver: 2xx when valid, 400 otherwise."""
    while not stop.is_set():
        for item in poll(api, webhook_id):
            try:
                signing.verify(secret, item["headers"], item["body"])
                status = 200
            except signing.WebhookVerificationError:
                status = 400
            answered.append(status)
            report(api, webhook_id, item["attempt_id"], status_code=status, latency_ms=3)
        time.sleep(0.05)


def test_the_conformance_check_of_a_relayed_webhook_goes_through_its_listener(api, workspace):
    hook = listen(api)
    stop, answered = threading.Event(), []
    helper = threading.Thread(
        target=_conforming_listener, args=(api, hook["id"], workspace.secrets["sandbox"], stop, answered)
    )
    helper.start()
    path = f"/sandbox/webhooks/{hook['id']}/conformance"
    try:
        started = api.post(path, json={})
        assert started.status_code == 202 and started.get_json()["data"]["status"] == "queued"
        assert runs.run_due(api.client.application) == 1  # what the worker does, on a thread of its own
    finally:
        stop.set()
        helper.join()
    report_data = api.get(path).get_json()["data"]["report"]
    failed = [(c["name"], c["detail"]) for c in report_data["checks"] if not c["passed"]]
    assert report_data["passed"], failed
    assert 200 in answered and 400 in answered  # the forged, altered and stale requests reached it too


def test_two_reports_of_one_attempt_at_the_same_moment_record_it_once(app, api, workspace, monkeypatch):
    """A listener's retry of a slow (not lost) report raced the first: both found the attempt handed out and
    both stored one, and the delivery said 1 attempt while listing 2. Now the second gets RELAY_LEASE_LOST."""
    from tests.api.at_once import at_once, meeting_before, posting

    hook = listen(api)
    event_id = test_event(api, hook["id"])
    [item] = poll(api, hook["id"])
    monkeypatch.setattr(relay, "_timing", meeting_before(relay._timing))  # reached once found handed out
    path = f"/sandbox/listen/{hook['id']}/deliveries/{item['attempt_id']}/result"
    answers = at_once(
        app, 2, posting(path, workspace.secrets["sandbox"], {"status_code": 500, "latency_ms": 3})
    )
    assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
    delivery = api.get(f"/events/{event_id}").get_json()["data"]["deliveries"][0]
    assert delivery["attempt_count"] == 1 and len(delivery["attempts"]) == 1
