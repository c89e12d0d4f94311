"""The walkthrough under `console run` itself: Granian's serving processes, run slots, the worker process.

The other browser tests serve the app with werkzeug inside the test process. This one drives the server a
user starts with `make run`, so what only it does is checked from the browser too: request headers as
Granian hands them over, the console's in-process API calls made inside a run slot, and the worker as a
process of its own delivering signed events to the inbox.
"""

from __future__ import annotations

import re
import uuid
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect

from tests.browser.linkui import search_and_choose
from tests.browser.test_console_walkthrough import confirm_and_close, create_token, login, open_link, start
from tests.unit.test_serving import Console


@pytest.fixture
def console_run(tmp_path):
    console = Console(tmp_path, f"sqlite:///{tmp_path / 'console.db'}", "--processes", "2", "--threads", "8")
    try:
        console.wait_until_ready()
        yield SimpleNamespace(url=console.base)
    finally:
        assert console.stop() == 0, console.output()


def test_the_standard_switch_twice_with_a_reload_under_console_run(page, console_run):
    start(page, console_run)
    request_ids = []
    for round_ in range(2):
        if round_:
            page.reload()  # as a user comes back to the page: the second token must be the one offered
        link_token_id = create_token(page, "Standard switch")
        exchange = page.locator("#step-link_token .exchange").inner_text()
        request_ids.append(re.search(r"x-service-request-id ([0-9a-f-]{36})", exchange).group(1))
        assert uuid.UUID(request_ids[-1]).version == 7  # time-ordered (console.core.ids)
        assert (
            page.locator("#step-link [data-link-open]").get_attribute("data-link-token-id") == link_token_id
        )

        frame = open_link(page)
        frame.get_by_role("button", name="Continue").click()
        search_and_choose(frame, "Lumen", "Lumen Labs")
        login(frame)
        confirm_and_close(frame, page)

        # The worker process delivers each flow's events to the inbox, which verifies their signatures.
        added = page.locator("#step-inbox .inbox-item", has_text="direct_deposit_switch.added")
        expect(added).to_have_count(round_ + 1)
        assert page.locator("#step-inbox .badge-error").count() == 0

    # Both Link token calls are in the request log, under the ids the walkthrough showed.
    # (A row carries its id in its title and open exchange; below 1600 px its line leaves the id to them.)
    page.goto(console_run.url + "/requests")
    for request_id in request_ids:
        assert page.locator(".request-row", has_text=request_id).count() == 1, request_id
    assert not [m for m in page.console_messages if m.startswith(("error", "pageerror"))]
