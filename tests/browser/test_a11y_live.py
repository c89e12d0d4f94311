"""Keyboard and screen-reader users across htmx swaps: a form that redraws itself, or a panel redrawn by its
poll, never drops the focus on <body>; live updates (new events, a step ticked, a conformance run, the
trainer's grid) are read out once through the page's live region, not by re-reading a whole table.

What the live region said is recorded as it changes (an init script watching #announcer), since
console.js clears it before each message: the last text alone would miss one said a moment before.
"""

from __future__ import annotations

import re

import pytest

from tests.browser import classroom
from tests.browser.test_console_walkthrough import create_token, start, wait_until_done

expect = pytest.importorskip("playwright.sync_api").expect

WATCH_ANNOUNCER = """function () {
  window.__said = window.__said || [];
  var region = document.getElementById("announcer");
  if (!region) return;
  new MutationObserver(function () {
    var text = region.textContent.trim();
    if (text) window.__said.push(text);
  }).observe(region, {childList: true, subtree: true, characterData: true});
}"""
RECORD_ANNOUNCEMENTS = f'document.addEventListener("DOMContentLoaded", {WATCH_ANNOUNCER});'


@pytest.fixture
def heard(page):
    """The page, recording what its live region says; call heard(pattern) to wait until it said it."""
    page.context.add_init_script(RECORD_ANNOUNCEMENTS)

    def said(pattern: str) -> None:
        page.wait_for_function(
            "p => (window.__said || []).some(t => new RegExp(p).test(t))", arg=pattern, timeout=30_000
        )

    return said


def said(page) -> list[str]:
    return page.evaluate("() => window.__said || []")


def focused(page) -> str:
    return page.evaluate(
        "() => document.activeElement.tagName + ' ' + document.activeElement.textContent.trim()"
    )


def test_key_forms_put_the_focus_on_what_they_did(page, console_live):
    """Create, reveal, roll and revoke redraw the keys: focus lands on the result, never on <body>."""
    page.goto(console_live.url + "/keys")
    page.get_by_label("Label").first.focus()
    page.keyboard.type("CI")
    page.keyboard.press("Enter")
    done = page.locator("#keys-done")
    expect(done).to_be_focused()
    expect(done).to_have_text(re.compile("Sandbox key created"))
    expect(done).to_have_attribute("role", "status")

    page.get_by_role("button", name="Reveal").first.focus()
    page.keyboard.press("Enter")
    expect(
        page.get_by_role("button", name="Copy").first
    ).to_be_focused()  # the revealed secret's first action
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Hide").first).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Reveal").first).to_be_focused()

    # The confirmation is a modal dialog: focus starts on Cancel, Tab reaches the button named like the one
    # that asked, Escape cancels and gives the focus back.
    confirmation = page.locator("dialog.confirm-dialog[open]")
    page.get_by_role("button", name="Roll").first.focus()
    page.keyboard.press("Enter")
    expect(confirmation.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Tab")
    expect(confirmation.get_by_role("button", name="Roll")).to_be_focused()
    page.keyboard.press("Enter")
    expect(done).to_have_text(re.compile("Key rolled"))
    expect(done).to_be_focused()

    revoke = page.get_by_role("button", name="Revoke").first
    revoke.focus()
    page.keyboard.press("Space")
    expect(confirmation).to_contain_text("Revoke this key? Requests with it will get 401.")
    page.keyboard.press("Escape")
    expect(confirmation).to_have_count(0)
    expect(revoke).to_be_focused()
    expect(done).to_have_text(re.compile("Key rolled"))  # nothing was sent
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(done).to_have_text(re.compile("Key revoked"))
    expect(done).to_be_focused()


WIRED = """el => { const f = el.form || el; return !!(f['htmx-internal-data'] && f['htmx-internal-data'].initHash); }"""


def wired(page, locator) -> None:
    """Wait until htmx has wired the form of a swapped-in control: it gives the focus back during its swap
    and wires the new form a moment later, as it settles; a key pressed sooner than a person could would
    send the form without htmx."""
    page.wait_for_function(WIRED, arg=locator.element_handle())


def _redrawn(page, selector: str) -> None:
    """Mark the element, then wait until a swap has replaced it (its poll came and went)."""
    page.locator(selector).evaluate("el => { el.__old = true; }")
    page.wait_for_function(
        "s => { const el = document.querySelector(s); return el && !el.__old; }", arg=selector
    )


def test_a_polled_checklist_keeps_the_keyboard_focus(page, console_live):
    start(page, console_live)
    link = page.locator("#checklist a").nth(1)
    link.focus()
    _redrawn(page, "#checklist")  # it polls every 3 s and replaces itself whole
    expect(page.locator("#checklist a").nth(1)).to_be_focused()
    assert page.evaluate("document.activeElement !== document.body")


def test_the_trainer_grid_keeps_focus_on_remove_and_reads_out_progress(page, console_live, heard):
    join_link = classroom.open_new_class(page, console_live.url, "Focus class")
    page.locator("#training-grid").wait_for()
    classroom.join(join_link, "Ada")
    heard(r"^1 trainee · 0 finished")  # the class's line, said once when it changed
    remove = page.get_by_role("button", name="Remove Ada from the class")
    remove.focus()
    classroom.join(join_link, "Grace")  # the grid is redrawn with a second row while Remove has the focus
    heard(r"^2 trainees")
    page.locator('tr[data-trainee="Grace"]').wait_for()
    expect(page.get_by_role("button", name="Remove Ada from the class")).to_be_focused()
    # Each poll that changed nothing says nothing: one announcement per change.
    lines = [t for t in said(page) if "trainee" in t]
    assert len(lines) == len(set(lines)), lines


def test_new_events_are_announced_by_name_not_the_whole_log(page, console_live, heard):
    page.goto(console_live.url + "/scenarios")
    page.get_by_role("button", name="Run user_good headless").click()
    page.locator("#timeline").wait_for()
    page.goto(console_live.url + "/events")
    page.locator("#event-poller").wait_for(state="attached")
    assert page.locator("#event-list .event-row").count(), "the scenario made no events"
    assert not said(page)  # the log as loaded is not read out
    # New events arrive while the log is open: made by the API in the background of this page.
    other = page.context.new_page()
    other.goto(console_live.url + "/scenarios")
    other.get_by_role("button", name="Run user_good headless").click()
    other.locator("#timeline").wait_for()
    heard(r"^\d+ new events?: [a-z_]+\.[a-z_]+")
    page.locator("#event-list .event-row.fresh").first.wait_for()
    assert page.locator("#event-list").get_attribute("aria-live") is None  # the table itself is not re-read


def test_a_ticked_step_is_announced(page, console_live, heard):
    start(page, console_live)
    create_token(page, "Standard switch")
    wait_until_done(page, "link_token")
    heard(r"^Walkthrough progress: \d of 6 steps done")


def test_the_conformance_run_says_how_it_goes(page, console_live, heard):
    page.goto(console_live.url + "/webhooks")
    page.get_by_role("button", name="Register the built-in inbox").click()
    row = page.locator("#webhooks tbody tr").filter(has_text="Built-in inbox")
    row.get_by_text("not checked").wait_for()
    run = row.get_by_role("button", name="Run conformance check")
    wired(page, run)
    run.focus()
    page.keyboard.press("Enter")  # the button is disabled while the run starts: its focus must go somewhere
    heard(r"running… (Waiting for the worker|Sending the checks)")
    page.locator("#conformance .conformance-summary").get_by_text("✓ passed").wait_for()
    heard(r"passed 11 of 11 checks passed")
    # The focus followed the run: its progress, then its verdict (never <body>).
    expect(page.locator("#conformance .conformance-summary")).to_be_focused()


def test_older_events_puts_the_focus_on_the_first_older_row(page, console_live):
    """The button is replaced by the rows it loaded: the focus goes to the first of them, not <body>."""
    page.goto(console_live.url + "/scenarios")
    while True:  # each run adds a few events: enough for a second page
        page.get_by_role("button", name="Run user_good headless").click()
        page.locator("#timeline").wait_for()
        page.goto(console_live.url + "/events")
        if page.get_by_role("button", name="Older events").count():
            break
        page.goto(console_live.url + "/scenarios")
    shown = page.locator("#event-list .event-row").count()
    page.get_by_role("button", name="Older events").focus()
    page.keyboard.press("Enter")
    first_older = page.locator("#event-list .event-row").nth(shown).locator("summary")
    expect(first_older).to_be_focused()


def test_pause_and_reactivate_keep_the_focus_on_the_redrawn_button(page, console_live):
    page.goto(console_live.url + "/webhooks")
    page.get_by_role("button", name="Register the built-in inbox").click()
    pause = page.locator("#webhooks").get_by_role("button", name="Pause", exact=True)
    wired(page, pause)
    pause.focus()
    page.keyboard.press("Enter")
    reactivate = page.locator("#webhooks").get_by_role("button", name="Reactivate", exact=True)
    expect(reactivate).to_be_focused()  # what the press did is what the focused button now says
    wired(page, reactivate)
    page.keyboard.press("Enter")
    expect(pause).to_be_focused()


def test_a_trainees_exercise_done_is_announced_on_their_page(browser, page, console_live):
    from sqlalchemy import select

    from console.extensions import db
    from console.training.models import CohortMember
    from tests.browser.test_training import join
    from tests.web.helpers import sandbox_secret

    join_link = classroom.open_new_class(
        page, console_live.url, "Training class"
    )  # join() waits for its heading
    context, ada, _ = join(browser, join_link, "Ada Heard")
    try:
        ada.evaluate(f"({WATCH_ANNOUNCER})()")
        with console_live.app.app_context():
            member = db.session.scalars(select(CohortMember).where(CohortMember.name == "Ada Heard")).one()
            secret = sandbox_secret(console_live.app, member.workspace_id)
        classroom.progress(console_live.url, secret, 1)  # her own backend creates a Link token
        ada.wait_for_function("() => window.__said.some(t => /: done\\.$/.test(t))")
        assert len(said(ada)) == len(set(said(ada))), said(ada)  # each change once, not at every poll
    finally:
        context.close()
