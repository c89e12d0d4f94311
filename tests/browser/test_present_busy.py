"""The stage on a shared machine: another tab of the same browser starting a run, and a server that refuses a
request for now (429: too many from this address, which another program on the same machine can use up)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.test_presenter import FAST, LINK, link_listens, press

STORY = "10-standard-switch"
REFUSAL = "Too many console requests from your address; try again in 1 s.\n"


def refuse(route) -> None:
    """Answer as the server's per-address page rate does (console.runslots): plain text, Retry-After."""
    route.fulfill(status=429, headers={"Retry-After": "1", "Content-Type": "text/plain"}, body=REFUSAL)


def refusing_the_first(seen: list):
    """A route handler: the first request is refused as the server's page rate does, the next ones go through."""

    def handle(route) -> None:
        seen.append(route.request)
        if len(seen) == 1:
            refuse(route)
        else:
            route.continue_()

    return handle


def test_a_stage_whose_run_another_tab_replaced_keeps_its_own_phone_and_panel(context, live_server):
    url = f"{live_server.url}/present/{STORY}?speed={FAST}"
    first, second = context.new_page(), context.new_page()
    first.goto(url)
    press(first, "ArrowRight", 1)
    press(first, "ArrowRight", 2)
    calls = first.locator('#backend [data-feed="calls"]')
    calls.get_by_text("/sandbox/v1/link_tokens").wait_for()

    second.goto(url)
    press(second, "ArrowRight", 1)  # a new run on a new workspace: the first tab's run is gone

    first.bring_to_front()
    first.keyboard.press("ArrowRight")
    alert = first.locator(".failure")
    expect(alert).to_contain_text("Another tab or window of this browser started a story since")
    # The caption still tells the first run's story (a Link token was made): the panel and the phone still
    # show that run, not the second tab's (which read "No calls yet." beside that caption).
    assert first.locator("#stage").get_attribute("data-step") == "2"
    assert "/sandbox/v1/link_tokens" in calls.inner_text()
    assert not first.locator("#app-switch").is_disabled()  # the first run's token, still unused
    assert first.locator("#stage .stage-main").count() == 1
    # The kept panel keeps polling for its own run (answered 204: it stays as it is).
    with first.expect_response(lambda r: "/present/backend" in r.url, timeout=10_000) as polled:
        pass
    assert "run=" in polled.value.url and polled.value.status == 204
    assert "/sandbox/v1/link_tokens" in calls.inner_text()


def test_a_step_the_server_refuses_for_now_is_sent_again_with_a_calm_line_for_the_room(page, live_server):
    page.goto(f"{live_server.url}/present/{STORY}?speed={FAST}")
    press(page, "ArrowRight", 1)
    sent: list = []
    page.route(re.compile(r"/steps/2$"), refusing_the_first(sent))
    page.keyboard.press("ArrowRight")
    expect(page.locator("[data-drive-note]")).to_have_text("One moment: the server is busy…")
    assert "sent again" in page.locator("[data-drive-detail]").text_content()  # for the presenter only
    page.locator('#stage[data-step="2"]').wait_for()
    assert [request.method for request in sent] == ["POST", "POST"]
    assert page.locator(".failure").count() == 0
    assert page.locator("[data-drive-note]").inner_text() == ""
    assert REFUSAL.strip() not in page.content()
    calls = page.locator('#backend [data-feed="calls"]').inner_text()
    assert calls.count("Create a Link token") == 1


def test_when_the_stage_after_a_step_is_refused_the_step_is_not_run_twice(page, live_server):
    """The step's POST ran and answered 303; the stage it redirects to was refused: only that GET is sent again."""
    page.goto(f"{live_server.url}/present/{STORY}?speed={FAST}")
    press(page, "ArrowRight", 1)
    posts, gets = [], []
    served = live_server.test_files.app

    def stage_refused_once(environ, start_response):
        # The browser follows the redirect itself (Playwright's routes do not see it): refused at the server.
        if environ["REQUEST_METHOD"] == "POST" and environ["PATH_INFO"].endswith("/steps/2"):
            posts.append(environ["PATH_INFO"])
        if environ["REQUEST_METHOD"] == "GET" and "step=2" in environ.get("QUERY_STRING", ""):
            gets.append(environ["QUERY_STRING"])
            if len(gets) == 1:
                start_response(
                    "429 Too Many Requests", [("Content-Type", "text/plain"), ("Retry-After", "1")]
                )
                return [REFUSAL.encode()]
        return served(environ, start_response)

    live_server.test_files.app = stage_refused_once
    try:
        page.keyboard.press("ArrowRight")
        page.locator('#stage[data-step="2"]').wait_for()
    finally:
        live_server.test_files.app = served
    assert len(posts) == 1
    assert len(gets) == 2
    assert page.locator(".failure").count() == 0
    calls = page.locator('#backend [data-feed="calls"]').inner_text()
    assert calls.count("Create a Link token") == 1  # sending the POST again made a second token


def test_link_refused_for_now_in_the_phone_loads_again(page, live_server):
    page.goto(f"{live_server.url}/present/{STORY}?speed={FAST}")
    press(page, "ArrowRight", 1)
    press(page, "ArrowRight", 2)
    refused: list = []
    page.route(re.compile(r"/sandbox/link\?"), refusing_the_first(refused))
    press(page, "ArrowRight", 3)
    link_listens(page)  # Link's own page, not the refusal's text, is in the phone
    assert len(refused) == 2
    assert page.frame_locator(LINK).locator("#link-screen").get_attribute("data-screen") == "intro"
