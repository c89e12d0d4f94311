"""Browser tests: the real server on a free port, driven by Playwright with Debian's Chromium.

Skipped (with the reason) when Chromium or Playwright is missing; `make test` installs both.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from werkzeug.serving import make_server

from console import create_app
from console.extensions import db
from console.requestlog.writer import writer_for
from tests.conftest import base_config

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    app: object

    def api_url(self, mode: str, path: str) -> str:
        from console.modes import URL_PREFIXES

        return f"{self.url}{URL_PREFIXES[mode]}/v1{path}"


@pytest.fixture
def live_server(tmp_path) -> Iterator[LiveServer]:
    """The whole app (with its in-process worker when the test asks for it) on 127.0.0.1."""
    port = _free_port()
    config = base_config(f"sqlite:///{tmp_path / 'browser.db'}")
    config.update({"PUBLIC_URL": f"http://127.0.0.1:{port}", "TESTING": False})
    app = create_app(config)
    with app.app_context():
        from console.world.seed import seed_world

        db.create_all()
        seed_world(db.session)
        db.session.commit()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            # The first request builds the OpenAPI document: on a busy machine it took over 1 s (a read
            # timeout, not a refused connection), so wait for either.
            requests.get(url + "/v1/openapi.json", timeout=5)
            break
        except requests.RequestException:
            time.sleep(0.05)
    try:
        yield LiveServer(url, app)
    finally:
        server.shutdown()
        thread.join(timeout=5)
        writer_for(app).close()  # the request log's writer writes what it holds before the engine goes
        with app.app_context():
            db.engine.dispose()


@pytest.fixture(scope="session")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


# In every frame (console pages and Link's iframe): report each Content-Security-Policy violation on the
# console, where the page fixture collects it, whatever Chromium's own wording of the refusal.
REPORT_CSP_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") +
                " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


def csp_violations(messages: list[str]) -> list[str]:
    return [m for m in messages if "CSP violation" in m or "Content Security Policy" in m]


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(10_000)
    context.add_init_script(REPORT_CSP_VIOLATIONS)
    yield context
    context.close()


@pytest.fixture
def page(context):
    """A page whose console messages are kept; the test fails on any CSP violation in it or its frames."""
    page = context.new_page()
    messages: list[str] = []
    page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
    page.console_messages = messages  # type: ignore[attr-defined]
    yield page
    violations = csp_violations(messages)
    if violations and not getattr(page, "expect_csp_violation", False):
        pytest.fail(f"Content-Security-Policy violations: {violations}")
