"""Training: cohorts per trainer, trainees per cohort, joins per minute, and a class's end (archive, delete)."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from html import unescape

import pytest
from sqlalchemy import func, select

from console.api.ratelimit import TableCounters
from console.core.timeutil import utcnow
from console.extensions import db
from console.keys.models import ApiKey
from console.training.models import Cohort, CohortMember
from console.web.shared import throttle
from console.workspaces.collection import collect_idle
from console.workspaces.models import Workspace
from tests.web.conftest import Visitor
from tests.web.helpers import sandbox_secret
from tests.web.test_training import create_cohort, join

pytestmark = pytest.mark.both_backends


def join_path(cohort: dict) -> str:
    return "/" + cohort["join"].split("://", 1)[1].split("/", 1)[1]


def try_join(app, cohort: dict, name: str):
    trainee = Visitor(app.test_client())
    trainee.get(join_path(cohort))
    return trainee.post(join_path(cohort), {"name": name})


def members(app, cohort_id: str) -> int:
    with app.app_context():
        query = select(func.count()).where(CohortMember.cohort_id == uuid.UUID(cohort_id))
        return db.session.scalar(query)


def rows(app, model, *where) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(model).where(*where))


@pytest.fixture
def trainer(app) -> Visitor:
    return Visitor(app.test_client())


def test_a_trainer_may_keep_its_cap_of_cohorts(app, trainer):
    app.config["TRAINING_COHORTS_PER_TRAINER"] = 2
    first = create_cohort(trainer, name="One")
    create_cohort(trainer, name="Two")
    refused = trainer.post("/training/cohorts", {"name": "Three", "exercises": ["link_token"]})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 409
    assert (
        "This browser already has 2 classes" in page and '<code id="error-code">COHORT_LIMIT</code>' in page
    )
    assert rows(app, Cohort) == 2
    # Another trainer is not affected; deleting a class frees a place.
    create_cohort(Visitor(app.test_client()), name="Elsewhere")
    assert trainer.post(f"/training/{first['id']}/delete").status_code == 303
    create_cohort(trainer, name="Three")
    assert rows(app, Cohort) == 3


def test_a_cohort_takes_at_most_its_cap_of_trainees(app, trainer):
    app.config["TRAINING_TRAINEES_PER_COHORT"] = 2
    cohort = create_cohort(trainer)
    join(app, cohort, "Ada")
    join(app, cohort, "Grace")
    workspaces = rows(app, Workspace)
    refused = try_join(app, cohort, "Linus")
    page = refused.get_data(as_text=True)
    assert refused.status_code == 409
    assert 'id="join-refused" data-code="COHORT_FULL"' in page and "is full: it has 2 trainees" in page
    assert members(app, cohort["id"]) == 2
    assert rows(app, Workspace) == workspaces  # nothing was created for the refused trainee


def test_joins_per_cohort_per_minute_are_limited(app, trainer):
    # TRAINING_JOINS_PER_MINUTE = 2 (creating requests per address off), on counters whose clock stands
    # still: no real time passes between the joins, whatever the machine's speed.
    frozen = TableCounters(None, 2, clock=lambda: 1000.0)
    app.extensions["console_throttle"] = throttle.Throttle(0, 2, (), frozen)
    cohort = create_cohort(trainer)
    other = create_cohort(trainer, name="Other class")
    join(app, cohort, "Ada")
    join(app, cohort, "Grace")
    refused = try_join(app, cohort, "Linus")
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "60"
    assert "at most 2 a minute" in refused.get_data(as_text=True)
    assert members(app, cohort["id"]) == 2
    join(app, other, "Linus")  # per cohort: another class is not held up


@pytest.mark.committing
def test_refused_joins_do_not_use_up_the_minutes_joins(app, trainer):
    """Seen in a class: retyped names after clashes, empty names and double submits counted as joins, and the
    room got "This class is taking many joins at once" with trainees still to come. Only a join that makes a
    trainee counts."""
    frozen = TableCounters(None, 2, clock=lambda: 1000.0)
    app.extensions["console_throttle"] = throttle.Throttle(0, 2, (), frozen)
    cohort = create_cohort(trainer)
    join(app, cohort, "Ada")
    for name in ("ada", "  ", "\uff21\uff24\uff21", "ADA "):
        assert try_join(app, cohort, name).status_code == 400
    join(app, cohort, "Grace")  # the second join of the minute, after four refusals
    assert try_join(app, cohort, "Linus").status_code == 429
    assert members(app, cohort["id"]) == 2


def test_archiving_ends_the_join_link_and_lets_the_collector_take_the_workspaces(app, trainer):
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    open_grid = unescape(trainer.get(f"/training/{cohort['id']}").get_data(as_text=True))
    assert 'action="/training/' + cohort["id"] + '/archive"' in open_grid
    # Its confirmation says how long the workspaces then last, in days (it said "a while").
    assert "trainees' workspaces are deleted once unused for 30 days." in open_grid
    # Only the trainer: a trainee (or anyone else) gets 404, and a forged form without the token is refused.
    assert ada.post(f"/training/{cohort['id']}/archive").status_code == 404
    assert trainer.client.post(f"/training/{cohort['id']}/archive").status_code == 400
    with app.app_context():
        assert db.session.get(Cohort, uuid.UUID(cohort["id"])).archived_at is None
    response = trainer.post(f"/training/{cohort['id']}/archive")
    assert response.status_code == 303
    grid = trainer.get(response.headers["Location"]).get_data(as_text=True)
    assert "is archived" in grid and 'id="cohort-archived"' in grid
    assert "deleted once it has gone unused for 30 days." in " ".join(grid.split())
    refused = try_join(app, cohort, "Grace")
    assert refused.status_code == 409 and 'data-code="COHORT_ARCHIVED"' in refused.get_data(as_text=True)
    # The trainee's page says so, and what becomes of the workspace.
    page = ada.get("/training/me").get_data(as_text=True)
    assert 'id="class-archived"' in page and "deleted" in page
    # The trainee's workspace is no longer kept: collected once idle for WORKSPACE_IDLE_DAYS, like a visitor's.
    with app.app_context():
        assert db.session.get(Workspace, ada.workspace_id).kept is False
        assert collect_idle(utcnow() + timedelta(days=1)) == []
        assert collect_idle(utcnow() + timedelta(days=31)) == [ada.workspace_id]
    assert members(app, cohort["id"]) == 0
    assert rows(app, Cohort) == 1  # the class itself stays until deleted


def _poll_of(page: str, element_id: str) -> str:
    """The path a page's poller asks (its hx-get), as htmx sends it."""
    tag = re.search(rf'<div id="{element_id}" hx-get="([^"]+)"', page).group(1)
    return tag.replace("&amp;", "&")


def test_pages_open_on_a_class_reload_once_it_is_archived(app, trainer):
    """A grid on another trainer screen (the projector's) kept the join link and its QR code after the class
    was archived from the trainer's laptop, turning latecomers away; a trainee's open page never said the
    class was archived, nor what becomes of their workspace, until reloaded by hand."""
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    projector = Visitor(app.test_client())
    assert (
        projector.get(cohort["trainer"].split("://", 1)[1].split("/", 1)[1].join(["/", ""])).status_code
        == 302
    )
    grid_poll = _poll_of(projector.get(f"/training/{cohort['id']}").get_data(as_text=True), "training-grid")
    me_poll = _poll_of(ada.get("/training/me").get_data(as_text=True), "training-poller")
    assert projector.get(grid_poll).status_code == 204 and ada.get(me_poll).status_code == 204
    assert trainer.post(f"/training/{cohort['id']}/archive").status_code == 303
    for visitor, poll in ((projector, grid_poll), (ada, me_poll)):
        answer = visitor.get(poll)
        assert answer.status_code == 200 and answer.headers.get("HX-Refresh") == "true", poll
    # Reloaded, each page says the class is archived, and polls on without reloading again.
    grid = projector.get(f"/training/{cohort['id']}").get_data(as_text=True)
    assert 'id="cohort-archived"' in grid and 'id="join-link"' not in grid
    assert projector.get(_poll_of(grid, "training-grid")).status_code == 204
    me = ada.get("/training/me").get_data(as_text=True)
    assert 'id="class-archived"' in me
    assert ada.get(_poll_of(me, "training-poller")).status_code == 204


def test_an_archived_classs_join_link_says_it_is_over_before_anyone_types_a_name(app, trainer):
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    assert trainer.post(f"/training/{cohort['id']}/archive").status_code == 303
    opened = Visitor(app.test_client()).get(join_path(cohort))
    page = opened.get_data(as_text=True)
    assert opened.status_code == 410
    assert "is over" in page and 'data-code="COHORT_ARCHIVED"' in page
    assert "<form" not in page.split("<main", 1)[1] and 'name="name"' not in page
    # A browser that joined is still told the name it joined as, and where its page is.
    mine = ada.get(join_path(cohort))
    assert mine.status_code == 200 and "You joined this class as <strong>Ada</strong>" in mine.get_data(
        as_text=True
    )


def test_after_a_class_is_deleted_its_open_pages_polls_say_so(app, trainer):
    """The grid's poll in another trainer browser answers 404 and the trainee's 410: console.js stops both."""
    cohort = create_cohort(trainer)
    other = Visitor(app.test_client())
    assert other.get("/" + cohort["trainer"].split("://", 1)[1].split("/", 1)[1]).status_code == 302
    ada = join(app, cohort, "Ada")
    assert ada.get("/training/me/progress").status_code in (200, 204)
    grid = other.get(f"/training/{cohort['id']}").get_data(as_text=True)
    assert 'data-poll-gone="This class was deleted."' in grid
    assert trainer.post(f"/training/{cohort['id']}/delete").status_code == 303
    assert other.get(f"/training/{cohort['id']}/grid").status_code == 404
    assert ada.get("/training/me/progress").status_code == 410
    # A reload of the trainee's page says the class was deleted (it said "not in a training class").
    reloaded = ada.get("/training/me").get_data(as_text=True)
    assert 'id="class-deleted"' in reloaded and "Tuesday class" in reloaded
    assert "not in a training class" not in reloaded


def test_a_trainee_who_opened_another_workspace_is_not_told_their_class_was_deleted(app, trainer):
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    elsewhere = Visitor(app.test_client()).start()
    opened = ada.post(
        "/workspace/open",
        {"secret": sandbox_secret(app, elsewhere.workspace_id)},
        headers={"Referer": "http://localhost/training/me"},
    )
    assert opened.status_code == 302 and ada.workspace_id == elsewhere.workspace_id
    page = ada.get("/training/me").get_data(as_text=True)
    assert "not in a training class" in page and 'id="class-deleted"' not in page


def test_deleting_a_cohort_removes_it_its_memberships_and_trainees_workspaces(app, trainer):
    cohort = create_cohort(trainer)
    keep = create_cohort(trainer, name="Another class")
    trainees = [join(app, cohort, name) for name in ("Ada", "Grace")]
    bystander = join(app, keep, "Linus")
    ids = [t.workspace_id for t in trainees]
    page = trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
    assert re.search(r'action="/training/' + cohort["id"] + '/delete"', page)
    # Nobody but the trainer.
    outsider = Visitor(app.test_client()).start()
    assert outsider.post(f"/training/{cohort['id']}/delete").status_code == 404
    assert trainees[0].post(f"/training/{cohort['id']}/delete").status_code == 404
    assert rows(app, Cohort) == 2
    response = trainer.post(f"/training/{cohort['id']}/delete")
    assert response.status_code == 303 and response.headers["Location"] == "/training"
    assert "deleted, with its 2 trainee workspaces" in trainer.get("/training").get_data(as_text=True)
    assert trainer.get(f"/training/{cohort['id']}").status_code == 404
    assert rows(app, Cohort, Cohort.id == uuid.UUID(cohort["id"])) == 0
    assert members(app, cohort["id"]) == 0
    assert rows(app, Workspace, Workspace.id.in_(ids)) == 0
    assert rows(app, ApiKey, ApiKey.workspace_id.in_(ids)) == 0
    # The other class and its trainee are untouched.
    assert members(app, keep["id"]) == 1
    assert rows(app, Workspace, Workspace.id == bystander.workspace_id) == 1
