"""A trainee's workspace opened elsewhere with its secret: that browser's Reset leaves it, as it leaves any
workspace opened with a secret (its owner's backend and browser hold it)."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from console.extensions import db
from console.training.models import CohortMember
from console.workspaces.models import Workspace
from tests.web.conftest import Visitor
from tests.web.helpers import sandbox_secret
from tests.web.test_training import create_cohort, join


def test_reset_in_a_browser_that_opened_a_trainees_workspace_leaves_the_trainee_as_they_were(app):
    """Reset started the trainee over (cohorts.start_over) before asking whether this browser was the trainee's:
    whoever held the secret deleted the trainee's workspace, with its keys, and moved the trainee's row."""
    cohort = create_cohort(Visitor(app.test_client()))
    trainee = join(app, cohort, "Ada")
    theirs = trainee.workspace_id
    secret = sandbox_secret(app, theirs)

    other = Visitor(app.test_client())
    other.get("/requests")
    other.post("/workspace/open", {"secret": secret})
    assert other.workspace_id == theirs
    page = other.get("/").get_data(as_text=True)
    assert (
        "This one was opened with its secret: it stays as it is for its owner" in page
    )  # Reset's confirmation
    assert "You stay in Tuesday class" not in page
    assert other.post("/workspace/reset").status_code in (302, 303)
    assert other.workspace_id != theirs  # this browser left it, for a workspace of its own

    with app.app_context():
        assert db.session.get(Workspace, theirs) is not None
        members = db.session.scalars(
            select(CohortMember).where(CohortMember.cohort_id == uuid.UUID(cohort["id"]))
        ).all()
        assert [(m.name, m.workspace_id) for m in members] == [("Ada", theirs)]
    assert "Ada" in trainee.get("/training/me").get_data(as_text=True)
    headers = {"x-api-secret": secret, "Service-Version": "2023-11-22"}
    assert (
        app.test_client().get("/sandbox/v1/jobs", headers=headers).status_code == 200
    )  # their backend still calls
