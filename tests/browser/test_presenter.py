"""Presenter mode in the browser: a story run by keyboard alone, Link inside the branded phone, events live
on the right, restart on fresh data, a story file added while the server runs."""

from __future__ import annotations

import json
import re

import pytest

from tests import images
from tests.browser.linkui import release, search_and_choose
from tests.browser.waits import after_page_timers

LINK = "#phone-screen [data-link-overlay] iframe"
LINK_SEARCH = re.compile(r"/link/search\b")  # Link's search answers (htmx asks as a person types)
FAST = 20  # ?speed=: typing, pauses and autoplay this many times faster than a presenter's


def caption(page) -> str:
    return page.locator("#caption").inner_text()


def press(page, key: str, step: int) -> None:
    """One key press and the stage it brings (each step swaps the stage in place)."""
    page.locator("html[data-stage-ready]").wait_for(state="attached")
    page.keyboard.press(key)
    page.locator(f'#stage[data-step="{step}"]').wait_for()


def test_standard_switch_runs_by_keyboard_with_link_in_the_branded_phone(page, console_live):
    url = (
        console_live.url
        + f"/present/10-standard-switch?brand=Acme+Bank&color=%23aa0011&theme=dark&speed={FAST}"
    )
    page.goto(url)
    # The brand is in the phone: name, initials, colour (set through the CSSOM, no inline style).
    assert page.locator(".app-name").inner_text() == "Acme Bank"
    assert page.locator(".app-logo").inner_text() == "AB"
    assert (
        page.evaluate("getComputedStyle(document.querySelector('.app-bar')).backgroundColor")
        == "rgb(170, 0, 17)"
    )
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"

    press(page, "ArrowRight", 1)
    assert "Acme Bank's app" in caption(page)
    press(page, "Space", 2)
    page.locator('#backend [data-feed="calls"]').get_by_text("/sandbox/v1/link_tokens").wait_for()

    # open_link: the real SDK opens Link, and the stage moves its overlay inside the phone's screen.
    press(page, "ArrowRight", 3)
    frame = page.locator("#phone-screen [data-link-overlay] iframe")
    frame.wait_for()
    # Link greets the person with the prospect's name (the token's org_name).
    page.frame_locator("#phone-screen [data-link-overlay] iframe").get_by_text("Acme Bank").first.wait_for()
    box = frame.bounding_box()
    screen = page.locator("#phone-screen").bounding_box()
    assert box["width"] <= screen["width"] + 1 and box["height"] <= screen["height"] + 1

    # The arrow keys still drive the story while Link is open in the phone; the next step fills Link in on
    # screen (at test speed), presses Done, and runs: Link has closed.
    link_listens(page)
    press(page, "ArrowRight", 4)
    assert page.locator("[data-link-overlay]").count() == 0
    press(page, "ArrowRight", 5)
    webhook = page.locator('#backend [data-event-type="direct_deposit_switch.added"]').first
    webhook.wait_for()
    assert "signature verified" in webhook.inner_text()
    page.locator('#backend [data-outcome="success"]').first.wait_for()
    page.locator('#phone-status[data-job-outcome="success"]').wait_for()
    assert page.locator(".failure").count() == 0

    # Back shows the previous caption without running anything again.
    press(page, "ArrowLeft", 4)
    assert "logs in to their payroll platform" in caption(page)
    assert "step=4" in page.url

    # h hides the controls (as full screen does), and shows them again.
    page.keyboard.press("h")
    page.locator(".controls").wait_for(state="hidden")
    page.keyboard.press("h")
    page.locator(".controls").wait_for(state="visible")

    # s: the printable summary of the run, with what the backend received.
    page.keyboard.press("s")
    page.locator('[data-summary-event="direct_deposit_switch.added"]').first.wait_for()
    assert page.locator("[data-print]").is_visible()
    page.go_back()
    page.locator("html[data-stage-ready]").wait_for(state="attached")

    # r: the story again, on a fresh workspace (nothing on the right), quickly.
    press(page, "r", 0)
    page.locator('#backend [data-feed="webhooks"] .feed-empty').wait_for()
    page.locator('#backend [data-feed="timeline"]').wait_for(state="detached")
    assert "/sandbox/v1/link_tokens" not in page.locator('#backend [data-feed="calls"]').inner_text()


def test_failure_and_recovery_runs_by_keyboard_and_the_refused_webhook_arrives(page, console_live):
    page.goto(console_live.url + "/present/50-failure-and-recovery")
    total = int(page.locator("#stage").get_attribute("data-total"))
    for step in range(1, total + 1):
        press(page, "ArrowRight", step)
        assert page.locator(".failure").count() == 0, page.locator(".failure").inner_text()
    page.get_by_text("answered 500: will be retried").first.wait_for()
    assert "The end" in page.locator(".controls").inner_text()


def link_screen(page) -> str:
    return page.frame_locator(LINK).locator("#link-screen").get_attribute("data-screen")


def test_autoplay_stops_at_the_pause_step_and_follows_link_finished_by_hand(page, console_live):
    page.goto(f"{console_live.url}/present/10-standard-switch?speed={FAST}")
    page.locator("html[data-stage-ready]").wait_for(state="attached")
    page.keyboard.press("a")
    # Step 3 (open_link) is marked as a pause: autoplay opens Link there and waits for the presenter.
    page.locator('#stage[data-step="3"]:not(.is-busy)').wait_for()
    link_listens(page)
    # Autoplay would have set its timer (4 s / speed = 200 ms) when step 3 was drawn: once the page's timers
    # up to five such intervals from now have run, it would have fired (and `advance` marks the stage busy
    # or driving at once). The page's own timer order bounds this, not the test machine's speed.
    after_page_timers(page, 1000)
    assert page.locator("#stage").get_attribute("data-step") == "3"
    assert page.locator("#stage.is-busy, #stage.is-driving").count() == 0
    assert link_screen(page) == "intro"  # nothing pressed in Link either
    # The presenter takes over Link by hand, finishes it and presses Done: the story follows on its own.
    frame = page.frame_locator(LINK)
    frame.get_by_role("button", name="Continue").click()
    search_and_choose(frame, "Paycrest", "Paycrest")
    frame.get_by_label("Username").fill("user_good")
    frame.get_by_label("Password").fill("pass_good")
    frame.get_by_role("button", name="Log in").click()
    frame.get_by_role("button", name="Continue").click()
    frame.get_by_role("button", name="Confirm").click()
    frame.get_by_role("button", name="Done").click()
    page.locator('#stage[data-step="6"]').wait_for()
    page.locator('#backend [data-event-type="direct_deposit_switch.added"]').first.wait_for()
    assert page.locator(".failure").count() == 0
    page.keyboard.press("s")
    page.locator("[data-print]").wait_for()
    assert "/complete</code>" not in page.content()  # the step found Link finished


def test_the_presenter_takes_link_over_midway_and_the_arrow_key_lets_the_stage_finish(page, console_live):
    page.goto(f"{console_live.url}/present/10-standard-switch?step=1&speed=3")
    press(page, "ArrowRight", 2)
    press(page, "ArrowRight", 3)
    link_listens(page)
    # The stage cannot get past Link's search screen before the presenter's hand comes, however slow the
    # machine: Link's search answers are held back until then (the stage waits up to 6 s for one).
    held: list = []
    page.route(LINK_SEARCH, lambda route: held.append(route))
    page.keyboard.press("ArrowRight")  # the stage starts filling in Link at a (fast) human pace
    frame = page.frame_locator(LINK)
    frame.locator('#link-screen[data-screen="search"]').wait_for()
    frame.locator("#screen-title").click()  # the presenter's hand in Link: the stage lets go
    page.get_by_text("Link is yours").wait_for()  # the driver has stopped (its promise was rejected)
    release(page, LINK_SEARCH, held)
    # Nothing drives Link any more: after the page's timers for the next 1.5 s (several of the driver's own
    # steps at this speed) have run, Link is where the presenter took it and the stage has not moved on.
    after_page_timers(page, 1500)
    assert link_screen(page) == "search"
    assert page.locator("#stage.is-busy, #stage.is-driving").count() == 0
    assert page.locator("#stage").get_attribute("data-step") == "3"
    # → : the stage finishes Link from the screen it is on, then the step follows.
    page.keyboard.press("ArrowRight")
    page.locator('#stage[data-step="4"]').wait_for()
    assert page.locator("[data-drive-note]").inner_text() == ""
    page.locator("#phone-status").get_by_text("Switch in progress").or_(
        page.locator("#phone-status").get_by_text("Your paycheck now comes here")
    ).wait_for()


def test_a_second_arrow_key_skips_ahead_and_a_link_that_cannot_be_driven_completes_headlessly(
    page, console_live
):
    url = console_live.url
    page.goto(f"{url}/present/10-standard-switch?step=1")  # a presenter's pace
    press(page, "ArrowRight", 2)
    press(page, "ArrowRight", 3)
    link_listens(page)
    page.keyboard.press("ArrowRight")
    page.frame_locator(LINK).locator("#drive-tap, #link-screen").first.wait_for()
    page.locator("#drive-tap.is-shown").wait_for()  # the mark the audience follows, over the phone
    page.keyboard.press("ArrowRight")  # skip: the step completes Link at once
    page.locator('#stage[data-step="4"]').wait_for()
    assert page.locator("[data-drive-note]").inner_text() == ""  # skipping is no failure

    # Link's screens changed (here: no primary button): the step completes Link headlessly and says so.
    page.route(
        re.compile(r".*/sandbox/link\?.*"),
        lambda route: route.fulfill(
            response=route.fetch(), body=route.fetch().text().replace("button primary", "button")
        ),
    )
    page.goto(f"{url}/present/10-standard-switch?step=1&speed={FAST}")
    press(page, "ArrowRight", 2)
    press(page, "ArrowRight", 3)
    link_listens(page)
    press(page, "ArrowRight", 4)
    assert "Link completed behind the scenes" in page.locator("[data-drive-note]").inner_text()
    assert page.locator(".failure").count() == 0
    # Both completions (the skip's and this one) were headless calls of the sandbox API.
    page.locator('#backend [data-feed="calls"]').get_by_text("/complete").nth(1).wait_for()


def test_a_failed_step_offers_a_retry_on_enter(page, console_live):
    console_live.app.config["PRESENTER_WAIT_SECONDS"] = 0
    page.goto(console_live.url + "/present/10-standard-switch?step=4")
    press(page, "ArrowRight", 4)  # the wait fails: the stage stays on step 4 and says why
    alert = page.locator(".failure")
    assert "Step 5 did not work." in alert.inner_text()
    assert "Traceback" not in page.content()
    console_live.app.config["PRESENTER_WAIT_SECONDS"] = 0
    page.keyboard.press("Enter")
    page.locator(".failure").wait_for()


def test_a_story_added_as_a_file_appears_without_code(page, live_server, tmp_path):
    story = {"title": "Kickoff for Acme", "steps": [{"caption": "Welcome, {brand}."}]}
    (tmp_path / "01-kickoff.json").write_text(json.dumps(story))
    live_server.app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    page.goto(live_server.url + "/present")
    page.get_by_label("Company name").fill("Acme")
    page.get_by_role("button", name="Use this brand").click()
    page.get_by_role("link", name="Kickoff for Acme").click()
    press(page, "ArrowRight", 1)
    assert caption(page) == "Welcome, Acme."


# --- autoplay drives Link in the phone ---------------------------------------------------------------

# story -> (event types the right panel must show at the end, the Link screens filled in on the phone,
#           how many times the story completes Link headlessly: its complete_link steps without Link open)
EXPECTED = {
    "10-standard-switch": (
        ["direct_deposit_switch.added", "account.added"],
        ["intro", "search", "login", "allocation", "confirm", "success"],
        0,
    ),
    "20-platform-matching-one": (
        ["direct_deposit_switch.added"],
        ["intro", "matching", "matches", "mfa_method", "mfa", "allocation", "confirm", "success"],
        0,
    ),
    "25-platform-matching-several": (
        ["direct_deposit_switch.added"],
        ["intro", "matching", "matches", "mfa_method", "mfa", "allocation", "confirm", "success"],
        0,
    ),
    "30-federal-benefits": (["direct_deposit_switch.added"], ["intro", "federal", "confirm", "success"], 0),
    "40-on-demand-update": (
        ["direct_deposit_switch.added", "account.added"],
        ["intro", "allocation", "confirm", "success"],
        1,
    ),
    "50-failure-and-recovery": (["direct_deposit_switch.added"], [], 2),
}


def watch_link(page) -> None:
    """Record each Link screen the audience sees and each value a Link field holds as it is typed."""
    page.evaluate(
        """() => { window.__seen = []; window.__typed = [];
          if (window.__watching) return; window.__watching = new WeakSet();
          setInterval(() => {
            const f = document.querySelector('#phone-screen [data-link-overlay] iframe');
            const doc = f && f.contentDocument;
            const s = doc && doc.getElementById('link-screen');
            if (s && window.__seen[window.__seen.length - 1] !== s.dataset.screen) window.__seen.push(s.dataset.screen);
            if (s && !window.__watching.has(doc)) {
              window.__watching.add(doc);
              doc.addEventListener('input', e => window.__typed.push(e.target.id + '=' + e.target.value), true);
            }
          }, 10); }"""
    )


def typed_letter_by_letter(typed: list[str]) -> bool:
    """Some Link field was seen holding the start of what it finally held: typed, not pasted."""
    values: dict[str, list[str]] = {}
    for entry in typed:
        field, _, value = entry.partition("=")
        values.setdefault(field, []).append(value)
    return any(len(v) > 1 and v[-1].startswith(v[0]) and v[0] != v[-1] for v in values.values())


def link_listens(page) -> None:
    """Link is open in the phone and the stage hears the story's keys in it."""
    page.locator("#phone-screen [data-link-overlay] iframe[data-stage-keys]").wait_for()


def autoplay_to_the_end(page, total: int) -> None:
    """Autoplay (a), pressing → at each pause step, until the last step; no step may fail."""
    page.keyboard.press("a")
    deadline = 60_000
    while True:
        page.locator(
            f'#stage[data-step="{total}"], #stage[data-pause="1"]:not(.is-busy), .failure'
        ).first.wait_for(timeout=deadline)
        assert page.locator(".failure").count() == 0, page.locator(".failure").first.inner_text()
        if page.locator(f'#stage[data-step="{total}"]').count():
            break
        step = int(page.locator("#stage").get_attribute("data-step"))
        link_listens(page)
        page.keyboard.press("ArrowRight")
        # Autoplay may run on past the next step before a look at it: wait for the stage to be beyond the pause.
        page.wait_for_function(
            "n => +document.getElementById('stage').dataset.step > n", arg=step, timeout=deadline
        )


@pytest.mark.parametrize("key", list(EXPECTED))
def test_each_story_autoplays_twice_in_a_row_with_link_filled_in_on_screen(page, console_live, key):
    events, screens, headless = EXPECTED[key]
    page.goto(f"{console_live.url}/present/{key}?speed={FAST}")
    page.locator("html[data-stage-ready]").wait_for(state="attached")
    total = int(page.locator("#stage").get_attribute("data-total"))
    for run in (1, 2):
        watch_link(page)
        autoplay_to_the_end(page, total)
        for event in events:
            page.locator(f'#backend [data-event-type="{event}"]').first.wait_for()
        # Link was filled in on screen, one screen after another, never completed behind the scenes.
        assert page.evaluate("window.__seen") == screens, run
        assert page.locator("[data-drive-note]").inner_text() == ""
        if run == 1:
            # r: the same story again on fresh data (autoplay stops; a starts it again).
            press(page, "r", 0)
            page.locator('#backend [data-feed="webhooks"] .feed-empty').wait_for()
        if {"search", "login", "mfa", "federal"} & set(screens):
            assert typed_letter_by_letter(page.evaluate("window.__typed")), run
    assert f"speed={FAST}" in page.url  # the speed stays in the stage's address
    page.keyboard.press("s")  # the summary lists every API call of the second run
    page.locator("[data-print]").wait_for()
    assert page.content().count("/complete</code>") == headless


# --- profiles: logo, captions, edit and delete -------------------------------------------------------


def test_a_profile_with_a_logo_and_an_edited_caption_is_presented_then_deleted(page, live_server):
    url = live_server.url
    page.goto(url + "/present")
    page.get_by_label("Company name").fill("Acme Bank")
    page.get_by_role("button", name="Use this brand").click()
    page.get_by_label("Standard switch").check()
    page.get_by_role("button", name="Save profile for Acme Bank").click()
    short = page.locator("#short-link").inner_text()
    page.get_by_role("link", name="Add a logo, edit captions").click()

    # A file that is not a PNG or JPEG is refused, and the page says why.
    svg = {"name": "logo.svg", "mimeType": "image/svg+xml", "buffer": images.SVG}
    page.get_by_label("Upload a logo").set_input_files(files=[svg])
    page.get_by_role("button", name="Save the logo").click()
    assert "must be a PNG or JPEG image" in page.locator("#logo-error").inner_text()
    logo = {"name": "logo.png", "mimeType": "image/png", "buffer": images.png(48, 48)}
    page.get_by_label("Upload a logo").set_input_files(files=[logo])
    page.get_by_role("button", name="Save the logo").click()
    page.get_by_text("Logo saved").wait_for()
    assert page.locator("[data-profile-logo]").evaluate("img => img.naturalWidth") == 48

    page.get_by_label("Step 1", exact=True).first.fill("Meet {brand}: paid two days early.")
    page.get_by_role("button", name="Save the profile").click()
    page.get_by_text("Profile for Acme Bank saved.").wait_for()

    # The short link, from any browser: the logo in the phone instead of the initials, the edited caption.
    page.goto(short)
    page.get_by_role("link", name="Standard switch").click()
    img = page.locator(".app-bar img.app-logo")
    img.wait_for()
    assert img.evaluate("img => img.complete && img.naturalWidth") == 48
    assert page.locator(".app-bar span.app-logo").count() == 0
    assert page.locator(".app-name").inner_text() == "Acme Bank"
    press(page, "ArrowRight", 1)
    assert caption(page) == "Meet Acme Bank: paid two days early."

    # Deleted from the start page's list of this browser's profiles: the short link stops working.
    page.goto(url + "/present")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete the profile for Acme Bank").click()
    page.get_by_text("Profile for Acme Bank deleted").wait_for()
    assert page.request.get(short).status == 404
