"""/v1/events: the filtered, paginated event log with delivery status, one event with attempts, and resend."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.clock.services import now
from console.core.timeutil import isoformat
from console.events import queries
from console.events.services import record_event
from console.extensions import db
from console.webhooks.delivery_loop import deliver_due
from console.workspaces.models import Workspace
from tests.conftest import assert_error

pytestmark = pytest.mark.both_backends

BODY = {"status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"}


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def emit(app, workspace, type_="account.added", *, mode="sandbox", minutes=0, **kw):
    with app.app_context():
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        event = record_event(
            workspace_id=ws.id,
            mode=mode,
            type=type_,
            payload={"n": 1},
            at=now(ws) + timedelta(minutes=minutes),
            **kw,
        )
        db.session.commit()
        return str(event.id)


def hook(api, url, **changes):
    response = api.post("/webhooks", json={**BODY, "url": url, **changes})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]["id"]


def test_list_newest_first_with_delivery_status(app, api, workspace):
    with Receiver() as rx:
        first_hook = hook(api, rx.url)
        second_hook = hook(api, rx.url, status="paused")
        older = emit(app, workspace, minutes=-5)
        newer = emit(app, workspace)
        with app.app_context():
            deliver_due(app)
    page = api.get("/events").get_json()
    assert [e["id"] for e in page["data"]] == [newer, older]
    event = page["data"][0]
    assert event["type"] == "account.added" and event["payload"] == {"n": 1}
    by_hook = {d["webhook_id"]: d for d in event["deliveries"]}
    assert by_hook[first_hook]["status"] == "delivered" and by_hook[first_hook]["attempt_count"] == 1
    assert (
        by_hook[second_hook]["status"] == "skipped"
        and by_hook[second_hook]["skip_reason"] == "webhook paused"
    )


def test_filters(app, api, workspace):
    token, account = uuid.uuid4(), uuid.uuid4()
    a = emit(app, workspace, minutes=-60, link_token_id=token)
    b = emit(app, workspace, "direct_deposit_switch.added", minutes=-30, account_id=account)
    c = emit(app, workspace, "employment.added", account_id=account, link_token_id=token)
    emit(app, workspace, mode="development")

    def ids(**params):
        response = api.get("/events", query_string=params)
        assert response.status_code == 200, response.get_json()
        return [e["id"] for e in response.get_json()["data"]]

    assert ids() == [c, b, a]
    assert ids(type="direct_deposit_switch.added") == [b]
    assert ids(link_token_id=str(token)) == [c, a]
    assert ids(account_id=str(account)) == [c, b]
    with app.app_context():
        since = now(db.session.get(Workspace, uuid.UUID(workspace.id))) - timedelta(minutes=45)
    assert ids(since=isoformat(since)) == [c, b]
    assert ids(since=isoformat(since), account_id=str(account), type="employment.added") == [c]


@pytest.mark.parametrize(
    ("params", "field"),
    [({"type": "nope"}, "type"), ({"account_id": "x"}, "account_id"), ({"since": "yesterday"}, "since")],
)
def test_bad_filters(api, params, field):
    error = assert_error(api.get("/events", query_string=params), 400, "INVALID_REQUEST_PARAMETERS")
    assert [f["name"] for f in error["fields"]] == [field]


def test_a_since_whose_plus_was_read_as_a_space_says_so(app, api, workspace):
    """An event's own created_at put in the URL unencoded (`?since=2026-11-01T00:00:00.000000+00:00`) arrives
    with a space for the +, and the 400 said only "must be an ISO 8601 datetime" of a value in the API's format."""
    emit(app, workspace)
    raw = (
        "/sandbox/v1/events?since=2026-11-01T00:00:00.000000+00:00"  # unencoded, as a formatted URL sends it
    )
    error = assert_error(api.client.get(raw, headers=api.headers()), 400, "INVALID_REQUEST_PARAMETERS")
    assert error["fields"] == [
        {
            "name": "since",
            "message": "must be an ISO 8601 datetime, e.g. 2024-01-31T12:00:00Z; it reads "
            "'2026-11-01T00:00:00.000000 00:00': a + in a URL's query string is a space, so send the offset's + "
            "as %2B (or end the time with Z)",
        }
    ]
    encoded = api.get("/events", query_string={"since": "2026-11-01T00:00:00.000000+00:00"})
    assert encoded.status_code == 200 and encoded.get_json()["meta"]["count"] == 1
    # Anything else unparsable keeps the plain message.
    error = assert_error(api.get("/events?since=next week"), 400, "INVALID_REQUEST_PARAMETERS")
    assert error["fields"][0]["message"] == "must be an ISO 8601 datetime, e.g. 2024-01-31T12:00:00Z"


def test_pagination(app, api, workspace):
    made = [emit(app, workspace, minutes=-i) for i in range(5)]
    first = api.get("/events", query_string={"limit": 2}).get_json()
    assert first["meta"]["count"] == 2 and first["meta"]["next_cursor"]
    seen = [e["id"] for e in first["data"]]
    cursor = first["meta"]["next_cursor"]
    while cursor:
        page = api.get("/events", query_string={"limit": 2, "cursor": cursor}).get_json()
        seen += [e["id"] for e in page["data"]]
        cursor = page["meta"]["next_cursor"]
    assert seen == made


def detail(app, workspace, event_id):
    """One event with every attempt, as the console shows it (console.events.queries)."""
    with app.app_context():
        event = queries.get_event(uuid.UUID(workspace.id), "sandbox", event_id)
        deliveries = queries.deliveries_by_event([event.id])[event.id]
        return queries.serialize_event(event, deliveries, with_attempts=True)


def test_event_detail_with_attempts_and_scope(app, api, api_for, workspace):
    with Receiver(lambda r: (500, b"boom")) as rx:
        hook(api, rx.url)
        event_id = emit(app, workspace)
        with app.app_context():
            deliver_due(app)
    listed = api.get("/events").get_json()["data"][0]["deliveries"][0]
    assert listed["status"] == "pending" and listed["last_status_code"] == 500
    data = detail(app, workspace, event_id)
    (delivery,) = data["deliveries"]
    assert delivery["status"] == "pending" and delivery["next_attempt_at"]
    (attempt,) = delivery["attempts"]
    assert (
        attempt["status_code"] == 500
        and attempt["response_excerpt"] == "boom"
        and attempt["outcome"] == "retry"
    )
    assert attempt["next_attempt_at"] == delivery["next_attempt_at"] and attempt["latency_ms"] >= 0
    assert_error(api_for("development").post(f"/events/{event_id}/resend"), 404, "RECORD_NOT_FOUND")
    assert_error(api.post("/events/nope/resend"), 404, "RECORD_NOT_FOUND")


def test_resend_to_one_webhook_sends_the_same_event_id_again(app, api, workspace):
    with Receiver() as rx, Receiver() as other:
        target = hook(api, rx.url)
        hook(api, other.url)
        event_id = emit(app, workspace)
        with app.app_context():
            deliver_due(app)
        response = api.post(f"/events/{event_id}/resend", json={"webhook_id": target})
        assert response.status_code == 200, response.get_json()
        statuses = {d["webhook_id"]: d["status"] for d in response.get_json()["data"]["deliveries"]}
        assert statuses[target] == "pending"
        with app.app_context():
            assert deliver_due(app) == 1
    assert rx.event_ids() == [event_id, event_id] and other.event_ids() == [event_id]
    data = detail(app, workspace, event_id)
    resent = next(d for d in data["deliveries"] if d["webhook_id"] == target)
    assert resent["status"] == "delivered" and resent["attempt_count"] == 2
    assert [a["number"] for a in resent["attempts"]] == [1, 2]


def test_resend_to_all_subscribed_includes_webhooks_created_later(app, api, workspace):
    with Receiver() as rx, Receiver() as later:
        hook(api, rx.url)
        hook(api, rx.url, enabled_events=["income.added"])  # not subscribed: left alone
        event_id = emit(app, workspace)
        hook(api, later.url)
        response = api.post(f"/events/{event_id}/resend")
        assert response.status_code == 200, response.get_json()
        assert len(response.get_json()["data"]["deliveries"]) == 2
        with app.app_context():
            deliver_due(app)
    assert rx.event_ids() == [event_id] and later.event_ids() == [event_id]


def test_skipped_while_paused_then_resent_after_reactivation(app, api, workspace):
    with Receiver() as rx:
        hook_id = hook(api, rx.url, status="paused")
        event_id = emit(app, workspace)
        error = assert_error(
            api.post(f"/events/{event_id}/resend", json={"webhook_id": hook_id}),
            409,
            "INVALID_REQUEST_PARAMETERS",
            "CONFLICT",
        )
        assert "active" in error["message"]
        assert_error(api.post(f"/events/{event_id}/resend"), 409, "INVALID_REQUEST_PARAMETERS", "CONFLICT")
        api.put(f"/webhooks/{hook_id}", json={"status": "active"})
        assert api.post(f"/events/{event_id}/resend", json={"webhook_id": hook_id}).status_code == 200
        with app.app_context():
            deliver_due(app)
    assert rx.event_ids() == [event_id]


def test_unsubscribing_skips_the_retries_of_the_dropped_type(app, api, workspace):
    """Only subscribed events are sent: a webhook that drops an event type gets no more retries of it (they went
    on for up to 15 minutes); the types it keeps retry as usual."""
    with Receiver(lambda r: (500, b"busy")) as rx:
        hook_id = hook(api, rx.url, enabled_events=["account.added", "income.added"])
        kept = emit(app, workspace, "account.added")
        dropped = emit(app, workspace, "income.added")
        with app.app_context():
            assert deliver_due(app) == 2
        assert api.put(f"/webhooks/{hook_id}", json={"enabled_events": ["account.added"]}).status_code == 200
        kept_delivery, dropped_delivery = (
            detail(app, workspace, e)["deliveries"][0] for e in (kept, dropped)
        )
        assert kept_delivery["status"] == "pending" and kept_delivery["next_attempt_at"]
        assert dropped_delivery["status"] == "skipped" and dropped_delivery["next_attempt_at"] is None
        assert "unsubscribed" in dropped_delivery["skip_reason"]
        assert api.post("/sandbox/clock/advance", json={"seconds": 60}).status_code == 200  # the retry is due
        with app.app_context():
            assert deliver_due(app) == 1  # only the kept type goes out
    assert sorted(rx.event_ids()) == sorted([kept, dropped, kept])


def test_resend_errors(app, api, workspace):
    other = hook(api, "http://127.0.0.1:9/", enabled_events=["income.added"])
    event_id = emit(app, workspace)
    assert_error(
        api.post(f"/events/{event_id}/resend", json={"webhook_id": other}),
        400,
        "INVALID_REQUEST_PARAMETERS",
        "INVALID_REQUEST",
    )
    assert_error(
        api.post(f"/events/{event_id}/resend", json={"webhook_id": str(uuid.uuid4())}),
        404,
        "RECORD_NOT_FOUND",
    )
    assert_error(
        api.post(f"/events/{event_id}/resend", json={"webhook_id": 5}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert_error(api.post(f"/events/{uuid.uuid4()}/resend"), 404, "RECORD_NOT_FOUND")


def test_get_event_shows_every_attempt(app, api, api_for, workspace):
    with Receiver(lambda record: (500, b"busy")) as rx:
        hook(api, rx.url)
        event_id = emit(app, workspace)
        with app.app_context():
            deliver_due(app)
        first = api.get(f"/events/{event_id}").get_json()["data"]
        assert first["id"] == event_id
        [delivery] = first["deliveries"]
        assert [a["status_code"] for a in delivery["attempts"]] == [500]
        assert delivery["status"] == "pending" and delivery["next_attempt_at"]
    assert_error(api_for("development").get(f"/events/{event_id}"), 404, "RECORD_NOT_FOUND")
    assert_error(api.get(f"/events/{uuid.uuid4()}"), 404, "RECORD_NOT_FOUND")


@pytest.mark.committing
def test_resends_at_the_same_moment_to_a_webhook_made_after_the_event_do_not_500(
    app, api, workspace, monkeypatch
):
    """Both resends found no delivery of the event to the new webhook and both inserted one: the second broke
    the (event, webhook) unique index and answered 500. Now they run one after the other."""
    from tests.api.at_once import at_once, meeting_after, posting

    event_id = emit(app, workspace)
    webhook_id = hook(api, "http://127.0.0.1:9/hooks")  # made after the event: it has no delivery of it yet
    monkeypatch.setattr(queries, "deliveries_by_event", meeting_after(queries.deliveries_by_event))
    send = posting(f"/events/{event_id}/resend", workspace.secrets["sandbox"], {"webhook_id": webhook_id})
    answers = at_once(app, 2, send)
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    deliveries = api.get(f"/events/{event_id}").get_json()["data"]["deliveries"]
    assert [d["webhook_id"] for d in deliveries] == [webhook_id]
