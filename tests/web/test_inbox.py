"""The built-in receiver: verifies signatures like a customer's receiver, keeps everything it gets."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from console.extensions import db
from console.web.webhooks.models import InboxMessage
from tests.web.helpers import deliver_to_inbox

EVENT = {
    "event": "account.added",
    "event_id": "0b7c4f9e-1d2a-4c1b-9a53-3d8f0f6f2a11",
    "payload": {"connected": True},
}


def messages(app, workspace_id):
    with app.app_context():
        return db.session.scalars(
            select(InboxMessage)
            .where(InboxMessage.workspace_id == workspace_id)
            .order_by(InboxMessage.received_at)
        ).all()


def test_a_signed_delivery_is_verified_and_kept(app, client, visitor):
    response = deliver_to_inbox(app, client, visitor.workspace_id, EVENT)
    assert response.status_code == 200
    assert response.get_json() == {"received": True, "event_id": EVENT["event_id"], "duplicate": False}
    [message] = messages(app, visitor.workspace_id)
    assert message.verified and message.event_type == "account.added" and message.key_last4
    assert set(message.headers) >= {"x-service-signature", "x-timestamp", "service-version"}


def test_a_bad_signature_is_refused_with_400_and_kept_with_the_reason(app, client, visitor):
    response = deliver_to_inbox(app, client, visitor.workspace_id, EVENT, secret="sk_sandbox_someone_else")
    assert response.status_code == 400
    [message] = messages(app, visitor.workspace_id)
    assert not message.verified and message.verify_error == "no matching signature"
    page = visitor.get("/webhooks").get_data(as_text=True)
    assert "✗ not verified" in page and "no matching signature" in page


def test_a_stale_timestamp_is_refused(app, client, visitor):
    response = deliver_to_inbox(app, client, visitor.workspace_id, EVENT, timestamp=int(time.time()) - 3600)
    assert response.status_code == 400
    assert "too old" in response.get_json()["error"]


def test_a_repeated_event_id_is_marked_duplicate(app, client, visitor):
    deliver_to_inbox(app, client, visitor.workspace_id, EVENT)
    again = deliver_to_inbox(app, client, visitor.workspace_id, EVENT)
    assert again.status_code == 200 and again.get_json()["duplicate"] is True
    assert [m.duplicate for m in messages(app, visitor.workspace_id)] == [False, True]


def test_a_forged_inbox_url_is_unknown(client, visitor):
    assert client.post("/inbox/forged.token", data=b"{}").status_code == 404


def test_new_messages_arrive_by_polling(app, client, visitor, rendered):
    page = visitor.get("/").get_data(as_text=True)
    poll_url = page.split('id="inbox-poller" hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert visitor.get(poll_url, htmx=True).status_code == 204
    deliver_to_inbox(app, client, visitor.workspace_id, EVENT)
    rendered.clear()
    fresh = visitor.get(poll_url, htmx=True)
    assert fresh.status_code == 200 and rendered == ["console/webhooks/_inbox_poll.html"]
    html = fresh.get_data(as_text=True)
    assert 'hx-swap-oob="afterbegin:#inbox-list"' in html and EVENT["event_id"] in html
    next_poll = html.split('hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert visitor.get(next_poll, htmx=True).status_code == 204


def test_the_signature_debugger_explains_the_result(app, client, visitor):
    deliver_to_inbox(app, client, visitor.workspace_id, EVENT)
    [message] = messages(app, visitor.workspace_id)
    headers = "\n".join(f"{k}: {v}" for k, v in message.headers.items())
    from tests.web.helpers import sandbox_secret

    good = {"secret": sandbox_secret(app, visitor.workspace_id), "headers": headers, "body": message.body}
    html = visitor.post("/webhooks/debugger", good, htmx=True).get_data(as_text=True)
    assert "verdict-ok" in html and "Signature valid" in html
    # The pasted secret is not written back into the page (it was the field's value): named by its last four.
    assert good["secret"] not in html and f"ending <code>{good['secret'][-4:]}</code>" in html
    html = visitor.post("/webhooks/debugger", {**good, "body": message.body + " "}, htmx=True).get_data(
        as_text=True
    )
    assert "verdict-bad" in html and "no matching signature" in html
    prefilled = visitor.get(f"/inbox/messages/{message.id}/debug", htmx=True).get_data(as_text=True)
    assert "x-service-signature: v2=" in prefilled


@pytest.mark.both_backends
def test_hostile_bodies_are_kept_without_a_server_error(app, client, visitor):
    """10,000 nested brackets and NUL bytes (which PostgreSQL text cannot hold) are stored, not a 500."""
    from console.web.webhooks.inbox import inbox_token

    with app.app_context():
        token = inbox_token(visitor.workspace_id)
    deep = b"[" * 10_000 + b"]" * 10_000
    escaped = b'{"event": "account.added\\u0000", "event_id": "a\\u0000b", "payload": {}}'
    raw_nul = b'{"event_id": "x\x00y"}'
    surrogate = b'{"event": "account.added\\ud800", "event_id": "\\udfffz", "payload": {"a": "\\ud800"}}'
    for body in (deep, escaped, raw_nul, surrogate):
        response = client.post(f"/inbox/{token}", data=body, content_type="application/json")
        assert response.status_code == 400, response.get_data(as_text=True)
    stored = messages(app, visitor.workspace_id)
    assert len(stored) == 4 and all("\x00" not in m.body for m in stored)
    assert ("a\ufffdb", "account.added\ufffd") in [(m.event_id, m.event_type) for m in stored]
    # A lone surrogate escaped in the JSON: no database text can hold one, so the labels show U+FFFD too.
    assert ("\ufffdz", "account.added\ufffd") in [(m.event_id, m.event_type) for m in stored]
    page = visitor.get("/webhooks")
    assert page.status_code == 200 and "\ufffdz" in page.get_data(as_text=True)
    for message in stored:
        assert visitor.get(f"/inbox/messages/{message.id}/debug", htmx=True).status_code == 200


def test_a_signed_but_deeply_nested_body_is_explained_not_a_500(app, client, visitor):
    """A body signed with the right key (pasted into the debugger, or posted to the inbox by one's own
    sender) that nests 10,000 brackets: verify() parsed it with json.loads, whose RecursionError was a 500."""
    import time

    from console.web.webhooks.inbox import inbox_token
    from console.webhooks.signing import sign
    from tests.web.helpers import sandbox_secret

    secret = sandbox_secret(app, visitor.workspace_id)
    body = "[" * 10_000 + "]" * 10_000
    stamp = int(time.time())
    headers = {"x-service-signature": sign(secret, stamp, body.encode()), "x-timestamp": str(stamp)}
    form = {"secret": secret, "headers": "\n".join(f"{k}: {v}" for k, v in headers.items()), "body": body}
    answer = visitor.post("/webhooks/debugger", form, htmx=True)
    assert answer.status_code == 200
    assert "verdict-bad" in answer.get_data(as_text=True) and "nested more than" in answer.get_data(
        as_text=True
    )
    with app.app_context():
        token = inbox_token(visitor.workspace_id)
    received = client.post(f"/inbox/{token}", data=body, headers=headers, content_type="application/json")
    assert received.status_code == 400
    [message] = messages(app, visitor.workspace_id)
    assert not message.verified and "nested more than" in message.verify_error


@pytest.mark.both_backends
def test_long_header_values_are_kept_not_a_500(app, client, visitor):
    """x-service-webhook-id is kept in a 64-character column: PostgreSQL refused a longer value (a 500)."""
    from console.web.webhooks.inbox import inbox_token

    with app.app_context():
        token = inbox_token(visitor.workspace_id)
    headers = {
        "x-service-webhook-id": "w" * 5000,
        "x-timestamp": "1" * 12,
        "x-service-signature": "v2=" + "a" * 5000,
    }
    response = client.post(f"/inbox/{token}", data=b"{}", headers=headers, content_type="application/json")
    assert response.status_code == 400
    [message] = messages(app, visitor.workspace_id)
    assert message.webhook_id == "w" * 64 and message.headers["x-service-webhook-id"] == "w" * 5000
    assert visitor.get("/webhooks").status_code == 200
