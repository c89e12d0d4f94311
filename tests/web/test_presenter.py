"""Presenter mode: story files, each action, and the stage run step by step as the keyboard would."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from sqlalchemy import select

from console.extensions import db
from console.jobs.models import Job
from console.presenter import actions, stories
from console.presenter.brand import DEFAULT_COLOR, from_args
from console.web import inbox
from console.web.models import ConsoleRequest
from console.webhooks.worker import deliver_due
from console.workspaces.models import Workspace

SHIPPED = [
    "10-standard-switch",
    "20-platform-matching-one",
    "25-platform-matching-several",
    "30-federal-benefits",
    "40-on-demand-update",
    "50-failure-and-recovery",
]


def step_url(key: str, number: int) -> str:
    return f"/present/{key}/steps/{number}"


def run_step(app, visitor, key: str, number: int):
    """One key press: the step's POST; a wait stands in for the worker by delivering what is due first."""
    with app.app_context():
        story = stories.get(key)
        action = story.steps[number - 1].action
    if action == "wait_for_event":
        with app.app_context():
            deliver_due(app)
    return visitor.post(step_url(key, number))


def workspace(app, visitor) -> Workspace:
    return db.session.get(Workspace, visitor.workspace_id)


# --- story files ---------------------------------------------------------------------------------


def test_the_shipped_stories_all_load(app):
    with app.app_context():
        good, broken = stories.all_stories()
    assert [s.key for s in good] == SHIPPED
    assert broken == []
    assert all(s.steps and s.title for s in good)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("not json", "not valid JSON"),
        ("[]", "one JSON object"),
        ('{"steps": [{"caption": "x"}]}', "needs a title"),
        ('{"title": "T", "steps": []}', "at least one step"),
        ('{"title": "T", "steps": [{"action": "open_link"}]}', "step 1 needs a caption"),
        ('{"title": "T", "steps": [{"caption": "x", "action": "dance"}]}', "unknown action 'dance'"),
        ('{"title": "T", "steps": [{"caption": "x", "preset": "standard"}]}', "given without an action"),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "create_link_token"}]}',
            "takes exactly preset",
        ),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "create_link_token", "preset": "nope"}]}',
            "preset must be one of",
        ),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "complete_link", "scenario": "zz"}]}',
            "scenario",
        ),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "advance_clock", "days": 1, "hours": 2}]}',
            "exactly one of",
        ),
        ('{"title": "T", "steps": [{"caption": "x", "action": "advance_clock", "days": -1}]}', "positive"),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "advance_clock", "business_days": 1.5}]}',
            "whole number",
        ),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "set_inbox_mode", "mode": "slow"}]}',
            "mode must",
        ),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "wait_for_event", "type": "x.y"}]}',
            "type must",
        ),
        ('{"title": "T", "steps": [{"caption": "x", "action": "open_link", "pause": "yes"}]}', "pause must"),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "wait_for_event", "type": "account.added", '
            '"refused": true, "redelivered": true}]}',
            "not both",
        ),
        ('{"title": "T", "steps": [{"caption": "x", "action": "open_link", "now": true}]}', "no arguments"),
    ],
)
def test_a_bad_story_file_says_what_is_wrong(app, document, problem):
    with app.app_context(), pytest.raises(stories.StoryError, match=re.escape(problem)):
        stories.parse("bad", document)


def test_a_story_added_as_a_file_appears_and_a_broken_one_is_listed(app, visitor, tmp_path):
    story = {"title": "Our own demo", "summary": "Made by sales.", "steps": [{"caption": "Hello {brand}"}]}
    (tmp_path / "70-own.json").write_text(json.dumps(story))
    (tmp_path / "80-broken.json").write_text('{"title": "Broken"}')
    (tmp_path / "notes.txt").write_text("not a story")
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    page = visitor.get("/present").get_data(as_text=True)
    assert "Our own demo" in page and "/present/70-own" in page
    assert 'data-broken-story="80-broken"' in page and "needs steps" in page
    assert "Standard switch" not in page  # the folder replaces the shipped stories
    stage = visitor.get("/present/70-own?step=1&brand=Acme+Bank").get_data(as_text=True)
    assert "Hello Acme Bank" in stage
    assert visitor.get("/present/80-broken").status_code == 404
    assert visitor.get("/present/..%2Fsecret").status_code == 404


# --- the brand -----------------------------------------------------------------------------------


def test_the_brand_comes_from_the_url_and_falls_back_quietly():
    brand = from_args({"brand": "  Acme   Bank ", "color": "#AA0011", "theme": "dark"})
    assert (brand.name, brand.initials, brand.color, brand.theme) == ("Acme Bank", "AB", "#aa0011", "dark")
    assert brand.args() == {"brand": "Acme Bank", "color": "#aa0011", "theme": "dark"}
    odd = from_args({"brand": "x" * 100, "color": "red;}", "theme": "neon", "initials": "ABCDE"})
    assert (len(odd.name), odd.color, odd.theme, odd.initials) == (40, DEFAULT_COLOR, "light", "ABC")
    assert from_args({}).args() == {}


def test_the_stage_shows_the_brand_in_the_phone(visitor):
    page = visitor.get("/present/10-standard-switch?brand=Acme+Bank&color=%23aa0011&theme=dark")
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert 'data-brand-color="#aa0011"' in text and 'data-theme="dark"' in text
    assert '<span class="app-logo" aria-hidden="true">AB</span>' in text
    assert "Acme Bank" in text
    # Every control carries the brand on to the next stage.
    assert "/present/10-standard-switch/steps/1?brand=Acme+Bank" in text


def test_the_console_navigation_links_the_presenter(visitor):
    assert 'href="/present"' in visitor.get("/").get_data(as_text=True)


# --- each action -----------------------------------------------------------------------------------


def test_create_link_token_calls_the_api_and_the_call_shows_on_the_right(app, visitor):
    with app.app_context():
        actions.perform(workspace(app, visitor), "create_link_token", {"preset": "federal"})
        rows = db.session.scalars(
            select(ConsoleRequest).where(
                ConsoleRequest.workspace_id == visitor.workspace_id, ConsoleRequest.step == "presenter"
            )
        ).all()
    assert [(r.method, r.path, r.status) for r in rows] == [("POST", "/sandbox/v1/link_tokens", 200)]
    text = visitor.get("/present/10-standard-switch?step=2").get_data(as_text=True)
    assert "/sandbox/v1/link_tokens" in text
    # Through the stage, the token carries the prospect's name: Link greets the person with it.
    visitor.post(step_url("10-standard-switch", 2) + "?brand=Acme+Bank")
    with app.app_context():
        row = db.session.scalars(
            select(ConsoleRequest)
            .where(ConsoleRequest.workspace_id == visitor.workspace_id, ConsoleRequest.step == "presenter")
            .order_by(ConsoleRequest.created_at.desc())
        ).first()
        assert json.loads(row.request_body)["org_name"] == "Acme Bank"


def test_open_link_needs_an_unused_token(app, visitor):
    with app.app_context():
        ws = workspace(app, visitor)
        with pytest.raises(actions.ActionFailed, match="create_link_token step must come first"):
            actions.perform(ws, "open_link", {})
        actions.perform(ws, "create_link_token", {"preset": "standard"})
        assert actions.perform(ws, "open_link", {}).open_link is True
        actions.perform(ws, "complete_link", {"scenario": "user_good"})
        with pytest.raises(actions.ActionFailed, match="already used"):
            actions.perform(ws, "open_link", {})


def test_complete_link_runs_the_scenario_and_a_refusal_is_a_sentence(app, visitor):
    with app.app_context():
        ws = workspace(app, visitor)
        actions.perform(ws, "create_link_token", {"preset": "standard"})
        actions.perform(ws, "complete_link", {"scenario": "user_pending_success"})
        job = db.session.scalars(select(Job).where(Job.workspace_id == ws.id)).one()
        assert job.outcome == "pending"
        # Finished already (by hand in the phone, say): the step follows instead of failing.
        assert actions.perform(ws, "complete_link", {"scenario": "user_good"}).summary == (
            "Link was completed in the phone"
        )
        actions.perform(ws, "create_link_token", {"preset": "federal"})
        with pytest.raises(
            actions.ActionFailed, match=r"Completing Link was refused by the API \(\d{3}\): \w"
        ):
            actions.perform(ws, "complete_link", {"scenario": "user_good"})


def test_advance_clock_by_business_days_and_to_the_next_item(app, visitor):
    with app.app_context():
        ws = workspace(app, visitor)
        actions.perform(ws, "advance_clock", {"business_days": 1})
        db.session.refresh(ws)
        assert ws.clock_offset_seconds >= 86400
        with pytest.raises(actions.ActionFailed, match="Nothing is scheduled"):
            actions.perform(ws, "advance_clock", {"next": True})
        actions.perform(ws, "create_link_token", {"preset": "standard"})
        actions.perform(ws, "complete_link", {"scenario": "user_pending_success"})
        actions.perform(ws, "advance_clock", {"next": True})
        job = db.session.scalars(select(Job).where(Job.workspace_id == ws.id)).one()
        assert job.outcome == "success"


def test_set_inbox_mode(app, visitor):
    with app.app_context():
        ws = workspace(app, visitor)
        actions.perform(ws, "set_inbox_mode", {"mode": "fail"})
        assert inbox.behaviour(ws.id) == "fail"
        actions.perform(ws, "set_inbox_mode", {"mode": "ok"})
        assert inbox.behaviour(ws.id) == "ok"


def test_wait_for_event_finds_a_verified_delivery_and_gives_up_quickly(app, visitor):
    app.config["PRESENTER_WAIT_SECONDS"] = 0.3
    with app.app_context():
        ws = workspace(app, visitor)
        with pytest.raises(actions.ActionFailed, match=r"No verified account\.added webhook has arrived yet"):
            actions.perform(ws, "wait_for_event", {"type": "account.added"})
        actions.perform(ws, "create_link_token", {"preset": "standard"})
        actions.perform(ws, "complete_link", {"scenario": "user_good"})
        deliver_due(app)
        outcome = actions.perform(ws, "wait_for_event", {"type": "account.added"})
        assert outcome.summary == "verified account.added webhook arrived"
        with pytest.raises(actions.ActionFailed):
            actions.perform(ws, "wait_for_event", {"type": "account.added", "count": 2})
        with pytest.raises(actions.ActionFailed, match="delivered again after a refusal"):
            actions.perform(ws, "wait_for_event", {"type": "account.added", "redelivered": True})


# --- the stage, step by step -----------------------------------------------------------------------


@pytest.mark.parametrize("key", SHIPPED)
def test_every_shipped_story_runs_to_the_end(app, visitor, key):
    with app.app_context():
        total = len(stories.get(key).steps)
    for number in range(1, total + 1):
        response = run_step(app, visitor, key, number)
        assert response.status_code == 303, (number, response.get_data(as_text=True)[:2000])
        assert f"step={number}" in response.headers["Location"]
    page = visitor.get(f"/present/{key}?step={total}").get_data(as_text=True)
    assert "did not work" not in page
    assert "The end. Press r to run it again." in page
    assert 'data-event-type="direct_deposit_switch.added"' in page
    assert "✓ signature verified" in page


def test_federal_story_shows_processing_then_sent(app, visitor):
    key = "30-federal-benefits"
    for number in range(1, 5):
        assert run_step(app, visitor, key, number).status_code == 303
    assert 'data-job-outcome="processing"' in visitor.get(f"/present/{key}?step=4").get_data(as_text=True)
    assert run_step(app, visitor, key, 5).status_code == 303
    page = visitor.get(f"/present/{key}?step=5").get_data(as_text=True)
    assert 'data-job-outcome="sent"' in page
    assert "the sandbox clock moved" in page


def test_failure_and_recovery_shows_the_refused_then_delivered_webhook(app, visitor):
    key = "50-failure-and-recovery"
    with app.app_context():
        total = len(stories.get(key).steps)
    for number in range(1, total + 1):
        assert run_step(app, visitor, key, number).status_code == 303, number
    page = visitor.get(f"/present/{key}?step={total}").get_data(as_text=True)
    assert "answered 500: will be retried" in page
    assert 'data-event-type="direct_deposit_switch.added"' in page
    with app.app_context():
        ws = workspace(app, visitor)
        assert actions.verified_count(ws, "direct_deposit_switch.added", refused=True) >= 1
        assert actions.verified_count(ws, "direct_deposit_switch.added", redelivered=True) == 1
        assert inbox.behaviour(ws.id) == "ok"


def test_open_link_step_hands_the_token_to_the_phone(app, visitor):
    key = "10-standard-switch"
    run_step(app, visitor, key, 1)
    run_step(app, visitor, key, 2)
    response = run_step(app, visitor, key, 3)
    assert "open=1" in response.headers["Location"]
    page = visitor.get(response.headers["Location"]).get_data(as_text=True)
    token = re.search(r'data-open-token="([^"]+)"', page).group(1)
    assert token and f'data-link-token="{token}"' in page
    # Back (a plain GET) never opens Link again.
    assert 'data-open-token=""' in visitor.get(f"/present/{key}?step=3").get_data(as_text=True)


def test_a_failed_step_says_what_failed_and_offers_a_retry(app, visitor):
    app.config["PRESENTER_WAIT_SECONDS"] = 0
    key = "10-standard-switch"
    response = visitor.post(step_url(key, 5))  # the wait, with no event on its way
    text = response.get_data(as_text=True)
    assert response.status_code == 422
    assert "Step 5 did not work." in text and "No verified direct_deposit_switch.added webhook" in text
    assert f'action="/present/{key}/steps/5"' in text and "Retry step 5" in text
    assert "Traceback" not in text and '{"error"' not in text
    # The stage stays on the step before the failed one.
    assert 'data-step="4"' in text


def test_an_unexpected_error_is_a_sentence_not_a_traceback(app, visitor, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setitem(actions.ACTIONS, "create_link_token", (boom, actions.ACTIONS["create_link_token"][1]))
    response = visitor.post(step_url("10-standard-switch", 2))
    text = response.get_data(as_text=True)
    assert response.status_code == 422
    assert "Something went wrong on the server" in text and "secret internals" not in text


def test_restart_runs_on_a_fresh_workspace(app, visitor):
    key = "10-standard-switch"
    run_step(app, visitor, key, 2)
    before = visitor.workspace_id
    response = visitor.post(f"/present/{key}/restart?brand=Acme")
    assert response.status_code == 303
    assert response.headers["Location"] == f"/present/{key}?step=0&brand=Acme"
    after = visitor.workspace_id
    assert after != before
    with app.app_context():
        assert db.session.get(Workspace, before) is None
    page = visitor.get(response.headers["Location"]).get_data(as_text=True)
    assert "No calls yet." in page or "/sandbox/v1/link_tokens" not in page


def test_unknown_story_and_step_are_404(visitor):
    assert visitor.get("/present/nope").status_code == 404
    assert visitor.post(step_url("10-standard-switch", 99)).status_code == 404
    assert visitor.post(step_url("10-standard-switch", 0)).status_code == 404


def test_the_backend_poll_answers_204_until_something_changes(app, visitor):
    page = visitor.get("/present/10-standard-switch").get_data(as_text=True)
    pulse = re.search(r"/present/backend\?pulse=([0-9a-f]+)", page).group(1)
    assert visitor.get(f"/present/backend?pulse={pulse}", htmx=True).status_code == 204
    run_step(app, visitor, "10-standard-switch", 2)
    run_step(app, visitor, "10-standard-switch", 4)
    fresh = visitor.get(f"/present/backend?pulse={pulse}", htmx=True)
    assert fresh.status_code == 200
    text = fresh.get_data(as_text=True)
    assert 'id="phone-status"' in text and 'hx-swap-oob="true"' in text
    assert uuid.UUID(str(visitor.workspace_id))


def test_the_printable_summary_lists_the_story_the_webhooks_and_the_calls(app, visitor):
    key = "10-standard-switch"
    with app.app_context():
        total = len(stories.get(key).steps)
    for number in range(1, total + 1):
        assert run_step(app, visitor, key, number).status_code == 303
    page = visitor.get(f"/present/{key}/summary?brand=Acme+Bank")
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "Standard switch: what we showed Acme Bank" in text
    assert "This is Acme Bank&#39;s app." in text
    assert 'data-summary-event="direct_deposit_switch.added"' in text
    assert "POST /sandbox/v1/link_tokens" in text and "data-print" in text
    assert visitor.get("/present/nope/summary").status_code == 404


def test_a_saved_profile_has_a_short_url_with_its_brand_and_stories(app, visitor, other_visitor):
    form = {"brand": "Acme Bank", "initials": "AK", "color": "#aa0011", "theme": "dark"}
    form["stories"] = ["30-federal-benefits", "10-standard-switch", "no-such-story"]
    response = visitor.post("/present/profiles", form)
    assert response.status_code == 303
    short = response.headers["Location"]
    assert re.fullmatch(r"/p/[a-z2-7]{8}", short)
    slug = short.rsplit("/", 1)[1]
    # Anyone with the link (another session, on the day of the call) gets the prepared demo.
    landing = other_visitor.get(short)
    assert landing.status_code == 302 and landing.headers["Location"] == f"/present?profile={slug}"
    page = other_visitor.get(landing.headers["Location"]).get_data(as_text=True)
    offered = re.findall(r'<li data-story="([^"]+)"', page)
    assert offered == ["30-federal-benefits", "10-standard-switch"]
    assert f"/present/30-federal-benefits?profile={slug}" in page and short in page
    stage = other_visitor.get(f"/present/30-federal-benefits?profile={slug}").get_data(as_text=True)
    assert 'data-brand-color="#aa0011"' in stage and 'data-theme="dark"' in stage
    assert '<span class="app-logo" aria-hidden="true">AK</span>' in stage
    assert f"/present/30-federal-benefits/steps/1?profile={slug}" in stage
    assert other_visitor.get("/p/zzzzzzzz").status_code == 404
    # An unknown profile in a stage URL falls back to the default brand, never an error.
    assert "Northwind Lending" in other_visitor.get("/present/10-standard-switch?profile=nope").get_data(
        as_text=True
    )
