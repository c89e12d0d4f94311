"""Hostile console and Link inputs: a message on the page, never a bare 500.

Tampered list cursors, NUL characters in query, path and form parameters, odd or huge digit runs in
the signature debugger, the walkthrough's Link token form and Link's own amount field.
"""

from __future__ import annotations

import base64
import html
import json
import re
import uuid

import pytest
from sqlalchemy import func, select
from werkzeug.test import EnvironBuilder, run_wsgi_app

from console.extensions import db
from console.keys.models import ApiKey
from console.requestlog.models import RequestLogEntry
from console.web.link import form as linkform
from tests.web.linkflow import token_at_allocation
from tests.web.test_walkthrough import link_token_form

ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def cursor_of(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


TAMPERED = [
    cursor_of([["v", "abc"], ["v", "abc"]]),
    cursor_of(["uuid", 1]),
    cursor_of(["v", None]),
    cursor_of([["dt", "0001-01-01T00:00:00+01:00"], ["uuid", ZERO_UUID]]),
    base64.urlsafe_b64encode(bytes(range(200, 250))).decode(),
    "%%%",
]
CURSOR_URLS = [
    ("/events?cursor={}", "cursor"),
    ("/events/rows?cursor={}", "cursor"),
    ("/events/rows?after={}", "after"),
    ("/inbox/rows?after={}", "after"),
    ("/webhooks?cursor={}", "cursor"),
    ("/requests?cursor={}", "cursor"),
    ("/timeline?cursor={}", "cursor"),
]


def refusal(response, name: str) -> str:
    """The console's error page for a bad parameter: a 400 whose message names it."""
    assert response.status_code == 400, response.status_code
    page = html.unescape(response.get_data(as_text=True))
    assert 'role="alert"' in page and name in page.split('role="alert"', 1)[1]
    return page


@pytest.mark.parametrize(("url", "name"), CURSOR_URLS)
def test_a_tampered_cursor_is_a_message_on_the_page(visitor, url, name):
    for cursor in TAMPERED:
        refusal(visitor.get(url.format(cursor)), name)
        refusal(visitor.get(url.format(cursor), htmx=True), name)


def test_the_cursors_the_console_embeds_still_decode(visitor):
    """The strict check accepts what the pages themselves hand the live pollers."""
    for page, poller in (("/webhooks", "inbox-poller"), ("/events", "event-poller")):
        markup = visitor.get(page).get_data(as_text=True)
        url = html.unescape(re.search(rf'id="{poller}" hx-get="([^"]+)"', markup).group(1))
        assert "after=" in url
        assert visitor.get(url, htmx=True).status_code == 204


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/world?q=%00", "q"),
        ("/world?tab=employers&q=%00", "q"),
        ("/world?tab=people&q=a%00", "q"),
        ("/world?tab=benefits&q=%00", "q"),
        ("/events?end_user_id=%00", "end_user_id"),
        ("/events/rows?end_user_id=%00&after=x", "end_user_id"),
        ("/world/people/%00", "person_id"),
        ("/events/%00", "event_id"),
        ("/launch?link_token_id=%00", "link_token_id"),
    ],
)
def test_a_nul_in_a_console_parameter_is_a_message_on_the_page(visitor, url, name):
    refusal(visitor.get(url), name)


def test_a_nul_in_a_console_form_field_is_refused_before_anything_is_stored(app, visitor):
    with app.app_context():
        before = db.session.scalar(select(func.count()).select_from(ApiKey))
    refusal(visitor.post("/keys", {"mode": "sandbox", "label": "a\u0000b"}), "label")
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(ApiKey)) == before


@pytest.mark.parametrize("timestamp", ["²", "9" * 5000, "1_700_000_000", "\u0661\u0667" + "\u0660" * 8])
def test_the_debugger_explains_an_odd_timestamp(visitor, timestamp):
    form = {
        "secret": "whsec_test",
        "headers": f"x-timestamp: {timestamp}\nx-service-signature: v2=abc",
        "body": "{}",
    }
    response = visitor.post("/webhooks/debugger", form, htmx=True)
    assert response.status_code == 200
    assert "invalid x-timestamp header: not an integer" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("field", "value"),
    [("amount", "9" * 5000), ("amount", "²"), ("allocation_value", "9" * 5000), ("allocation_value", "-²")],
)
def test_the_walkthrough_form_sends_odd_numbers_for_the_api_to_judge(visitor, field, value):
    form = {**link_token_form(), field: value}
    if field == "allocation_value":
        form["allocation_type"] = "amount"
    response = visitor.post("/walkthrough/link-token", form, htmx=True)
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert 'status-4xx">400' in page
    path = "amount" if field == "amount" else "allocation.value"
    assert path in page


def test_the_form_turns_only_plain_integers_into_numbers():
    body = linkform.body_from_form({"amount": " 2500 ", "allocation_value": "-3"}, [])
    assert body["amount"] == 2500 and body["allocation"]["value"] == -3
    for odd in ("²", "9" * 19, "1_000", "\u0663", "+5"):
        assert linkform.body_from_form({"amount": odd}, [])["amount"] == odd


@pytest.mark.parametrize("amount", ["9" * 5000, "9e999998", "1e999990", "-1e999999", "²", "NaN", "1e-999999"])
def test_link_explains_an_odd_amount(client, workspace, amount):
    token = token_at_allocation(client, workspace)
    step = {"token": token, "action": "allocation", "type": "amount", "amount": amount}
    response = client.post("/sandbox/link/step", data=step, headers={"HX-Request": "true"})
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert 'data-screen="allocation"' in page and "Enter an amount" in page


@pytest.mark.parametrize("field", ["percent", "target_index"])
def test_link_explains_a_huge_percent_or_target(client, workspace, field):
    token = token_at_allocation(client, workspace)
    step = {"token": token, "action": "allocation", "type": "percent", "percent": "50", field: "9" * 5000}
    response = client.post("/sandbox/link/step", data=step, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert 'data-screen="allocation"' in response.get_data(as_text=True)


def test_a_nul_reaching_link_is_its_error_screen(client, workspace):
    token = token_at_allocation(client, workspace)
    for response in (
        client.get(f"/sandbox/link?token={token}&q=%00"),
        client.get(f"/sandbox/link/search?token={token}&q=a%00"),
        client.post("/sandbox/link/step", data={"token": token, "action": "login", "username": "a\u0000"}),
    ):
        assert response.status_code == 400
        page = response.get_data(as_text=True)
        assert 'data-error-code="INVALID_REQUEST"' in page and "NUL" in page
    # The flow did not move: the person is still at the allocation screen.
    assert 'data-screen="allocation"' in client.get(f"/sandbox/link?token={token}").get_data(as_text=True)


def test_a_huge_link_token_id_in_the_jobs_step_is_judged_by_the_api_and_logged(app, visitor):
    response = visitor.post("/walkthrough/jobs", {"link_token_id": "9" * 5000}, htmx=True)
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert 'status-4xx">400' in page and "link_token_id" in page
    with app.app_context():
        row = db.session.scalars(select(RequestLogEntry).where(RequestLogEntry.step == "jobs")).one()
        assert len(row.url) == 2000 and row.url.endswith("…")


# Every console route, every form and query field it could read, filled with odd values at once.
ODD_VALUES = ["\u00b2", "9" * 5000, "x" * 20000, "'\"<>", ".."]
FIELDS = [
    "q",
    "tab",
    "mode",
    "cursor",
    "after",
    "preset",
    "exchanges",
    "link_token_id",
    "scenario",
    "type",
    "account_id",
    "end_user_id",
    "compact",
    "by",
    "timeline_kind",
    "timeline_id",
    "label",
    "url",
    "status",
    "version",
    "enabled_events",
    "secret",
    "headers",
    "body",
    "ignore_age",
    "via",
    "amount",
    "allocation_value",
    "allocation_type",
    "required_jobs",
    "platform_id",
    "employer_id",
    "org_name",
    "pm_enabled",
    "pm_email",
    "target_type_0",
    "routing_number_0",
    "account_number_0",
]


def _get_status(app, visitor, path: str, query: dict, *, htmx: bool) -> int:
    """The status of a GET from `visitor`, sent without werkzeug's test client: the client turns each request's
    URL back into an IRI twice (for its cookie jar), which for these query strings of up to 800 KB was three
    quarters of this test's CPU time (cProfile: 12.8 of 16 s). The app sees the same request."""
    name = app.config["SESSION_COOKIE_NAME"]
    headers = {"Cookie": f"{name}={visitor.client.get_cookie(name).value}"}
    if htmx:
        headers["HX-Request"] = "true"
    environ = EnvironBuilder(path=path, query_string=query, headers=headers).get_environ()
    _body, status, _headers = run_wsgi_app(app, environ, buffered=True)
    return int(status.split()[0])


def test_no_console_route_answers_a_500_to_odd_values(app, visitor):
    rules = [r for r in app.url_map.iter_rules() if r.endpoint.startswith("console.")]
    rules = [r for r in rules if r.endpoint != "console.inbox_receive"]
    assert len(rules) > 30
    for rule in rules:
        for value in ODD_VALUES:
            path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", value, rule.rule)
            form = dict.fromkeys(FIELDS, value)
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                if method == "GET":
                    statuses = [_get_status(app, visitor, path, form, htmx=htmx) for htmx in (False, True)]
                else:
                    statuses = [visitor.post(path, form, htmx=True).status_code]
                for status in statuses:
                    assert status < 500, (method, rule.rule, value[:8])


@pytest.mark.parametrize("path", ["/nope", "/%00", "/keys/", "/static/nope.js"])
def test_an_unknown_console_path_gets_the_consoles_not_found_page(visitor, path):
    response = visitor.get(path)
    html = response.get_data(as_text=True)
    assert response.status_code == 404
    assert 'class="callout callout-error"' in html and "console.css" in html
    assert "<title>404 Not Found</title>" not in html  # not werkzeug's bare page


def test_a_tampered_form_value_gets_the_consoles_page_and_the_api_keeps_its_error_shape(app, visitor):
    refused = visitor.post("/keys", {"mode": "bogus", "label": "x"})
    assert refused.status_code == 400
    assert 'class="callout callout-error"' in refused.get_data(as_text=True)
    with app.app_context():
        key_id = str(
            db.session.scalars(select(ApiKey.id).where(ApiKey.workspace_id == visitor.workspace_id)).first()
        )
    # Each names the choices, not werkzeug's "The browser (or proxy) sent a request ...".
    for url, form, says in (
        ("/keys", {"mode": "bogus"}, "mode must be one of sandbox, development, production"),
        (f"/keys/{key_id}/roll", {"grace": "bogus"}, "grace must be one of none, 1h, 24h, 7d"),
        ("/inbox/behaviour", {"behaviour": "bogus"}, "behaviour must be one of"),
        ("/reference/try", {"method": "GET", "path": "/webhooks", "mode": "bogus"}, "mode must be one of"),
    ):
        answer = visitor.post(url, form, htmx=True)
        assert answer.status_code == 400 and says in html.unescape(answer.get_data(as_text=True)), url
    with app.app_context():
        assert (
            db.session.get(ApiKey, uuid.UUID(key_id)).revoked_at is None
        )  # the refused roll changed nothing
    not_allowed = visitor.client.put("/clock")
    assert not_allowed.status_code == 405 and "GET" in not_allowed.headers["Allow"]
    assert 'class="callout callout-error"' in not_allowed.get_data(as_text=True)
    api = visitor.client.get("/sandbox/v1/nope")
    assert api.status_code == 404 and api.get_json()["error"]["status_code"] == 404


def test_a_lone_surrogate_escaped_in_a_tried_body_is_shown_not_a_500(visitor):
    """The API refuses `"\\ud800"` (400 naming the field); the page showing that exchange re-indented the
    JSON it sent with the surrogate unescaped, which no response can encode."""
    form = {"method": "POST", "path": "/webhooks", "mode": "sandbox", "body": '{"url": "\\ud800"}'}
    response = visitor.post("/reference/try", form, htmx=True)
    assert response.status_code == 200
    page = html.unescape(response.get_data(as_text=True))
    assert 'status-4xx">400' in page and "\\ud800" in page and "unpaired surrogate" in page


def test_a_deeply_nested_inbox_message_leaves_the_presenters_backend_view_working(app, client, visitor):
    """Anyone may post to the inbox URL; the inbox keeps the body. The presenter's backend pane read each
    message with json.loads, and 10,000 nested brackets raised RecursionError: a 500 on every poll."""
    from console.web.webhooks.inbox import inbox_token

    with app.app_context():
        token = inbox_token(visitor.workspace_id)
    deep = client.post(f"/inbox/{token}", data=b"[" * 10_000 + b"]" * 10_000, content_type="application/json")
    assert deep.status_code == 400
    assert visitor.get("/present/backend").status_code == 200
    assert visitor.get("/present/backend", htmx=True).status_code == 200


@pytest.mark.parametrize("referrer", ["http://[", "http://[::1/keys", "http://localhost:99999999/keys"])
def test_a_malformed_referer_sends_the_workspace_bar_back_to_the_walkthrough(app, visitor, referrer):
    """Keep and Open go back to the page they were sent from, read from Referer: urlsplit raised
    ValueError on an unclosed IPv6 bracket, a 500 after the workspace had already been kept."""
    for url, form in (("/workspace/keep", {"name": "Kept"}), ("/workspace/open", {"secret": "x"})):
        response = visitor.post(url, form, headers={"Referer": referrer})
        assert response.status_code == 302 and response.headers["Location"] == "/", url


@pytest.mark.parametrize("host", ["x" * 300, "a..b", "." + "y" * 64 + ".example"])
def test_a_host_header_that_is_not_a_host_name_is_a_400_that_says_so(client, host):
    """werkzeug refuses to route such a Host (BadHost, a 400), and the console's error page then failed on
    url_for, which needs the routing it could not set up: a 500 on every console page and /healthz."""
    for path in ("/", "/webhooks", "/healthz", "/sandbox/link"):
        page = client.get(path, headers={"Host": host})
        assert page.status_code == 400, path
        text = html.unescape(page.get_data(as_text=True))
        assert 'role="alert"' in text and "Host header" in text and "console.css" in text
    api = client.get("/sandbox/v1/webhooks", headers={"Host": host})
    assert api.status_code == 400 and "Host header" in api.get_json()["error"]["message"]


def test_a_lone_surrogate_in_an_inbox_message_leaves_the_presenters_backend_view_working(
    app, client, visitor
):
    """The presenter's backend pane shows fields of each inbox message (its event, its customer): a value
    escaping a lone surrogate ("\\ud800") reached the page as a character no response can encode, a 500."""
    from console.web.webhooks.inbox import inbox_token

    with app.app_context():
        token = inbox_token(visitor.workspace_id)
    body = (
        b'{"event": "direct_deposit_switch.added\\ud800", "event_id": "e\\udfff", "payload": {"end_user_id": '
        b'"\\ud800", "outcome": "\\ud800", "job_id": "\\ud800", "account_id": "\\udfff", "\\ud800": 1}}'
    )
    assert client.post(f"/inbox/{token}", data=body, content_type="application/json").status_code == 400
    for htmx in (False, True):
        page = visitor.get("/present/backend", htmx=htmx)
        assert page.status_code == 200


def test_a_form_of_too_many_fields_is_told_so_not_that_it_is_too_large(app, visitor):
    """werkzeug refuses a form of over 1,000 parts with a 413, however small: the page said "larger than
    1,024 KB" of a 30 KB form."""
    visitor.start()
    form = {"brand": "Acme", "stories": ["10-standard-switch"] * 2000}
    response = visitor.post("/present/profiles", form, content_type="multipart/form-data")
    page = response.get_data(as_text=True)
    assert response.status_code == 413
    assert "The form has more fields than this server accepts (1,000)." in page and "KB" not in page
    assert "No workspace yet" not in page  # refused before the workspace was read: the header still names it
    huge = visitor.post("/present/profiles", {"brand": "x" * (2 * 1024 * 1024)})
    assert huge.status_code == 413 and "larger than this server accepts (1,024 KB)" in huge.get_data(
        as_text=True
    )
