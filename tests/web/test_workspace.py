"""Workspaces: created by the first action with a sandbox key and the inbox registered through the API."""

from __future__ import annotations

from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey
from console.requestlog.models import RequestLogEntry
from console.web.webhooks import inbox
from console.webhooks.models import Webhook
from console.workspaces.models import Workspace
from tests.web.conftest import Visitor


def test_the_first_action_creates_a_ready_workspace(app, visitor):
    with app.app_context():
        workspace = db.session.get(Workspace, visitor.workspace_id)
        keys = db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == workspace.id)).all()
        assert [(k.mode, k.revoked_at) for k in keys] == [("sandbox", None)]
        hooks = db.session.scalars(select(Webhook).where(Webhook.workspace_id == workspace.id)).all()
        assert len(hooks) == 1
        # The configured root (LISTEN_HOST:LISTEN_PORT without PUBLIC_URL), not the test client's host.
        assert hooks[0].url.startswith("http://127.0.0.1:5000/inbox/")
        assert inbox.workspace_id_of(hooks[0].url.rsplit("/", 1)[1]) == workspace.id
        assert hooks[0].api_key_id == keys[0].id and hooks[0].version == "2023-11-22"
        # The webhook was registered through the real API, and the exchange is in the request log.
        logged = db.session.scalars(
            select(RequestLogEntry).where(RequestLogEntry.workspace_id == workspace.id)
        ).all()
        assert [(r.method, r.path, r.status) for r in logged] == [("POST", "/sandbox/v1/webhooks", 200)]
        assert logged[0].request_headers["x-api-secret"] == "<API_SECRET>"
        assert logged[0].request_id and logged[0].request_headers["Service-Version"] == "2023-11-22"


def test_the_workspace_sticks_to_the_session(app, visitor):
    first = visitor.workspace_id
    visitor.get("/events")
    visitor.get("/")
    assert visitor.workspace_id == first
    with app.app_context():
        assert db.session.scalar(select(db.func.count()).select_from(Workspace)) == 1


def test_reset_starts_over_in_a_new_workspace(app, visitor):
    first = visitor.workspace_id
    response = visitor.post("/workspace/reset")
    assert response.status_code == 302
    assert visitor.workspace_id != first
    with app.app_context():
        keys = db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == visitor.workspace_id)).all()
        assert len(keys) == 1


def test_a_forged_cookie_gets_a_fresh_workspace_not_someone_elses(app, client, other_visitor):
    client.set_cookie("session", "forged.value.here", domain="localhost")
    stranger = Visitor(client)
    page = stranger.get("/").get_data(as_text=True)
    assert str(other_visitor.workspace_id)[:8] not in page
    stranger.post("/workspace")
    assert stranger.workspace_id != other_visitor.workspace_id


def test_the_inbox_is_registered_once_and_again_after_a_delete(app, visitor):
    def live_hooks():
        with app.app_context():
            return db.session.scalars(
                select(Webhook).where(
                    Webhook.workspace_id == visitor.workspace_id, Webhook.deleted_at.is_(None)
                )
            ).all()

    page = visitor.get("/").get_data(as_text=True)
    assert "The built-in inbox is registered" in page and "Use the built-in inbox" not in page
    visitor.post("/walkthrough/webhook/inbox", htmx=True)
    [hook] = live_hooks()  # no duplicate
    html = visitor.post(f"/webhooks/{hook.id}/delete", htmx=True).get_data(as_text=True)
    assert "Register the built-in inbox" in html and "/sandbox/v1/webhooks/" in html
    assert live_hooks() == []
    html = visitor.post("/walkthrough/webhook/inbox", htmx=True).get_data(as_text=True)
    assert "The built-in inbox is registered" in html
    assert len(live_hooks()) == 1
