"""Browser tests: the real server on a free port, driven by Playwright with Debian's Chromium.

One live server per test module (`live_server`, module-scoped): the app, its schema and seeded world on the
module's own SQLite file, served by werkzeug in a thread of the test process. `console_live` is the same
server with the in-process worker loops running (started once per module, on the first test that asks).

Tests in a module share that server the way visitors share a deployed console: each test gets a fresh
browser context (`context` / `page`, or contexts of its own from `browser`), so it starts with no console
cookie and the console gives it a workspace of its own at its first action. What a test may change on the
shared app itself, its `app.config`, is put back after the test (`_config_restored`). A test that needs a
server of its own (test_console_run.py, `console run` in a subprocess) makes it itself.

Skipped (with the reason) when Chromium or Playwright is missing; `make test` installs both.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from werkzeug.serving import make_server

from console import create_app
from console.extensions import db
from console.requestlog.writer import writer_for
from tests.conftest import base_config

# Debian's Chromium: its headless shell where installed (`chromium-headless-shell`, the same build without
# the desktop browser's windowing and compositing; what Playwright itself runs headless), else the browser.
# On the same tests the shell used half the CPU time (113 s against 222 s for the whole phase).
CHROMIUM = (
    os.environ.get("CHROMIUM_PATH")
    or shutil.which("chromium-headless-shell")
    or shutil.which("chromium")
    or "/usr/bin/chromium"
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# Link's "Finding your payroll account" state with the worker running: short, still a visible state.
LINK_MATCHING_DELAY_MS = 300
# How long any Playwright wait (an action's auto-wait, a locator's wait_for, expect) gives the page before it
# fails: a backstop for a broken page, never a verdict on speed. A passing test never waits it out, so it can
# be as generous as a starved 2-core machine needs (10 s was not always enough there for Link to close).
BACKSTOP_MS = 30_000


# A browser test that fails is run once more (the Makefile's BROWSER_RERUNS), as Playwright's own runner retries
# on CI: Chromium beside the rest of the suite on 2 shared cores. A test that needed its retry is listed in the
# summary (`-r R`: "rerun"); one that fails twice fails the run. Only browser tests get it.
BROWSER_RERUNS = int(os.environ.get("BROWSER_RERUNS", "0") or 0)


def pytest_collection_modifyitems(config, items):
    # Under pytest-xdist with `--dist loadgroup`, a module's tests stay on one worker, so its live server is
    # made once, not once on each worker its tests were spread over. A test marked `long` (a minute-long walk,
    # or a parametrized family of them) is a group of its own: one worker serially running a module's long
    # walks decided the whole suite's time (test_presenter.py's ~210 s), while a live server costs ~1 s.
    # (`make test` loads xdist by its module's name, `-p xdist.plugin`; autoloaded, it is "xdist". Asked only
    # for "xdist", this was False under `make test`: no browser module was grouped.)
    grouped = any(config.pluginmanager.hasplugin(name) for name in ("xdist", "xdist.plugin"))
    for item in items:
        path = str(item.fspath).replace(os.sep, "/")
        if "tests/browser/" in path:
            item.add_marker(pytest.mark.browser)
            if BROWSER_RERUNS:
                item.add_marker(pytest.mark.flaky(reruns=BROWSER_RERUNS))
            if grouped:
                group = f"browser:{path.rsplit('/', 1)[-1]}"
                if item.get_closest_marker("long"):
                    group += f"::{item.originalname}"
                item.add_marker(pytest.mark.xdist_group(group))
    # Long ones first: xdist hands out groups of one test in collection order, and one handed out last is the tail.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FilesForTests:
    """WSGI middleware in front of the live app: serves the files tests put under /__test__/ (the console's
    own origin, so its Content-Security-Policy lets a page load them as it loads the console's scripts), with
    a cache lifetime so a browser context fetches and compiles each once; everything else goes to the app."""

    PREFIX = "/__test__/"

    def __init__(self, app) -> None:
        self.app = app
        self.files: dict[str, tuple[bytes, str]] = {}

    def __call__(self, environ, start_response):
        found = (
            self.files.get(environ.get("PATH_INFO", "")) if environ.get("REQUEST_METHOD") == "GET" else None
        )
        if found is None:
            return self.app(environ, start_response)
        body, content_type = found
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        start_response("200 OK", [*headers, ("Cache-Control", "private, max-age=3600")])
        return [body]


@dataclass
class LiveServer:
    url: str
    app: object
    secret: str | None = None  # a sandbox API secret, for tests that call the API as a customer would
    test_files: FilesForTests | None = None

    def api_url(self, mode: str, path: str) -> str:
        from console.modes import URL_PREFIXES

        return f"{self.url}{URL_PREFIXES[mode]}/v1{path}"

    def serve_test_file(self, path: str, body: bytes, content_type: str) -> str:
        """Serve `body` at `path` (under /__test__/) from this server's origin; its URL."""
        assert path.startswith(FilesForTests.PREFIX), path
        self.test_files.files[path] = (body, content_type)
        return self.url + path

    def with_secret(self, secret: str) -> LiveServer:
        """This server, seen by one test with its own API secret (the module's server is not changed)."""
        return dataclasses.replace(self, secret=secret)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory) -> Iterator[LiveServer]:
    """The whole app on 127.0.0.1, one per test module, committing for real to the module's SQLite file."""
    port = _free_port()
    database = tmp_path_factory.mktemp("live") / "browser.db"
    config = base_config(f"sqlite:///{database}")
    config.update(
        {
            "PUBLIC_URL": f"http://127.0.0.1:{port}",
            "TESTING": False,
            # Every test of the module comes from 127.0.0.1, and each makes workspaces (a presenter story a
            # new one at each restart): the per-address limit on creating POSTs (60 a minute) is for one
            # visitor, not a module's tests together. Still counted, never reached; tests/web tests the limit.
            "CONSOLE_CREATES_PER_MINUTE": 10_000,
        }
    )
    app = create_app(config)
    with app.app_context():
        from console.world.seed import seed_world

        db.create_all()
        seed_world(db.session)
        db.session.commit()
    # make_server binds and listens before it returns: a connection made from now on waits in the
    # listen backlog until serve_forever takes it, so there is nothing to poll for.
    files = FilesForTests(app)
    server = make_server("127.0.0.1", port, files, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    # The first request builds the OpenAPI document (over 1 s on a busy machine): once, here, not in a test.
    requests.get(url + "/v1/openapi.json", timeout=60).raise_for_status()
    try:
        yield LiveServer(url, app, test_files=files)
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()
        writer_for(app).close()  # the request log's writer writes what it holds before the engine goes
        with app.app_context():
            db.engine.dispose()


@pytest.fixture(scope="module")
def _module_worker(live_server):
    """The worker loops (scheduler, deliveries, ...) as threads, for the rest of the module's tests."""
    from console.worker import start_in_process

    worker = start_in_process(live_server.app)
    yield worker
    worker.stop(timeout=10)


@pytest.fixture
def console_live(live_server, _module_worker) -> LiveServer:
    """The module's live server with its worker running, and a short Link matching state."""
    live_server.app.config["LINK_MATCHING_DELAY_MS"] = LINK_MATCHING_DELAY_MS
    return live_server


@pytest.fixture(autouse=True)
def _config_restored(request):
    """Whatever a test sets in the shared app's config is put back after it, key by key (the worker's
    threads may be reading the config meanwhile, so it is never emptied and refilled)."""
    if "live_server" not in request.fixturenames:
        yield
        return
    config = request.getfixturevalue("live_server").app.config
    before = dict(config)
    yield
    for key in [k for k in config if k not in before]:
        config.pop(key, None)
    for key, value in before.items():
        if key not in config or config[key] is not value:
            config[key] = value


@pytest.fixture(scope="session")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium")
    playwright_api.expect.set_options(timeout=BACKSTOP_MS)
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
    """A fresh browser context for each test: no cookies, so the console gives the test its own workspace."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(BACKSTOP_MS)
    context.add_init_script(REPORT_CSP_VIOLATIONS)
    assert context.cookies() == []
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
