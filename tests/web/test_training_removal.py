"""A trainer takes a trainee's row off the class: a bot holding the join link, a second join, a typo."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from html import unescape

import pytest
from sqlalchemy import select

from console.core.timeutil import utcnow
from console.extensions import db
from console.training.models import CohortMember
from console.workspaces.collection import collect_idle
from console.workspaces.models import Workspace
from tests.web.conftest import Visitor
from tests.web.test_training import backend, create_cohort, join
from tests.web.test_training_quotas import join_path, members, try_join

pytestmark = pytest.mark.both_backends


@pytest.fixture
def trainer(app) -> Visitor:
    return Visitor(app.test_client())


def member_id(app, cohort: dict, name: str) -> str:
    with app.app_context():
        return str(
            db.session.scalars(
                select(CohortMember.id).where(
                    CohortMember.cohort_id == uuid.UUID(cohort["id"]), CohortMember.name == name
                )
            ).one()
        )


def remove_path(cohort: dict, ident: str) -> str:
    return f"/training/{cohort['id']}/trainees/{ident}/remove"


def grid_names(trainer: Visitor, cohort: dict) -> list[str]:
    page = trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
    return [unescape(name) for name in re.findall(r'<tr data-trainee="([^"]*)"', page)]


def test_the_trainer_removes_a_row_and_every_grid_drops_it_at_its_next_poll(app, trainer):
    cohort = create_cohort(trainer)
    join(app, cohort, "Ada")
    bot = join(app, cohort, "Bot 9000")
    ident = member_id(app, cohort, "Bot 9000")
    grid = unescape(trainer.get(f"/training/{cohort['id']}").get_data(as_text=True))
    # The button names the trainee, and so does its confirmation.
    assert f'action="{remove_path(cohort, ident)}"' in grid
    assert 'data-confirm="Remove Bot 9000 from Tuesday class? Their row leaves the grid' in grid
    # How long the workspace then lasts is said in days (it said "a while"), as on the trainee's page.
    assert "their workspace is no longer kept (deleted once unused for 30 days)" in grid
    assert 'aria-label="Remove Bot 9000 from the class"' in grid
    pulse = re.search(r"/grid\?pulse=([0-9a-f]+)", grid).group(1)
    assert trainer.get(f"/training/{cohort['id']}/grid?pulse={pulse}").status_code == 204

    response = trainer.post(remove_path(cohort, ident))
    assert response.status_code == 303 and response.headers["Location"] == f"/training/{cohort['id']}"
    page = unescape(trainer.get(response.headers["Location"]).get_data(as_text=True))
    assert "Bot 9000 is removed from Tuesday class" in page and "deleted once unused for 30 days" in page
    assert grid_names(trainer, cohort) == ["Ada"]
    # An open grid's poll (its pulse from before) redraws without the row.
    redrawn = trainer.get(f"/training/{cohort['id']}/grid?pulse={pulse}")
    assert redrawn.status_code == 200 and "Bot 9000" not in redrawn.get_data(as_text=True)
    assert "Bot 9000" not in trainer.get(f"/training/{cohort['id']}/export.csv").get_data(as_text=True)
    # The workspace is detached, not deleted: its keys work until the idle collector takes it.
    assert backend(app, bot).get("/jobs").status_code == 200
    with app.app_context():
        assert db.session.get(Workspace, bot.workspace_id).kept is False
        assert collect_idle(utcnow() + timedelta(days=1)) == []
        assert collect_idle(utcnow() + timedelta(days=31)) == [bot.workspace_id]
    # Removed already (a second click, another trainer's screen): said, not a 500 or a 404 page.
    again = trainer.post(remove_path(cohort, ident))
    assert again.status_code == 303
    assert "no longer in this class" in unescape(
        trainer.get(again.headers["Location"]).get_data(as_text=True)
    )


def test_only_the_trainer_removes_and_only_with_the_forms_token(app, trainer):
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    ident = member_id(app, cohort, "Ada")
    # A trainee (any browser without the trainer's session) gets 404, as on the grid.
    assert ada.post(remove_path(cohort, ident)).status_code == 404
    assert Visitor(app.test_client()).post(remove_path(cohort, ident)).status_code == 404
    # A forged form without the CSRF token is refused.
    assert trainer.client.post(remove_path(cohort, ident)).status_code == 400
    # Another class's trainer cannot remove this class's trainee through their own class's address.
    other_trainer = Visitor(app.test_client())
    other = create_cohort(other_trainer, name="Other class")
    assert other_trainer.post(remove_path(other, ident)).status_code == 303
    assert other_trainer.post(f"/training/{other['id']}/trainees/not-an-id/remove").status_code == 303
    assert members(app, cohort["id"]) == 1


def test_removing_frees_the_seat(app, trainer):
    app.config["TRAINING_TRAINEES_PER_COHORT"] = 2
    cohort = create_cohort(trainer)
    join(app, cohort, "Ada")
    join(app, cohort, "Ada again")
    assert try_join(app, cohort, "Grace").status_code == 409  # COHORT_FULL
    assert trainer.post(remove_path(cohort, member_id(app, cohort, "Ada again"))).status_code == 303
    assert try_join(app, cohort, "Grace").status_code == 302
    assert grid_names(trainer, cohort) == ["Ada", "Grace"]


def test_a_removed_trainee_is_told_so_and_may_join_again_as_a_new_row(app, trainer):
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    first_workspace = ada.workspace_id
    # A Reset moves the trainee to a new workspace in the class: the page still knows it was theirs.
    assert ada.post("/workspace/reset").status_code in (302, 303)
    assert ada.workspace_id != first_workspace
    assert "Tuesday class: Ada" in ada.get("/training/me").get_data(as_text=True)
    assert ada.get("/training/me/progress").status_code in (200, 204)

    assert trainer.post(remove_path(cohort, member_id(app, cohort, "Ada"))).status_code == 303
    # The open page's poll reloads it; reloaded, it says the trainer removed this workspace from the class.
    poll = ada.get("/training/me/progress")
    assert poll.status_code == 200 and poll.headers["HX-Refresh"] == "true"
    page = unescape(ada.get("/training/me").get_data(as_text=True))
    assert (
        'id="class-removed"' in page
        and "Your trainer removed you from the class <strong>Tuesday class</strong>" in page
    )
    assert 'id="class-deleted"' not in page and "not in a training class" not in page

    # The same browser joins again: a new row and a new workspace, under the same name if it likes.
    joining = ada.get(join_path(cohort)).get_data(as_text=True)
    assert 'name="name"' in joining and "You joined this class as" not in joining
    assert ada.post(join_path(cohort), {"name": "Ada"}).status_code == 302
    assert grid_names(trainer, cohort) == ["Ada"]
    assert "Tuesday class: Ada" in ada.get("/training/me").get_data(as_text=True)
