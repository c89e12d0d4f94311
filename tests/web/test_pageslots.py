"""Console pages beyond the per-process cap wait for a slot; API calls, health checks and the inbox never do."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from console import create_app
from console.extensions import db
from console.web.shared import pageslots
from tests.conftest import base_config
from tests.waiting import wait_for


@pytest.fixture
def capped(tmp_path):
    """An app whose console runs one page at a time, with a page that waits until told to finish."""
    app = create_app({**base_config(f"sqlite:///{tmp_path / 'slots.db'}"), "CONSOLE_PAGE_CONCURRENCY": 1})
    entered, finish = threading.Event(), threading.Event()

    def slow_page():
        entered.set()
        finish.wait(60)
        return "slow page"

    def sleeping_page():
        entered.set()
        with pageslots.slot_released():
            finish.wait(60)
        return "slept"

    app.add_url_rule("/test-slow-page", "slow_page", slow_page)
    app.add_url_rule("/test-sleeping-page", "sleeping_page", sleeping_page)
    with app.app_context():
        db.create_all()
    app.entered, app.finish = entered, finish
    yield app
    finish.set()
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


def _in_thread(app, path: str, results: dict) -> threading.Thread:
    def run():
        started = time.monotonic()
        response = app.test_client().get(path)
        results[path] = (response.status_code, time.monotonic() - started, response)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_page_over_the_cap_waits_while_api_calls_and_health_checks_go_through(capped):
    results: dict = {}
    slow = _in_thread(capped, "/test-slow-page", results)
    assert capped.entered.wait(60)
    waiting = _in_thread(capped, "/reference", results)  # a console page: no slot free
    time.sleep(0.3)
    assert "/reference" not in results
    client = capped.test_client()
    # An API call and a health check answer meanwhile (the API call is refused for its missing key: it ran),
    # while the slow page still holds the only slot: they did not wait for one.
    api = client.get(f"/sandbox/v1/jobs?link_token_id={uuid.uuid4()}")
    assert api.status_code == 401
    assert client.get("/healthz").status_code == 200
    assert "/reference" not in results and slow.is_alive() and not capped.finish.is_set()
    capped.finish.set()
    slow.join(60)
    waiting.join(60)
    assert results["/test-slow-page"][0] == 200
    status, seconds, _ = results["/reference"]
    assert status == 200 and seconds >= 0.3


def test_a_sleeping_page_lets_another_page_run(capped):
    results: dict = {}
    sleeping = _in_thread(capped, "/test-sleeping-page", results)
    assert capped.entered.wait(60)
    other = _in_thread(capped, "/reference", results)
    other.join(60)
    assert results["/reference"][0] == 200  # ran while the first page slept
    capped.finish.set()
    sleeping.join(60)
    assert results["/test-sleeping-page"][0] == 200


def test_a_page_that_cannot_get_a_slot_in_time_gets_the_busy_page(capped, monkeypatch):
    monkeypatch.setattr(pageslots, "PAGE_WAIT_SECONDS", 0.2)
    results: dict = {}
    slow = _in_thread(capped, "/test-slow-page", results)
    assert capped.entered.wait(60)
    response = capped.test_client().get("/reference")
    assert response.status_code == 503
    assert response.headers["Retry-After"] == str(pageslots.RETRY_AFTER_SECONDS)
    assert b"busy" in response.data and b"Traceback" not in response.data
    capped.finish.set()
    slow.join(60)
    assert capped.test_client().get("/reference").status_code == 200  # the slot came back


def test_a_page_waiting_for_a_webhook_hosts_dns_lets_another_page_run(capped, monkeypatch):
    """A tenant's slow DNS (the console's webhook form resolves the host) never holds the page slot."""
    from console.webhooks import dns

    monkeypatch.setattr(pageslots, "PAGE_WAIT_SECONDS", 5)  # a held slot fails the quick page in 5 s, not 30
    other_ran = threading.Event()

    def dns_page():
        def slow_zone():
            assert other_ran.wait(60)  # answers once another page has run
            return ["93.184.216.34"]

        return ",".join(dns.lookup(slow_zone, "ws-a", 60))

    def quick_page():
        other_ran.set()
        return "quick"

    capped.add_url_rule("/test-dns-page", "dns_page", dns_page)
    capped.add_url_rule("/test-quick-page", "quick_page", quick_page)
    results: dict = {}
    waiting = _in_thread(capped, "/test-dns-page", results)
    assert wait_for(lambda: dns.running("ws-a") == 1)
    assert capped.test_client().get("/test-quick-page").status_code == 200
    waiting.join(60)
    status, _, response = results["/test-dns-page"]
    assert status == 200 and response.get_data(as_text=True) == "93.184.216.34"
