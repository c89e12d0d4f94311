"""A workspace clock cannot be run ahead until its dates overflow: each move takes at most 400 days, but nothing
bounded their sum, and ~7,300 moves reached year 9999, past which every clock read of the workspace was a 500."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from console.api.ratelimit import RateLimiter
from console.clock.moves import MAX_OFFSET
from console.core.timeutil import utcnow
from console.extensions import db
from console.workspaces.models import Workspace
from tests.conftest import assert_error
from tests.factories import LINK_TOKEN, set_clock


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


@pytest.fixture
def near_the_limit(app, workspace):
    """The workspace clock 10 days short of its limit, as 91 advances of 400 days would leave it."""
    with app.app_context():
        set_clock(workspace.id, utcnow() + MAX_OFFSET - timedelta(days=10))


def offset_days(app, workspace) -> float:
    with app.app_context():
        return db.session.get(Workspace, uuid.UUID(workspace.id)).clock_offset_seconds / 86400


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/sandbox/clock/advance", {"days": 30}, "days"),
        ("/sandbox/clock/advance", {"hours": 400}, "hours"),
        ("/sandbox/clock/advance", {"business_days": 20}, "business_days"),
    ],
)
def test_a_move_past_the_limit_is_refused_on_its_field(
    app, api, workspace, near_the_limit, path, body, field
):
    before = offset_days(app, workspace)
    error = assert_error(api.post(path, json=body), 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert [f["name"] for f in error["fields"]] == [field]
    assert "more than 100 years ahead of real time" in error["fields"][0]["message"]
    assert offset_days(app, workspace) == pytest.approx(before)


def test_a_jump_past_the_limit_is_refused_on_to(app, api, workspace, near_the_limit):
    clock = api.get("/sandbox/clock").get_json()["data"]["now"]
    to = (utcnow() + MAX_OFFSET + timedelta(days=5)).isoformat()
    assert clock < to
    error = assert_error(api.post("/sandbox/clock/jump", json={"to": to}), 400, "INVALID_REQUEST_PARAMETERS")
    assert [f["name"] for f in error["fields"]] == ["to"]


def test_advance_to_next_past_the_limit_is_a_conflict(app, api, workspace):
    with app.app_context():
        set_clock(workspace.id, utcnow() + MAX_OFFSET - timedelta(minutes=30))
    assert api.post("/link_tokens", json=LINK_TOKEN).status_code == 200  # its expiry, past the limit, is next
    response = api.post("/sandbox/clock/advance_to_next", json={})
    error = assert_error(response, 409, "INVALID_REQUEST_PARAMETERS", "CLOCK_LIMIT_REACHED")
    assert "100 years ahead" in error["message"]


def test_moves_within_the_limit_still_work_and_the_clock_reads(app, api, workspace, near_the_limit):
    assert api.post("/sandbox/clock/advance", json={"days": 9}).status_code == 200
    assert api.get("/sandbox/clock").status_code == 200
    assert api.post("/link_tokens", json=LINK_TOKEN).status_code == 200
