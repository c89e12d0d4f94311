"""Presenter mode: story files, each action, and the stage run step by step as the keyboard would."""

from __future__ import annotations

import html
import io
import json
import re
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import event, func, select

from console.extensions import db
from console.jobs.models import Job
from console.presenter import profiles, stories
from console.presenter.brand import DEFAULT_COLOR, from_args
from console.presenter.models import PresenterProfile
from console.requestlog.models import RequestLogEntry
from console.web.link import tokens as linktokens
from console.web.present import actions, drive
from console.web.webhooks import inbox
from console.webhooks.delivery_loop import deliver_due
from console.workspaces.models import Workspace
from console.world.seed_data import PLATFORM_IDS
from tests import images

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
            '{"title": "T", "steps": [{"caption": "x", "action": "set_inbox_behaviour", "behaviour": "slow"}]}',
            "behaviour must",
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


def _story(*steps: dict, **top) -> str:
    return json.dumps({"title": "T", **top, "steps": list(steps)})


TOKEN = {"caption": "token", "action": "create_link_token", "preset": "standard"}
OPEN = {"caption": "open", "action": "open_link"}
COMPLETE = {"caption": "done", "action": "complete_link", "scenario": "user_good"}


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        # A sales engineer's slips, each named with where it is and, for a near miss, what was meant.
        (_story({"caption": "x"}, sumary="s"), "unknown key 'sumary' (did you mean 'summary'?)"),
        ('{"title": "T", "step": [{"caption": "x"}]}', "unknown key 'step' (did you mean 'steps'?)"),
        (_story({"caption": "x", "puase": True}), "step 1: unknown key 'puase' (did you mean 'pause'?)"),
        (_story({**OPEN, "pasue": True}), "step 1: unknown key 'pasue' (did you mean 'pause'?)"),
        (_story({**TOKEN, "action": "create_link_tokens"}), "(did you mean 'create_link_token'?)"),
        (_story({**TOKEN, "preset": "standrd"}), "not 'standrd' (did you mean 'standard'?)"),
        (_story(TOKEN, {**COMPLETE, "scenario": "user_goood"}), "'user_goood' is not a key of the scenario"),
        (_story(TOKEN, {**COMPLETE, "scenario": "user_goood"}), "(did you mean 'user_good'?)"),
        (
            _story({"caption": "x", "action": "set_inbox_behaviour", "behavior": "fail"}),
            "does not take 'behavior' (did you mean 'behaviour'?)",
        ),
        (
            _story({"caption": "x", "action": "wait_for_event", "type": "direct_deposit_switch.add"}),
            "(did you mean 'direct_deposit_switch.added'?)",
        ),
        # Steps that could only fail on the stage, said when the file is read.
        (_story(OPEN), "step 1 (open_link): there is no Link token yet"),
        (_story(COMPLETE), "step 1 (complete_link): there is no Link token yet"),
        (_story(TOKEN, COMPLETE, OPEN), "step 3 (open_link): step 2 already used the Link token of step 1"),
        (_story({**TOKEN, "preset": "on_demand"}), "step 1 (create_link_token): an on_demand token"),
        (
            _story({**TOKEN, "preset": "federal"}, COMPLETE),
            "step 2 (complete_link): scenario 'user_good' cannot complete a federal token (the API would refuse it): "
            "use preset standard or direct (the token of step 1)",
        ),
        (_story(TOKEN, {**COMPLETE, "scenario": "prime_one"}), "use preset prime_one"),
        (
            _story({"caption": "x", "action": "wait_for_event", "type": "account.added", "refused": True}),
            "a refused webhook needs the receiver failing",
        ),
        (_story({"caption": "x", "action": "advance_clock", "days": 1e12}), "days must be at most 400"),
        (_story({"caption": "x", "action": "advance_clock", "business_days": 1000}), "at most 260"),
        ('{"title": "T", "steps": [{"caption": "x", "action": "advance_clock", "days": NaN}]}', "positive"),
        (
            '{"title": "T", "steps": [{"caption": "x", "action": "advance_clock", "hours": Infinity}]}',
            "positive",
        ),
        (
            _story({"caption": "x", "action": "wait_for_event", "type": "account.added", "count": 10**9}),
            "count must be a whole number from 1 to 50",
        ),
        # Words too long for the stage, and JSON slips in words.
        ('{"title": "' + "T" * 81 + '", "steps": [{"caption": "x"}]}', "title is longer than 80"),
        (_story({"caption": "x"}, summary="s" * 401), "summary is longer than 400"),
        ('{"title": "T", "steps": [{"caption": "x"},]}', "line 1, column 43"),
        ('{"title": "T", "steps": [{"caption": "x"},]}', "a comma after the last item"),
        ("{'title': 'T'}", "JSON needs double quotes"),
        (
            '{"title": "T", "steps": [{"caption": "a"} {"caption": "b"}]}',
            "a comma missing between two items?",
        ),
        (
            '{"title": "T", "steps": [{"caption": "a"}]}\n{"title": "U"}',
            "line 2, column 1: Extra data (something",
        ),
        ('{"title": "T", "steps": [{"caption": "one\ntwo"}]}', "a line break inside quotes?"),
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
        # HTML is shown as typed on the stage ("<b>" in front of the room): named instead.
        (_story({"caption": "Paid <b>early</b>"}), "step 1: the caption holds HTML (<b>)"),
        (_story({"caption": "x", "printed": "a<br/>b"}), "step 1: printed holds HTML (<br/>)"),
        (_story({"caption": "x"}, title="<i>Acme</i>"), "the title holds HTML (<i>)"),
        (_story({"caption": "x"}, summary='<a href="https://acme.example">us</a>'), "the summary holds HTML"),
    ],
)
def test_a_story_writers_mistake_is_named_before_the_demo(app, document, problem):
    with app.app_context(), pytest.raises(stories.StoryError, match=re.escape(problem)):
        stories.parse("bad", document)


@pytest.mark.parametrize(
    "preset", ["standard", "direct", "prime_one", "prime_several", "prime_none", "federal"]
)
@pytest.mark.parametrize(
    "scenario", ["user_good", "prime_one", "prime_several", "prime_none", "federal_sent"]
)
def test_a_scenario_is_refused_on_reading_exactly_when_the_api_would_refuse_it(
    app, visitor, preset, scenario
):
    """A scenario whose answers cannot complete the token's preset (prime_one after a standard token) failed only on
    the stage, with the API's 400; the read-time check agrees with the API on every pair."""
    with app.app_context():
        refused_on_reading = actions.scenario_misfit(preset, scenario) is not None
        ws = workspace(app, visitor)
        actions.perform(ws, "create_link_token", {"preset": preset})
        try:
            actions.perform(ws, "complete_link", {"scenario": scenario})
            refused_by_api = False
        except actions.ActionFailed:
            refused_by_api = True
    assert refused_on_reading == refused_by_api


def test_words_with_angle_brackets_that_are_not_html_are_fine(app):
    with app.app_context():
        story = stories.parse("ok", _story({"caption": "Press <Enter>: 1 < 2 and 3 > 2, I <3 it"}))
    assert story.steps[0].caption == "Press <Enter>: 1 < 2 and 3 > 2, I <3 it"


def test_a_story_file_saved_with_a_byte_order_mark_or_not_in_utf8(app, visitor, tmp_path):
    story = json.dumps({"title": "Saved by Notepad", "steps": [{"caption": "One step"}]})
    (tmp_path / "10-bom.json").write_bytes(b"\xef\xbb\xbf" + story.encode())
    (tmp_path / "20-latin1.json").write_bytes(story.replace("Notepad", "Caf\u00e9").encode("latin-1"))
    (tmp_path / "30-deep.json").write_text("[" * 3000 + "]" * 3000)
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    response = visitor.get("/present")
    assert response.status_code == 200  # one file nested too deeply made the whole page a 500
    page = html.unescape(response.get_data(as_text=True))
    assert "Saved by Notepad" in page and "1 step<br>" in page  # a BOM is no mistake; one step, not "1 steps"
    assert "20-latin1.json</code>: the file is not UTF-8 text (byte 0xe9 at position" in page
    assert "30-deep.json</code>: not valid JSON: nested too deeply" in page


def test_a_huge_story_file_says_how_big_it_is_and_the_limit(app, visitor, tmp_path):
    (tmp_path / "40-huge.json").write_text(_story({"caption": "x"}, summary="s" * 100) + " " * 70_000)
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    page = html.unescape(visitor.get("/present").get_data(as_text=True))
    assert "40-huge.json</code>: the file is 70,1" in page and "bytes, more than a story's 64,000" in page


def test_a_story_saved_as_yaml_or_with_another_ending_is_listed_not_skipped(app, visitor, tmp_path):
    """Only *.json files are read: a story saved as YAML, as "Story.JSON" or as Windows' "story.json.txt" was skipped
    without a word, simply missing on the day."""
    (tmp_path / "70-own.yaml").write_text("title: Our demo\nsteps:\n  - caption: Hello\n")
    (tmp_path / "71-caps.JSON").write_text(_story({"caption": "x"}))
    (tmp_path / "72-win.json.txt").write_text(_story({"caption": "x"}))
    (tmp_path / "notes.txt").write_text("not a story")
    (tmp_path / "73-folder.json").mkdir()  # a folder named like a story: "[Errno 21] ... '/srv/...'" before
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    page = html.unescape(visitor.get("/present").get_data(as_text=True))
    assert "73-folder.json</code>: the file cannot be read (is a directory)" in page
    assert str(tmp_path) not in page
    assert "70-own.yaml</code>: a story is a .json file (JSON, not YAML): save it as 70-own.json" in page
    assert "71-caps.JSON</code>: a story is a .json file (JSON): save it as 71-caps.json" in page
    assert "72-win.json.txt</code>: a story is a .json file (JSON): save it as 72-win.json" in page
    assert "notes.txt" not in page


def test_a_broken_storys_stage_address_says_what_is_wrong(app, visitor, tmp_path):
    (tmp_path / "70-own.json").write_text(_story(OPEN))
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    response = visitor.get("/present/70-own?brand=Acme")
    assert response.status_code == 404
    page = html.unescape(response.get_data(as_text=True))
    assert "70-own.json</code>: step 1 (open_link): there is no Link token yet" in page
    assert "another workspace" not in page
    assert visitor.get("/present/71-missing").status_code == 404


def test_a_story_added_as_a_file_appears_and_a_broken_one_is_listed(app, visitor, tmp_path):
    story = {"title": "Our own demo", "summary": "Made by sales.", "steps": [{"caption": "Hello {brand}"}]}
    (tmp_path / "70-own.json").write_text(json.dumps(story))
    (tmp_path / "80-broken.json").write_text('{"title": "Broken"}')
    (tmp_path / "notes.txt").write_text("not a story")
    (tmp_path / "Big Demo.json").write_text(json.dumps(story))  # a name that cannot be an address
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    page = visitor.get("/present").get_data(as_text=True)
    assert "Our own demo" in page and "/present/70-own" in page
    assert 'data-broken-story="80-broken"' in page and "needs steps" in page
    assert 'data-broken-story="Big Demo"' in page and "rename it, say to big-demo.json" in page
    assert "Standard switch" not in page  # the folder replaces the shipped stories
    stage = visitor.get("/present/70-own?step=1&brand=Acme+Bank").get_data(as_text=True)
    assert "Hello Acme Bank" in stage
    assert visitor.get("/present/80-broken").status_code == 404
    assert visitor.get("/present/..%2Fsecret").status_code == 404


def test_a_story_file_is_parsed_once_until_it_changes(app, visitor, tmp_path, monkeypatch):
    parsed = []
    real_parse = stories.parse
    monkeypatch.setattr(stories, "parse", lambda key, text: parsed.append(key) or real_parse(key, text))
    path = tmp_path / "70-own.json"
    path.write_text(json.dumps({"title": "First words", "steps": [{"caption": "One"}]}))
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    for _ in range(3):
        assert "First words" in visitor.get("/present").get_data(as_text=True)
    assert parsed == ["70-own"]  # read on every request, parsed on the first only
    # Edited in place (same name, same inode): the next request shows the edit, and a break in it.
    path.write_text(json.dumps({"title": "Second, longer words", "steps": [{"caption": "One"}]}))
    assert "Second, longer words" in visitor.get("/present").get_data(as_text=True)
    path.write_text('{"title": "Now broken, and long enough to differ"}')
    page = visitor.get("/present").get_data(as_text=True)
    assert 'data-broken-story="70-own"' in page and "needs steps" in page
    assert "needs steps" in visitor.get("/present").get_data(as_text=True)  # the remembered error, again
    assert parsed == ["70-own"] * 3


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


def test_the_presenter_page_says_the_controls_are_hidden_until_question_mark(visitor):
    """The stage's controls start hidden: the page preparing a demo must not say a key hides them."""
    page = visitor.get("/present").get_data(as_text=True)
    assert "hides the controls" not in page
    assert "<kbd>?</kbd> shows the controls" in page


# --- each action -----------------------------------------------------------------------------------


def test_create_link_token_calls_the_api_and_the_call_shows_on_the_right(app, visitor):
    with app.app_context():
        actions.perform(workspace(app, visitor), "create_link_token", {"preset": "federal"})
        rows = db.session.scalars(
            select(RequestLogEntry).where(
                RequestLogEntry.workspace_id == visitor.workspace_id, RequestLogEntry.step == "presenter"
            )
        ).all()
    assert [(r.method, r.path, r.status) for r in rows] == [("POST", "/sandbox/v1/link_tokens", 200)]
    text = visitor.get("/present/10-standard-switch?step=2").get_data(as_text=True)
    assert "/sandbox/v1/link_tokens" in text
    # Through the stage, the token carries the prospect's name: Link greets the person with it.
    visitor.post(step_url("10-standard-switch", 2) + "?brand=Acme+Bank")
    with app.app_context():
        row = db.session.scalars(
            select(RequestLogEntry)
            .where(RequestLogEntry.workspace_id == visitor.workspace_id, RequestLogEntry.step == "presenter")
            .order_by(RequestLogEntry.created_at.desc())
        ).first()
        assert json.loads(row.request_body)["org_name"] == "Acme Bank"


def test_open_link_needs_an_unused_token(app, visitor):
    with app.app_context():
        ws = workspace(app, visitor)
        with pytest.raises(
            actions.ActionFailed, match="the story was opened midway rather than run from its start"
        ):
            actions.perform(ws, "open_link", {})
        actions.perform(ws, "create_link_token", {"preset": "standard"})
        assert actions.perform(ws, "open_link", {}).open_link is True
        actions.perform(ws, "complete_link", {"scenario": "user_good"})
        with pytest.raises(actions.ActionFailed, match="already used"):
            actions.perform(ws, "open_link", {})


def test_back_then_forward_at_the_link_step_opens_link_again_where_it_stands(app, visitor):
    """At the open_link step the customer pressed Continue in the phone, the presenter pressed ← then →: step 3
    failed ("already used or has expired"), and its Retry failed the same way, in front of the room."""
    key = "10-standard-switch"
    for number in (1, 2, 3):
        assert run_step(app, visitor, key, number).status_code == 303
    with app.app_context():
        token = linktokens.newest(visitor.workspace_id).token
    visitor.get(f"/sandbox/link?token={token}")
    screen = visitor.post("/sandbox/link/step", data={"token": token, "action": "accept", "step": "intro"})
    assert 'data-screen="search"' in screen.get_data(as_text=True)
    visitor.get(f"/present/{key}?step=2")  # ←
    again = visitor.post(step_url(key, 3))  # →
    assert again.status_code == 303, html.unescape(again.get_data(as_text=True))[:3000]
    stage = visitor.get(again.headers["Location"]).get_data(as_text=True)
    assert f'data-open-token="{token}"' in stage  # Link opens again, at the search the customer reached


def test_a_stage_whose_run_another_tab_replaced_says_so_instead_of_acting_on_that_run(app, visitor):
    """Two tabs of one browser share its workspace: step 1 in tab B replaced tab A's run, and A's next step acted on
    B's run and failed with "No verified webhook has arrived yet. Is the worker running?"."""
    a, b = "50-failure-and-recovery", "10-standard-switch"
    for number in (1, 2, 3):
        assert run_step(app, visitor, a, number).status_code == 303
    stage_a = visitor.get(f"/present/{a}?step=3").get_data(as_text=True)
    run_a = re.search(r'name="run" value="([0-9a-f]{16})"', stage_a).group(1)
    assert run_step(app, visitor, b, 1).status_code == 303  # tab B starts its story
    stale = visitor.post(step_url(a, 4), {"run": run_a})
    page = html.unescape(stale.get_data(as_text=True))
    assert stale.status_code == 422
    assert (
        "Step 4 did not work." in page
        and "Another tab or window of this browser started a story since" in page
    )
    assert "Retry step 4" not in page  # it would fail the same way: the sentence says to press r
    # Tab A's panel keeps its own run rather than turning into tab B's.
    assert visitor.get(f"/present/backend?pulse=stale&run={run_a}").status_code == 204
    stage_b = visitor.get(f"/present/{b}?step=1").get_data(as_text=True)
    run_b = re.search(r'name="run" value="([0-9a-f]{16})"', stage_b).group(1)
    assert f"run={run_b}" in stage_b  # its own panel polls for its own run
    assert visitor.get(f"/present/backend?pulse=stale&run={run_b}").status_code == 200
    assert run_b != run_a
    assert visitor.post(step_url(b, 2), {"run": run_b}).status_code == 303  # the current run goes on


def test_a_stage_opened_midway_in_a_new_browser_says_to_start_from_the_title(app, other_visitor):
    """A bookmarked mid-story address in a browser with no run: → failed with "No Link token yet: a
    create_link_token step must come first", a story writer's words shown to the room."""
    key = "10-standard-switch"
    other_visitor.get(f"/present/{key}?step=3")
    page = html.unescape(other_visitor.post(step_url(key, 4)).get_data(as_text=True))
    assert "Step 4 did not work." in page and "Press r, then → to run it from the beginning." in page
    assert "create_link_token" not in page[page.index("Step 4 did not work.") :][:400]


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


def test_set_inbox_behaviour(app, visitor):
    with app.app_context():
        ws = workspace(app, visitor)
        actions.perform(ws, "set_inbox_behaviour", {"behaviour": "fail"})
        assert inbox.behaviour(ws.id) == "fail"
        actions.perform(ws, "set_inbox_behaviour", {"behaviour": "ok"})
        assert inbox.behaviour(ws.id) == "ok"


@pytest.mark.committing
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


@pytest.mark.committing
def test_a_webhook_the_receiver_answered_too_late_is_not_shown_delivered(app, visitor):
    """The receiver held its answer past the sender's timeout: the stage said "No webhook has arrived yet. Is the
    worker running?" while its panel showed the same event "delivered, answered 200"."""
    app.config["PRESENTER_WAIT_SECONDS"] = 0.3
    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 0.3
    with app.app_context():
        ws = workspace(app, visitor)
        actions.perform(ws, "create_link_token", {"preset": "standard"})
        actions.perform(ws, "complete_link", {"scenario": "user_good"})
        inbox.set_behaviour(ws.id, inbox.TIMEOUT)
        db.session.commit()
        deliver_due(app)
        with pytest.raises(
            actions.ActionFailed, match="reached the backend, but its receiver did not accept it"
        ):
            actions.perform(ws, "wait_for_event", {"type": "direct_deposit_switch.added"})
    page = html.unescape(visitor.get("/present/backend").get_data(as_text=True))  # the panel the room sees
    assert "answered too late (timed out): will retry" in page


# --- the stage, step by step -----------------------------------------------------------------------


@pytest.mark.committing
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
    assert 'The end.<span class="key-hint"> Press r to run it again.</span>' in page
    assert 'data-event-type="direct_deposit_switch.added"' in page
    assert "✓ signature verified" in page


@pytest.mark.committing
def test_federal_story_shows_processing_then_sent(app, visitor):
    key = "30-federal-benefits"
    for number in range(1, 5):
        assert run_step(app, visitor, key, number).status_code == 303
    assert 'data-job-outcome="processing"' in visitor.get(f"/present/{key}?step=4").get_data(as_text=True)
    assert run_step(app, visitor, key, 5).status_code == 303
    page = visitor.get(f"/present/{key}?step=5").get_data(as_text=True)
    assert 'data-job-outcome="sent"' in page
    assert "The sandbox clock moved ahead" in page
    # A Social Security switch is not a paycheck: the app in the phone says where the benefit payments go.
    assert "✓ Sent to the agency: your benefit payments will come here." in page
    assert "paycheck now comes here" not in page


@pytest.mark.committing
def test_failure_and_recovery_shows_the_refused_then_delivered_webhook(app, visitor):
    key = "50-failure-and-recovery"
    with app.app_context():
        total = len(stories.get(key).steps)
    for number in range(1, total + 1):
        assert run_step(app, visitor, key, number).status_code == 303, number
    page = visitor.get(f"/present/{key}?step={total}").get_data(as_text=True)
    # One row per event, and its state is true at the end: refused with 500, then delivered on the retry
    # (no red "will retry" badge beside an event that has arrived).
    assert "answered 500, then delivered on the retry" in page
    assert "will retry" not in page
    assert 'data-event-type="direct_deposit_switch.added"' in page
    with app.app_context():
        ws = workspace(app, visitor)
        assert actions.verified_count(ws, "direct_deposit_switch.added", refused=True) >= 1
        assert actions.verified_count(ws, "direct_deposit_switch.added", redelivered=True) == 1
        assert inbox.behaviour(ws.id) == "ok"


def test_open_link_step_hands_the_token_to_the_phone_and_a_reload_opens_link_again(app, visitor):
    key = "10-standard-switch"
    run_step(app, visitor, key, 1)
    run_step(app, visitor, key, 2)
    response = run_step(app, visitor, key, 3)
    assert response.headers["Location"] == f"/present/{key}?step=3"
    # The stage at the open_link step opens Link: after the redirect and after any reload (a plain GET).
    for _ in range(2):
        page = visitor.get(response.headers["Location"]).get_data(as_text=True)
        token = re.search(r'data-open-token="([^"]+)"', page).group(1)
        assert token and f'data-link-token="{token}"' in page
        assert 'data-link-step="2"' in page  # closing Link steps back to before its token (step 2)
    # Before the step that opens Link (← from step 3), Link stays closed; after it completes, too.
    assert 'data-open-token=""' in visitor.get(f"/present/{key}?step=2").get_data(as_text=True)
    run_step(app, visitor, key, 4)
    page = visitor.get(f"/present/{key}?step=4").get_data(as_text=True)
    assert 'data-open-token=""' in page and 'data-link-step="0"' in page


def test_closing_link_steps_back_with_a_sentence(visitor):
    page = visitor.get("/present/10-standard-switch?step=2&closed=1").get_data(as_text=True)
    assert (
        "Link was closed before the customer finished: press → to start again with a new Link token." in page
    )
    assert "Link was closed" not in visitor.get("/present/10-standard-switch?step=2").get_data(as_text=True)


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


@pytest.mark.committing  # the story's steps run on the stage's thread pool
def test_every_run_starts_on_a_fresh_workspace_at_step_1(app, visitor):
    key = "10-standard-switch"
    with app.app_context():
        total = len(stories.get(key).steps)
    for number in range(1, total + 1):
        assert run_step(app, visitor, key, number).status_code == 303
    before = visitor.workspace_id
    # r: back to the title screen (nothing deleted yet: the presenter may still print the summary).
    response = visitor.post(f"/present/{key}/restart?brand=Acme")
    assert response.status_code == 303
    assert response.headers["Location"] == f"/present/{key}?step=0&brand=Acme"
    assert visitor.workspace_id == before
    # The title screen never shows the finished run: no switch, no webhook, no token, no poll of the old data.
    for url in (response.headers["Location"], f"/present/{key}"):
        page = visitor.get(url).get_data(as_text=True)
        assert "Your paycheck now comes here" not in page
        assert "Nothing received yet." in page and "No calls yet." in page and "No switch yet." in page
        assert "data-poll" not in page and 'data-link-token=""' in page
    # Step 1 starts the run on a new workspace; the earlier one is gone.
    assert run_step(app, visitor, key, 1).status_code == 303
    after = visitor.workspace_id
    assert after != before
    with app.app_context():
        assert db.session.get(Workspace, before) is None
    page = visitor.get(f"/present/{key}?step=1").get_data(as_text=True)
    assert "Nothing received yet." in page and "Your paycheck now comes here" not in page


def test_the_stage_reads_the_newest_console_link_token_once(app, visitor):
    """The stage and its backend panel show the same token: one read of it, not one each."""
    key = "10-standard-switch"
    run_step(app, visitor, key, 2)
    with app.app_context():
        engine = db.engine
    reads: list[str] = []

    def statement(_conn, _cursor, sql, *_args):
        if sql.lstrip().upper().startswith("SELECT") and "FROM console_link_tokens" in sql:
            reads.append(sql)

    event.listen(engine, "before_cursor_execute", statement)
    try:
        page = visitor.get(f"/present/{key}?step=2")
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    assert page.status_code == 200
    assert len(reads) == 1, reads
    # The one read serves both: the phone's button carries the unused token, the panel shows its call.
    with app.app_context():
        kept = linktokens.newest(uuid.UUID(str(visitor.workspace_id)))
    text = page.get_data(as_text=True)
    assert f'data-link-token="{kept.token}"' in text
    assert "/sandbox/v1/link_tokens" in text


def test_a_mistyped_story_or_profile_link_says_so_in_the_presenters_words(visitor):
    # A sales engineer read "Nothing here, or it belongs to another workspace." and only "Back to the walkthrough".
    for path in ("/present/99-mistyped", "/p/no-such-profile", "/present/99-mistyped/summary"):
        response = visitor.get(path)
        page = html.unescape(response.get_data(as_text=True))
        assert response.status_code == 404, path
        assert "No demo here: the story's name or the profile's link is mistyped" in page, path
        assert "another workspace" not in page and 'id="presenter-ways"' in page, path
        assert 'href="/present"' in page.split('id="presenter-ways"', 1)[1]
    # Elsewhere the console's own words stay.
    assert "another workspace" in visitor.get("/events/not-an-event").get_data(as_text=True)


def test_unknown_story_and_step_are_404(visitor):
    assert visitor.get("/present/nope").status_code == 404
    assert visitor.post(step_url("10-standard-switch", 99)).status_code == 404
    assert visitor.post(step_url("10-standard-switch", 0)).status_code == 404


def test_the_backend_poll_answers_204_until_something_changes(app, visitor):
    run_step(app, visitor, "10-standard-switch", 1)
    page = visitor.get("/present/10-standard-switch?step=1").get_data(as_text=True)
    pulse = re.search(r"/present/backend\?pulse=([0-9a-f]+)", page).group(1)
    assert visitor.get(f"/present/backend?pulse={pulse}", htmx=True).status_code == 204
    run_step(app, visitor, "10-standard-switch", 2)
    run_step(app, visitor, "10-standard-switch", 4)
    fresh = visitor.get(f"/present/backend?pulse={pulse}", htmx=True)
    assert fresh.status_code == 200
    text = fresh.get_data(as_text=True)
    assert 'id="phone-status"' in text and 'hx-swap-oob="true"' in text
    assert uuid.UUID(str(visitor.workspace_id))


@pytest.mark.committing
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
    # Captions true on paper: the story's printed words where the stage's point at the screen.
    assert "Acme Bank&#39;s app: a customer wants their paycheck deposited there" in text
    assert "one POST." in text and "shown on the right" not in text and "This is Acme Bank" not in text
    assert "data-summary-date" in text and "data-summary-contact" not in text  # no profile: no contact
    assert 'data-summary-event="direct_deposit_switch.added"' in text
    # The path wraps on a phone only between its words: a <wbr> after each "/", "_" (and ".", "-").
    assert "POST /<wbr>sandbox/<wbr>v1/<wbr>link_<wbr>tokens" in text and "data-print" in text
    assert 'id="summary-no-run"' not in text
    assert visitor.get("/present/nope/summary").status_code == 404
    # Another story's summary does not print this run's webhooks and calls under its own title.
    other = visitor.get("/present/50-failure-and-recovery/summary").get_data(as_text=True)
    assert 'id="summary-no-run"' in other and "data-summary-event" not in other
    assert "POST /sandbox/v1/link_tokens" not in other
    assert 'href="/present/10-standard-switch/summary' in other  # where this browser's run's summary is


def save_profile(visitor, **form) -> tuple[str, str]:
    """Save a profile from the start page; return its slug and its private edit link (shown once)."""
    response = visitor.post("/present/profiles", {"brand": "Acme Bank", **form}, follow_redirects=True)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"  # the one page holding the edit secret
    text = response.get_data(as_text=True)
    slug = re.search(r'href="/p/([a-z2-7]{8})" data-short-url', text).group(1)
    edit_link = re.search(r'<code id="edit-link">([^<]+)</code>', text).group(1)
    return slug, edit_link


def test_reloading_the_saved_page_saves_no_second_profile_and_the_edit_link_leaves_once_edited(app, visitor):
    """The save answered its POST with the page: a reload re-sent the form and saved the profile again."""
    response = visitor.post("/present/profiles", {"brand": "Acme Bank"})
    assert response.status_code == 303
    saved = response.headers["Location"]
    with visitor.client.session_transaction() as session:
        kept = session["presenter_saved"]
    first = visitor.get(saved).get_data(as_text=True)
    edit_link = re.search(r'<code id="edit-link">([^<]+)</code>', first).group(1)
    assert edit_link.rsplit("/", 1)[1] not in str(kept)  # sealed in the cookie, not readable there
    again = visitor.get(saved).get_data(as_text=True)  # a reload: the same page, no second profile
    assert f'<code id="edit-link">{edit_link}</code>' in again
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(PresenterProfile)) == 1
    slug = kept["profile"]
    assert visitor.get(f"/present/profiles/{slug}/edit").status_code == 200  # moved on: the secret leaves
    later = visitor.get(saved)
    assert later.status_code == 302 and later.headers["Location"].endswith(f"/present/profiles/{slug}/edit")


def test_a_saved_profile_has_a_short_url_with_its_brand_and_stories(app, visitor, other_visitor):
    form = {"brand": "Acme Bank", "initials": "AK", "color": "#aa0011", "theme": "dark"}
    form["stories"] = ["30-federal-benefits", "10-standard-switch", "no-such-story"]
    response = visitor.post("/present/profiles", form, follow_redirects=True)
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    short = re.search(r'href="(/p/[a-z2-7]{8})" data-short-url', text).group(1)
    assert f'<code id="short-link">http://127.0.0.1:5000{short}</code>' in text
    assert re.search(rf'<code id="edit-link">http://127.0.0.1:5000{short}/edit/[\w-]{{32}}</code>', text)
    slug = short.rsplit("/", 1)[1]
    # Anyone with the link (another session, on the day of the call) gets the prepared demo.
    landing = other_visitor.get(short)
    assert landing.status_code == 200
    page = landing.get_data(as_text=True)
    offered = re.findall(r'<li class="picker-story" data-story="([^"]+)"', page)
    assert offered == ["30-federal-benefits", "10-standard-switch"]
    assert f"/present/30-federal-benefits?profile={slug}" in page and short in page
    assert "Edit this profile" not in page
    # ... but only the saving browser may change it.
    page = other_visitor.get(f"/present?profile={slug}").get_data(as_text=True)
    assert "data-profile-actions" not in page and "Only the browser that saved this profile" in page
    assert "data-profile-actions" in visitor.get(f"/present?profile={slug}").get_data(as_text=True)
    stage = other_visitor.get(f"/present/30-federal-benefits?profile={slug}").get_data(as_text=True)
    assert 'data-brand-color="#aa0011"' in stage and 'data-theme="dark"' in stage
    assert '<span class="app-logo" aria-hidden="true">AK</span>' in stage
    assert f"/present/30-federal-benefits/steps/1?profile={slug}" in stage
    assert other_visitor.get("/p/zzzzzzzz").status_code == 404
    # An unknown profile in a stage URL falls back to the default brand, never an error.
    assert "Northwind Lending" in other_visitor.get("/present/10-standard-switch?profile=nope").get_data(
        as_text=True
    )


def test_only_the_saving_browser_or_the_edit_link_may_change_a_profile(app, visitor, other_visitor):
    slug, edit_link = save_profile(visitor)
    assert visitor.get(f"/present/profiles/{slug}/edit").status_code == 200
    assert f'data-my-profile="{slug}"' in visitor.get("/present").get_data(as_text=True)
    # Another browser: every edit page and action answers 404, as for a profile that does not exist.
    for method, url in [
        ("get", f"/present/profiles/{slug}/edit"),
        ("post", f"/present/profiles/{slug}"),
        ("post", f"/present/profiles/{slug}/logo"),
        ("post", f"/present/profiles/{slug}/logo/delete"),
        ("post", f"/present/profiles/{slug}/delete"),
    ]:
        assert getattr(other_visitor, method)(url).status_code == 404, url
    assert other_visitor.get(f"/p/{slug}/edit/not-the-secret").status_code == 404
    with app.app_context():
        assert profiles.get(slug) is not None
    # The private edit link lets the other browser in.
    path = edit_link.split("127.0.0.1:5000", 1)[1]
    response = other_visitor.get(path)
    assert response.status_code == 302 and response.headers["Location"] == f"/present/profiles/{slug}/edit"
    assert other_visitor.get(f"/present/profiles/{slug}/edit").status_code == 200
    assert other_visitor.post(f"/present/profiles/{slug}", {"brand": "Other Bank"}).status_code == 303
    with app.app_context():
        assert profiles.get(slug).name == "Other Bank"


def test_edited_captions_show_on_the_stage_and_in_the_summary(app, visitor, other_visitor):
    slug, _ = save_profile(visitor, stories=["10-standard-switch"])
    key = "10-standard-switch"
    with app.app_context():
        story = stories.get(key)
    form = {
        "brand": "Acme Bank",
        "stories": [key],
        f"caption-{key}-1": "  Welcome to   {brand}: your paycheck, two days early. ",
        f"caption-{key}-2": story.steps[1].caption,  # unchanged: not stored
        f"caption-{key}-3": "",  # blank: the story's own
        "caption-30-federal-benefits-1": "{brand} pays benefits too.",  # a story not offered keeps its edit
    }
    response = visitor.post(f"/present/profiles/{slug}", form)
    assert response.status_code == 303 and response.headers["Location"] == f"/present/profiles/{slug}/edit"
    with app.app_context():
        profile = profiles.get(slug)
        assert profile.captions == {
            key: {"1": "Welcome to {brand}: your paycheck, two days early."},
            "30-federal-benefits": {"1": "{brand} pays benefits too."},
        }
        assert profile.stories == [key]
    edit = visitor.get(f"/present/profiles/{slug}/edit").get_data(as_text=True)
    assert "Edited. The story's own:" in edit and "Profile for Acme Bank saved." in edit
    # Anyone presenting the profile sees the edited caption, the prospect's name filled in.
    stage = other_visitor.get(f"/present/{key}?step=1&profile={slug}").get_data(as_text=True)
    assert "Welcome to Acme Bank: your paycheck, two days early." in stage
    step2 = other_visitor.get(f"/present/{key}?step=2&profile={slug}").get_data(as_text=True)
    assert story.steps[1].caption.replace("{brand}", "Acme Bank").replace("'", "&#39;") in step2
    summary = other_visitor.get(f"/present/{key}/summary?profile={slug}").get_data(as_text=True)
    assert "Welcome to Acme Bank: your paycheck, two days early." in summary
    # Without the profile, the story's own caption.
    assert "Welcome to" not in other_visitor.get(f"/present/{key}?step=1").get_data(as_text=True)


def test_a_caption_too_long_or_with_a_nul_is_named_on_the_form_and_nothing_is_saved(app, visitor):
    slug, _ = save_profile(visitor)
    key = "10-standard-switch"
    long = visitor.post(f"/present/profiles/{slug}", {"brand": "Renamed", f"caption-{key}-2": "x" * 401})
    text = long.get_data(as_text=True)
    assert long.status_code == 400
    assert "Nothing was saved." in text
    assert (
        f'<a href="#caption-{key}-2">Standard switch, step 2</a>: is 401 characters long; at most 400' in text
    )
    assert f'id="caption-{key}-2-error"' in text and 'aria-invalid="true"' in text
    tagged = visitor.post(f"/present/profiles/{slug}", {f"caption-{key}-3": "Paid <strong>early</strong>"})
    assert tagged.status_code == 400
    assert "Standard switch, step 3</a>: holds HTML (&lt;strong&gt;): write plain text" in tagged.get_data(
        as_text=True
    )
    nul = visitor.post(f"/present/profiles/{slug}", {f"caption-{key}-4": "a\x00b"})
    assert nul.status_code == 400
    assert "Standard switch, step 4</a>: must not contain NUL" in nul.get_data(as_text=True)
    named = visitor.post(f"/present/profiles/{slug}", {"brand": "Bad\x00Name"})
    assert named.status_code == 400 and "Company name</a>: must not contain NUL" in named.get_data(
        as_text=True
    )
    with app.app_context():
        profile = profiles.get(slug)
        assert (profile.name, profile.captions) == ("Acme Bank", {})


def upload(visitor, slug: str, data: bytes, name: str = "logo.png"):
    return visitor.post(f"/present/profiles/{slug}/logo", {"logo": (io.BytesIO(data), name)})


def test_a_png_or_jpeg_logo_is_kept_served_with_its_type_and_shown_in_the_phone(app, visitor, other_visitor):
    slug, _ = save_profile(visitor, initials="AB")
    logo = images.png(32, 32)
    response = upload(visitor, slug, logo)
    assert response.status_code == 303
    with app.app_context():
        digest = profiles.get(slug).logo_digest
    served = other_visitor.client.get(f"/p/{slug}/logo?v={digest}")
    assert served.status_code == 200 and served.data == logo
    assert served.mimetype == "image/png"
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    assert "max-age=86400" in served.headers["Cache-Control"]
    assert (
        other_visitor.client.get(f"/p/{slug}/logo", headers={"If-None-Match": f'"{digest}"'}).status_code
        == 304
    )
    stage = other_visitor.get(f"/present/10-standard-switch?profile={slug}").get_data(as_text=True)
    assert f'<img class="app-logo app-logo-img" src="/p/{slug}/logo?v={digest}" alt="">' in stage
    assert '<span class="app-logo"' not in stage
    # A JPEG replaces it.
    assert upload(visitor, slug, images.jpeg(), "logo.jpg").status_code == 303
    assert other_visitor.client.get(f"/p/{slug}/logo").mimetype == "image/jpeg"
    # Removed: the initials again, and no logo to serve.
    assert visitor.post(f"/present/profiles/{slug}/logo/delete").status_code == 303
    assert other_visitor.get(f"/p/{slug}/logo").status_code == 404
    stage = other_visitor.get(f"/present/10-standard-switch?profile={slug}").get_data(as_text=True)
    assert '<span class="app-logo" aria-hidden="true">AB</span>' in stage


@pytest.mark.parametrize(
    ("data", "name", "problem"),
    [
        (
            images.SVG,
            "logo.svg",
            "it must be a PNG or JPEG image (other formats, SVG included, are refused).",
        ),
        (images.GIF, "logo.gif", "it must be a PNG or JPEG image"),
        (b"", "empty.png", "choose a PNG or JPEG file."),
        (images.png()[:20], "cut.png", "starts like a PNG image but cannot be read as one"),
        (b"\xff\xd8\xff\xd9", "cut.jpg", "starts like a JPEG image but cannot be read as one"),
        (images.png(5000, 10, pixels=False), "wide.png", "5000 by 10 pixels; at most 2048 by 2048"),
        # 400 KB: read up to the limit only, so not "the file is 256 KB".
        (
            images.png() + b"\x00" * (400 * 1024),
            "big.png",
            "the file is larger than 256 KB, the most a logo may be.",
        ),
    ],
)
def test_a_bad_logo_is_refused_with_a_reason_on_the_page(app, visitor, data, name, problem):
    slug, _ = save_profile(visitor)
    response = upload(visitor, slug, data, name)
    text = response.get_data(as_text=True)
    assert response.status_code == 400
    assert 'id="logo-error"' in text and problem in text
    with app.app_context():
        assert profiles.get(slug).logo_digest is None


def test_an_upload_over_the_request_limit_is_refused_with_a_page(app, visitor):
    slug, _ = save_profile(visitor)
    body = b'--x\r\nContent-Disposition: form-data; name="logo"; filename="big.png"\r\n\r\n'
    body += images.png() + b"\x00" * (1024 * 1024) + b"\r\n--x--\r\n"
    response = visitor.client.post(
        f"/present/profiles/{slug}/logo", data=body, content_type="multipart/form-data; boundary=x"
    )
    assert response.status_code == 413
    assert "larger than this server accepts (1,024 KB)" in response.get_data(as_text=True)


def test_a_deleted_profile_is_gone_with_its_short_link_and_logo(app, visitor):
    slug, _ = save_profile(visitor)
    assert upload(visitor, slug, images.png()).status_code == 303
    response = visitor.post(f"/present/profiles/{slug}/delete")
    assert response.status_code == 303 and response.headers["Location"] == "/present"
    page = visitor.get("/present").get_data(as_text=True)
    assert "Profile for Acme Bank deleted" in page and f'data-my-profile="{slug}"' not in page
    assert visitor.get(f"/p/{slug}").status_code == 404
    assert visitor.get(f"/p/{slug}/logo").status_code == 404
    assert visitor.get(f"/present/profiles/{slug}/edit").status_code == 404


def test_the_stage_hands_the_next_complete_link_step_its_scenario_answers(app, visitor):
    key = "10-standard-switch"
    page = visitor.get(f"/present/{key}?step=3").get_data(as_text=True)
    plan = json.loads(html.unescape(re.search(r"data-drive='([^']+)'", page).group(1)))
    assert plan["scenario"] == "user_good"
    assert plan["search"] == {"text": "Paycrest", "kind": "platform", "id": str(PLATFORM_IDS["paycrest"])}
    assert plan["completion"]["credentials"] == {"username": "user_good", "password": "pass_good"}
    # Only a complete_link step gets a plan.
    assert "data-drive=" not in visitor.get(f"/present/{key}?step=2").get_data(as_text=True)
    federal = visitor.get("/present/30-federal-benefits?step=2").get_data(as_text=True)
    plan = json.loads(html.unescape(re.search(r"data-drive='([^']+)'", federal).group(1)))
    assert plan["completion"]["federal"]["social_security_number"] == "900000001"


def test_every_shipped_complete_link_step_has_a_plan(app):
    with app.app_context():
        for story in stories.all_stories()[0]:
            for step in story.steps:
                if step.action == "complete_link":
                    plan = drive.plan(step)
                    assert plan and plan["completion"], (story.key, step)
                    if "platform_id" in plan["completion"] or "program_id" in plan["completion"]:
                        assert plan["search"]["text"], (story.key, step)


# --- preparing a demo: one form, the short link's stage-picker, the summary -------------------------------


def test_one_form_uses_the_brand_or_saves_exactly_what_is_typed(app, visitor):
    page = visitor.get("/present").get_data(as_text=True)
    assert page.count("data-brand-form") == 1 and 'name="contact"' in page
    assert 'formaction="/present/brand"' in page
    # "Use this brand": the start page with the brand in its address (a POST with the form's CSRF token).
    used = visitor.post("/present/brand", {"brand": "Acme Bank", "color": "#aa0011", "theme": "dark"})
    assert used.status_code == 303
    assert used.headers["Location"] == "/present?brand=Acme+Bank&color=%23aa0011&theme=dark"
    # "Save as a profile" saves what the form holds now, without pressing "Use this brand" first.
    form = {"brand": "Beta Credit Union", "color": "#123456", "contact": "  Sam Seller ·  sam@example.com "}
    slug, _edit = save_profile(visitor, **form)
    with app.app_context():
        profile = profiles.get(slug)
        assert (profile.name, profile.color, profile.contact) == (
            "Beta Credit Union",
            "#123456",
            "Sam Seller · sam@example.com",
        )
    # The edit page changes the contact too.
    response = visitor.post(f"/present/profiles/{slug}", {"brand": "Beta Credit Union", "contact": "Alex"})
    assert response.status_code == 303
    with app.app_context():
        assert profiles.get(slug).contact == "Alex"


def test_the_short_link_is_a_clean_stage_picker_with_copy_buttons(app, visitor, other_visitor):
    slug, _edit = save_profile(
        visitor, brand="Acme Bank", stories=["10-standard-switch", "50-failure-and-recovery"]
    )
    page = other_visitor.get(f"/p/{slug}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "Demo for Acme Bank" in text
    # No console chrome: no navigation, no workspace bar, no sandbox badge, no "No workspace yet".
    for chrome in ("No workspace yet", "<nav", "workspace-bar", ">sandbox<", "Requests", "Timeline"):
        assert chrome not in text, chrome
    links = re.findall(r'data-copy="([^"]+)"', text)
    assert links == [
        f"http://127.0.0.1:5000/present/10-standard-switch?profile={slug}",
        f"http://127.0.0.1:5000/present/50-failure-and-recovery?profile={slug}",
        f"http://127.0.0.1:5000/p/{slug}",
    ]
    assert 'Copy link<span class="visually-hidden"> to Standard switch</span>' in text
    # The browser that saved it gets the way to its edit page; others do not.
    assert "Edit this profile" in visitor.get(f"/p/{slug}").get_data(as_text=True)


def test_the_summary_carries_the_logo_the_date_and_the_presenters_contact(app, visitor):
    slug, _edit = save_profile(visitor, brand="Acme Bank", contact="Sam Seller, sam@example.com")
    png = images.png(32, 32)
    assert (
        visitor.post(f"/present/profiles/{slug}/logo", {"logo": (io.BytesIO(png), "logo.png")}).status_code
        == 303
    )
    text = visitor.get(f"/present/10-standard-switch/summary?profile={slug}").get_data(as_text=True)
    assert f'src="/p/{slug}/logo?v=' in text and "Acme Bank's logo" in text
    assert "Sam Seller, sam@example.com" in text
    today = datetime.now(UTC).strftime("%d %B %Y").lstrip("0")
    assert f"<span data-summary-date>{today}</span>" in text


def test_the_shipped_stories_read_true_on_paper(app):
    """No printed caption points at the screen ("shown on the right", "on screen", "here"), and no caption reads
    out an event's API name to the room (the panel shows those, in small type)."""
    with app.app_context():
        for story in stories.all_stories()[0]:
            for step in story.steps:
                assert not re.search(r"\.added\b|direct_deposit_switch", step.caption), (
                    story.key,
                    step.caption,
                )
                assert not re.search(
                    r"on the (right|left)|on screen|\bhere\b|\bthis is\b", step.on_paper, re.I
                ), (
                    story.key,
                    step.on_paper,
                )


def test_the_shipped_captions_say_what_the_room_sees_link_do(app):
    """Captions read by a prospect: no stage direction in parentheses ("(Their first switch, done for the demo
    without opening Link.)"), and after an on-demand update's token no caption has the customer log in: Link
    skips login for it (spec, On-demand update; docs/link.md), and the story said "the customer only logs in"
    over a phone that showed no login screen."""
    with app.app_context():
        for story in stories.all_stories()[0]:
            preset = None
            for step in story.steps:
                assert not re.fullmatch(r"\(.*\)", step.caption.strip()), (story.key, step.caption)
                if step.action == "create_link_token":
                    preset = step.arguments.get("preset")
                elif preset == "on_demand" and step.action in ("open_link", "complete_link"):
                    assert not re.search(r"\blog(s|ged)? in\b", step.caption, re.I), (story.key, step.caption)
        on_demand = stories.get("40-on-demand-update")
        assert "on-demand update" in on_demand.title.lower()  # the spec's name for it


@pytest.mark.committing  # the story's steps run on the stage's thread pool
def test_the_panel_speaks_words_with_the_api_name_beside_and_keeps_set_up_calls_apart(app, visitor):
    key = "50-failure-and-recovery"
    for number in range(1, 5):  # a pending switch, the clock moved to its retry, the webhook received
        assert run_step(app, visitor, key, number).status_code == 303, number
    page = visitor.get(f"/present/{key}?step=4").get_data(as_text=True)
    calls = page[page.index('data-feed="calls"') : page.index('data-feed="setup"')]
    setup = page[page.index('data-feed="setup"') :]
    # Words a prospect reads, the API's name in small type under them.
    assert "Create a Link token" in calls and "POST /sandbox/v1/link_tokens" in calls
    assert '<span class="feed-main">Direct deposit switch succeeded</span>' in page
    assert "<code>direct_deposit_switch.added · success</code>" in page
    assert "direct_deposit_switch: SUCCESS" not in page
    # The stage's inbox registration, the clock and the headless completion: set-up, not the backend's calls.
    for path in ("/webhooks", "/sandbox/clock/advance_to_next", "/complete"):
        assert path in setup and path not in calls, path
    assert "Set-up and sandbox-only calls, not your backend's (3)" in page
    # One clock on the stage, the workspace's, real time on hover; no "(real time)" stamps beside it.
    assert page.count("data-stage-clock") == 1 and 'title="Real time: ' in page
    assert "(real time)" not in page


@pytest.mark.committing  # the story's steps run on the stage's thread pool
def test_the_failure_story_shows_every_customers_switch_and_names_the_customer_on_each_webhook(app, visitor):
    key = "50-failure-and-recovery"
    for number in range(1, 7):  # the first customer's switch done, the second customer's token created
        assert run_step(app, visitor, key, number).status_code == 303, number
    page = visitor.get(f"/present/{key}?step=6").get_data(as_text=True)
    switch = page[page.index('aria-labelledby="bk-timeline"') : page.index('aria-labelledby="bk-calls"')]
    # The first customer's switch stays on the panel while the second customer has none yet.
    assert "No switch yet." not in switch
    assert "Direct deposit switch <span" in switch and "succeeded" in switch
    earlier = re.findall(r'data-event-type="direct_deposit_switch.added".*?</li>', page, re.S)
    assert "data-customer" not in earlier[0]  # one customer so far: no name on every row
    for number in range(7, 12):
        assert run_step(app, visitor, key, number).status_code == 303, number
    page = visitor.get(f"/present/{key}?step=11").get_data(as_text=True)
    switch = page[page.index('aria-labelledby="bk-timeline"') : page.index('aria-labelledby="bk-calls"')]
    # At the end both switches, each under its customer, the newest first: the second's (at once), then where
    # the first's ended (succeeded; its pending start was its history, shown while it was the newest).
    assert switch.count('data-feed="timeline"') == 2
    first = switch[switch.index("Customer 1") :]
    assert switch.index("Customer 2") < switch.index("Customer 1")
    assert "succeeded" in first and "pending" not in first
    # Every webhook row names whose event it is: the switch that succeeded at the end is the second customer's.
    webhooks = page[page.index('data-feed="webhooks"') : page.index('aria-labelledby="bk-timeline"')]
    rows = re.findall(r'<li class="feed-item" data-event-type="([^"]+)".*?</li>', webhooks, re.S)
    items = re.findall(r'<li class="feed-item" data-event-type=.*?</li>', webhooks, re.S)
    assert items and all("data-customer>· Customer " in item for item in items), webhooks
    switch_rows = [
        item for kind, item in zip(rows, items, strict=True) if kind == "direct_deposit_switch.added"
    ]
    assert "· Customer 2</span>" in switch_rows[0] and "<code>end_user_id user_" in switch_rows[0]
    assert any("· Customer 1</span>" in item for item in items)


def test_brand_in_a_storys_title_and_summary_is_the_prospects_name_everywhere(
    app, visitor, other_visitor, tmp_path
):
    """The stage filled {brand} in a story's summary, but the start page, the short link's picker and the printed
    summary showed "{brand}" itself to the prospect."""
    story = {
        "title": "{brand}: paychecks that arrive",
        "summary": "A member moves their paycheck to {brand}.",
        "steps": [{"caption": "Welcome to {brand}."}],
    }
    (tmp_path / "60-own.json").write_text(json.dumps(story))
    app.config["PRESENTER_STORIES_DIR"] = str(tmp_path)
    slug, _ = save_profile(visitor, brand="Harbor Bank")
    pages = {
        "start": visitor.get("/present?brand=Harbor+Bank"),
        "picker": other_visitor.get(f"/p/{slug}"),
        "stage": other_visitor.get(f"/present/60-own?profile={slug}"),
        "summary": other_visitor.get(f"/present/60-own/summary?profile={slug}"),
    }
    for name, response in pages.items():
        text = html.unescape(response.get_data(as_text=True))
        assert response.status_code == 200, name
        assert "{brand}" not in text, name
        assert "Harbor Bank: paychecks that arrive" in text, name
        assert "A member moves their paycheck to Harbor Bank." in text, name


@pytest.mark.committing
def test_the_printed_summary_names_whose_webhook_each_row_is(app, visitor):
    """On paper the failure story's two "Direct deposit switch succeeded" rows did not say which customer's each
    was; the stage did."""
    key = "50-failure-and-recovery"
    for number in range(1, 12):
        assert run_step(app, visitor, key, number).status_code == 303, number
    page = visitor.get(f"/present/{key}/summary").get_data(as_text=True)
    rows = re.findall(r'<tr data-summary-event="direct_deposit_switch.added">.*?</tr>', page, re.S)
    assert len(rows) >= 2
    assert any("· Customer 1</span>" in r for r in rows) and any("· Customer 2</span>" in r for r in rows)


def test_back_to_the_stage_from_the_summary_returns_to_the_step_it_was_opened_at(app, visitor):
    """`s` mid-demo, then "Back to the stage", went to the story's title, where → starts a new run on a fresh
    workspace: the demo's run was lost to one mistaken key."""
    key = "10-standard-switch"
    for number in (1, 2):
        assert run_step(app, visitor, key, number).status_code == 303
    stage = html.unescape(visitor.get(f"/present/{key}?step=2&brand=Acme").get_data(as_text=True))
    summary_href = re.search(r'data-summary href="([^"]+)"', stage).group(1)
    assert "step=2" in summary_href
    summary = html.unescape(visitor.get(summary_href).get_data(as_text=True))
    back = re.search(r'data-back-to-stage href="([^"]+)"', summary).group(1)
    assert back.startswith(f"/present/{key}?") and "step=2" in back and "brand=Acme" in back
    assert 'data-step="2"' in visitor.get(back).get_data(as_text=True)
    for bad in ("x", "-1", "999"):
        page = visitor.get(f"/present/{key}/summary?step={bad}")
        assert page.status_code == 200
