"""The sandbox clock API: reading it, advancing it, what fires, validation and sandbox-only refusal."""

from __future__ import annotations

from datetime import timedelta

import pytest

from console.core.timeutil import parse_datetime
from tests.conftest import assert_error
from tests.factories import new_switch


def test_get_clock_shows_now_offset_and_what_is_due_next(app, api, workspace):
    with app.app_context():
        job_id = str(new_switch(workspace.id, "pending_then_success").id)
    response = api.get("/sandbox/clock")
    assert response.status_code == 200, response.get_json()
    data = response.get_json()["data"]
    assert set(data) == {"now", "offset_seconds", "next_due"}
    assert data["offset_seconds"] == 0
    [task] = data["next_due"]
    assert task["kind"] == "job.retry" and task["payload"]["job_id"] == job_id
    assert parse_datetime(task["due_at"]) - parse_datetime(data["now"]) <= timedelta(seconds=60)


def test_advance_moves_the_clock_and_reports_what_fired_in_order(app, api, workspace):
    with app.app_context():
        slow = str(new_switch(workspace.id, "pending_until_window_ends").id)
        fast = str(new_switch(workspace.id, "pending_then_error").id)
    before = parse_datetime(api.get("/sandbox/clock").get_json()["data"]["now"])
    response = api.post("/sandbox/clock/advance", json={"hours": 2})
    assert response.status_code == 200, response.get_json()
    data = response.get_json()["data"]
    assert set(data) == {"now", "offset_seconds", "fired"}
    assert data["offset_seconds"] == 7200
    assert parse_datetime(data["now"]) - before >= timedelta(hours=2)
    assert [f["kind"] for f in data["fired"]] == ["job.retry"] * 3
    assert fast in data["fired"][0]["summary"] and "error" in data["fired"][0]["summary"]
    assert all(slow in f["summary"] for f in data["fired"][1:])
    assert [f["due_at"] for f in data["fired"]] == sorted(f["due_at"] for f in data["fired"])
    assert api.get(f"/jobs/{fast}").get_json()["data"]["outcome"] == "error"
    assert api.get(f"/jobs/{slow}").get_json()["data"]["outcome"] == "pending"


@pytest.mark.parametrize(
    ("body", "offset"),
    [({"seconds": 1.5}, 1.5), ({"hours": 1}, 3600), ({"days": 30}, 30 * 86400), ({"days": 400}, 400 * 86400)],
)
def test_each_unit(api, body, offset):
    response = api.post("/sandbox/clock/advance", json=body)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"]["offset_seconds"] == pytest.approx(offset)


def test_business_days_make_a_federal_switch_sent(app, api, workspace):
    with app.app_context():
        job_id = str(new_switch(workspace.id, "federal_sent").id)
    response = api.post("/sandbox/clock/advance", json={"business_days": 1})
    assert response.status_code == 200, response.get_json()
    assert [f["kind"] for f in response.get_json()["data"]["fired"]] == ["job.federal_review"]
    job = api.get(f"/jobs/{job_id}").get_json()["data"]
    assert job["outcome"] == "sent" and job["params"]["action"] == "full_switch"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"seconds", "hours", "days", "business_days"}),
        ({"seconds": 5, "hours": 1}, {"seconds", "hours"}),
        ({"seconds": 0}, {"seconds"}),
        ({"hours": -1}, {"hours"}),
        ({"days": "1"}, {"days"}),
        ({"days": True}, {"days"}),
        ({"seconds": None}, {"seconds"}),
        ({"business_days": 1.5}, {"business_days"}),
        ({"business_days": 0}, {"business_days"}),
        ({"days": 401}, {"days"}),
        ({"hours": 400 * 24 + 1}, {"hours"}),
        ({"seconds": 1e300}, {"seconds"}),
        ({"business_days": 10**9}, {"business_days"}),
        ({"business_days": 300}, {"business_days"}),
        ({"minutes": 5}, {"minutes"}),
        ({}, {"seconds", "hours", "days", "business_days"}),
        ({"seconds": 5, "extra": 1}, {"extra"}),
    ],
)
def test_bad_advances_are_400_naming_the_fields(api, body, fields):
    error = assert_error(api.post("/sandbox/clock/advance", json=body), 400, "INVALID_REQUEST_PARAMETERS")
    assert {f["name"] for f in error["fields"]} == fields
    assert api.get("/sandbox/clock").get_json()["data"]["offset_seconds"] == 0


def test_an_unknown_unit_is_the_only_field_named_and_the_message_lists_the_units(api):
    """`{"minutes": 5}` named five bad fields, four of them fields the caller never sent."""
    error = assert_error(
        api.post("/sandbox/clock/advance", json={"minutes": 5}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert error["fields"] == [{"name": "minutes", "message": "is not a known field"}]
    assert error["message"] == (
        "Invalid request parameters: minutes. Give exactly one of seconds, hours, days, business_days."
    )
    # No body at all: the four units are named, and the message says to pick one.
    error = assert_error(api.post("/sandbox/clock/advance", json={}), 400, "INVALID_REQUEST_PARAMETERS")
    assert error["message"].endswith(". Give exactly one of seconds, hours, days, business_days.")
    # A bad amount of a real unit keeps the usual message.
    error = assert_error(
        api.post("/sandbox/clock/advance", json={"hours": -1}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert error["message"] == "Invalid request parameters: hours."


def test_non_finite_numbers_are_refused(api):
    response = api.post(
        "/sandbox/clock/advance", data='{"seconds": NaN}', headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, "INVALID_REQUEST_PARAMETERS")


@pytest.mark.parametrize("mode", ["development", "production"])
@pytest.mark.parametrize(("method", "path"), [("GET", "/sandbox/clock"), ("POST", "/sandbox/clock/advance")])
def test_clock_is_sandbox_only(api_for, mode, method, path):
    response = api_for(mode).request(method, path, json={"hours": 1} if method == "POST" else None)
    assert_error(response, 403, code="SANDBOX_ONLY", type_="FORBIDDEN")


def test_each_workspace_has_its_own_clock(app, api, workspace):
    from console.extensions import db
    from console.keys.services import create_key
    from console.workspaces.services import create_workspace
    from tests.conftest import Api

    with app.app_context():
        other = create_workspace("Other")
        secret = create_key(other.id, "sandbox", "x").secret
        db.session.commit()
    assert api.post("/sandbox/clock/advance", json={"days": 2}).status_code == 200
    other_api = Api(api.client, secret)
    assert other_api.get("/sandbox/clock").get_json()["data"]["offset_seconds"] == 0
