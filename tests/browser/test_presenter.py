"""Presenter mode in the browser: a story run by keyboard alone, Link inside the branded phone, events live
on the right, restart on fresh data, a story file added while the server runs."""

from __future__ import annotations

import json

import pytest

from tests.browser.test_console_walkthrough import with_worker


@pytest.fixture
def stage_live(live_server):
    yield from with_worker(live_server)


def caption(page) -> str:
    return page.locator("#caption").inner_text()


def press(page, key: str, step: int) -> None:
    """One key press and the stage it brings (each step swaps the stage in place)."""
    page.locator("html[data-stage-ready]").wait_for(state="attached")
    page.keyboard.press(key)
    page.locator(f'#stage[data-step="{step}"]').wait_for()


def test_standard_switch_runs_by_keyboard_with_link_in_the_branded_phone(page, stage_live):
    url = stage_live.url + "/present/10-standard-switch?brand=Acme+Bank&color=%23aa0011&theme=dark"
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

    # The arrow keys still drive the story while Link is open in the phone; the next step closes it.
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


def test_failure_and_recovery_runs_by_keyboard_and_the_refused_webhook_arrives(page, stage_live):
    page.goto(stage_live.url + "/present/50-failure-and-recovery")
    total = int(page.locator("#stage").get_attribute("data-total"))
    for step in range(1, total + 1):
        press(page, "ArrowRight", step)
        assert page.locator(".failure").count() == 0, page.locator(".failure").inner_text()
    page.get_by_text("answered 500: will be retried").first.wait_for()
    assert "The end" in page.locator(".controls").inner_text()


def test_autoplay_runs_to_the_pause_step_and_on_from_there(page, stage_live):
    page.goto(stage_live.url + "/present/10-standard-switch")
    page.locator("html[data-stage-ready]").wait_for(state="attached")
    page.keyboard.press("a")
    # Step 3 (open_link) is marked as a pause: autoplay opens Link there and waits for the presenter.
    page.locator('#stage[data-step="3"]').wait_for(timeout=15_000)
    page.locator("#phone-screen [data-link-overlay]").wait_for()
    page.wait_for_timeout(5000)
    assert page.locator("#stage").get_attribute("data-step") == "3"
    page.keyboard.press("ArrowRight")
    page.locator('#stage[data-step="6"]').wait_for(timeout=25_000)
    page.locator('#backend [data-event-type="direct_deposit_switch.added"]').first.wait_for()
    assert page.locator(".failure").count() == 0


def test_a_failed_step_offers_a_retry_on_enter(page, stage_live):
    stage_live.app.config["PRESENTER_WAIT_SECONDS"] = 0
    page.goto(stage_live.url + "/present/10-standard-switch?step=4")
    press(page, "ArrowRight", 4)  # the wait fails: the stage stays on step 4 and says why
    alert = page.locator(".failure")
    assert "Step 5 did not work." in alert.inner_text()
    assert "Traceback" not in page.content()
    stage_live.app.config["PRESENTER_WAIT_SECONDS"] = 0
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
