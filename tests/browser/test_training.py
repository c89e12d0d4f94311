"""Training mode in the browser: a trainer and two trainees in separate browser contexts; the trainer's
grid ticks without a reload when a trainee's own backend registers their endpoint (exercise 3)."""

from __future__ import annotations

import requests
from sqlalchemy import select

from console.extensions import db
from console.training.models import CohortMember
from tests.browser.classroom import open_new_class_links
from tests.browser.confirm import answer_confirmation
from tests.browser.conftest import BACKSTOP_MS, csp_violations
from tests.browser.waits import after_page_timers
from tests.web.helpers import sandbox_secret


def new_window(browser):
    """Another browser (its own cookie jar) with the suite's backstop: (context, page)."""
    context = browser.new_context()
    context.set_default_timeout(BACKSTOP_MS)
    return context, context.new_page()


def join(browser, join_link: str, name: str):
    context, page = new_window(browser)
    messages: list[str] = []
    page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
    page.goto(join_link)
    page.get_by_label("Your name").fill(name)
    page.get_by_role("button", name="Join").click()
    page.get_by_role("heading", name=f"Training class: {name}").wait_for()
    return context, page, messages


def test_the_grid_updates_live_as_a_trainee_completes_an_exercise(browser, page, live_server):
    page.goto(live_server.url + "/training")
    # The exercise choices, one a line (inline, a box read as belonging to the next title).
    tops = [
        round(box["y"]) for box in (label.bounding_box() for label in page.locator(".check-list label").all())
    ]
    assert len(tops) == 6 and len(set(tops)) == 6, tops
    page.get_by_label("Name").fill("Training class")
    page.get_by_role("button", name="Create class").click()
    join_link = page.locator("#join-link").inner_text()
    page.get_by_role("link", name="Open the grid").click()

    contexts = []
    try:
        ada_context, ada, ada_messages = join(browser, join_link, "Ada")
        grace_context, grace, _ = join(browser, join_link, "Grace")
        contexts += [ada_context, grace_context]
        # Trainees cannot open the grid.
        assert grace.goto(page.url).status == 404

        page.locator('tr[data-trainee="Grace"]').wait_for()  # a joiner appears without a reload
        page.evaluate("window.__notReloaded = true")
        cell = page.locator('tr[data-trainee="Grace"] td[data-exercise="own_endpoint"]')
        assert cell.get_attribute("data-done") == "no"

        with live_server.app.app_context():
            member = db.session.scalars(select(CohortMember).where(CohortMember.name == "Grace")).one()
            secret = sandbox_secret(live_server.app, member.workspace_id)
        # Grace's own backend registers her endpoint, straight to the API (not through the console).
        response = requests.post(
            live_server.api_url("sandbox", "/webhooks"),
            json={
                "url": "http://127.0.0.1:9/hooks",
                "status": "active",
                "version": "2023-11-22",
                "enabled_events": ["account.added"],
            },
            headers={"x-api-secret": secret, "Service-Version": "2023-11-22"},
            timeout=30,
        )
        assert response.status_code == 200, response.text

        page.locator('tr[data-trainee="Grace"] td[data-exercise="own_endpoint"][data-done="yes"]').wait_for()
        assert page.locator('tr[data-trainee="Ada"] td[data-exercise="own_endpoint"]').get_attribute(
            "data-done"
        ) == ("no")
        assert page.evaluate("window.__notReloaded") is True
        # Grace's own page ticks too; Ada's does not.
        grace.goto(live_server.url + "/training/me")
        assert grace.locator("#status-own_endpoint").get_attribute("data-done") == "yes"
        assert ada.locator("#status-own_endpoint").get_attribute("data-done") == "no"
        # A failure's reason is one click away.
        page.locator('tr[data-trainee="Ada"] td[data-exercise="own_endpoint"] a').click()
        page.get_by_text("Only the console's inbox is registered").wait_for()
        assert csp_violations(ada_messages) == []
    finally:
        for context in contexts:
            context.close()


def test_the_open_pages_of_a_deleted_class_stop_polling_and_say_so(browser, page, live_server):
    join_link, trainer_link = open_new_class_links(page, live_server.url, "Training class")

    second, grid = new_window(browser)  # a second trainer screen
    contexts = [second]
    try:
        grid.goto(trainer_link)
        grid.locator("#training-grid").wait_for()
        ada_context, ada, _ = join(browser, join_link, "Ada")
        contexts.append(ada_context)
        polls = {"grid": 0, "me": 0}
        grid.on("request", lambda r: "/grid?" in r.url and polls.__setitem__("grid", polls["grid"] + 1))
        ada.on(
            "request", lambda r: "/training/me/progress" in r.url and polls.__setitem__("me", polls["me"] + 1)
        )

        page.get_by_role("button", name="Delete this class and its trainees' workspaces").click()
        answer_confirmation(page)
        page.get_by_text("is deleted").wait_for()

        grid.locator("#poll-gone").get_by_text("This class was deleted.").wait_for()
        ada.locator("#poll-gone").get_by_text("This class was deleted").wait_for()
        assert grid.locator("#training-grid").count() == 0 and ada.locator("#training-poller").count() == 0
        # The other trainer's join link, Archive and Delete went with the class (they led to 404).
        assert not grid.get_by_role(
            "button", name="Delete this class and its trainees' workspaces"
        ).is_visible()
        assert not grid.locator("#join-link").is_visible()
        # So did the warning that trainees cannot reach that join link (the live server listens on loopback).
        assert (
            grid.locator("#loopback-warning").count() == 1
            and not grid.locator("#loopback-warning").is_visible()
        )
        # The trainee's exercises, snippets and buttons went too: their key is refused now, nothing there works.
        assert ada.locator("ol.exercises").count() == 1 and not ada.locator("ol.exercises").is_visible()
        assert not ada.locator("#get-client").is_visible()
        seen = dict(polls)
        for tab in (grid, ada):
            after_page_timers(tab, 2500)  # past the next poll: no request is made
        assert polls == seen, (seen, polls)
    finally:
        for context in contexts:
            context.close()


def test_a_deleted_class_trainees_page_offers_no_keep_or_reset_for_the_workspace_that_went(
    browser, page, live_server
):
    """Archived first, the trainee's workspace is no longer kept, so its header offers Keep as well as Reset;
    deleted then, with that workspace, its open page said so under a header that still offered both (and named
    the workspace), for a workspace that no longer exists."""
    join_link, _ = open_new_class_links(page, live_server.url, "Training class")
    ada_context, ada, _ = join(browser, join_link, "Ada")
    try:
        bar = ada.locator("#workspace-bar")
        page.get_by_role("button", name="Archive this class").click()
        answer_confirmation(page)
        ada.locator(
            "#class-archived"
        ).wait_for()  # the page reloaded by itself: the workspace is not kept now
        keep = bar.get_by_text("Keep this workspace")
        reset = bar.get_by_role("button", name="Reset workspace")
        assert keep.is_visible() and reset.is_visible() and bar.locator(".workspace-id").is_visible()

        page.get_by_role("button", name="Delete this class and its trainees' workspaces").click()
        answer_confirmation(page)
        ada.locator("#poll-gone").get_by_text("This class was deleted").wait_for()
        assert not keep.is_visible() and not reset.is_visible()
        assert not bar.locator(".workspace-id").is_visible()  # nor named: that workspace is gone
        assert bar.get_by_text("sandbox").is_visible()
    finally:
        ada_context.close()


# Two submit events on the join form, a task apart, as a double click's are: whether each was stopped. Synthetic
# events send nothing themselves.
SECOND_SUBMIT_STOPPED = """async () => {
  const form = document.querySelector("form[data-submit-once]");
  const send = () => { const e = new Event("submit", {bubbles: true, cancelable: true});
                       form.dispatchEvent(e); return e.defaultPrevented; };
  const first = send();
  await new Promise(resolve => setTimeout(resolve, 50));
  return [first, send()];
}"""


def test_a_double_click_on_join_joins_once_and_lands_on_the_trainees_page(browser, page, live_server):
    """Where a browser sent both clicks, one joined and the other was refused as a name clash, and the browser
    showed that refusal; a trainee then joined again under another name, a second row on the grid."""
    page.goto(live_server.url + "/training")
    page.get_by_label("Name").fill("Double-click class")
    page.get_by_role("button", name="Create class").dblclick()  # a creating form too: one class
    join_link = page.locator("#join-link").inner_text()
    context = browser.new_context()
    context.set_default_timeout(BACKSTOP_MS)
    try:
        trainee = context.new_page()
        trainee.goto(join_link)
        # Chromium sends one of a double click's two submits by itself; other browsers send both, and the
        # page stops the second (a submit event that arrives after one went, in a later task).
        assert trainee.evaluate(SECOND_SUBMIT_STOPPED) == [False, True]
        trainee.reload()
        trainee.get_by_label("Your name").fill("Hedy")
        trainee.get_by_role("button", name="Join").dblclick()
        trainee.get_by_role("heading", name="Double-click class: Hedy").wait_for()
        assert "already joined" not in trainee.content()
    finally:
        context.close()
    with live_server.app.app_context():
        from console.training.models import Cohort

        (cohort,) = db.session.scalars(select(Cohort).where(Cohort.name == "Double-click class")).all()  # one
        members = db.session.scalars(select(CohortMember).where(CohortMember.cohort_id == cohort.id)).all()
        assert [m.name for m in members] == ["Hedy"]
