"""Training mode: cohorts, the trainer's grid, and exercises ticked by what a trainee's own backend does.

"Outside" traffic is sent with a separate Flask test client straight to the API, as a trainee's backend
would; the console's own calls (its in-process client) must never tick an exercise.
"""

from __future__ import annotations

import csv
import io
import re
import socket
import threading
import uuid
from html import unescape

import pytest
from flask import g
from markupsafe import escape
from sqlalchemy import func, select

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.conformance import runs
from console.extensions import db
from console.keys.models import ApiKey
from console.link_tokens.models import LinkToken
from console.training import exercises
from console.training.models import Cohort, CohortMember
from console.web.shared.workspace_session import api_client
from console.web.webhooks import inbox
from console.webhooks.models import SKIPPED, Webhook, WebhookDelivery
from console.webhooks.services import HELD_REASON
from console.workspaces.models import Workspace
from console.world.seed_data import PLATFORM_IDS
from tests.api.test_conformance import Endpoint
from tests.conftest import Api
from tests.factories import LINK_TOKEN
from tests.web.conftest import Visitor
from tests.web.helpers import sandbox_secret

PAYCREST = str(PLATFORM_IDS["paycrest"])
SSA = str(PLATFORM_IDS["ssa-retirement"])
EVENTS = ["account.added", "direct_deposit_switch.added"]


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def create_cohort(trainer: Visitor, name="Tuesday class", keys=exercises.KEYS) -> dict:
    trainer.get("/training")
    response = trainer.post("/training/cohorts", {"name": name, "exercises": list(keys)})
    assert response.status_code == 303, response.get_data(as_text=True)
    response = trainer.get(response.headers["Location"])
    assert response.status_code == 200, response.get_data(as_text=True)
    page = response.get_data(as_text=True)
    join = re.search(r'id="join-link">([^<]+)<', page).group(1)
    trainer_link = re.search(r'id="trainer-link">([^<]+)<', page).group(1)
    cohort_id = re.search(r"/training/([0-9a-f-]{36})/trainer/", trainer_link).group(1)
    return {"id": cohort_id, "join": join, "trainer": trainer_link}


def join(app, cohort: dict, name: str) -> Visitor:
    trainee = Visitor(app.test_client())
    path = cohort["join"].split("://", 1)[1].split("/", 1)[1]
    assert trainee.get("/" + path).status_code == 200
    response = trainee.post("/" + path, {"name": name})
    assert response.status_code == 302, response.get_data(as_text=True)
    assert response.headers["Location"].endswith("/training/me")
    return trainee


def backend(app, trainee: Visitor) -> Api:
    """The trainee's own backend: another HTTP client, the workspace's sandbox key, straight to the API."""
    return Api(app.test_client(), sandbox_secret(app, trainee.workspace_id), "sandbox")


def result(app, trainee: Visitor, key: str) -> exercises.Result:
    with app.app_context():
        workspace = db.session.get(Workspace, trainee.workspace_id)
        return exercises.BY_KEY[key].check(workspace)


def new_token(api: Api, **changes) -> dict:
    response = api.post("/link_tokens", json={**LINK_TOKEN, "end_user_id": "trainee-user", **changes})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def register(api: Api, url: str, version="2023-11-22") -> dict:
    body = {"url": url, "status": "active", "enabled_events": EVENTS, "version": version}
    response = api.post("/webhooks", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


@pytest.fixture
def trainer(app) -> Visitor:
    return Visitor(app.test_client())


@pytest.fixture
def cohort(trainer) -> dict:
    return create_cohort(trainer)


@pytest.fixture
def trainee(app, cohort) -> Visitor:
    return join(app, cohort, "Ada")


# Cohorts -----------------------------------------------------------------------------------


def test_the_trainer_secret_waits_in_the_creators_session_sealed_until_the_grid_opens(trainer, cohort):
    """The session cookie is signed, not encrypted: the secret the created page shows is kept there sealed."""
    secret = cohort["trainer"].rstrip("/").rsplit("/", 1)[1]
    with trainer.client.session_transaction() as session:
        kept = session["training_created"]
    assert kept["cohort"] == cohort["id"] and secret not in str(kept)
    assert secret in trainer.get(f"/training/{cohort['id']}/created").get_data(as_text=True)  # shown again
    # The grid opened: the secret leaves the cookie.
    assert trainer.get(f"/training/{cohort['id']}").status_code == 200
    with trainer.client.session_transaction() as session:
        assert "training_created" not in session


def test_the_presenter_does_not_start_a_trainees_class_over(app, cohort, trainee):
    """Every presenter run starts in a fresh workspace: for a trainee that was their class's, replaced with the
    exercises from the start, for a look at a demo."""
    before = trainee.workspace_id
    response = trainee.post("/present/10-standard-switch/steps/1")
    assert response.status_code == 422
    assert "your training class&#39;s workspace" in response.get_data(as_text=True)
    assert trainee.workspace_id == before
    with app.app_context():
        member = db.session.scalars(select(CohortMember).where(CohortMember.workspace_id == before)).one()
        assert member.name == "Ada"


def test_a_trainee_who_resets_their_workspace_starts_over_in_the_class(app, cohort, trainee):
    """Reset left the class behind (the kept workspace stayed, the browser left it, and joining again under the
    same name was refused): now a new workspace takes the old one's place on the grid."""
    old_id = trainee.workspace_id
    page = trainee.get("/training/me").get_data(as_text=True)
    assert "You stay in Tuesday class" in unescape(page)  # Reset's confirmation says so
    # and that the key changes: the trainee's backend and listener, on the old key, would stop working unawares.
    assert "Your sandbox key changes too: give your backend and listener the new one" in unescape(page)
    new_token(backend(app, trainee))
    assert result(app, trainee, "link_token").done
    response = trainee.post("/workspace/reset")
    assert response.status_code == 302
    new_id = trainee.workspace_id
    assert new_id != old_id
    page = trainee.get("/training/me").get_data(as_text=True)
    assert "Tuesday class: Ada" in page  # still in the class, under the same name
    assert not result(app, trainee, "link_token").done  # its exercises from the start
    with app.app_context():
        assert db.session.get(Workspace, old_id) is None  # the old one went with all it owned
        fresh = db.session.get(Workspace, new_id)
        assert fresh.kept and fresh.name == "Ada · Tuesday class" and inbox.is_registered(fresh)
        members = db.session.scalars(
            select(CohortMember).where(CohortMember.cohort_id == uuid.UUID(cohort["id"]))
        )
        assert [(m.name, m.workspace_id) for m in members] == [("Ada", new_id)]
    assert sandbox_secret(app, new_id)  # a sandbox key of its own, for the snippets


def test_joining_creates_a_named_kept_workspace_in_the_cohort(app, cohort, trainee):
    with app.app_context():
        workspace = db.session.get(Workspace, trainee.workspace_id)
        member = db.session.scalars(
            select(CohortMember).where(CohortMember.workspace_id == workspace.id)
        ).one()
        assert str(member.cohort_id) == cohort["id"] and member.name == "Ada"
        assert workspace.kept is True and workspace.name == "Ada · Tuesday class"
        keys = db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == workspace.id)).all()
        assert [k.mode for k in keys] == ["sandbox"]
        assert inbox.is_registered(workspace)
    page = trainee.get("/training/me").get_data(as_text=True)
    assert "Tuesday class: Ada" in page
    for exercise in exercises.CURRICULUM:
        assert (
            f'id="status-{exercise.key}"' in page and str(escape(exercise.solution.splitlines()[0])) in page
        )


def test_a_browser_that_joined_is_told_so_and_cannot_join_twice(app, cohort, trainee):
    """A second join from the same browser would leave the first row on the grid with nobody behind it."""
    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    page = unescape(trainee.get(path).get_data(as_text=True))
    assert "You joined this class as <strong>Ada</strong>" in page and 'name="name"' not in page
    response = trainee.post(path, {"name": "Ada again"})
    assert response.status_code == 302 and response.headers["Location"].endswith("/training/me")
    with app.app_context():
        assert [m.name for m in db.session.scalars(select(CohortMember))] == ["Ada"]
    assert "Tuesday class: Ada" in trainee.get("/training/me").get_data(as_text=True)
    # Another browser still joins (and is offered the form).
    assert 'name="name"' in Visitor(app.test_client()).get(path).get_data(as_text=True)


JOIN_FORM_TOKEN = re.compile(r'name="join_form_token" value="([^"]+)"')


def _one_form_two_sendings(app, cohort: dict) -> tuple[str, dict, Visitor, Visitor]:
    """A join page opened once, and two clients that send its form with the same cookie: a double submit
    whose second sending left before the first's answer (and its new cookie) came back."""
    first = Visitor(app.test_client())
    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    page = first.get(path).get_data(as_text=True)
    form = {"name": "Ada", "csrf_token": first.csrf}
    token = JOIN_FORM_TOKEN.search(page)
    if token is not None:  # none before the fix: the form was the same for every sending
        form["join_form_token"] = token.group(1)
    second = Visitor(app.test_client())
    second.client.set_cookie("session", first.client.get_cookie("session").value)
    second.csrf = first.csrf
    return path, form, first, second


def _members_and_hooks(app) -> tuple[list[str], int]:
    with app.app_context():
        names = [m.name for m in db.session.scalars(select(CohortMember))]
        hooks = db.session.scalar(select(func.count()).select_from(Webhook))
    return names, hooks


def test_the_same_join_form_sent_twice_joins_once_and_both_land_on_the_page(app, cohort):
    """The second sending of a double submit was refused ("Someone in this class already joined as Ada") and
    that refusal is what the browser showed; the trainee joined again under another name: a second row."""
    path, form, first, second = _one_form_two_sendings(app, cohort)
    assert first.post(path, form).headers["Location"].endswith("/training/me")
    response = second.post(path, form)
    assert response.status_code == 302, unescape(response.get_data(as_text=True))
    assert response.headers["Location"].endswith("/training/me")
    assert "Tuesday class: Ada" in second.get("/training/me").get_data(as_text=True)
    assert second.workspace_id == first.workspace_id
    assert _members_and_hooks(app) == (["Ada"], 1)  # one row, one inbox: the second sending made nothing


@pytest.mark.committing
@pytest.mark.parametrize("meanwhile", ["clean_name", "lock_row"])
def test_two_sendings_of_one_join_form_at_the_same_moment_make_one_row(app, cohort, monkeypatch, meanwhile):
    """On SQLite reads run outside the write transaction: both sendings passed the name check before either
    wrote, and both joined (two "Ada" rows). Here the first sending commits while the second is between its
    checks (`clean_name`: after the form check, before the name check) or just before it takes the class's
    row lock (`lock_row`), after which a sending waits for the other's commit: the interleavings two server
    threads produce (both seen against a served app, ten double submits sent at once)."""
    from console.training import cohorts
    from console.web.shared.pageslots import slot_released

    path, form, first, second = _one_form_two_sendings(app, cohort)
    real = getattr(cohorts, meanwhile)
    answers, started = [], []

    def first_sending_lands_meanwhile(*args, **kwargs):
        if not started:  # another server thread, as a double submit's first sending is: it ends first
            started.append(True)
            sending = threading.Thread(target=lambda: answers.append(first.post(path, form)))
            with slot_released():  # as a page waiting does: the other request may run meanwhile
                sending.start()
                sending.join(timeout=30)
        return real(*args, **kwargs)

    monkeypatch.setattr(cohorts, meanwhile, first_sending_lands_meanwhile)
    response = second.post(path, form)
    assert answers[0].status_code == 302, answers[0].get_data(as_text=True)
    assert answers[0].headers["Location"].endswith("/training/me")
    assert response.status_code == 302, unescape(response.get_data(as_text=True))
    assert response.headers["Location"].endswith("/training/me")
    assert second.workspace_id == first.workspace_id
    assert _members_and_hooks(app) == (["Ada"], 1)


@pytest.mark.committing
def test_two_browsers_joining_under_one_name_at_the_same_moment_make_one_row(app, cohort, monkeypatch):
    """Two trainees (two browsers, two forms) typing the same name at the same moment: on SQLite both passed
    the name check before either wrote, and the grid got two identical rows. One joins; the other is told
    the name is taken, as when they come one after the other."""
    from console.training import cohorts
    from console.web.shared.pageslots import slot_released

    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    first, second = Visitor(app.test_client()), Visitor(app.test_client())
    forms = []
    for visitor in (first, second):
        page = visitor.get(path).get_data(as_text=True)
        token = JOIN_FORM_TOKEN.search(page)
        forms.append({"name": "Ada", **({"join_form_token": token.group(1)} if token else {})})
    real, answers, started = cohorts.lock_row, [], []

    def first_lands_meanwhile(*args, **kwargs):
        if not started:
            started.append(True)
            other = threading.Thread(target=lambda: answers.append(first.post(path, forms[0])))
            with slot_released():
                other.start()
                other.join(timeout=30)
        return real(*args, **kwargs)

    # Just before the class's row lock: past it, the first would wait for this one's commit.
    monkeypatch.setattr(cohorts, "lock_row", first_lands_meanwhile)
    response = second.post(path, forms[1])
    assert answers[0].status_code == 302, answers[0].get_data(as_text=True)
    assert response.status_code == 400
    assert "Someone in this class already joined as Ada" in unescape(response.get_data(as_text=True))
    assert _members_and_hooks(app) == (["Ada"], 1)
    with app.app_context():  # nothing of the refused join is left behind
        assert db.session.scalar(select(func.count()).select_from(Workspace)) == 1


def test_a_join_forms_token_replays_the_join_only_in_the_browser_it_was_given_to(app, cohort):
    """The token answers a second sending with the first's workspace: read by anyone else (a shared screen, a
    copied page), it must not open that workspace in their browser."""
    path, form, first, _second = _one_form_two_sendings(app, cohort)
    assert first.post(path, form).status_code == 302
    other = Visitor(app.test_client())
    other.get(path)
    response = other.post(path, {"name": "Ada", "join_form_token": form["join_form_token"]})
    assert response.status_code == 400
    assert "Someone in this class already joined as Ada" in unescape(response.get_data(as_text=True))
    with other.client.session_transaction() as session:
        assert "workspace_id" not in session
    assert _members_and_hooks(app) == (["Ada"], 1)


def test_a_join_form_sent_to_another_class_is_refused_by_name_not_a_500(app, trainer, cohort):
    """A form's token is unique across classes but was looked up in the class it was sent to: the same form
    posted to another class's join address (a second class the same morning, a resent request) passed every
    check, then its row broke the unique token and the join answered 500."""
    path, form, first, _second = _one_form_two_sendings(app, cohort)
    assert first.post(path, form).status_code == 302
    other = create_cohort(trainer, name="Wednesday class")
    other_path = "/" + other["join"].split("://", 1)[1].split("/", 1)[1]
    response = first.post(other_path, {**form, "name": "Grace"})
    page = unescape(response.get_data(as_text=True))
    assert response.status_code == 400, page
    assert "This join form is another class's" in page
    assert _members_and_hooks(app) == (["Ada"], 1)
    fresh = JOIN_FORM_TOKEN.search(page).group(1)  # the page answered offers this class's own form
    response = first.post(other_path, {**form, "name": "Grace", "join_form_token": fresh})
    assert response.status_code == 302, unescape(response.get_data(as_text=True))
    assert sorted(_members_and_hooks(app)[0]) == ["Ada", "Grace"]


def test_a_join_form_sent_again_long_after_is_refused_by_name(app, cohort, monkeypatch):
    from console.training import cohorts

    path, form, first, second = _one_form_two_sendings(app, cohort)
    first.post(path, form)
    monkeypatch.setattr(cohorts, "JOIN_FORM_TOKEN_REPLAY", cohorts.JOIN_FORM_TOKEN_REPLAY * 0)
    response = second.post(path, {**form, "name": "Someone else"})
    page = unescape(response.get_data(as_text=True))
    assert response.status_code == 400 and "This join form was used already, to join as Ada" in page
    assert _members_and_hooks(app)[0] == ["Ada"]


def test_a_trainee_who_lost_the_cookie_opens_the_workspace_again_from_the_join_page(app, cohort, trainee):
    """In a new browser (or with cookies cleared) the join page only took a name: theirs was refused as taken,
    and another name left a second row on the grid with their work under the first. The page now offers to
    open their workspace with the sandbox secret their backend holds, and the refusal points to it."""
    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    back = Visitor(app.test_client())
    page = back.get(path).get_data(as_text=True)
    assert 'id="rejoin"' in page and 'action="/workspace/open"' in page
    refused = unescape(back.post(path, {"name": "ada"}).get_data(as_text=True))
    assert "If that was you (another browser, or your cookies were cleared)" in refused
    assert '<details class="open-workspace" id="rejoin" open>' in refused
    opened = back.post(
        "/workspace/open",
        {"secret": sandbox_secret(app, trainee.workspace_id)},
        headers={"Referer": "http://localhost" + path},
    )
    assert opened.status_code == 302 and opened.headers["Location"] == path
    assert "You joined this class as <strong>Ada</strong>" in unescape(back.get(path).get_data(as_text=True))
    assert "Tuesday class: Ada" in back.get("/training/me").get_data(as_text=True)
    with app.app_context():
        assert [m.name for m in db.session.scalars(select(CohortMember))] == ["Ada"]


def test_join_refuses_an_empty_name_and_a_wrong_token(app, cohort):
    visitor = Visitor(app.test_client())
    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    visitor.get(path)
    response = visitor.post(path, {"name": "  "})
    assert response.status_code == 400 and "Give yourself a name." in response.get_data(as_text=True)
    assert visitor.get("/training/join/not-a-token").status_code == 404
    with app.app_context():
        assert db.session.scalars(select(CohortMember)).all() == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("\uff21\uff24\uff21", "already joined as Ada"),  # fullwidth: reads as Ada on the grid
        ("\u0301\u0308 \u0301", "at least one letter or digit"),  # combining marks only: a blank row
    ],
)
def test_a_name_that_reads_as_a_taken_one_or_as_nothing_is_refused(app, cohort, trainee, name, message):
    visitor = Visitor(app.test_client())
    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    visitor.get(path)
    response = visitor.post(path, {"name": name})
    assert response.status_code == 400 and message in unescape(response.get_data(as_text=True))
    with app.app_context():
        assert [m.name for m in db.session.scalars(select(CohortMember))] == ["Ada"]


def test_a_second_browser_cannot_join_under_a_name_already_taken(app, cohort, trainee):
    """Two identical rows on the trainer's grid and in the export could not be told apart."""
    visitor = Visitor(app.test_client())
    path = "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]
    visitor.get(path)
    response = visitor.post(path, {"name": "  ADA "})
    page = unescape(response.get_data(as_text=True))
    assert response.status_code == 400
    assert "Someone in this class already joined as Ada: add an initial or a surname" in page
    assert 'value="  ADA "' in page  # what was typed stays in the field
    with app.app_context():
        assert [m.name for m in db.session.scalars(select(CohortMember))] == ["Ada"]
        assert (
            db.session.scalar(select(func.count()).select_from(Workspace)) == 1
        )  # Ada's: none for the refused
    assert visitor.post(path, {"name": "Ada L."}).status_code == 302
    # The same name in another cohort is fine.
    other = create_cohort(Visitor(app.test_client()))
    join(app, other, "Ada")


def test_a_cohort_needs_a_name_and_known_exercises(trainer):
    earlier = create_cohort(trainer, "Monday class")
    response = trainer.post("/training/cohorts", {"name": "", "exercises": ["nope"]})
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "Give the class a name." in page and "Choose at least one exercise" in page
    # The refused page still lists the trainer's classes (it showed none).
    assert "<h2>Your classes</h2>" in page and f'href="/training/{earlier["id"]}">Monday class</a>' in page


def test_reloading_the_created_page_creates_no_second_cohort(app, trainer):
    trainer.get("/training")
    posted = trainer.post("/training/cohorts", {"name": "Reloaded", "exercises": ["link_token"]})
    assert posted.status_code == 303  # POST-redirect-GET: F5 repeats the GET, not the POST
    created = posted.headers["Location"]
    first, again = trainer.get(created), trainer.get(created)
    for page in (first, again):
        assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
        assert 'id="join-link"' in page.get_data(as_text=True)
        assert 'id="trainer-link"' in page.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Cohort)) == 1
    # Only the creator's browser sees it; once the grid is opened, the trainer link is not shown again.
    assert Visitor(app.test_client()).get(created).status_code == 404
    cohort_id = re.search(r"/training/([0-9a-f-]{36})/created", created).group(1)
    assert trainer.get(f"/training/{cohort_id}").status_code == 200
    later = trainer.get(created)
    assert later.status_code == 302 and later.headers["Location"].endswith(f"/training/{cohort_id}")


def test_a_cohort_keeps_only_the_chosen_exercises(app, trainer):
    cohort = create_cohort(trainer, keys=["own_endpoint", "link_token"])
    with app.app_context():
        assert db.session.get(Cohort, uuid.UUID(cohort["id"])).exercises == ["link_token", "own_endpoint"]
    ada = join(app, cohort, "Ada")
    page = ada.get("/training/me").get_data(as_text=True)
    assert 'id="status-link_token"' in page and 'id="status-conformance"' not in page


# Isolation ---------------------------------------------------------------------------------


def test_a_trainee_cannot_open_the_grid_the_reasons_or_the_csv(app, cohort, trainee):
    with app.app_context():
        member = db.session.scalars(select(CohortMember)).one()
    for path in ("", "/grid", "/export.csv", f"/trainees/{member.id}"):
        assert trainee.get(f"/training/{cohort['id']}{path}").status_code == 404, path


def test_another_cohorts_trainer_cannot_see_this_one(app, cohort, trainee):
    other = Visitor(app.test_client())
    create_cohort(other, name="Other class")
    assert other.get(f"/training/{cohort['id']}").status_code == 404
    assert other.get(f"/training/{cohort['id']}/export.csv").status_code == 404
    assert other.get(f"/training/{cohort['id']}/trainer/wrong-secret").status_code == 404
    assert other.get(f"/training/{cohort['id']}").status_code == 404


def test_a_strangers_not_found_page_on_a_training_address_leads_to_the_training_pages(app, cohort):
    """A trainer's grid opened in another browser (or a join link that ended) showed the shared Not found page,
    whose only link was "Back to the walkthrough": no way back for a trainer or a trainee."""
    stranger = Visitor(app.test_client())
    for path in (f"/training/{cohort['id']}", "/training/join/not-a-token"):
        response = stranger.get(path)
        page = response.get_data(as_text=True)
        assert response.status_code == 404 and 'id="training-ways"' in page, path
        ways = page.split('id="training-ways"', 1)[1].split("</ul>", 1)[0]
        assert (
            '<a href="/training">The training page</a>' in ways
            and '<a href="/training/me">Your exercises</a>' in ways
        )
        assert "Back to the walkthrough" not in page
    # Elsewhere the Not found page is as it was.
    elsewhere = stranger.get("/events/not-an-event").get_data(as_text=True)
    assert "Back to the walkthrough" in elsewhere and 'id="training-ways"' not in elsewhere


def test_the_page_after_creating_a_class_says_it_was_created(trainer, cohort):
    page = unescape(trainer.get(f"/training/{cohort['id']}/created").get_data(as_text=True))
    assert "<h1>Class created: Tuesday class</h1>" in page
    assert '<p class="callout" role="status" id="class-created">The class is created.' in page


def test_the_trainer_link_opens_the_grid_in_another_browser(app, cohort, trainee):
    laptop = Visitor(app.test_client())
    path = "/" + cohort["trainer"].split("://", 1)[1].split("/", 1)[1]
    assert laptop.get(path).status_code == 302
    page = laptop.get(f"/training/{cohort['id']}").get_data(as_text=True)
    assert 'data-trainee="Ada"' in page
    assert cohort["trainer"] not in page  # the secret link is shown only at creation


def test_the_trainee_page_shows_nothing_of_other_trainees(app, cohort, trainee):
    join(app, cohort, "Grace")
    assert "Grace" not in trainee.get("/training/me").get_data(as_text=True)


# Exercises ---------------------------------------------------------------------------------


def test_exercise_1_ticks_from_the_backend_not_from_the_console(app, trainee):
    assert result(app, trainee, "link_token").done is False
    # The console's own call (a scenario run) makes a Link token: not the trainee's backend.
    assert trainee.post("/scenarios/user_good/run", {"via": "headless"}).status_code == 302
    console_made = result(app, trainee, "link_token")
    assert console_made.done is False and "Only the console" in console_made.reason
    token = new_token(backend(app, trainee))
    done = result(app, trainee, "link_token")
    assert done.done is True and token["id"] in done.reason
    with app.app_context():
        flags = dict(db.session.execute(select(LinkToken.id, LinkToken.created_by_console)).all())
    assert flags[uuid.UUID(token["id"])] is False and sorted(flags.values()) == [False, True]


def test_exercise_2_ticks_when_link_is_opened_from_another_origin(app, trainee):
    token = new_token(backend(app, trainee))
    browser = app.test_client()
    # The console (this service's own origin) opening Link does not count.
    assert browser.get(f"/sandbox/link?token={token['token']}&origin=http://localhost").status_code == 200
    assert result(app, trainee, "link_sdk").done is False
    assert "not inside a page of yours (from the console" in result(app, trainee, "link_sdk").reason
    other = new_token(backend(app, trainee))
    assert (
        browser.get(f"/sandbox/link?token={other['token']}&origin=http://127.0.0.1:8000").status_code == 200
    )
    done = result(app, trainee, "link_sdk")
    assert done.done is True and "http://127.0.0.1:8000" in done.reason


def test_exercise_2_does_not_blame_the_console_for_link_opened_by_its_url(app, trainee):
    """A trainee who opened Link's URL in a tab (no page, no SDK: no parent origin) was told "Link was opened
    only from the console", which they never used: the reason must say what did happen."""
    token = new_token(backend(app, trainee))
    assert app.test_client().get(f"/sandbox/link?token={token['token']}").status_code == 200
    reason = result(app, trainee, "link_sdk").reason
    assert "only from the console" not in reason and "its URL opened directly" in reason, reason


def test_exercise_3_needs_an_own_active_endpoint_on_2023_11_22(app, trainee):
    first = result(app, trainee, "own_endpoint")
    assert first.done is False and "Only the console's inbox" in first.reason  # the inbox is not theirs
    api = backend(app, trainee)
    old = register(api, "http://127.0.0.1:9/hooks", version="2023-04-18")
    assert "2023-04-18" in result(app, trainee, "own_endpoint").reason
    assert api.delete(f"/webhooks/{old['id']}").status_code in (200, 204)
    register(api, "http://127.0.0.1:9/hooks")
    assert result(app, trainee, "own_endpoint").done is True


def test_exercises_name_a_relayed_endpoint_by_its_listener_not_its_placeholder_url(app, trainee):
    """Through pcc.py listen (the recommended way) the reasons said "The latest check of relay://console-listen
    failed", a URL the trainee never typed and cannot open."""
    api = backend(app, trainee)
    response = api.post("/sandbox/listen", json={"version": "2023-11-22"})
    assert response.status_code in (200, 201), response.get_json()
    reason = result(app, trainee, "own_endpoint").reason
    assert "relay://" not in reason and "behind the listener (pcc.py listen)" in reason, reason


def check_now(app, api, hook_id) -> dict:
    """Start a conformance run (202, queued) and let the worker execute it; the finished run."""
    path = f"/sandbox/webhooks/{hook_id}/conformance"
    assert api.post(path).status_code == 202
    assert runs.run_due(app) == 1
    return api.get(path).get_json()["data"]


@pytest.mark.committing
def test_exercise_4_ticks_when_the_endpoint_passes_the_conformance_check(app, trainee):
    api = backend(app, trainee)
    secret = sandbox_secret(app, trainee.workspace_id)
    assert "Register your own endpoint" in result(app, trainee, "conformance").reason
    with Receiver(Endpoint(secret, fail_duplicates=True)) as broken:
        hook = register(api, broken.url)
        assert api.post(f"/sandbox/webhooks/{hook['id']}/conformance").status_code == 202
        # Queued, not finished: it does not count yet, and the trainee is told it is running.
        assert "is running" in result(app, trainee, "conformance").reason
        assert runs.run_due(app) == 1
    failed = result(app, trainee, "conformance")
    assert failed.done is False and "duplicate_event" in failed.reason
    with Receiver(Endpoint(secret)) as good:
        hook = register(api, good.url)
        assert check_now(app, api, hook["id"])["report"]["passed"] is True
    assert result(app, trainee, "conformance").done is True


@pytest.mark.committing
def test_a_conformance_run_under_way_shows_on_the_grid_and_the_trainees_page(app, trainer, cohort, trainee):
    """A run takes up to ~16 s. The pages' digest (`pulse`) left runs out, so neither the grid nor the trainee's
    page changed while one was under way, and a rerun after a failure showed the old failure meanwhile."""
    from console.training import cohorts

    api = backend(app, trainee)
    with Receiver(lambda record: (500, b"boom")) as broken:
        hook = register(api, broken.url)
        assert check_now(app, api, hook["id"])["report"]["passed"] is False
        assert result(app, trainee, "conformance").label == "HTTP 500"
        with app.app_context():
            workspace = db.session.get(Workspace, trainee.workspace_id)
            before = cohorts.pulse([workspace.id])
        assert api.post(f"/sandbox/webhooks/{hook['id']}/conformance").status_code == 202  # queued
        with app.app_context():
            assert cohorts.pulse([workspace.id]) != before
        running = result(app, trainee, "conformance")
        assert running.label == "running…" and "Before it: the latest check" in running.reason
        grid = trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
        assert ">running…</a>" in grid
        assert runs.run_due(app) == 1
    assert result(app, trainee, "conformance").label == "HTTP 500"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.committing
def test_exercise_4_names_the_real_cause_when_no_check_could_pass(app, trainer, cohort, trainee):
    """An endpoint that is down or answers 500 to everything: the cause, not every check's name."""
    api = backend(app, trainee)
    check_names = ("signed_event", "duplicate_event", "forged_signature", "altered_body", "stale_timestamp")
    down = register(api, f"http://127.0.0.1:{free_port()}/hooks")  # nothing listens there: refused
    assert check_now(app, api, down["id"])["report"]["passed"] is False
    reason = result(app, trainee, "conformance").reason
    assert "could not connect to the host" in reason, reason
    assert not any(name in reason for name in check_names), reason
    with Receiver(lambda record: (500, b"boom")) as broken:
        hook = register(api, broken.url)
        assert check_now(app, api, hook["id"])["report"]["passed"] is False
    reason = result(app, trainee, "conformance").reason
    assert "answered 500 to every check" in reason, reason
    assert not any(name in reason for name in check_names), reason
    # The trainee's page, the grid's tooltip and the CSV say the same.
    assert "answered 500 to every check" in unescape(trainee.get("/training/me").get_data(as_text=True))
    assert "answered 500 to every check" in unescape(
        trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
    )
    assert "answered 500 to every check" in trainer.get(f"/training/{cohort['id']}/export.csv").get_data(
        as_text=True
    )
    # The grid's cell says it in a word, readable from the back of the room without hovering.
    grid = trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
    cell = re.search(r'<td data-exercise="conformance"[^>]*class="([^"]+)">\s*(.*?)</td>', grid, re.S)
    assert "cell-trouble" in cell.group(1) and ">HTTP 500</a>" in cell.group(2), cell.group(0)


@pytest.mark.committing
def test_exercise_4_ignores_the_inbox_passing(app, trainee):
    with app.app_context():
        hook = db.session.scalars(select(Webhook).where(Webhook.workspace_id == trainee.workspace_id)).one()
    assert check_now(app, backend(app, trainee), hook.id)["report"]["passed"]
    assert result(app, trainee, "conformance").done is False


def test_exercise_5_holds_back_one_job_and_ticks_on_the_backends_lookup(app, trainee):
    api = backend(app, trainee)
    own = register(api, "http://127.0.0.1:9/hooks")
    assert "Miss a webhook" in result(app, trainee, "missed_webhook").reason
    trainee.get("/training/me")
    assert trainee.post("/training/me/miss-webhook").status_code == 302
    with app.app_context():
        held = db.session.get(Workspace, trainee.workspace_id).held_link_token_id
        deliveries = db.session.scalars(select(WebhookDelivery)).all()
    assert held is not None and deliveries
    to_own = [d for d in deliveries if str(d.webhook_id) == own["id"]]
    to_inbox = [d for d in deliveries if str(d.webhook_id) != own["id"]]
    assert to_own and all(d.status == SKIPPED and d.skip_reason == HELD_REASON for d in to_own)
    assert to_inbox and all(d.status != SKIPPED for d in to_inbox)  # the console's inbox still hears of it
    waiting = result(app, trainee, "missed_webhook")
    assert waiting.done is False and f"link_token_id={held}" in waiting.reason
    # The console looking the jobs up does not count.
    with app.test_request_context("/"):
        workspace = db.session.get(Workspace, trainee.workspace_id)
        g.console_workspace = workspace
        assert api_client(workspace).call("GET", "/jobs", params={"link_token_id": str(held)}).status == 200
    assert result(app, trainee, "missed_webhook").done is False
    # Another token's lookup does not either.
    other = new_token(api)
    assert api.get(f"/jobs?link_token_id={other['id']}").status_code == 200
    assert result(app, trainee, "missed_webhook").done is False
    page = trainee.get("/training/me").get_data(as_text=True)
    poll = re.search(r'hx-get="(/training/me/progress\?pulse=[0-9a-f]+)"', page).group(1)
    assert 'id="miss-webhook"' in page
    answer = api.get(f"/jobs?link_token_id={held}")
    assert answer.status_code == 200 and len(answer.get_json()["data"]) == 1
    assert result(app, trainee, "missed_webhook").done is True
    # The open page's next poll ticks it and takes the button away (it stayed until a reload).
    live = trainee.get(poll, htmx=True).get_data(as_text=True)
    assert '<div id="miss-webhook" hx-swap-oob="delete"></div>' in live
    assert 'id="miss-webhook"' not in trainee.get("/training/me").get_data(as_text=True)


def test_events_of_other_tokens_still_reach_the_endpoint_while_one_is_held(app, trainee):
    api = backend(app, trainee)
    own = register(api, "http://127.0.0.1:9/hooks")
    trainee.get("/training/me")
    trainee.post("/training/me/miss-webhook")
    token = new_token(api, platform_id=PAYCREST)
    creds = {"username": "user_good", "password": "pass_good"}
    body = {"platform_id": PAYCREST, "credentials": creds, "allocation": {"type": "full"}}
    assert api.post(f"/sandbox/link_tokens/{token['id']}/complete", json=body).status_code == 200
    with app.app_context():
        rows = db.session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.webhook_id == uuid.UUID(own["id"]))
        ).all()
    assert {d.status for d in rows} == {SKIPPED, "pending"}


def test_exercise_6_needs_a_pending_success_and_a_federal_sent(app, trainee):
    api = backend(app, trainee)
    pending = new_token(api)
    creds = {"username": "user_pending_success", "password": "pass_good"}
    body = {"platform_id": PAYCREST, "credentials": creds, "allocation": {"type": "full"}}
    assert api.post(f"/sandbox/link_tokens/{pending['id']}/complete", json=body).get_json()["data"][
        "outcome"
    ] == ("pending")
    first = result(app, trainee, "switch_outcomes")
    assert first.done is False and "pending switch" in first.reason and "federal" in first.reason
    assert api.post("/sandbox/clock/advance", json={"seconds": 120}).status_code == 200
    second = result(app, trainee, "switch_outcomes")
    assert second.done is False and "pending switch" not in second.reason
    federal = new_token(api, amount=5000)
    person = {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000001"}
    done = api.post(
        f"/sandbox/link_tokens/{federal['id']}/complete", json={"program_id": SSA, "federal": person}
    )
    assert done.get_json()["data"]["outcome"] == "processing"
    assert api.post("/sandbox/clock/advance", json={"business_days": 1}).status_code == 200
    assert result(app, trainee, "switch_outcomes").done is True


# The trainee page and the trainer's grid ----------------------------------------------------


def test_the_trainee_page_ticks_live(app, trainee):
    page = trainee.get("/training/me").get_data(as_text=True)
    poll = re.search(r'hx-get="(/training/me/progress\?pulse=[0-9a-f]+)"', page).group(1)
    assert trainee.get(poll, htmx=True).status_code == 204  # nothing changed: nothing redrawn
    new_token(backend(app, trainee))
    answer = trainee.get(poll, htmx=True)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200
    assert re.search(
        r'id="status-link_token" class="exercise-status" data-done="yes" hx-swap-oob="true"', html
    )


def test_an_exercise_status_reads_as_prose_not_as_an_http_status_badge(trainee):
    """`.status` is the request log's HTTP status badge (bold monospace): a sentence in it read as code."""
    page = trainee.get("/training/me").get_data(as_text=True)
    assert re.search(r'<p id="status-link_token" class="exercise-status"', page)
    assert 'class="status"' not in page


def test_the_grid_updates_live_and_links_each_reason(app, trainer, cohort, trainee):
    page = trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
    assert 'data-trainee="Ada"' in page and 'data-exercise="own_endpoint" data-done="no"' in page
    poll = re.search(r'hx-get="(/training/[0-9a-f-]+/grid\?pulse=[0-9a-f]+)"', page).group(1)
    assert trainer.get(poll, htmx=True).status_code == 204
    register(backend(app, trainee), "http://127.0.0.1:9/hooks")
    html = trainer.get(poll, htmx=True).get_data(as_text=True)
    assert 'data-exercise="own_endpoint" data-done="yes"' in html
    join(app, cohort, "Grace")  # a new trainee changes the grid too
    assert 'data-trainee="Grace"' in trainer.get(poll, htmx=True).get_data(as_text=True)
    link = re.search(r'href="(/training/[^"]+/trainees/[^"#]+)#exercise-conformance"', html).group(1)
    detail = trainer.get(link).get_data(as_text=True)
    assert 'id="exercise-conformance" data-exercise="conformance" data-done="no"' in detail
    assert "No conformance check yet" in detail
    # The reasons say "your" to the trainee: the trainer's view says whose they are.
    assert 'id="reasons-note"' in detail and "worded for Ada" in detail


def test_csv_export(app, trainer, cohort, trainee):
    grace = join(app, cohort, "=HYPERLINK(1)")
    join(app, cohort, "|cmd")
    join(app, cohort, "Zoë Ørsted")
    new_token(backend(app, trainee))
    response = trainer.get(f"/training/{cohort['id']}/export.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    with app.app_context():
        name = db.session.get(Cohort, uuid.UUID(cohort["id"])).name
    words = re.findall(r"[a-z0-9]+", name.lower())
    expected = ("" if "class" in words else "class-") + "-".join(words) + ".csv"
    assert response.headers["Content-Disposition"] == f'attachment; filename="{expected}"'
    body = response.get_data()
    assert body.startswith("\ufeff".encode())  # Excel reads non-ASCII names right only with it
    rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    header = rows[0]
    assert header[:4] == ["trainee", "joined_at", "done", "exercises"]
    assert header[4:6] == ["link_token", "link_token_reason"] and len(header) == 4 + 2 * len(exercises.KEYS)
    by_name = {row[0]: dict(zip(header, row, strict=True)) for row in rows[1:]}
    # Formula-looking names are neutralised; others are kept as typed.
    assert set(by_name) == {"Ada", "'=HYPERLINK(1)", "'|cmd", "Zoë Ørsted"}
    assert by_name["Ada"]["link_token"] == "yes"
    # Counts, each in its own column: "1/6" in one cell is a date to Excel (1 June, or 6 January).
    assert by_name["Ada"]["done"] == "1" and by_name["Ada"]["exercises"] == str(len(exercises.KEYS))
    assert by_name["'=HYPERLINK(1)"]["link_token"] == "no"
    assert "POST /v1/link_tokens" in by_name["'=HYPERLINK(1)"]["link_token_reason"]
    assert grace.workspace_id != trainee.workspace_id


def test_a_visitor_outside_any_cohort_gets_no_exercises_and_no_workspace(app):
    visitor = Visitor(app.test_client())
    page = visitor.get("/training/me").get_data(as_text=True)
    assert "not in a training class" in page
    assert visitor.post("/training/me/miss-webhook").status_code == 404
    with app.app_context():
        assert db.session.scalars(select(Workspace)).all() == []


@pytest.mark.committing
def test_only_the_first_outside_search_of_the_held_token_writes(app, trainee):
    """Jobs searches stay read-only (the hot path's two queries) except the one that recovers the held job."""
    from tests.api.test_hot_path import recorded

    api = backend(app, trainee)
    trainee.get("/training/me")
    trainee.post("/training/me/miss-webhook")
    with app.app_context():
        held = db.session.get(Workspace, trainee.workspace_id).held_link_token_id
    other = new_token(api)
    with recorded(app) as seen:
        assert api.get(f"/jobs?link_token_id={other['id']}").status_code == 200
    assert "COMMIT" not in seen and len(seen) == 2, seen
    with recorded(app) as seen:
        assert api.get(f"/jobs?link_token_id={held}").status_code == 200
    assert [s for s in seen if s.startswith("UPDATE")] and seen[-1] == "COMMIT", seen
    with recorded(app) as seen:
        assert api.get(f"/jobs?link_token_id={held}").status_code == 200
    assert "COMMIT" not in seen and len(seen) == 2, seen
    # Done stays done: the button is gone, and a request for it holds nothing new back.
    assert result(app, trainee, "missed_webhook").done is True
    assert "Miss a webhook</button>" not in trainee.get("/training/me").get_data(as_text=True)
    with app.app_context():
        tokens_before = db.session.scalar(select(func.count()).select_from(LinkToken))
    assert trainee.post("/training/me/miss-webhook").status_code == 302
    assert result(app, trainee, "missed_webhook").done is True
    with app.app_context():
        assert db.session.get(Workspace, trainee.workspace_id).held_link_token_id == held
        assert db.session.scalar(select(func.count()).select_from(LinkToken)) == tokens_before


def test_the_training_page_points_a_trainee_to_their_exercises(app, trainee):
    assert "/training/me" in trainee.get("/training").get_data(as_text=True)
    assert "your exercises" not in Visitor(app.test_client()).get("/training").get_data(as_text=True)


@pytest.mark.parametrize(
    "name, filename",
    [
        # The word once: "class-zoe-s-class-march.csv" said it twice.
        ("Zoë's class, March", "zoe-s-class-march.csv"),
        ("Onboarding \u2013 Zoë's class, March", "onboarding-zoe-s-class-march.csv"),
        ("Classic payroll, March", "class-classic-payroll-march.csv"),  # "classic" is not the word
        ("Onboarding, March", "class-onboarding-march.csv"),
        ("!!!", None),  # nothing left: the cohort's id
        ("x" * 100, "class-" + "x" * 60 + ".csv"),
    ],
)
def test_the_export_is_named_after_the_cohort(app, name, filename):
    from console.training.cohorts import export_filename

    cohort = Cohort(id=uuid.uuid4(), name=name)
    assert export_filename(cohort) == (filename or f"class-{cohort.id}.csv")
