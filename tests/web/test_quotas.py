"""Quotas per owner and the per-address limit on the console's creating requests."""

from __future__ import annotations

import dataclasses
import uuid
from html import unescape

import pytest
from sqlalchemy import func, select

from console import create_app
from console.api.ratelimit import TableCounters
from console.extensions import db
from console.keys.models import ApiKey
from console.presenter.models import PresenterProfile
from console.web.shared import throttle
from console.workspaces.models import Workspace
from tests.api.test_webhooks import BODY
from tests.conftest import assert_error, base_config
from tests.web.conftest import Visitor


def rows(app, model, *where) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model).where(*where))


def limit_creates(app, per_minute: int, proxies: str = "") -> None:
    """CONSOLE_CREATES_PER_MINUTE on counters whose clock stands still: no real time passes in the test."""
    frozen = TableCounters(None, per_minute, clock=lambda: 1000.0)
    app.extensions["console_throttle"] = throttle.Throttle(
        per_minute, 0, throttle.parse_proxies(proxies), frozen
    )


def browser(app, address: str = "127.0.0.1", **headers) -> Visitor:
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    if headers:
        client.environ_base.update({f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()})
    visitor = Visitor(client)
    visitor.get("/")
    return visitor


# --- per client address ---------------------------------------------------------------------------------


def test_a_bot_dropping_its_cookie_is_stopped_by_its_address(app):
    limit_creates(app, 3)
    for _ in range(3):  # each a fresh browser (no cookie): a new workspace each
        assert browser(app).post("/workspace").status_code == 302
    refused = browser(app).post("/workspace")
    page = refused.get_data(as_text=True)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "60"
    assert "at most 3 a minute" in page and '<code id="error-code">RATE_LIMIT_EXCEEDED</code>' in page
    assert rows(app, Workspace, Workspace.kept.is_(False)) == 3
    # Profiles and cohorts count too; another address is not held up.
    assert browser(app).post("/present/profiles", {"brand": "Bot"}).status_code == 429
    assert (
        browser(app).post("/training/cohorts", {"name": "Bot", "exercises": ["link_token"]}).status_code
        == 429
    )
    assert rows(app, PresenterProfile) == 0
    assert browser(app, "127.0.0.2").post("/workspace").status_code == 302


def test_a_presenters_step_1_refused_by_a_neighbours_creates_says_so_plainly(app):
    """Step 1 starts a fresh workspace, counted by the address's limit. When another browser at the address had
    used it up, the stage said "Too many new workspaces, profiles, classes or joins from your address" to a
    presenter who had pressed one key: it now says what happened, and when to try again."""
    limit_creates(app, 2)
    presenter = browser(app)
    assert presenter.post("/workspace").status_code == 302  # the presenter's browser has its workspace
    assert browser(app).post("/workspace").status_code == 302  # a neighbour at the same address
    refused = presenter.post("/present/10-standard-switch/steps/1")
    page = unescape(refused.get_data(as_text=True))
    assert refused.status_code == 422 and "Step 1 did not work." in page
    assert (
        "The server makes at most 2 new workspaces a minute for each network address, and "
        "this step starts one: that many were made from this address in the last minute, by another browser or "
        "program using it (or by this one). Try again in 60 s." in " ".join(page.split())
    )
    assert "from your address" not in page


def test_actions_in_an_existing_workspace_are_not_counted(app):
    limit_creates(app, 2)
    visitor = browser(app)
    assert visitor.post("/workspace").status_code == 302  # the one creating request
    for _ in range(5):
        assert visitor.post("/workspace/keep", {"name": "Mine"}).status_code == 302
    assert browser(app).post("/workspace").status_code == 302  # the second creating request
    assert browser(app).post("/workspace").status_code == 429


def test_x_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy(app):
    limit_creates(app, 1)
    assert browser(app, x_forwarded_for="203.0.113.1").post("/workspace").status_code == 302
    # Not trusted: a client cannot pick a new address per request.
    assert browser(app, x_forwarded_for="203.0.113.2").post("/workspace").status_code == 429


def test_behind_a_trusted_proxy_each_client_address_has_its_own_limit(app):
    limit_creates(app, 1, proxies="127.0.0.1, 10.0.0.0/8")
    assert browser(app, x_forwarded_for="203.0.113.1").post("/workspace").status_code == 302
    assert browser(app, x_forwarded_for="203.0.113.2").post("/workspace").status_code == 302
    assert browser(app, x_forwarded_for="203.0.113.1").post("/workspace").status_code == 429
    # The nearest untrusted hop is the client: what the client itself wrote further left does not count.
    assert (
        browser(app, x_forwarded_for="198.51.100.9, 203.0.113.2, 10.1.1.1").post("/workspace").status_code
        == 429
    )
    with app.test_request_context(
        "/", environ_base={"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "1.2.3.4, 10.0.0.5"}
    ):
        assert throttle.client_address() == "1.2.3.4"
    with app.test_request_context(
        "/", environ_base={"REMOTE_ADDR": "192.0.2.7", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}
    ):
        assert throttle.client_address() == "192.0.2.7"


def test_a_malformed_trusted_proxy_stops_the_start(database_url):
    with pytest.raises(ValueError, match=r"TRUSTED_PROXIES: 'ten\.0\.0\.1'"):
        create_app({**base_config(database_url), "TRUSTED_PROXIES": "127.0.0.1,ten.0.0.1"})


def test_the_default_limits_are_on(app):
    limits = app.extensions["console_throttle"]
    assert (limits.creates_per_minute, limits.joins_per_minute, limits.proxies) == (60, 30, ())


# --- keys per workspace and mode, webhooks per key ------------------------------------------------------


def active_keys(app, workspace_id: uuid.UUID) -> int:
    return rows(app, ApiKey, ApiKey.workspace_id == workspace_id, ApiKey.revoked_at.is_(None))


def test_keys_per_workspace_and_mode_are_capped_with_a_code(app, visitor):
    app.config["API_KEYS_PER_MODE"] = 2  # the console's own sandbox key is the first
    assert visitor.post("/keys", {"mode": "sandbox", "label": "second"}).status_code == 302
    refused = visitor.post("/keys", {"mode": "sandbox", "label": "third"})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 403
    assert (
        "already has 2 active sandbox keys" in page
        and '<code id="error-code">KEY_LIMIT_REACHED</code>' in page
    )
    assert active_keys(app, visitor.workspace_id) == 2
    # Per mode: a development key is still possible.
    assert visitor.post("/keys", {"mode": "development"}).status_code == 302
    # Rolling replaces a key, so it is never refused at the cap.
    with app.app_context():
        second = db.session.scalars(select(ApiKey).where(ApiKey.label == "second")).one()
    assert visitor.post(f"/keys/{second.id}/roll", {"grace": "1h"}).status_code == 302
    # Revoking one frees a place.
    assert visitor.post(f"/keys/{second.id}/revoke").status_code == 302
    with app.app_context():
        rolled = db.session.scalars(
            select(ApiKey).where(
                ApiKey.label == "second", ApiKey.revoked_at.is_(None), ApiKey.expires_at.is_(None)
            )
        ).one()
    assert visitor.post(f"/keys/{rolled.id}/revoke").status_code == 302
    assert visitor.post("/keys", {"mode": "sandbox", "label": "again"}).status_code == 302


def test_webhooks_per_key_is_a_setting_refused_in_the_apis_shape(app, api):
    app.config["WEBHOOKS_PER_KEY"] = 1
    assert api.post("/webhooks", json=BODY).status_code == 200
    error = assert_error(api.post("/webhooks", json=BODY), 403, "FORBIDDEN", "WEBHOOK_LIMIT_REACHED")
    assert "already has 1 webhooks" in error["message"]


def test_the_console_counters_keep_a_file_of_their_own_beside_the_apis(tmp_path):
    from limits import RateLimitItemPerMinute, parse

    from console.api.ratelimit import counters_for

    uri = f"mmap://{tmp_path / 'limits.mmap'}"
    api_counters = counters_for(uri, 10)
    console_counters = counters_for(uri, 60, table="console")
    assert api_counters.path == tmp_path / "limits.mmap"
    assert console_counters.path == tmp_path / "limits.mmap.console"
    # Two shapes, two files: neither replaces the other's table under it.
    assert api_counters.hit(parse("10/second"), "k").allowed
    assert console_counters.hit(RateLimitItemPerMinute(60), "k").allowed
    assert api_counters.hit(parse("10/second"), "k").remaining == 8


@pytest.mark.committing  # /healthz probes the database on a connection of its own
def test_console_requests_past_the_per_address_rate_get_a_short_429_and_nothing_else_waits(app):
    """A flood of pages from one address is refused before its turn or any rendering; other addresses, the API,
    static files and /healthz are not counted. The limiter's clock is frozen: one second never passes here."""
    app.config["TRUSTED_PROXIES"] = "127.0.0.1"
    throttle.init_app(app)
    limiter = app.extensions["console_throttle"]
    app.extensions["console_throttle"] = dataclasses.replace(limiter, pages_per_second=3)
    app.extensions["console_throttle"].counters.clock = lambda: 1000.0
    client = app.test_client()
    flood = {"X-Forwarded-For": "198.51.100.7"}
    assert [client.get("/present", headers=flood).status_code for _ in range(3)] == [200] * 3
    refused = client.get("/training", headers=flood)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert refused.mimetype == "text/plain" and b"Too many console requests" in refused.data
    loading = client.get("/present", headers={**flood, "Sec-Fetch-Dest": "document"})  # a browser's page load
    assert loading.status_code == 429 and loading.mimetype == "text/html"
    assert (
        b'<meta http-equiv="refresh" content="' in loading.data and b"loads again by itself" in loading.data
    )
    assert client.get("/present", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 200  # another
    assert client.get("/healthz", headers=flood).status_code == 200
    static = client.get("/static/link.js", headers=flood)
    assert static.status_code == 200
    static.close()
    assert client.get("/sandbox/v1/openapi.json", headers=flood).status_code == 200
    assert client.get("/present", headers=flood).status_code == 429  # still the same second


def test_the_page_rate_is_on_for_a_server_and_off_for_an_explicit_config(monkeypatch):
    from console import config

    monkeypatch.delenv("CONSOLE_PAGES_PER_SECOND", raising=False)
    monkeypatch.setenv("SECRET_KEY", "test-secret")
    assert config.from_environment()["CONSOLE_PAGES_PER_SECOND"] == config.SERVER_PAGES_PER_SECOND == 50
    assert config.DEFAULTS["CONSOLE_PAGES_PER_SECOND"] == 0
    monkeypatch.setenv("CONSOLE_PAGES_PER_SECOND", "0")
    assert config.from_environment()["CONSOLE_PAGES_PER_SECOND"] == 0
