"""API keys per mode, and the request log's exchanges: masked secrets, curl and Python that run."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import sys
import types
from html import unescape
from unittest import mock

from sqlalchemy import func, select, update

from console.core.timeutil import utcnow
from console.extensions import db
from console.keys.models import ApiKey
from console.requestlog.models import RequestLogEntry
from console.web.shared import exchanges
from tests.web.helpers import sandbox_secret


def keys_of(app, workspace_id) -> list[ApiKey]:
    with app.app_context():
        return db.session.scalars(
            select(ApiKey).where(ApiKey.workspace_id == workspace_id).order_by(ApiKey.created_at)
        ).all()


def test_create_roll_revoke_per_mode(app, visitor):
    assert visitor.post("/keys", {"mode": "production", "label": "live"}, htmx=True).status_code == 200
    [sandbox, production] = keys_of(app, visitor.workspace_id)
    assert production.mode == "production" and production.label == "live"
    html = visitor.post(f"/keys/{sandbox.id}/roll", htmx=True).get_data(as_text=True)
    assert "revoked" in html
    keys = keys_of(app, visitor.workspace_id)
    assert [k.mode for k in keys if k.revoked_at is None] == ["production", "sandbox"]
    visitor.post(f"/keys/{production.id}/revoke", htmx=True)
    assert all(k.revoked_at for k in keys_of(app, visitor.workspace_id) if k.mode == "production")
    assert visitor.post("/keys", {"mode": "moon"}).status_code == 400


def test_the_console_keeps_working_after_a_roll(app, visitor):
    [old] = keys_of(app, visitor.workspace_id)
    visitor.post(f"/keys/{old.id}/roll")
    html = visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True).get_data(as_text=True)
    assert 'status-2xx">200' in html  # called with the new key
    new = next(k for k in keys_of(app, visitor.workspace_id) if k.revoked_at is None)
    assert "••••" + new.secret_last4 in html


def test_the_console_never_goes_back_to_a_rolled_key_in_its_grace_period(app, visitor):
    """Roll a newer key with a grace period, then revoke its replacement: the console keeps to an active key
    (it took the rolled one, on its way out, as its key everywhere, and new webhooks went under it)."""
    [console_key] = keys_of(app, visitor.workspace_id)
    assert visitor.post("/keys", {"mode": "sandbox", "label": "CI"}, htmx=True).status_code == 200
    ci = next(k for k in keys_of(app, visitor.workspace_id) if k.label == "CI")
    visitor.post(f"/keys/{ci.id}/roll", {"grace": "1h"}, htmx=True)
    replacement = max(keys_of(app, visitor.workspace_id), key=lambda k: k.created_at)
    assert replacement.id != ci.id and replacement.revoked_at is None
    visitor.post(f"/keys/{replacement.id}/revoke", htmx=True)
    rolled = next(k for k in keys_of(app, visitor.workspace_id) if k.id == ci.id)
    assert rolled.revoked_at is None and rolled.expires_at is not None  # still works, for an hour
    html = visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True).get_data(as_text=True)
    assert "••••" + console_key.secret_last4 in html and "••••" + ci.secret_last4 not in html
    # The rolled key is used only while no other is left, and never past its end.
    visitor.post(f"/keys/{console_key.id}/revoke", htmx=True)
    html = visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True).get_data(as_text=True)
    assert "••••" + ci.secret_last4 in html
    with app.app_context():
        db.session.execute(update(ApiKey).where(ApiKey.id == ci.id).values(expires_at=utcnow()))
        db.session.commit()
    html = visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True).get_data(as_text=True)
    assert "••••" + ci.secret_last4 not in html


def test_a_secret_is_shown_only_on_request(app, visitor):
    secret = sandbox_secret(app, visitor.workspace_id)
    [key] = keys_of(app, visitor.workspace_id)
    assert secret not in visitor.get("/keys").get_data(as_text=True)
    revealed = visitor.post(f"/keys/{key.id}/reveal", htmx=True).get_data(as_text=True)
    assert secret in revealed
    assert visitor.client.get(f"/keys/{key.id}/reveal").status_code == 405  # never by a plain link


def test_the_log_stores_no_secret_and_reveals_it_on_request(app, visitor):
    secret = sandbox_secret(app, visitor.workspace_id)
    with app.app_context():
        rows = db.session.scalars(
            select(RequestLogEntry).where(RequestLogEntry.workspace_id == visitor.workspace_id)
        ).all()
        assert rows and all(secret not in json.dumps(r.request_headers) + r.request_body for r in rows)
        row_id = str(rows[0].id)
    masked = visitor.get(f"/requests/{row_id}").get_data(as_text=True)
    assert secret not in masked and "Reveal secret" in masked
    revealed = unescape(visitor.post(f"/requests/{row_id}/reveal", htmx=True).get_data(as_text=True))
    assert f"x-api-secret: {secret}" in revealed and f'"x-api-secret": "{secret}"' in revealed.replace(
        "'", '"'
    )


def test_curl_and_python_are_faithful(app, visitor):
    with app.app_context():
        row = db.session.scalars(
            select(RequestLogEntry).where(RequestLogEntry.workspace_id == visitor.workspace_id)
        ).first()
        curl = exchanges.curl(row, "SECRET")
        python = exchanges.python(row, "SECRET")
    words = shlex.split(curl.replace("\\\n", " "))
    assert words[:4] == ["curl", "-X", "POST", row.url]
    assert "x-api-secret: SECRET" in words and "Service-Version: 2023-11-22" in words
    assert json.loads(words[words.index("-d") + 1]) == json.loads(row.request_body)
    captured: dict = {}

    class Response:
        status_code, headers = 200, {"x-service-request-id": "rid"}

        def json(self):
            return {}

    def post(url, **kwargs):
        captured.update(url=url, **kwargs)
        return Response()

    fake = types.ModuleType("requests")
    fake.post = post
    with mock.patch.dict(sys.modules, {"requests": fake}), contextlib.redirect_stdout(io.StringIO()):
        exec(python, {})
    assert captured["url"] == row.url
    assert captured["headers"] == {"Service-Version": "2023-11-22", "x-api-secret": "SECRET"}
    assert captured["json"] == json.loads(row.request_body)


def test_request_log_pages_newest_first(app, visitor):
    for _ in range(3):
        visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True)
    html = visitor.get("/requests").get_data(as_text=True)
    paths = re.findall(r"<code class=\"rq-path\"[^>]*>(/sandbox/v1/[a-z_/]+)</code>", html)
    assert paths == ["/sandbox/v1/jobs"] * 3 + ["/sandbox/v1/webhooks"]


def test_webhooks_follow_a_rolled_key(app, visitor):
    from console.webhooks.models import Webhook

    [old] = keys_of(app, visitor.workspace_id)
    visitor.post(f"/keys/{old.id}/roll")
    new = next(k for k in keys_of(app, visitor.workspace_id) if k.revoked_at is None)
    with app.app_context():
        [hook] = db.session.scalars(select(Webhook).where(Webhook.workspace_id == visitor.workspace_id)).all()
        assert hook.api_key_id == new.id


def test_a_relayed_webhook_is_labelled_in_the_webhooks_list(app, visitor):
    from tests.conftest import VERSION

    secret = sandbox_secret(app, visitor.workspace_id)
    headers = {"x-api-secret": secret, "Service-Version": VERSION}
    assert visitor.client.post("/sandbox/v1/sandbox/listen", json={}, headers=headers).status_code == 200
    html = visitor.get("/webhooks").get_data(as_text=True)
    assert "Relayed by <code>console listen</code>" in html and "relay://console-listen" in html
    assert re.search(r"last poll \w{3} \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2}", html)  # the console's one format


def test_roll_with_a_grace_period_from_the_console(app, visitor, client):
    from tests.conftest import Api

    old_secret = sandbox_secret(app, visitor.workspace_id)
    [old] = keys_of(app, visitor.workspace_id)
    html = visitor.post(f"/keys/{old.id}/roll", {"grace": "24h"}, htmx=True).get_data(as_text=True)
    assert "works until" in html and 'name="grace"' in html
    [rolled, new] = keys_of(app, visitor.workspace_id)
    assert rolled.revoked_at is None and rolled.expires_at is not None
    assert 23 * 3600 < (rolled.expires_at - new.created_at).total_seconds() <= 24 * 3600 + 5
    assert Api(client, old_secret).get("/webhooks").status_code == 200  # inside the grace
    # The console itself and the webhooks use the new key at once.
    html = visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True).get_data(as_text=True)
    assert "••••" + new.secret_last4 in html
    assert visitor.post(f"/keys/{new.id}/roll", {"grace": "3 weeks"}).status_code == 400


def test_keys_show_last_use_and_usage_per_day(app, visitor, client):
    from console.requestlog.writer import writer_for
    from tests.conftest import Api

    assert "never" in visitor.get("/keys").get_data(as_text=True)
    api = Api(client, sandbox_secret(app, visitor.workspace_id))
    api.get("/webhooks")
    api.post("/link_tokens", json={})
    writer_for(app).flush()
    html = visitor.get("/keys").get_data(as_text=True)
    [key] = keys_of(app, visitor.workspace_id)
    assert key.last_used_at is not None
    assert key.last_used_at.strftime("%a %d %b %Y %H:%M") in html
    usage = re.search(r'<table class="[^"]*" id="usage">(.*?)</table>', html, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(\d+)</td>", usage)
    # The walkthrough's webhook registration (console) plus the two calls above: 3 calls, 2 ok, 1 4xx.
    assert cells == ["3", "2", "1", "0", "0"]


def test_production_usage_is_billable(app, visitor, client):
    from console.requestlog.writer import writer_for
    from tests.conftest import Api

    visitor.post("/keys", {"mode": "production", "label": "live"}, htmx=True)
    production = next(k for k in keys_of(app, visitor.workspace_id) if k.mode == "production")
    with app.app_context():
        from console.keys.services import secret_of

        secret = secret_of(production)
    Api(client, secret, "production").get("/webhooks")
    writer_for(app).flush()
    html = visitor.get("/keys").get_data(as_text=True)
    usage = re.search(r'id="usage">(.*?)</table>', html, re.S).group(1)
    production_row = next(r for r in re.findall(r"<tr>(.*?)</tr>", usage, re.S) if "production" in r)
    assert re.findall(r"<td[^>]*>(\d+)</td>", production_row) == ["1", "1", "0", "0", "1"]


def test_the_reference_tries_a_call_with_the_workspace_key(app, visitor):
    secret = sandbox_secret(app, visitor.workspace_id)
    page = visitor.get("/reference").get_data(as_text=True)
    assert "Try it" in page and secret not in page
    html = visitor.post(
        "/reference/try", {"method": "GET", "path": "/webhooks", "mode": "sandbox"}, htmx=True
    ).get_data(as_text=True)
    assert 'status-2xx">200' in html and secret not in html
    with app.app_context():
        row = db.session.scalars(
            select(RequestLogEntry).where(
                RequestLogEntry.workspace_id == visitor.workspace_id, RequestLogEntry.step == "reference"
            )
        ).one()
        assert (row.method, row.path, row.status) == ("GET", "/sandbox/v1/webhooks", 200)
    assert row.request_id in visitor.get("/requests").get_data(as_text=True)
    # A body, a path parameter, and what is refused.
    sent = visitor.post(
        "/reference/try", {"method": "POST", "path": "/link_tokens", "body": '{"org_name": 5}'}, htmx=True
    ).get_data(as_text=True)
    assert "400" in sent and "org_name" in sent
    assert "not valid JSON" in visitor.post(
        "/reference/try", {"method": "POST", "path": "/link_tokens", "body": "{"}, htmx=True
    ).get_data(as_text=True)
    found = visitor.post(
        "/reference/try",
        {"method": "GET", "path": "/webhooks/{webhook_id}", "path.webhook_id": "../x"},
        htmx=True,
    ).get_data(as_text=True)
    assert "/sandbox/v1/webhooks/..%2Fx" in found
    assert visitor.post("/reference/try", {"method": "GET", "path": "/admin"}).status_code == 404
    assert (
        visitor.post("/reference/try", {"method": "GET", "path": "/webhooks", "mode": "moon"}).status_code
        == 400
    )


def test_try_it_starts_with_the_documented_example_body_which_the_api_accepts(visitor):
    page = visitor.get("/reference").get_data(as_text=True)
    textarea = re.search(r'<textarea id="b-post--link_tokens"[^>]*>(.*?)</textarea>', page, re.S)
    body = unescape(textarea.group(1))
    assert json.loads(body)["org_name"] == "Acme"  # the document's example, not "{}" (which drew only a 400)
    sent = visitor.post(
        "/reference/try",
        {"method": "POST", "path": "/link_tokens", "mode": "sandbox", "body": body},
        htmx=True,
    ).get_data(as_text=True)
    assert 'status-2xx">200' in sent
    # An operation whose document has no example still starts with an empty object.
    replay = re.search(r'<textarea id="b-post--webhooks-webhook_id-replay"[^>]*>(.*?)</textarea>', page, re.S)
    assert replay.group(1) == "{}"


def test_the_reference_says_when_the_mode_has_no_key_instead_of_showing_a_bare_401(app, visitor):
    visitor.get("/reference")
    assert (
        visitor.post("/reference/try", {"method": "GET", "path": "/webhooks", "mode": "sandbox"}).status_code
        == 200
    )
    with app.app_context():
        db.session.execute(
            update(ApiKey)
            .where(ApiKey.workspace_id == visitor.workspace_id, ApiKey.mode == "development")
            .values(revoked_at=utcnow())
        )
        db.session.commit()
        logged = db.session.scalar(select(func.count()).select_from(RequestLogEntry))
    html = visitor.post(
        "/reference/try", {"method": "GET", "path": "/webhooks", "mode": "development"}, htmx=True
    ).get_data(as_text=True)
    assert "no active development key" in html and 'href="/keys"' in html
    assert "401" in html  # what the API would have answered, said in words
    with app.app_context():  # nothing was sent
        assert db.session.scalar(select(func.count()).select_from(RequestLogEntry)) == logged


def test_a_console_call_without_a_key_says_why_and_what_to_do(app, visitor):
    # Every sandbox key revoked: the walkthrough's step 3 and a scenario still send their call (the API's 401 is
    # the truth), and say that the console had no key to send and where to make one.
    sandbox = next(k for k in keys_of(app, visitor.workspace_id) if k.mode == "sandbox")
    visitor.post(f"/keys/{sandbox.id}/revoke", htmx=True)
    advice = "This workspace has no active sandbox key, so the console sent none and the API answered 401."

    def text(response) -> str:
        return unescape(re.sub(r"\s+", " ", response.get_data(as_text=True)))

    html = text(visitor.post("/walkthrough/link-token", {"org_name": "Acme"}, htmx=True))
    assert 'status-4xx">401' in html and advice in html and 'href="/keys">Create one on API keys' in html
    failed = visitor.post("/scenarios/user_good/run")
    assert failed.status_code == 502 and advice in text(failed)
    # With a key again, a 401 of another kind (none here: the call succeeds) is never explained as a missing key.
    visitor.post("/keys", {"mode": "sandbox"}, htmx=True)
    html = text(visitor.post("/walkthrough/link-token", {"org_name": "Acme"}, htmx=True))
    assert "x-api-secret" in html and advice not in html
