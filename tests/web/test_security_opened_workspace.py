"""A workspace opened with a secret shows no more than that secret reaches, for as long as the browser holds it:
not only when it was opened."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import create_key, revoke_key, secret_of
from console.requestlog.models import RequestLogEntry
from console.requestlog.writer import writer_for
from console.webhooks import sign
from tests.web.conftest import Visitor
from tests.web.helpers import sandbox_secret


def opened_by_other(app, owner: Visitor) -> Visitor:
    other = Visitor(app.test_client())
    other.get("/requests")
    other.post("/workspace/open", {"secret": sandbox_secret(app, owner.workspace_id)})
    assert other.workspace_id == owner.workspace_id
    return other


def modes_held(app, workspace_id) -> set[str]:
    with app.app_context():
        return set(db.session.scalars(select(ApiKey.mode).where(ApiKey.workspace_id == workspace_id)))


def test_a_browser_that_opened_with_a_sandbox_secret_cannot_create_a_production_key(app, visitor):
    """It could: the console created the key and showed its secret, production access from a sandbox secret."""
    other = opened_by_other(app, visitor)
    response = other.post("/keys", {"mode": "production"})
    assert response.status_code == 403
    assert "MODE_NOT_HELD" in response.get_data(as_text=True)
    assert modes_held(app, visitor.workspace_id) == {"sandbox"}
    assert other.post("/keys", {"mode": "sandbox"}).status_code == 302  # its own mode, as the API allows


def test_the_browser_leaves_once_the_owner_adds_a_stronger_key(app, visitor):
    """The check ran only when the workspace was opened: a production key added later was revealed to it."""
    other = opened_by_other(app, visitor)
    with app.app_context():
        live = create_key(visitor.workspace_id, "production", "owner's")
        db.session.commit()
        live_id = str(live.key.id)
    assert other.post(f"/keys/{live_id}/reveal").status_code == 404
    page = other.get("/keys").get_data(as_text=True)
    assert live_id not in page and live.key.secret_last4 not in page
    assert other.workspace_id != visitor.workspace_id  # its POST made it a workspace of its own
    with other.client.session_transaction() as session:
        assert "opened_workspace_id" not in session


def test_the_browser_leaves_once_the_secret_it_opened_with_is_revoked(app, visitor):
    """Revoking a leaked secret left every browser that had opened the workspace with it still inside."""
    other = opened_by_other(app, visitor)
    with app.app_context():
        key = db.session.scalars(
            select(ApiKey).where(ApiKey.workspace_id == uuid.UUID(str(visitor.workspace_id)))
        ).one()
        revoke_key(key)
        db.session.commit()
        key_id = str(key.id)
    assert key_id not in other.get("/keys").get_data(as_text=True)
    assert other.post(f"/keys/{key_id}/reveal").status_code == 404


def test_the_owners_own_browser_is_not_affected(app, visitor):
    assert visitor.post("/keys", {"mode": "production"}).status_code == 302
    assert "production" in modes_held(app, visitor.workspace_id)
    assert visitor.get("/keys").status_code == 200
    with visitor.client.session_transaction() as session:
        assert session["workspace_id"] == str(visitor.workspace_id)


def test_the_browser_manages_only_the_key_it_opened_with(app, visitor):
    """Revealing the workspace's other keys let the holder of a leaked secret keep access once it was revoked."""
    with app.app_context():
        ci = create_key(visitor.workspace_id, "sandbox", "CI")
        db.session.commit()
        ci_id = str(ci.key.id)
    other = opened_by_other(app, visitor)  # opened with the first sandbox key, not the CI one
    for action in ("reveal", "roll", "revoke"):
        assert other.post(f"/keys/{ci_id}/{action}").status_code == 404
    page = other.get("/keys").get_data(as_text=True)
    assert ci.secret not in page
    assert f"/keys/{ci_id}/reveal" not in page and f"/keys/{ci_id}/revoke" not in page  # not offered either
    with app.app_context():
        assert db.session.get(ApiKey, ci.key.id).revoked_at is None
        opening = db.session.scalars(
            select(ApiKey).where(ApiKey.workspace_id == visitor.workspace_id, ApiKey.id != ci.key.id)
        ).one()
        opening_id, opening_secret = opening.id, secret_of(opening)
    assert opening_secret in other.post(f"/keys/{opening_id}/reveal").get_data(as_text=True)
    # The owner's own browser manages them all.
    assert visitor.post(f"/keys/{ci_id}/reveal").status_code == 200


def test_nor_reveals_another_keys_secret_through_the_request_log_or_signs_with_it(app, client, visitor):
    """The request log's reveal and the signature debugger used any key of the workspace: the CI key's secret,
    or valid signatures made with it for any body (deliveries forged to the owner's receiver)."""
    with app.app_context():
        ci = create_key(visitor.workspace_id, "sandbox", "CI")
        db.session.commit()
        ci_id = str(ci.key.id)
    headers = {"x-api-secret": ci.secret, "Service-Version": "2023-11-22"}
    assert client.get("/sandbox/v1/jobs", headers=headers).status_code == 200  # the owner's CI calls
    with app.app_context():
        writer_for(app).flush()
        row = db.session.scalars(select(RequestLogEntry).where(RequestLogEntry.api_key_id == ci.key.id)).one()
        row_id = str(row.id)
    other = opened_by_other(app, visitor)
    assert other.post(f"/requests/{row_id}/reveal").status_code == 404
    form = {"key_id": ci_id, "headers": "x-timestamp: 1700000000\nx-service-signature: v2=00", "body": "{}"}
    page = other.post("/webhooks/debugger", form).get_data(as_text=True)
    assert sign(ci.secret, 1700000000, b"{}") not in page
    # The owner's own browser still reveals and signs with every key.
    assert ci.secret in visitor.post(f"/requests/{row_id}/reveal").get_data(as_text=True)
    assert sign(ci.secret, 1700000000, b"{}") in visitor.post("/webhooks/debugger", form).get_data(
        as_text=True
    )
