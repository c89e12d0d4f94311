"""Security headers: the console's CSP and framing rules on every page, Link stays framable, the API closed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from console.web.shared.headers import CONSOLE_CSP
from tests.factories import LINK_TOKEN
from tests.web.conftest import Visitor
from tests.web.test_workspace_lifecycle import console_get_urls

ROOT = Path(__file__).resolve().parents[2]


def csp_directives(response) -> dict[str, str]:
    policy = response.headers["Content-Security-Policy"]
    return {part.split()[0]: part.strip() for part in policy.split(";") if part.strip()}


def assert_console_headers(response, url: str) -> None:
    csp = csp_directives(response)
    assert csp["frame-ancestors"] == "frame-ancestors 'none'", url
    assert csp["script-src"] == "script-src 'self'", url
    assert csp["style-src"] == "style-src 'self'", url
    assert csp["object-src"] == "object-src 'none'" and csp["base-uri"] == "base-uri 'none'", url
    assert "unsafe" not in response.headers["Content-Security-Policy"], url
    assert response.headers["X-Frame-Options"] == "DENY", url
    assert response.headers["X-Content-Type-Options"] == "nosniff", url
    assert response.headers["Referrer-Policy"] == "same-origin", url


@pytest.mark.parametrize("started", [False, True], ids=["no-cookie", "with-workspace"])
def test_every_console_page_sends_the_security_headers(app, started):
    visitor = Visitor(app.test_client())
    if started:
        visitor.start()
    for url in console_get_urls(app):
        for htmx in (False, True):
            response = visitor.get(url, htmx=htmx)
            assert_console_headers(response, url)


def test_console_actions_errors_and_unknown_urls_send_them_too(app, visitor):
    assert_console_headers(visitor.post("/keys", {"mode": "sandbox"}, htmx=True), "POST /keys")
    assert_console_headers(visitor.post("/keys", {"mode": "sandbox"}, csrf=False), "refused POST")
    assert_console_headers(visitor.get("/no/such/page"), "404")


def test_link_screens_stay_framable_by_the_page_that_opens_them(app, api, client):
    created = api.post("/link_tokens", json=LINK_TOKEN)
    token = created.get_json()["data"]["token"]
    response = client.get(f"/sandbox/link?token={token}&origin=https://shop.example")
    csp = csp_directives(response)
    assert csp["frame-ancestors"] == "frame-ancestors 'self' https://shop.example"
    assert csp["script-src"] == "script-src 'self'"
    assert "X-Frame-Options" not in response.headers
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    standalone = client.get(f"/sandbox/link?token={token}")
    assert csp_directives(standalone)["frame-ancestors"] == "frame-ancestors *"
    assert "unsafe" not in standalone.headers["Content-Security-Policy"]  # no inline style or script in Link


@pytest.mark.parametrize(
    "origin",
    ["https://shop.example/", "https://shop.example/checkout", "shop.example", "ftp://shop.example", "*"],
)
def test_a_link_opened_with_a_bad_origin_says_so_and_runs_no_flow(app, api, client, origin):
    """A bad `origin` fell back to standalone framing and ran the flow, and Link never talked to the page that
    opened it: the developer saw nothing happen. Now Link answers 400 with a screen naming the origin and what a
    valid one looks like, framable (so that it reads in the developer's own frame), holding no flow."""
    from urllib.parse import quote

    from console.link.models import LinkSession

    created = api.post("/link_tokens", json=LINK_TOKEN)
    token = created.get_json()["data"]["token"]
    response = client.get(f"/sandbox/link?token={token}&origin={quote(origin, safe='')}")
    assert response.status_code == 400
    assert csp_directives(response)["frame-ancestors"] == "frame-ancestors *"
    page = response.get_data(as_text=True)
    assert 'data-error-code="INVALID_ORIGIN"' in page and "Link cannot talk to this page" in page
    assert f"origin “{origin}”" in page and "https://app.example.com or http://localhost:8000" in page
    assert 'data-parent-origin=""' in page  # it posts to no one
    assert 'name="token"' not in page and token not in page  # no form, no step: only the message
    with app.app_context():
        assert LinkSession.query.count() == 0  # the flow was not started
    # Fixed, the same token opens Link at its first screen, framed by that page.
    fixed = client.get(f"/sandbox/link?token={token}&origin=https://shop.example")
    assert fixed.status_code == 200 and "INVALID_ORIGIN" not in fixed.get_data(as_text=True)
    assert csp_directives(fixed)["frame-ancestors"] == "frame-ancestors 'self' https://shop.example"


def test_a_long_bad_origin_is_quoted_cut_and_escaped(api, client):
    created = api.post("/link_tokens", json=LINK_TOKEN)
    token = created.get_json()["data"]["token"]
    origin = "<script>" + "x" * 200
    page = client.get(f"/sandbox/link?token={token}&origin={origin}").get_data(as_text=True)
    assert "<script>x" not in page and "&lt;script&gt;" + "x" * 72 + "…”" in page


def test_the_api_and_static_files_get_harmless_headers(api, client):
    response = api.get("/jobs")
    assert response.status_code == 200
    assert csp_directives(response)["default-src"] == "default-src 'none'"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    sdk = client.get("/static/link.js")
    assert sdk.status_code == 200
    assert sdk.headers["X-Content-Type-Options"] == "nosniff"
    # Customer pages on other origins load the SDK: nothing that could change how it loads.
    assert "Content-Security-Policy" not in sdk.headers and "X-Frame-Options" not in sdk.headers
    sdk.close()


CONSOLE_TEMPLATES = [
    ROOT / "templates" / "base.html",
    *sorted((ROOT / "templates" / "console").glob("*.html")),
]
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)", re.IGNORECASE)
EVENT_HANDLER = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)


@pytest.mark.parametrize("path", CONSOLE_TEMPLATES, ids=lambda p: p.name)
def test_console_templates_need_nothing_the_csp_forbids(path):
    # Text shown as code (the SDK snippet) is escaped (&lt;script&gt;), so it is not markup.
    source = path.read_text()
    assert not INLINE_SCRIPT.search(source), "inline <script>"
    assert not EVENT_HANDLER.search(source), "an on* attribute"
    assert "hx-on" not in source and "javascript:" not in source.lower()
    assert not re.search(r"\sstyle\s*=", source), "an inline style attribute (style-src 'self')"


def test_console_scripts_use_no_eval_or_inline_styles_the_csp_would_refuse():
    for name in ("console.js", "link.js"):
        source = (ROOT / "static" / name).read_text()
        assert "eval(" not in source and "new Function" not in source
        assert 'setAttribute("style"' not in source and "innerHTML" not in source


def test_htmx_is_configured_not_to_inject_its_style_tag(client):
    page = client.get("/").get_data(as_text=True)
    assert '"includeIndicatorStyles": false' in page and '"allowEval": false' in page
    assert "style-src 'self'" in CONSOLE_CSP


def test_an_https_public_url_tells_browsers_to_use_https_only(database_url):
    from console import create_app
    from tests.conftest import base_config

    served = create_app({**base_config(database_url), "PUBLIC_URL": "https://console.example.com"})
    for url in ("/", "/sandbox/v1/jobs", "/static/console.css"):
        response = served.test_client().get(url)
        response.close()  # a static file's answer holds the file open
        assert response.headers["Strict-Transport-Security"] == "max-age=15552000", url
    plain = create_app({**base_config(database_url), "PUBLIC_URL": "http://127.0.0.1:8000"})
    assert "Strict-Transport-Security" not in plain.test_client().get("/").headers  # would pin a plain server
