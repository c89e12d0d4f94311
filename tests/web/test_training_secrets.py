"""Which sandbox secret a trainee's training page prints: the console's one rule (`may_use_secret`)."""

from __future__ import annotations

from html import unescape

from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from tests.web.conftest import Visitor
from tests.web.test_training import create_cohort, join


def sandbox_secrets(app, workspace_id) -> list[str]:
    """The workspace's live sandbox secrets, oldest first."""
    with app.app_context():
        keys = db.session.scalars(
            select(ApiKey)
            .where(ApiKey.workspace_id == workspace_id, ApiKey.revoked_at.is_(None))
            .order_by(ApiKey.created_at)
        )
        return [secret_of(key) for key in keys]


def test_a_browser_that_opened_a_trainees_workspace_with_a_secret_sees_only_that_secret(app):
    """/training/me filled its snippets with the trainee's newest key, whatever secret this browser opened the
    workspace with: a leaked (pasted) secret showed the trainee's newer one, which stays good once the trainee
    revokes the leaked one."""
    cohort = create_cohort(Visitor(app.test_client()))
    trainee = join(app, cohort, "Ada")
    [first] = sandbox_secrets(app, trainee.workspace_id)
    assert trainee.post("/keys", {"mode": "sandbox"}).status_code == 302  # the trainee's second key
    first_again, newest = sandbox_secrets(app, trainee.workspace_id)
    assert first_again == first

    other = Visitor(app.test_client())
    other.get("/requests")
    assert other.post("/workspace/open", {"secret": first}).status_code == 302
    assert other.workspace_id == trainee.workspace_id
    page = unescape(other.get("/training/me").get_data(as_text=True))
    assert "Tuesday class: Ada" in page  # their exercises, with snippets
    assert first in page
    assert newest not in page

    # The trainee's own browser still gets their newest key.
    own = unescape(trainee.get("/training/me").get_data(as_text=True))
    assert newest in own
