"""API keys: secrets shown once, revocation, rolling (webhooks follow the new key)."""

from __future__ import annotations

import uuid

import pytest

from console.core.errors import Unauthorized
from console.db.rows import entity
from console.extensions import db
from console.keys import services as keys
from console.keys.models import ApiKey
from console.workspaces.services import create_workspace

pytestmark = pytest.mark.both_backends


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
        db.session.commit()  # authentication reads the stored key, as the next API request would
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


class Clock:
    """Real time as `console.keys.services` and `ApiKey.is_active` see it, moved by hand."""

    def __init__(self, monkeypatch) -> None:
        from console.core.timeutil import utcnow

        self.now = utcnow()
        monkeypatch.setattr("console.keys.services.utcnow", lambda: self.now)
        monkeypatch.setattr("console.keys.models.utcnow", lambda: self.now)

    def advance(self, **delta) -> None:
        from datetime import timedelta

        self.now += timedelta(**delta)


def _rolled(app, grace: str):
    with app.app_context():
        workspace = create_workspace("W")
        old = keys.create_key(workspace.id, "sandbox")
        new = keys.roll_key(old.key, keys.grace_period(grace))
        db.session.commit()
        return old.secret, new.secret


def test_a_rolled_key_works_until_its_grace_period_ends(app, monkeypatch):
    clock = Clock(monkeypatch)
    old_secret, new_secret = _rolled(app, "1h")
    with app.app_context():
        clock.advance(minutes=59)
        assert entity(keys.authenticate(old_secret, "sandbox")).is_active
        assert entity(keys.authenticate(new_secret, "sandbox")).is_active
        clock.advance(minutes=1)
        with pytest.raises(Unauthorized) as raised:
            keys.authenticate(old_secret, "sandbox")
        assert raised.value.code == "API_KEY_EXPIRED"
        assert keys.authenticate(new_secret, "sandbox")


def test_seven_days_of_grace(app, monkeypatch):
    clock = Clock(monkeypatch)
    old_secret, _ = _rolled(app, "7d")
    with app.app_context():
        clock.advance(days=6, hours=23)
        assert keys.authenticate(old_secret, "sandbox")
        clock.advance(hours=1)
        with pytest.raises(Unauthorized):
            keys.authenticate(old_secret, "sandbox")


def test_no_grace_refuses_the_old_secret_at_once(app, monkeypatch):
    Clock(monkeypatch)
    old_secret, _ = _rolled(app, "none")
    with app.app_context(), pytest.raises(Unauthorized) as raised:
        keys.authenticate(old_secret, "sandbox")
    assert raised.value.code == "API_KEY_REVOKED"


def test_rolling_again_never_extends_the_deadline_and_revoking_ends_the_grace(app, monkeypatch):
    clock = Clock(monkeypatch)
    with app.app_context():
        workspace = create_workspace("W")
        old = keys.create_key(workspace.id, "sandbox")
        keys.roll_key(old.key, keys.grace_period("1h"))
        first_deadline = old.key.expires_at
        keys.roll_key(old.key, keys.grace_period("7d"))
        assert old.key.expires_at == first_deadline
        keys.revoke_key(old.key)
        db.session.commit()
        clock.advance(minutes=1)
        with pytest.raises(Unauthorized) as raised:
            keys.authenticate(old.secret, "sandbox")
        assert raised.value.code == "API_KEY_REVOKED"


def test_unknown_grace_is_a_field_error():
    from console.core.errors import ValidationFailed

    with pytest.raises(ValidationFailed) as raised:
        keys.grace_period("2h")
    assert raised.value.fields[0].name == "grace"


def test_the_api_answers_401_api_key_expired_after_the_grace(app, client, monkeypatch):
    from tests.conftest import Api, assert_error

    clock = Clock(monkeypatch)
    old_secret, new_secret = _rolled(app, "24h")
    assert Api(client, old_secret).get("/webhooks").status_code == 200
    clock.advance(hours=24)
    assert_error(Api(client, old_secret).get("/webhooks"), 401, "UNAUTHORIZED_REQUEST", "API_KEY_EXPIRED")
    assert Api(client, new_secret).get("/webhooks").status_code == 200
