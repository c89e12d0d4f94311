"""The guard of a test's pinned connection (console/db/pinning.py): going around it fails, and says what to do."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from console.db import pinning
from console.extensions import db


def _in_a_thread(work) -> BaseException | None:
    raised: list[BaseException] = []

    def run():
        try:
            work()
        except BaseException as error:  # handed to the test, which asserts on it
            raised.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return raised[0] if raised else None


def _forgiven(app) -> list[str]:
    """The violations recorded so far, cleared: this test provokes them on purpose."""
    held = pinning.pin_of(app)
    seen, held.violations[:] = list(held.violations), []
    return seen


def test_the_session_used_from_another_thread_is_refused_with_what_to_do(app):
    def query():
        with app.app_context():
            db.session.execute(text("SELECT 1"))

    error = _in_a_thread(query)
    assert isinstance(error, pinning.PinnedConnectionError)
    assert "Mark the test `committing`" in str(error)
    # Recorded too, for the fixture's teardown: a thread that swallows the error still fails the test.
    assert _forgiven(app) == [str(error)]


def test_a_connection_of_its_own_is_refused_while_pinned(app):
    with app.app_context():
        engine = db.engine
    with pytest.raises(pinning.PinnedConnectionError, match="committing"):
        engine.connect()
    assert len(_forgiven(app)) == 1


def test_the_apps_commits_stay_inside_the_tests_transaction(app, workspace):
    # The workspace fixture committed; the session's commit released a SAVEPOINT of the pinned connection.
    with app.app_context():
        assert db.session.connection() is pinning.pin_of(app).connection
        assert db.session.scalar(text("SELECT count(*) FROM workspaces")) == 1


@pytest.mark.committing
def test_a_committing_test_is_not_pinned(app):
    assert pinning.pin_of(app) is None
    with app.app_context():
        db.engine.connect().close()  # allowed: nothing to go around
