"""The presenter's stage when the database cannot take a write: the stage, its failed step and the retry, never
a page that is not the stage (its script put "Reload the page to continue" in front of the room)."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import OperationalError

from console import create_app
from console.extensions import db
from console.presenter import profiles
from tests.conftest import base_config
from tests.web.conftest import Visitor

pytestmark = [pytest.mark.committing]

STEP_1 = "/present/10-standard-switch/steps/1"


@pytest.fixture
def quick_app(database_url, short_busy_timeout):
    """An app on the test database whose SQLite connections wait 200 ms for a held lock (5 s in production)."""
    if not database_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock")
    built = create_app(base_config(database_url))
    yield built
    with built.app_context():
        db.session.remove()
        db.engine.dispose()


def test_a_step_under_a_held_write_lock_answers_the_stage_with_the_failure_then_the_retry_runs(
    quick_app, database_url
):
    visitor = Visitor(quick_app.test_client())
    assert visitor.get("/present/10-standard-switch").status_code == 200
    other = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a developer's SQLite GUI in a write transaction
    try:
        response = visitor.post(STEP_1)
    finally:
        other.execute("ROLLBACK")
        other.close()
    text = response.get_data(as_text=True)
    assert response.status_code == 503 and response.headers["Retry-After"] == "2"
    assert 'id="stage"' in text  # what the stage's script swaps in
    assert "Step 1 did not work" in text and "The service is busy right now." in text
    assert "Traceback" not in text
    # Released: the same key press runs the step.
    assert visitor.post(STEP_1).status_code == 303


def test_a_step_when_the_database_cannot_even_be_read_is_the_busy_page_not_a_500(app, monkeypatch):
    """A saved profile's stage (`?profile=<slug>`) while the database is away (PostgreSQL restarting, a dead
    pool): the stage's own page for the failure reads the profile too, and that read failing inside the error
    handler was a bare 500 with a traceback. The plain busy page (503, Retry-After) is the fallback."""
    visitor = Visitor(app.test_client())
    assert visitor.get("/present/10-standard-switch").status_code == 200

    def away(slug):
        raise OperationalError("SELECT presenter_profiles", {}, ConnectionRefusedError("connection refused"))

    monkeypatch.setattr(profiles, "get", away)
    response = visitor.post(f"{STEP_1}?profile=some-bank")
    text = response.get_data(as_text=True)
    assert response.status_code == 503 and response.headers["Retry-After"] == "2"
    assert "The service cannot reach its database right now." in text
    assert "Traceback" not in text


def test_a_saved_profiles_step_under_a_held_write_lock_still_answers_the_stage(quick_app, database_url):
    """A profile's stage opened over an hour ago (a demo set up before the meeting): drawing the failed step
    noted the profile's use, a write, which under the same held lock failed too, and the room got the busy
    page the stage's script cannot show. A failure's stage writes nothing."""
    from datetime import timedelta

    from sqlalchemy import update

    from console.core.timeutil import utcnow
    from console.presenter.brand import Brand
    from console.presenter.models import PresenterProfile

    with quick_app.app_context():
        profile, _secret = profiles.create(Brand("Acme Bank", "AB", "#1f6feb", "light"), [])
        db.session.commit()
        slug = profile.slug
    visitor = Visitor(quick_app.test_client())
    assert visitor.get(f"/present/10-standard-switch?profile={slug}").status_code == 200
    with quick_app.app_context():  # the stage was opened two hours ago
        db.session.execute(update(PresenterProfile).values(last_used_at=utcnow() - timedelta(hours=2)))
        db.session.commit()
    other = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        response = visitor.post(f"{STEP_1}?profile={slug}")
    finally:
        other.execute("ROLLBACK")
        other.close()
    text = response.get_data(as_text=True)
    assert response.status_code == 503 and 'id="stage"' in text, text[:300]
    assert "Step 1 did not work" in text and "The service is busy right now." in text
