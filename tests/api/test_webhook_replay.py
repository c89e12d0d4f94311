"""POST /v1/webhooks/{id}/replay: every failed delivery of events since a moment goes out again."""

from __future__ import annotations

import pytest

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.webhooks.delivery_loop import deliver_due
from tests.api.test_events import emit, hook
from tests.conftest import assert_error


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def statuses(api):
    return {e["id"]: e["deliveries"][0]["status"] for e in api.get("/events").get_json()["data"]}


def test_replay_resends_failed_deliveries_since_a_moment(app, api, workspace):
    answers = {"status": 400}  # a 4xx is not retried: the delivery fails at once
    with Receiver(lambda record: (answers["status"], b"no")) as rx:
        webhook_id = hook(api, rx.url)
        old = emit(app, workspace, minutes=-60)
        recent = [emit(app, workspace, minutes=-5), emit(app, workspace, minutes=-1)]
        with app.app_context():
            deliver_due(app)
        assert set(statuses(api).values()) == {"failed"}
        answers["status"] = 200
        since = api.get("/events").get_json()["data"][1]["created_at"]  # the -5 minute event
        response = api.post(f"/webhooks/{webhook_id}/replay", json={"since": since})
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["data"] == {"webhook_id": webhook_id, "since": since, "replayed": 2}
        assert {statuses(api)[e] for e in recent} == {"pending"}
        with app.app_context():
            assert deliver_due(app) == 2
    now_statuses = statuses(api)
    assert [now_statuses[e] for e in recent] == ["delivered", "delivered"]
    assert now_statuses[old] == "failed"
    detail = api.get(f"/events/{recent[0]}").get_json()["data"]["deliveries"][0]
    assert [a["status_code"] for a in detail["attempts"]] == [400, 200]
    # Nothing failed is left since then: a second replay finds nothing.
    again = api.post(f"/webhooks/{webhook_id}/replay", json={"since": since}).get_json()["data"]
    assert again["replayed"] == 0


def test_replay_validates_its_body_and_scope(api, api_for):
    webhook_id = hook(api, "http://127.0.0.1:9/hook")
    error = assert_error(
        api.post(f"/webhooks/{webhook_id}/replay", json={}),
        400,
        "INVALID_REQUEST_PARAMETERS",
        "INVALID_FIELDS",
    )
    assert error["fields"][0]["name"] == "since"
    for bad in ("yesterday", 12, "", "2024-13-01T00:00:00Z"):
        response = api.post(f"/webhooks/{webhook_id}/replay", json={"since": bad})
        assert (
            assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")["fields"][0]["name"]
            == "since"
        ), bad
    unknown = api.post(f"/webhooks/{webhook_id}/replay", json={"since": "2024-01-01T00:00:00Z", "x": 1})
    assert_error(unknown, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    other_mode = api_for("development").post(f"/webhooks/{webhook_id}/replay", json={"since": "2024-01-01"})
    assert_error(other_mode, 404, "RECORD_NOT_FOUND")


def test_a_paused_webhook_is_not_replayed(api):
    webhook_id = hook(api, "http://127.0.0.1:9/hook", status="paused")
    response = api.post(f"/webhooks/{webhook_id}/replay", json={"since": "2024-01-01T00:00:00Z"})
    assert "paused" in assert_error(response, 409, "INVALID_REQUEST_PARAMETERS", "CONFLICT")["message"]


def test_replay_is_documented(api):
    document = api.get("/openapi.json").get_json()
    operation = document["paths"]["/webhooks/{webhook_id}/replay"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["$ref"].endswith("/ReplayRequest")
    assert document["components"]["schemas"]["ReplayRequest"]["properties"]["since"]["format"] == "date-time"


def test_replay_sends_only_events_the_webhook_still_subscribes_to(app, api, workspace):
    """Only subscribed events are sent: a failed delivery of a type the webhook has since dropped stays failed
    (replay sent it again, as a resend to that webhook would not)."""
    answers = {"status": 400}
    with Receiver(lambda record: (answers["status"], b"no")) as rx:
        webhook_id = hook(api, rx.url, enabled_events=["account.added", "income.added"])
        kept = emit(app, workspace, "account.added", minutes=-2)
        dropped = emit(app, workspace, "income.added", minutes=-1)
        with app.app_context():
            deliver_due(app)
        assert set(statuses(api).values()) == {"failed"}
        answers["status"] = 200
        assert (
            api.put(f"/webhooks/{webhook_id}", json={"enabled_events": ["account.added"]}).status_code == 200
        )
        response = api.post(f"/webhooks/{webhook_id}/replay", json={"since": "2020-01-01T00:00:00Z"})
        assert response.get_json()["data"]["replayed"] == 1
        with app.app_context():
            assert deliver_due(app) == 1
    sent = rx.event_ids()  # the first round's two in either order: the senders run side by side
    assert sorted(sent[:2]) == sorted([kept, dropped]) and sent[2:] == [kept]
    assert statuses(api)[kept] == "delivered" and statuses(api)[dropped] == "failed"
