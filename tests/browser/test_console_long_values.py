"""Long values a developer can give the console (a key's label) keep every page inside the screen."""

from __future__ import annotations

from tests.browser.test_console_walkthrough import start
from tests.browser.waits import poll

NO_SIDEWAYS_SCROLL = "document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth"


def test_a_long_key_label_wraps_inside_the_keys_table(page, live_server):
    # 120 characters without a space (the most a label keeps): a pasted token, a URL, a build id.
    label = "ci-" + "x" * 117
    start(page, live_server)
    page.get_by_role("button", name="Create my workspace").click()
    page.goto(live_server.url + "/keys")
    development = page.locator("section", has=page.get_by_role("heading", name="Development", exact=True))
    development.get_by_label("Label").fill(label)
    development.get_by_role("button", name="Create development key").click()
    development.get_by_role("cell", name=label).wait_for()
    for width, height in ((1280, 720), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.reload()
        assert page.evaluate(NO_SIDEWAYS_SCROLL), f"the page scrolls sideways at {width} px"
        table = development.locator("table.keys-table")
        card = development.bounding_box()
        box = table.bounding_box()
        assert box["x"] + box["width"] <= card["x"] + card["width"], (
            f"the table leaves its card at {width} px"
        )
        # A short label still reads whole: wrapping anywhere let the column shrink until "Console" broke in two.
        sandbox = page.locator("section", has=page.get_by_role("heading", name="Sandbox", exact=True))
        cell = sandbox.locator('td[data-label="Label"]', has_text="Console")
        lines = cell.evaluate(
            "td => { const r = document.createRange(); r.selectNodeContents(td); "
            "return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }"
        )
        assert lines == 1, f"the label 'Console' takes {lines} lines at {width} px"


def test_a_long_end_user_id_wraps_on_the_timelines(page, live_server):
    end_user_id = (
        "crm-" + "7" * 180
    )  # the API takes up to 200 characters; ids from a CRM often have no spaces
    start(page, live_server)
    page.locator("#lt-end_user_id").fill(end_user_id)
    page.get_by_role("button", name="Create Link token").click()
    link_token_id = page.locator("#step-link [data-link-open]").get_attribute("data-link-token-id")
    for path in ("/timeline", f"/timeline/link-tokens/{link_token_id}"):
        for width, height in ((1280, 720), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.goto(live_server.url + path)
            page.get_by_text(end_user_id).first.wait_for()
            assert page.evaluate(NO_SIDEWAYS_SCROLL), f"{path} scrolls sideways at {width} px"


def test_a_long_webhook_url_wraps_in_what_the_clock_says_is_next_and_what_fired(page, console_live):
    # A receiver URL with a long path (a tunnel's, say). Nothing listens on port 9: its deliveries fail and wait
    # for their retry, which the Clock page names ("Next: Webhook delivery … to <url>: attempt 2").
    url = "http://127.0.0.1:9/hooks/" + "x" * 300
    start(page, console_live)
    page.get_by_role("button", name="Create my workspace").click()
    page.get_by_text("…or register your own URL").click()
    page.locator("#wh-url").fill(url)
    page.get_by_role("button", name="Register webhook").click()
    page.locator("#step-webhook").get_by_text("/hooks/xxxx").first.wait_for()
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_good headless").click()
    page.locator("#timeline").wait_for()
    # The worker's first attempt fails at its own pace: the page says "attempt 2" once loaded after it.
    poll(
        lambda: (page.goto(console_live.url + "/clock"), page.locator("#clk-next-help").inner_text())[1],
        lambda text: "attempt 2" in text,
        interval=0.5,
        what="the Clock page naming the retry of the failed delivery",
    )
    for width, height in ((1280, 720), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(console_live.url + "/clock")
        assert page.evaluate(NO_SIDEWAYS_SCROLL), f"the Clock page scrolls sideways at {width} px"
    page.set_viewport_size({"width": 1280, "height": 720})  # (below 60rem the main column wraps any word)
    page.goto(console_live.url + "/clock")
    page.get_by_role("button", name="To the next scheduled item").click()
    page.get_by_text("Clock advanced.").wait_for()
    assert page.evaluate(NO_SIDEWAYS_SCROLL), "what fired pushes the Clock page sideways"
    fired = page.locator(".fired", has_text="Moved to the next scheduled item")
    assert fired.evaluate("e => e.scrollWidth <= e.clientWidth"), (
        "the line naming the delivery leaves its box"
    )


def test_the_scenarios_run_buttons_are_in_view_on_a_phone(page, live_server):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.url + "/scenarios")
    for name in ("Run user_pending_success in Link", "Run user_pending_success headless"):
        button = page.get_by_role("button", name=name).bounding_box()
        assert button["x"] >= 0 and button["x"] + button["width"] <= 390, f"{name!r} is out of view: {button}"
    title = page.locator("#scenario-user_pending_success th code")
    assert title.evaluate("e => e.getClientRects().length") == 1, "the scenario's name breaks over lines"
    assert page.evaluate(NO_SIDEWAYS_SCROLL)


def test_the_webhooks_actions_are_in_view_on_a_phone(page, live_server):
    start(page, live_server)
    page.get_by_role("button", name="Create my workspace").click()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.url + "/webhooks")
    row = page.locator("table.webhooks-table tbody tr").first
    for name in ("Run conformance check", "Pause", "Delete"):
        button = row.get_by_role("button", name=name).bounding_box()
        assert button["x"] >= 0 and button["x"] + button["width"] <= 390, f"{name!r} is out of view: {button}"
    assert page.evaluate(NO_SIDEWAYS_SCROLL)


def test_the_world_tabs_ids_break_only_at_their_dashes_on_a_phone(page, live_server):
    # Ids wrapped anywhere, so a scrolling table squeezed the World tab's id column to one character a line:
    # a platform id read down 36 lines. Now an id breaks after its dashes (five lines at most) and the table
    # scrolls in its own box, the page itself never sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    for tab in ("platforms", "employers"):
        page.goto(f"{live_server.url}/world?tab={tab}")
        lines = page.locator("#world-rows td code").evaluate_all(
            "codes => codes.map(c => { const r = document.createRange(); r.selectNodeContents(c); "
            "return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; })"
        )
        assert lines and max(lines) <= 5, f"an id on the {tab} tab takes {max(lines)} lines"
        assert page.evaluate(NO_SIDEWAYS_SCROLL), f"the {tab} tab scrolls sideways at 390 px"


def test_a_scenarios_test_username_is_never_broken_inside_a_word(page, live_server):
    # At 1440 px the Scenario column read "user_pending_s / uccess": the name is what a developer types in Link.
    for width in (1280, 1440, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live_server.url + "/scenarios")
        split = page.locator("table.scenarios tbody th code").evaluate_all(
            """codes => codes.filter(c => !c.textContent.includes(" ")).filter(c => {
                 const r = document.createRange(); r.selectNodeContents(c);
                 return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size > 1;
               }).map(c => c.textContent)"""
        )
        assert split == [], f"broken at {width} px: {split}"
