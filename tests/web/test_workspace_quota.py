"""Visitor workspaces per client address (VISITOR_WORKSPACES_PER_ADDRESS): at the cap the address's least
recently used one makes room, unnamed before named, never another address's and never a refusal."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from console.core.timeutil import utcnow
from console.extensions import db
from console.workspaces.models import Workspace
from console.workspaces.services import create_workspace
from tests.web.conftest import Visitor
from tests.web.test_workspace_lifecycle import owned_counts


def _visitor(app, address: str) -> Visitor:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return Visitor(client)


def _started(app, address: str, *, hours_ago: float) -> Visitor:
    """A visitor from `address` whose workspace was last used `hours_ago`."""
    visitor = _visitor(app, address).start()
    with app.app_context():
        db.session.execute(
            update(Workspace)
            .where(Workspace.id == visitor.workspace_id)
            .values(last_active_at=utcnow() - timedelta(hours=hours_ago))
        )
        db.session.commit()
    return visitor


def _exists(app, ws: uuid.UUID) -> bool:
    with app.app_context():
        return db.session.get(Workspace, ws) is not None


@pytest.fixture
def cap(app):
    before = app.config.get("VISITOR_WORKSPACES_PER_ADDRESS")

    def set_cap(value: int) -> None:
        app.config["VISITOR_WORKSPACES_PER_ADDRESS"] = value

    yield set_cap
    app.config["VISITOR_WORKSPACES_PER_ADDRESS"] = before


def test_the_next_workspace_from_an_address_at_its_cap_deletes_its_least_recently_used(app, cap):
    cap(3)
    oldest = _started(app, "198.51.100.7", hours_ago=30)
    middle = _started(app, "198.51.100.7", hours_ago=20)
    newest = _started(app, "198.51.100.7", hours_ago=10)
    elsewhere = [_started(app, "203.0.113.9", hours_ago=40 + i) for i in range(3)]
    gone = oldest.workspace_id
    with app.app_context():
        assert sum(owned_counts(gone).values()) > 0  # a key and the inbox's webhook, at least

    fourth = _visitor(app, "198.51.100.7").start()

    assert not _exists(app, gone)
    with app.app_context():
        assert set(owned_counts(gone).values()) == {0}
    for visitor in (middle, newest, fourth, *elsewhere):
        assert _exists(app, visitor.workspace_id)
    # The browser whose workspace went sees the empty state, and its next action makes a new one.
    page = oldest.get("/").get_data(as_text=True)
    assert "No workspace yet" in page
    assert oldest.post("/workspace").status_code == 302
    assert oldest.workspace_id != gone and _exists(app, oldest.workspace_id)
    assert not _exists(app, middle.workspace_id)  # that one made room in turn


def test_unnamed_workspaces_make_room_before_named_ones(app, cap):
    cap(2)
    named = _started(app, "198.51.100.8", hours_ago=50)
    named.post("/workspace/keep", {"name": "Acme demo"})
    with app.app_context():  # naming used it; make it the least recently used again
        db.session.execute(
            update(Workspace)
            .where(Workspace.id == named.workspace_id)
            .values(last_active_at=utcnow() - timedelta(hours=50))
        )
        db.session.commit()
    unnamed = _started(app, "198.51.100.8", hours_ago=1)

    _visitor(app, "198.51.100.8").start()

    assert _exists(app, named.workspace_id)
    assert not _exists(app, unnamed.workspace_id)


def test_workspaces_not_made_by_a_visitor_do_not_count_and_are_never_taken(app, cap):
    cap(1)
    with app.app_context():
        operator = create_workspace("CLI workspace").id  # no creating address: the CLI's, a trainee's
        db.session.commit()
    first = _started(app, "198.51.100.9", hours_ago=5)
    second = _visitor(app, "198.51.100.9").start()
    assert not _exists(app, first.workspace_id)
    assert _exists(app, second.workspace_id) and _exists(app, operator)


def test_zero_turns_the_cap_off(app, cap):
    cap(0)
    visitors = [_started(app, "198.51.100.10", hours_ago=i) for i in range(4)]
    assert all(_exists(app, v.workspace_id) for v in visitors)
    with app.app_context():
        held = db.session.scalar(
            select(func.count()).select_from(Workspace).where(Workspace.created_from.is_not(None))
        )
    assert held == 4
