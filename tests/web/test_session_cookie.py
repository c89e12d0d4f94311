"""The session cookie: Secure behind https, idle expiry, and no Link token strings in it (bug: step 4's token)."""

from __future__ import annotations

import json
import re
import time

import pytest

from console import create_app
from console.extensions import db
from tests.conftest import base_config
from tests.web.conftest import Visitor

LINK_TOKEN_ID = re.compile(r'data-link-token-id="([0-9a-f-]{36})"')
LINK_TOKEN = re.compile(r'data-link-token="([^"]+)"')


def cookie_data(app, client) -> dict:
    raw = client.get_cookie("session").value
    return app.session_interface.get_signing_serializer(app).loads(raw)


def create_token(visitor) -> tuple[str, str]:
    """Create a Link token in step 3; return its (id, token string) as step 4 then offers it."""
    html = visitor.post(
        "/walkthrough/link-token",
        {
            "org_name": "Acme",
            "end_user_id": "u1",
            "required_jobs": "direct_deposit_switch",
            "routing_number_0": "011000015",
            "account_number_0": "12345678",
        },
        htmx=True,
    ).get_data(as_text=True)
    return LINK_TOKEN_ID.search(html).group(1), LINK_TOKEN.search(html).group(1)


def offered(visitor, url: str = "/") -> str:
    return LINK_TOKEN_ID.search(visitor.get(url).get_data(as_text=True)).group(1)


def test_the_cookie_holds_no_link_token(app, client, visitor):
    token_id, token = create_token(visitor)
    visitor.get("/")
    data = cookie_data(app, client)
    assert set(data) <= {"workspace_id", "csrf_token", "refreshed_hour", "_permanent", "_flashes"}
    assert token not in json.dumps(data) and token_id not in json.dumps(data)
    assert token not in client.get_cookie("session").value


def test_step_4_offers_the_newest_token_after_a_reload_and_another_page(app, visitor):
    highest_id, _ = create_token(visitor)
    # The old cookie kept a dict that Flask sorted by id, so "newest" was really "highest id":
    # go on until the newest token's id sorts lower than an earlier one's (each try: at least even odds).
    for _ in range(30):
        newest_id, newest = create_token(visitor)
        if newest_id < highest_id:
            break
        highest_id = newest_id
    assert newest_id < highest_id
    assert offered(visitor) == newest_id  # after a reload
    visitor.get("/events")
    visitor.get("/keys")
    assert offered(visitor) == newest_id  # after visiting other pages
    page = visitor.get(f"/launch?link_token_id={newest_id}").get_data(as_text=True)
    assert f'data-link-token="{newest}"' in page


def test_another_workspace_cannot_open_link_with_my_token(visitor, other_visitor):
    token_id, token = create_token(visitor)
    page = other_visitor.get(f"/launch?link_token_id={token_id}").get_data(as_text=True)
    assert token not in page and "is not one this console created in your" in page


def test_a_legacy_cookie_loses_its_link_tokens(app, client, visitor):
    with client.session_transaction() as session:
        session["link_tokens"] = {"id": "tok_secret"}
    visitor.get("/")
    assert "link_tokens" not in cookie_data(app, client)


def _app(database_url, **config):
    settings = base_config(database_url)
    settings.update(config)
    return create_app(settings)


@pytest.mark.parametrize(
    ("public_url", "secure"), [("https://console.example", True), ("http://127.0.0.1:5000", False)]
)
def test_the_cookie_is_secure_when_the_public_url_is_https(database_url, public_url, secure):
    app = _app(database_url, PUBLIC_URL=public_url)
    response = app.test_client().get("/")
    with app.app_context():
        db.engine.dispose()
    cookie = response.headers["Set-Cookie"]
    assert ("; Secure" in cookie) is secure
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_a_session_expires_after_the_idle_time_and_activity_extends_it(app, client, monkeypatch):
    app.config["PERMANENT_SESSION_LIFETIME"] = app.permanent_session_lifetime.__class__(days=1)
    visitor = Visitor(client).start()
    workspace = str(visitor.workspace_id)[:8]
    real = time.time

    def at(days: float):
        monkeypatch.setattr(time, "time", lambda: real() + days * 86400)

    at(0.9)
    assert workspace in visitor.get("/").get_data(as_text=True)  # re-signed: the idle clock restarts
    at(1.8)
    assert workspace in visitor.get("/events").get_data(as_text=True)
    at(2.9)  # 1.1 days without a visit
    page = visitor.get("/").get_data(as_text=True)
    assert workspace not in page and "No workspace yet" in page


def test_the_idle_time_is_a_setting(database_url):
    app = _app(database_url, CONSOLE_SESSION_IDLE_DAYS=7)
    assert app.permanent_session_lifetime.days == 7
    with app.app_context():
        db.engine.dispose()
    with pytest.raises(ValueError, match="CONSOLE_SESSION_IDLE_DAYS"):
        _app(database_url, CONSOLE_SESSION_IDLE_DAYS=0)


def test_a_request_without_a_cookie_header_gets_a_new_session_without_parsing_cookies(app):
    """API calls carry no Cookie header: the session interface answers a fresh session from the environ
    alone (parsing the absent cookies walked every header of the request), and one with the cookie still
    opens it."""
    interface = app.session_interface
    with app.test_request_context("/sandbox/v1/jobs", headers={"x-api-secret": "s"}) as ctx:
        session = interface.open_session(app, ctx.request)
        assert dict(session) == {} and not session.modified
        assert "cookies" not in ctx.request.__dict__  # werkzeug caches the parsed cookies there
    with app.test_request_context("/"):
        signed = interface.get_signing_serializer(app).dumps({"workspace_id": "w"})
    cookie = f"{app.config['SESSION_COOKIE_NAME']}={signed}"
    with app.test_request_context("/", headers={"Cookie": cookie}) as ctx:
        assert interface.open_session(app, ctx.request)["workspace_id"] == "w"
