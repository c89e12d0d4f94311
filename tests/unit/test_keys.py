"""API keys: secrets shown once, revocation, rolling (webhooks follow the new key)."""

from __future__ import annotations

import uuid

import pytest

from console.core.errors import Unauthorized
from console.extensions import db
from console.keys import services as keys
from console.keys.models import ApiKey
from console.workspaces.services import create_workspace


def test_secret_is_stored_only_as_hash_and_ciphertext(app):
    with app.app_context():
        workspace = create_workspace("W")
        created = keys.create_key(workspace.id, "sandbox")
        row = db.session.get(ApiKey, created.key.id)
        assert created.secret.startswith("sk_sandbox_")
        assert created.secret not in (row.secret_hash, row.secret_ciphertext.decode(errors="ignore"))
        assert keys.secret_of(row) == created.secret
        assert keys.authenticate(created.secret, "sandbox").id == row.id


def test_revoked_key_no_longer_authenticates(app):
    with app.app_context():
        workspace = create_workspace("W")
        created = keys.create_key(workspace.id, "production")
        keys.revoke_key(created.key)
        with pytest.raises(Unauthorized) as raised:
            keys.authenticate(created.secret, "production")
        assert raised.value.code == "API_KEY_REVOKED"


def test_roll_revokes_and_moves_webhooks_to_the_new_key(app, client):
    from console.webhooks.models import Webhook
    from tests.conftest import Api

    with app.app_context():
        workspace = create_workspace("W")
        old = keys.create_key(workspace.id, "sandbox")
        db.session.commit()
        old_id, old_secret = old.key.id, old.secret
    response = Api(client, old_secret).post(
        "/webhooks",
        json={
            "url": "http://127.0.0.1:9/hook",
            "status": "active",
            "enabled_events": ["account.added"],
            "version": "2023-11-22",
        },
    )
    assert response.status_code == 200, response.get_json()
    webhook_id = uuid.UUID(response.get_json()["data"]["id"])
    with app.app_context():
        new = keys.roll_key(db.session.get(ApiKey, old_id))
        db.session.commit()
        assert db.session.get(ApiKey, old_id).revoked_at is not None
        assert db.session.get(Webhook, webhook_id).api_key_id == new.key.id
        with pytest.raises(Unauthorized):
            keys.authenticate(old_secret, "sandbox")
        assert keys.authenticate(new.secret, "sandbox").id == new.key.id
