"""Cross-site request forgery: every console form needs the token; htmx sends it as a header."""

from __future__ import annotations

from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey


def _key_count(app, workspace_id) -> int:
    with app.app_context():
        return len(db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == workspace_id)).all())


def test_a_cross_site_post_without_the_token_is_refused(app, visitor):
    before = _key_count(app, visitor.workspace_id)
    response = visitor.post(
        "/keys", {"mode": "sandbox"}, csrf=False, headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 400
    assert "Request refused" in response.get_data(as_text=True)
    assert _key_count(app, visitor.workspace_id) == before


def test_a_wrong_token_is_refused(app, visitor):
    response = visitor.client.post("/workspace/reset", data={"csrf_token": "not-the-token"})
    assert response.status_code == 400


def test_forms_carry_the_token_and_htmx_sends_it_as_a_header(app, visitor):
    page = visitor.get("/keys").get_data(as_text=True)
    assert 'name="csrf_token"' in page
    assert 'hx-headers=\'{"X-CSRFToken": ' in page
    assert visitor.post("/keys", {"mode": "development"}, htmx=True).status_code == 200
    assert visitor.post("/keys", {"mode": "development"}).status_code == 302
    assert _key_count(app, visitor.workspace_id) == 3


def test_the_inbox_is_exempt_because_it_checks_signatures(client, visitor):
    # No token, no cookie: refused for its missing signature (400 from the inbox), not by CSRF.
    with client.application.app_context():
        from console.web.webhooks.inbox import inbox_token

        token = inbox_token(visitor.workspace_id)
    response = client.post(f"/inbox/{token}", data=b"{}", content_type="application/json")
    assert response.status_code == 400
    assert "signature" in response.get_json()["error"]
