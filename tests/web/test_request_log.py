"""The request log shows every API call of the workspace: from outside the console too, redacted, filtered."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta
from html import unescape

from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey
from console.requestlog.models import RequestLogEntry
from console.requestlog.writer import writer_for
from tests.conftest import Api
from tests.factories import LINK_TOKEN, MATCHING, TARGET
from tests.web.helpers import sandbox_secret
from tests.web.test_walkthrough import link_token_form

# A Link token whose body carries personal data the log must redact.
MATCHED_LINK_TOKEN = {**LINK_TOKEN, "end_user": {"platform_matching": MATCHING}}


def rows_of(app, workspace_id) -> list[RequestLogEntry]:
    with app.app_context():
        return list(
            db.session.scalars(
                select(RequestLogEntry)
                .where(RequestLogEntry.workspace_id == workspace_id)
                .order_by(RequestLogEntry.created_at)
            )
        )


def outside(app, visitor) -> Api:
    """A client of the API that is not the console: the developer's backend, with the workspace's key."""
    return Api(app.test_client(), sandbox_secret(app, visitor.workspace_id))


def test_a_call_from_outside_the_console_is_logged_with_its_fields_and_redacted(app, visitor):
    api = outside(app, visitor)
    secret = api.secret
    response = api.post("/link_tokens", json=MATCHED_LINK_TOKEN, headers={"User-Agent": "ci-job/1.0"})
    assert response.status_code == 200, response.get_json()
    request_id = response.headers["x-service-request-id"]
    writer_for(app).flush()
    [row] = [r for r in rows_of(app, visitor.workspace_id) if r.request_id == request_id]
    assert (row.method, row.path, row.mode, row.status, row.step) == (
        "POST",
        "/sandbox/v1/link_tokens",
        "sandbox",
        200,
        "",
    )
    assert row.duration_ms > 0 and row.clock_at is not None
    with app.app_context():
        key = db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == visitor.workspace_id)).first()
    assert row.api_key_id == key.id
    stored = str(row.request_headers) + row.request_body + row.response_body
    assert secret not in stored
    assert row.request_headers["User-Agent"] == "ci-job/1.0"
    for personal in ("123456789", "1990-05-17", "5551234567", "ada@example.com", TARGET["account_number"]):
        assert personal not in stored
    assert "••••" + TARGET["account_number"][-4:] in row.request_body and "Lovelace" in row.request_body
    assert row.response_headers["x-service-request-id"] == request_id
    assert "X-RateLimit-Limit" in row.response_headers
    # Time-ordered ids, for the writer's index pages (console.core.ids): still UUIDs, as the spec says.
    assert uuid.UUID(request_id).version == 7 and row.id.version == 7

    page = unescape(visitor.get("/requests").get_data(as_text=True))
    assert request_id in page and "/sandbox/v1/link_tokens" in page
    assert re.search(r"status-2xx\">200", page)
    detail = unescape(visitor.get(f"/requests/{row.id}").get_data(as_text=True))
    assert secret not in detail and "ada@example.com" not in detail and "[redacted]" in detail


def test_a_link_tokens_token_is_logged_masked_and_the_console_still_opens_link_with_it(app, visitor):
    """The service keeps a Link token only as a hash: its log keeps the last four, from outside and from
    the console, while the console's own page still gets the real token to open Link with."""
    theirs = outside(app, visitor).post("/link_tokens", json=MATCHED_LINK_TOKEN).get_json()["data"]["token"]
    page = visitor.post("/walkthrough/link-token", link_token_form(), htmx=True).get_data(as_text=True)
    ours = re.search(r'data-link-token="([^"]+)"', page).group(1)
    writer_for(app).flush()
    rows = [r for r in rows_of(app, visitor.workspace_id) if r.path.endswith("/link_tokens")]
    assert sorted(r.step for r in rows) == ["", "link_token"]
    for row, token in ((r, theirs if r.step == "" else ours) for r in rows):
        assert token not in row.response_body
        assert json.loads(row.response_body)["data"]["token"] == "••••" + token[-4:]
        detail = unescape(visitor.get(f"/requests/{row.id}").get_data(as_text=True))
        assert token not in detail and "••••" + token[-4:] in detail
    assert len(ours) >= 40 and ours not in unescape(visitor.get("/requests").get_data(as_text=True))
    assert visitor.client.get(f"/sandbox/link?token={ours}").status_code == 200


def test_the_clock_time_is_kept_beside_the_real_time(app, visitor):
    api = outside(app, visitor)
    assert api.post("/sandbox/clock/advance", json={"hours": 48}).status_code == 200
    response = api.get("/webhooks")
    writer_for(app).flush()
    [row] = [
        r
        for r in rows_of(app, visitor.workspace_id)
        if r.request_id == response.headers["x-service-request-id"]
    ]
    assert timedelta(hours=47) < row.clock_at - row.created_at < timedelta(hours=49)
    assert "clock" in visitor.get("/requests").get_data(as_text=True)


def test_console_calls_are_logged_once_with_their_step(app, visitor):
    before = len(rows_of(app, visitor.workspace_id))
    visitor.post("/walkthrough/jobs", {"link_token_id": ""}, htmx=True)
    writer_for(app).flush()
    rows = rows_of(app, visitor.workspace_id)
    assert len(rows) == before + 1
    assert rows[-1].step == "jobs" and rows[-1].request_id


def test_filters_by_status_path_key_and_request_id(app, visitor):
    api = outside(app, visitor)
    ok = api.get("/webhooks")
    bad = api.post("/link_tokens", json={})
    assert (ok.status_code, bad.status_code) == (200, 400)
    writer_for(app).flush()
    ok_id, bad_id = ok.headers["x-service-request-id"], bad.headers["x-service-request-id"]

    def listed(**args) -> str:
        return visitor.get("/requests", query_string=args).get_data(as_text=True)

    assert bad_id in listed(status="4xx") and ok_id not in listed(status="4xx")
    assert ok_id in listed(status="2xx") and bad_id not in listed(status="2xx")
    assert bad_id not in listed(status="5xx")
    assert bad_id in listed(path="link_tok") and ok_id not in listed(path="link_tok")
    assert ok_id in listed(request_id=ok_id) and bad_id not in listed(request_id=ok_id)
    with app.app_context():
        key = db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == visitor.workspace_id)).first()
    assert ok_id in listed(key=str(key.id)) and ok_id not in listed(key=str(uuid.uuid4()))
    # Nonsense filters are ignored, never a 500.
    assert (
        visitor.get("/requests", query_string={"status": "9xx", "key": "nope", "path": "%_\\"}).status_code
        == 200
    )


def test_filters_are_kept_across_pages(app, visitor):
    api = outside(app, visitor)
    for _ in range(27):
        api.post("/link_tokens", json={})
    writer_for(app).flush()
    first = visitor.get("/requests", query_string={"status": "4xx"}).get_data(as_text=True)
    more = re.search(r'hx-get="([^"]*cursor=[^"]*)"', first)
    assert more and "status=4xx" in unescape(more.group(1))
    second = visitor.get(unescape(more.group(1)), htmx=True).get_data(as_text=True)
    assert second.count("request-row") == 2


def test_each_workspace_sees_only_its_own_calls(app, visitor, other_visitor):
    response = outside(app, visitor).get("/webhooks")
    writer_for(app).flush()
    request_id = response.headers["x-service-request-id"]
    [row] = [r for r in rows_of(app, visitor.workspace_id) if r.request_id == request_id]
    assert request_id not in other_visitor.get("/requests").get_data(as_text=True)
    filtered = other_visitor.get("/requests", query_string={"request_id": request_id}).get_data(as_text=True)
    assert "request-row" not in filtered and "No API call matches." in filtered
    assert other_visitor.get(f"/requests/{row.id}").status_code == 404


def test_a_full_queue_is_said_on_the_page(app, visitor):
    writer = writer_for(app)
    writer.capacity = 0
    outside(app, visitor).get("/webhooks")
    writer.flush()
    assert "1 requests not logged" in visitor.get("/requests").get_data(as_text=True)


def test_a_clock_advance_is_logged_at_the_clock_time_it_moved_to(app, visitor):
    api = outside(app, visitor)
    response = api.post("/sandbox/clock/advance", json={"hours": 48})
    assert response.status_code == 200
    writer_for(app).flush()
    [row] = [
        r
        for r in rows_of(app, visitor.workspace_id)
        if r.request_id == response.headers["x-service-request-id"]
    ]
    # The request's snapshot of the workspace still says 0: the row follows what the view stored.
    assert timedelta(hours=47) < row.clock_at - row.created_at < timedelta(hours=49)


def test_the_consoles_own_headless_completion_is_logged_without_its_credentials(app, visitor):
    """The console's gallery completes a token through the API too (its row written by `record`)."""
    assert visitor.post("/scenarios/user_mfa_sms/run", {"via": "headless"}).status_code == 302
    [row] = [r for r in rows_of(app, visitor.workspace_id) if r.path.endswith("/complete")]
    assert row.status == 200 and row.step == "scenario"
    logged = json.loads(row.request_body)
    assert logged["credentials"] == {"username": "[redacted]", "password": "[redacted]"}
    assert set(logged["mfa"].values()) == {"[redacted]"}
    assert "pass_good" not in row.request_body and "123456" not in row.request_body
    detail = unescape(visitor.get(f"/requests/{row.id}").get_data(as_text=True))
    assert "pass_good" not in detail


def test_a_call_with_a_lone_surrogate_escaped_in_its_json_is_still_logged(app, visitor):
    """`"\\ud800"` is valid JSON text; a body re-encoded to mask personal data kept it as a lone surrogate,
    which no database text column can hold, so the row was dropped (counted only as unlogged)."""
    api = outside(app, visitor)
    body = json.dumps({**MATCHED_LINK_TOKEN, "org_name": "\ud800"})  # json.dumps escapes it: \ud800
    response = api.post("/link_tokens", data=body, headers={"Content-Type": "application/json"})
    request_id = response.headers["x-service-request-id"]
    writer_for(app).flush()
    [row] = [r for r in rows_of(app, visitor.workspace_id) if r.request_id == request_id]
    assert "\\ud800" in row.request_body and "ada@example.com" not in row.request_body
    assert json.loads(row.request_body)["org_name"] == "\ud800"
    assert response.status_code == 400  # the API refuses it, and names the field
    detail = visitor.get(f"/requests/{row.id}")
    assert detail.status_code == 200 and "\\ud800" in detail.get_data(as_text=True)


def test_a_call_with_a_deeply_nested_body_has_a_detail_page(app, visitor):
    """The API refuses 20,000 nested brackets (400); the log keeps the body, and the detail page's Python
    snippet parsed it with json.loads, whose RecursionError was a 500. It is shown as data= text instead."""
    api = outside(app, visitor)
    response = api.post(
        "/link_tokens", data="[" * 20_000 + "]" * 20_000, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    request_id = response.headers["x-service-request-id"]
    writer_for(app).flush()
    [row] = [r for r in rows_of(app, visitor.workspace_id) if r.request_id == request_id]
    detail = visitor.get(f"/requests/{row.id}")
    assert detail.status_code == 200 and "data=&#39;[[[[" in detail.get_data(as_text=True)


def _cursor_and_hidden(page: str) -> tuple[str, str]:
    found = re.search(r'id="request-poller" hx-get="[^"]*[?&]after=([^"&]+)&(?:amp;)?hidden=(\d+)', page)
    assert found, "no live poller"
    return found.group(1), found.group(2)


def _live_url(page: str) -> str:
    return re.search(r'id="request-poller" hx-get="([^"]+)"', page).group(1)


def _hidden_count(page: str) -> int | None:
    found = re.search(r"<span data-hidden-listener>([\d,]+)</span> listener\s+requests? hidden", page)
    return int(found.group(1).replace(",", "")) if found else None


def test_a_listeners_own_requests_are_hidden_behind_a_count_and_a_toggle(app, visitor):
    """`console listen` polls once a second: the page lists the workspace's own calls, says how many of the
    listener's requests it hid, and lists them on request; the live poll keeps the count up to date."""
    api = outside(app, visitor)
    opened = api.post("/sandbox/listen", json={})
    listener = opened.get_json()["data"]
    polls = [api.post(f"/sandbox/listen/{listener['id']}/poll", json={}) for _ in range(3)]
    assert {p.status_code for p in polls} == {200}
    real = api.post("/link_tokens", json=LINK_TOKEN)
    assert real.status_code == 200
    failed = api.post(f"/sandbox/listen/{uuid.uuid4()}/poll", json={})  # a listener's 404: not routine
    assert failed.status_code == 404
    writer_for(app).flush()
    listeners = [r.headers["x-service-request-id"] for r in (opened, *polls)]

    page = unescape(visitor.get("/requests").get_data(as_text=True))
    assert real.headers["x-service-request-id"] in page and "/sandbox/v1/link_tokens" in page
    assert failed.headers["x-service-request-id"] in page
    assert not [r for r in listeners if r in page]
    assert _hidden_count(page) == 4
    assert "/requests?listener_requests=shown" in page

    shown = unescape(visitor.get("/requests?listener_requests=shown").get_data(as_text=True))
    assert all(r in shown for r in listeners)
    assert real.headers["x-service-request-id"] in shown and "Hide them" in shown
    assert _hidden_count(shown) is None
    assert "listener_requests=shown" in _live_url(shown)  # the live poll keeps listing them

    # Looked up by its request id, a poll is found whether they are shown or not.
    assert listeners[1] in unescape(
        visitor.get(f"/requests?request_id={listeners[1]}").get_data(as_text=True)
    )

    # Live: nothing new is a 204; another poll changes only the count (no row is prepended).
    cursor, hidden = _cursor_and_hidden(page)
    assert hidden == "4"
    assert visitor.get(f"/requests/live?after={cursor}&hidden=4").status_code == 204
    api.post(f"/sandbox/listen/{listener['id']}/poll", json={})
    writer_for(app).flush()
    answer = unescape(visitor.get(f"/requests/live?after={cursor}&hidden=4").get_data(as_text=True))
    assert _hidden_count(answer) == 5
    assert 'id="listener-requests"' in answer and "hx-swap-oob" in answer
    assert "request-row" not in answer and "hidden=5" in answer


def test_a_workspace_without_a_listener_says_nothing_about_one(app, visitor):
    api = outside(app, visitor)
    assert api.get("/webhooks").status_code == 200
    writer_for(app).flush()
    page = visitor.get("/requests").get_data(as_text=True)
    assert re.search(r'<div id="listener-requests" class="listener-requests">\s*</div>', page)
    assert _hidden_count(page) is None and "listener_requests=" not in page
