"""Two visitors, two workspaces: nobody sees another's keys, tokens, events or requests."""

from __future__ import annotations

import re

from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey
from console.requestlog.models import RequestLogEntry
from tests.web.helpers import run_headless


def test_each_visitor_sees_only_their_own_workspace(app, visitor, other_visitor):
    assert visitor.workspace_id != other_visitor.workspace_id
    mine = run_headless(visitor, "user_good")
    theirs = run_headless(other_visitor, "user_error")
    with app.app_context():
        their_key = db.session.scalars(
            select(ApiKey).where(ApiKey.workspace_id == other_visitor.workspace_id)
        ).one()
        their_request = db.session.scalars(
            select(RequestLogEntry).where(RequestLogEntry.workspace_id == other_visitor.workspace_id)
        ).first()
        their_key_id, their_last4, their_request_id = (
            str(their_key.id),
            their_key.secret_last4,
            str(their_request.id),
        )

    pages = "".join(
        visitor.get(url).get_data(as_text=True)
        for url in ("/", "/keys", "/events", "/timeline", "/requests", "/webhooks")
    )
    assert mine in pages
    assert theirs not in pages and their_key_id not in pages and "••••" + their_last4 not in pages
    assert str(other_visitor.workspace_id)[:8] not in pages
    # Guessing ids gets nothing either.
    assert visitor.get(f"/timeline/link-tokens/{theirs}").status_code == 404
    assert visitor.get(f"/requests/{their_request_id}").status_code == 404
    assert visitor.post(f"/requests/{their_request_id}/reveal").status_code == 404
    assert visitor.post(f"/keys/{their_key_id}/reveal").status_code == 404
    assert visitor.post(f"/keys/{their_key_id}/revoke").status_code == 404
    with app.app_context():
        assert db.session.get(ApiKey, their_key.id).revoked_at is None


def test_the_launcher_only_knows_this_sessions_tokens(visitor, other_visitor):
    response = visitor.post("/scenarios/user_good/run", {"via": "browser"})
    link_token_id = re.search(r"link_token_id=([0-9a-f-]+)", response.headers["Location"]).group(1)
    assert "data-link-token=" in visitor.get(f"/launch?link_token_id={link_token_id}").get_data(as_text=True)
    assert "data-link-token=" not in other_visitor.get(f"/launch?link_token_id={link_token_id}").get_data(
        as_text=True
    )
