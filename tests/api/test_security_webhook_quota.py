"""Webhooks per workspace and mode: a revoked key's webhooks stay live, so revoking a full key and creating
another added 10 more each time, without end (every event fanned out to all of them)."""

from __future__ import annotations

import uuid

import pytest

from console.api.ratelimit import RateLimiter
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import create_key, revoke_key
from console.webhooks import urls
from tests.api.at_once import at_once, meeting_after, meeting_before, posting
from tests.conftest import Api, assert_error
from tests.factories import webhook_body


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def fill(api: Api, count: int) -> None:
    for i in range(count):
        response = api.post("/webhooks", json=webhook_body(f"http://127.0.0.1:9/h{i}"))
        assert response.status_code == 200, response.get_json()


def test_revoking_full_keys_does_not_make_room_past_the_workspaces_share(app, client, workspace, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOKS_PER_KEY", 2)
    monkeypatch.setitem(app.config, "API_KEYS_PER_MODE", 3)
    key_id, secret = workspace.key_ids["sandbox"], workspace.secrets["sandbox"]
    for _ in range(3):  # fill a key, revoke it, take a new one: 3 keys' worth of webhooks
        fill(Api(client, secret), 2)
        with app.app_context():
            revoke_key(db.session.get(ApiKey, uuid.UUID(key_id)))
            created = create_key(uuid.UUID(workspace.id), "sandbox", "next")
            db.session.commit()
            key_id, secret = str(created.key.id), created.secret
    api = Api(client, secret)
    response = api.post("/webhooks", json=webhook_body("http://127.0.0.1:9/one-more"))
    error = assert_error(response, 403, "FORBIDDEN", "WEBHOOK_LIMIT_REACHED")
    assert "6 live sandbox webhooks, the limit per workspace and mode" in error["message"]
    # Deleting one of the revoked keys' webhooks makes room again; another mode has its own share.
    listed = api.get("/webhooks").get_json()["data"]
    assert len(listed) == 6
    assert api.delete(f"/webhooks/{listed[0]['id']}").status_code in (200, 204)
    assert api.post("/webhooks", json=webhook_body("http://127.0.0.1:9/after")).status_code == 200
    monkeypatch.setattr(urls, "resolve", lambda host, port: ["93.184.216.34"])  # never contacted
    other = Api(client, workspace.secrets["development"], "development")
    assert other.post("/webhooks", json=webhook_body("https://hooks.example/h")).status_code == 200


@pytest.mark.committing
def test_creates_at_the_same_moment_do_not_pass_the_quota_together(app, workspace, monkeypatch):
    """On SQLite `FOR UPDATE` locks nothing and the count ran outside any transaction: two creates both counted
    room for one and both inserted (six at once on a key holding 8 of 10 made 14)."""
    from console.webhooks import services

    monkeypatch.setitem(app.config, "WEBHOOKS_PER_KEY", 1)
    counted = services.owned_count
    monkeypatch.setattr(services, "owned_count", meeting_after(counted))
    body = webhook_body("http://127.0.0.1:9/h")
    responses = at_once(app, 2, posting("/webhooks", workspace.secrets["sandbox"], body))
    assert sorted(r.status_code for r in responses) == [200, 403], [r.text for r in responses]
    with app.app_context():
        assert counted(uuid.UUID(workspace.key_ids["sandbox"])) == 1


@pytest.mark.committing
def test_two_listeners_starting_at_once_share_the_keys_one_relayed_webhook(
    app, client, workspace, monkeypatch
):
    """Both found no relayed webhook and both made one, so every event went to the key's listeners twice."""
    from console.webhooks import services

    monkeypatch.setattr(services, "add_webhook", meeting_before(services.add_webhook))
    responses = at_once(app, 2, posting("/sandbox/listen", workspace.secrets["sandbox"], {}))
    assert [r.status_code for r in responses] == [200, 200], [r.text for r in responses]
    assert len({r.json()["data"]["id"] for r in responses}) == 1
    listed = Api(client, workspace.secrets["sandbox"]).get("/webhooks").get_json()["data"]
    assert [w["url"] for w in listed] == [urls.RELAY_URL]


@pytest.mark.committing
def test_keys_created_at_the_same_moment_do_not_pass_the_keys_per_mode_together(app, workspace, monkeypatch):
    """The same race on the workspace's keys per mode (`console keys create` twice at once, two console tabs)."""
    import threading

    from console.keys import services as keys

    monkeypatch.setitem(app.config, "API_KEYS_PER_MODE", 2)  # the workspace holds one development key
    monkeypatch.setattr(keys, "active_count", meeting_after(keys.active_count))
    outcomes: list[str] = []

    def create() -> None:
        with app.app_context():
            try:
                keys.create_key(uuid.UUID(workspace.id), "development", "at once")
                db.session.commit()
                outcomes.append("created")
            except Exception as exc:  # the refusal, KEY_LIMIT_REACHED
                db.session.rollback()
                outcomes.append(getattr(exc, "code", repr(exc)))

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["KEY_LIMIT_REACHED", "created"]
