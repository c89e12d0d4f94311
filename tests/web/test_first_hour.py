"""The first hour: the README's curl (with the secret `make run` printed) and the browser meet in one
workspace once the browser opens that key's workspace; the secret never leaks into URLs or messages."""

from __future__ import annotations

import json

from sqlalchemy import select

from console.bootstrap import demo_sandbox_secret
from console.extensions import db
from console.requestlog.writer import writer_for
from console.workspaces.models import Workspace
from tests.web.conftest import Visitor

README_BODY = {
    "org_name": "Acme",
    "end_user_id": "user-1",
    "required_jobs": ["direct_deposit_switch"],
    "allocation": {
        "targets": [{"type": "checking", "routing_number": "011000015", "account_number": "1234567890"}]
    },
}


def _readme_curl(client, secret: str) -> str:
    response = client.post(
        "/sandbox/v1/link_tokens",
        data=json.dumps(README_BODY),
        headers={"x-api-secret": secret, "Service-Version": "2023-11-22", "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["data"]["id"]


def _demo_secret(app) -> str:
    with app.app_context():
        return demo_sandbox_secret()


def test_pasting_the_banner_secret_shows_the_readme_calls(app, client):
    secret = _demo_secret(app)
    token_id = _readme_curl(app.test_client(), secret)
    writer_for(app).flush()
    browser = Visitor(client)
    empty = browser.get("/requests").get_data(as_text=True)
    assert "No API call yet" in empty and "Open its workspace" in empty

    response = browser.post(
        "/workspace/open", {"secret": f"  {secret} "}, headers={"Referer": "http://localhost/requests"}
    )
    assert response.status_code == 302 and response.headers["Location"] == "/requests"
    assert secret not in response.headers["Location"]

    page = browser.get("/requests").get_data(as_text=True)
    assert "/sandbox/v1/link_tokens" in page and "No API call yet" not in page
    assert secret not in page  # the confirmation names the key by its last four characters only
    assert secret[-4:] in page and "Demo workspace" in page
    assert token_id in browser.get("/timeline").get_data(as_text=True)
    with app.app_context():
        demo = db.session.scalars(select(Workspace).where(Workspace.is_demo.is_(True))).one()
    assert browser.workspace_id == demo.id


def test_opening_changes_only_this_browser(app, client):
    secret = _demo_secret(app)
    other = Visitor(app.test_client()).start()
    before = other.workspace_id
    browser = Visitor(client)
    browser.get("/requests")
    browser.post("/workspace/open", {"secret": secret})
    assert other.workspace_id == before != browser.workspace_id


def test_a_wrong_or_revoked_secret_opens_nothing_and_is_not_repeated(app, client, visitor):
    mine = visitor.workspace_id
    guess = "sk_sandbox_" + "x" * 40
    response = visitor.post("/workspace/open", {"secret": guess}, follow_redirects=True)
    page = response.get_data(as_text=True)
    assert "No workspace opened: No API key has this secret." in page and guess not in page
    assert visitor.workspace_id == mine
    assert "Paste an API secret" in visitor.post(
        "/workspace/open", {"secret": ""}, follow_redirects=True
    ).get_data(as_text=True)

    secret = _demo_secret(app)
    with app.app_context():
        from console.keys.models import ApiKey
        from console.keys.services import revoke_key

        key = db.session.scalars(select(ApiKey).where(ApiKey.secret_last4 == secret[-4:])).first()
        revoke_key(key)
        db.session.commit()
    page = visitor.post("/workspace/open", {"secret": secret}, follow_redirects=True).get_data(as_text=True)
    assert "revoked or rolled" in page and visitor.workspace_id == mine


def test_opening_needs_the_csrf_token(app, client):
    secret = _demo_secret(app)
    browser = Visitor(client)
    browser.get("/requests")
    assert browser.post("/workspace/open", {"secret": secret}, csrf=False).status_code == 400


def test_opening_is_counted_by_the_per_address_limit(app, client):
    browser = Visitor(client)
    browser.get("/")
    limit = app.extensions["console_throttle"].creates_per_minute
    if not limit:
        return
    codes = {
        browser.post("/workspace/open", {"secret": "sk_sandbox_nope"}).status_code for _ in range(limit + 1)
    }
    assert 429 in codes
