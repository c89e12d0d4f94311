"""The webhook endpoint page and the inbox's answer modes: attempts, success rate, test event, replay,
pause, version replacement, the debugger's signing key, and a resend that shows as queued (bug 6)."""

from __future__ import annotations

import re
import time
import uuid
from html import unescape
from types import SimpleNamespace

import pytest
from sqlalchemy import func, select

from console.api.ratelimit import RateLimiter
from console.clock.moves import advance
from console.clock.services import now
from console.extensions import db
from console.web.webhooks import endpoint_stats, inbox
from console.web.webhooks.models import InboxMessage
from console.webhooks.delivery_loop import deliver_due
from console.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery
from console.workspaces.models import Workspace
from tests.web.helpers import deliver_to_inbox, run_headless

pytestmark = pytest.mark.committing


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def text_of(response) -> str:
    """The page's text, tags removed and whitespace collapsed."""
    return text_of_html(response.get_data(as_text=True))


def text_of_html(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def inbox_webhook(app, visitor) -> str:
    """Register the built-in inbox (as the page's button does); its webhook id."""
    visitor.post("/webhooks/inbox")
    with app.app_context():
        ids = db.session.scalars(
            select(Webhook.id).where(
                Webhook.workspace_id == visitor.workspace_id, Webhook.deleted_at.is_(None)
            )
        ).all()
    assert len(ids) == 1
    return str(ids[0])


def deliver(app) -> int:
    with app.app_context():
        return deliver_due(app)


def advance_clock(app, visitor, seconds: float) -> None:
    with app.app_context():
        advance(db.session.get(Workspace, visitor.workspace_id), seconds=seconds)


def advance_to_next_retry(app, visitor, webhook_id: str) -> None:
    with app.app_context():
        workspace = db.session.get(Workspace, visitor.workspace_id)
        due = db.session.scalar(
            select(func.min(WebhookDelivery.due_at)).where(
                WebhookDelivery.webhook_id == uuid.UUID(webhook_id), WebhookDelivery.status == "pending"
            )
        )
        advance(workspace, seconds=max(1.0, (due - now(workspace)).total_seconds() + 1))


def attempts(app, webhook_id: str) -> list[WebhookAttempt]:
    with app.app_context():
        return db.session.scalars(
            select(WebhookAttempt)
            .where(WebhookAttempt.webhook_id == uuid.UUID(webhook_id))
            .order_by(WebhookAttempt.at, WebhookAttempt.number)
        ).all()


def delivery_statuses(app, webhook_id: str) -> list[str]:
    with app.app_context():
        return db.session.scalars(
            select(WebhookDelivery.status).where(WebhookDelivery.webhook_id == uuid.UUID(webhook_id))
        ).all()


def set_behaviour(visitor, value: str, **extra):
    response = visitor.post("/inbox/behaviour", {"behaviour": value, **extra})
    assert response.status_code == 302, response.get_data(as_text=True)
    return response


def fail_for_good(app, visitor, webhook_id: str) -> None:
    """With the inbox answering 500, advance the clock through every retry until the delivery fails."""
    for _ in range(40):  # each delivery retries on its own schedule
        deliver(app)
        if "pending" not in delivery_statuses(app, webhook_id):
            return
        advance_to_next_retry(app, visitor, webhook_id)
    raise AssertionError(delivery_statuses(app, webhook_id))


def test_the_endpoint_page_shows_attempts_rates_and_the_chart(app, visitor):
    webhook_id = inbox_webhook(app, visitor)
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert "Built-in inbox" in page and "No attempt yet" in page and "0 of 0 attempts delivered" in page
    slot = visitor.get(f"/webhooks/{webhook_id}").get_data(as_text=True).split('id="conformance-slot"', 1)[1]
    assert f'href="/webhooks/{webhook_id}/conformance#conformance"' in slot.split("</div>", 1)[0]
    response = visitor.post(f"/webhooks/{webhook_id}/test", {"event": "account.added"})
    assert response.status_code == 302 and response.headers["Location"] == f"/webhooks/{webhook_id}"
    # What the action came to, at the top of the page (the call's exchange is at its bottom).
    top = visitor.get(f"/webhooks/{webhook_id}").get_data(as_text=True).split('id="main"', 1)[1][:600]
    assert "Test event account.added sent" in top
    assert deliver(app) == 1
    html = visitor.get(f"/webhooks/{webhook_id}").get_data(as_text=True)
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert "100% 1 of 1 attempts delivered" in page
    assert "POST /sandbox/v1/sandbox/webhooks/" in page or "/sandbox/webhooks/" in page  # the call it made
    assert html.count('class="bar bar-delivered"') == 1
    assert (
        'style="' not in html.split('id="attempts"', 1)[1].split("</section>", 1)[0]
    )  # CSP: no inline style
    # Every moment in the console's one format ("Sat 28 Nov 2026 16:55:25"), not ISO-like "2026-11-28 16:55:25".
    assert not re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", page)
    assert re.search(r"Last 200 OK.*?\w{3} \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2}", page, re.S)


def test_the_attempts_table_says_when_it_lists_only_the_newest(app, visitor, monkeypatch):
    monkeypatch.setattr(endpoint_stats, "RECENT_ATTEMPTS", 2)
    webhook_id = inbox_webhook(app, visitor)
    visitor.post(f"/webhooks/{webhook_id}/test", {"event": "account.added"})
    assert deliver(app) == 1
    assert 'id="attempts-shown"' not in visitor.get(f"/webhooks/{webhook_id}").get_data(as_text=True)
    for _ in range(2):
        visitor.post(f"/webhooks/{webhook_id}/test", {"event": "account.added"})
        deliver(app)
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    # The rate counts all three; the table lists two and says why, and where the others are.
    assert "3 of 3 attempts delivered" in page
    assert (
        "The newest 2 attempts are listed. Every attempt of an event is in its row of the event log" in page
    )


def test_success_rate_counts_attempts_in_the_window_of_the_workspace_clock(app, visitor):
    webhook_id = inbox_webhook(app, visitor)
    set_behaviour(visitor, "fail")
    visitor.post(f"/webhooks/{webhook_id}/test")
    deliver(app)
    set_behaviour(visitor, "ok")
    advance_clock(app, visitor, 30)
    deliver(app)
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert page.count("50% 1 of 2 attempts delivered") == 2
    advance_clock(app, visitor, 2 * 86400)  # both attempts leave the 24-hour window, not the 7-day one
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert "— 0 of 0 attempts delivered" in page and "50% 1 of 2 attempts delivered" in page


def test_a_failed_attempt_says_its_status_once_on_the_endpoint_page_and_in_the_event_log(app, visitor):
    """The worker records a 500 as the error "answered 500": under the status badge "500" the row read
    "500 answered 500". The Status cell now shows only what the error adds beyond the code."""
    webhook_id = inbox_webhook(app, visitor)
    set_behaviour(visitor, "fail")
    visitor.post(f"/webhooks/{webhook_id}/test", {"event": "account.added"})
    deliver(app)
    (attempt,) = attempts(app, webhook_id)
    assert attempt.status_code == 500 and attempt.error == "answered 500"
    html = visitor.get(f"/webhooks/{webhook_id}").get_data(as_text=True)
    row = text_of_html(html.split('id="attempt-table"', 1)[1].split("</table>", 1)[0])
    assert row.count("500") == 1 and "answered" not in row, row
    detail = visitor.get(f"/events/{attempt.event_id}").get_data(as_text=True)
    cells = text_of_html(detail.split("Delivery attempts", 1)[1].split("</table>", 1)[0])
    assert " 500 " in cells and "answered" not in cells, cells


@pytest.mark.parametrize(
    ("status_code", "error", "shown"),
    [
        (500, "answered 500", None),
        (302, "answered 302: redirects are not followed", "redirects are not followed"),
        (None, "timed out after 10 s", "timed out after 10 s"),
        (200, None, None),
    ],
)
def test_the_status_cell_keeps_only_what_the_error_adds(app, status_code, error, shown):
    template = app.jinja_env.get_template("console/webhooks/_attempt_status.html")
    cell = str(template.module.attempt_status(SimpleNamespace(status_code=status_code, error=error)))
    assert (str(status_code) if status_code else "no response") in cell
    assert "answered" not in cell
    if shown is None:
        assert "attempt-note" not in cell
    else:
        assert f'<span class="muted attempt-note">{shown}</span>' in cell


def test_inbox_500_mode_fails_attempts_and_retries_come_due_with_the_clock(app, visitor):
    webhook_id = inbox_webhook(app, visitor)
    page = text_of(visitor.get("/webhooks"))
    assert "How the inbox answers" in page
    set_behaviour(visitor, "fail")
    run_headless(visitor, "user_good")
    deliver(app)
    first = attempts(app, webhook_id)
    assert first and {a.status_code for a in first} == {500} and {a.outcome for a in first} == {"retry"}
    assert set(delivery_statuses(app, webhook_id)) == {"pending"}
    assert deliver(app) == 0  # the retries are 20 s away on the workspace clock
    advance_clock(app, visitor, 30)
    deliver(app)
    again = attempts(app, webhook_id)
    assert len(again) == 2 * len(first) and {a.number for a in again} == {1, 2}
    fail_for_good(app, visitor, webhook_id)
    assert set(delivery_statuses(app, webhook_id)) == {"failed"}
    assert max(a.number for a in attempts(app, webhook_id)) == 6
    with app.app_context():
        kept = db.session.scalars(
            select(InboxMessage).where(InboxMessage.workspace_id == visitor.workspace_id)
        ).all()
    assert kept and {m.behaviour for m in kept} == {"fail"} and not any(m.duplicate for m in kept)
    assert "answered 500" in text_of(visitor.get("/webhooks"))
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert "retry scheduled" in page and "failed" in page


def test_replay_from_the_endpoint_page_delivers_every_failed_delivery(app, visitor):
    webhook_id = inbox_webhook(app, visitor)
    set_behaviour(visitor, "fail", webhook_id=webhook_id)
    run_headless(visitor, "user_good")
    fail_for_good(app, visitor, webhook_id)
    failed = len(delivery_statuses(app, webhook_id))
    assert failed and set(delivery_statuses(app, webhook_id)) == {"failed"}
    assert f"{failed} deliveries to this webhook failed" in text_of(visitor.get(f"/webhooks/{webhook_id}"))
    set_behaviour(visitor, "ok", webhook_id=webhook_id)
    response = visitor.post(f"/webhooks/{webhook_id}/replay", {"since": "2000-01-01T00:00"})
    assert response.status_code == 302
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert f'"replayed": {failed}' in page and "/replay → 200" in page
    assert f"Replay: {failed} failed deliveries queued again." in page
    deliver(app)
    assert set(delivery_statuses(app, webhook_id)) == {"delivered"}


def test_replay_with_a_bad_moment_shows_the_apis_400(app, visitor):
    webhook_id = inbox_webhook(app, visitor)
    visitor.post(f"/webhooks/{webhook_id}/replay", {"since": "yesterday"})
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert "/replay → 400" in page and "must be an ISO 8601 datetime" in page
    assert "The API answered 400: Invalid request parameters: since." in page  # said at the top


def test_pause_and_resume_from_the_endpoint_page(app, visitor):
    webhook_id = inbox_webhook(app, visitor)
    response = visitor.post(f"/webhooks/{webhook_id}/status", {"status": "paused", "back": "endpoint"})
    assert response.headers["Location"] == f"/webhooks/{webhook_id}"
    page = text_of(visitor.get(f"/webhooks/{webhook_id}"))
    assert "paused by request" in page and "Resume" in page and "a paused webhook is not replayed" in page
    visitor.post(f"/webhooks/{webhook_id}/status", {"status": "active", "back": "endpoint"})
    assert "Pause" in text_of(visitor.get(f"/webhooks/{webhook_id}"))


def test_slow_mode_answers_after_a_delay_held_in_the_sender(app, visitor, monkeypatch):
    monkeypatch.setattr(inbox, "SLOW_SECONDS", 0.3)
    webhook_id = inbox_webhook(app, visitor)
    set_behaviour(visitor, "slow")
    visitor.post(f"/webhooks/{webhook_id}/test")
    deliver(app)
    [attempt] = attempts(app, webhook_id)
    assert attempt.status_code == 200 and attempt.outcome == "delivered" and attempt.latency_ms >= 300


def test_timeout_mode_times_out_at_the_workers_timeout_and_pins_no_serving_thread(app, client, visitor):
    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 0.4
    webhook_id = inbox_webhook(app, visitor)
    set_behaviour(visitor, "timeout")
    visitor.post(f"/webhooks/{webhook_id}/test")
    deliver(app)
    [attempt] = attempts(app, webhook_id)
    assert attempt.status_code is None and attempt.error == "timeout: no response within 0.4 s"
    assert attempt.outcome == "retry" and attempt.latency_ms >= 400  # held for the sender's whole timeout
    # Posted from outside (a socket, a serving thread): answered at once; only the sender would wait. With a
    # 60 s timeout a wait would show plainly (against 0.4 s, one answer on a loaded CI machine took 1.15 s).
    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 60
    started = time.monotonic()
    answer = deliver_to_inbox(app, client, visitor.workspace_id, {"event": "account.added", "event_id": "x"})
    assert answer.status_code == 200 and time.monotonic() - started < 30
    assert answer.headers["X-Console-Inbox-Delay"] == "timeout"


def test_an_unknown_behaviour_is_refused(visitor):
    assert visitor.post("/inbox/behaviour", {"behaviour": "explode"}).status_code == 400
    assert visitor.post("/inbox/behaviour", {"behaviour": "fail"}, csrf=False).status_code == 400


def test_a_resend_of_a_delivered_event_shows_queued_then_delivered(app, visitor):
    """Bug 6: the resend starts a new round; the page read the lifetime attempt count and said "retrying"."""
    webhook_id = inbox_webhook(app, visitor)
    run_headless(visitor, "user_good")
    deliver(app)
    with app.app_context():
        event_id = db.session.scalars(
            select(WebhookDelivery.event_id).where(WebhookDelivery.webhook_id == uuid.UUID(webhook_id))
        ).first()
    page = text_of(visitor.post(f"/events/{event_id}/resend"))
    assert "retrying" not in page and "next attempt due" not in page
    assert "queued" in page and "sending now" in page
    assert "badge-delivery-queued" in visitor.get("/events").get_data(as_text=True)
    deliver(app)
    page = visitor.get(f"/events/{event_id}").get_data(as_text=True)
    assert "badge-delivery-delivered" in page and "sending now" not in page


def test_a_retry_still_shows_retrying_with_its_next_attempt(app, visitor):
    webhook_id = inbox_webhook(app, visitor)
    set_behaviour(visitor, "fail")
    visitor.post(f"/webhooks/{webhook_id}/test")
    deliver(app)
    with app.app_context():
        event_id = db.session.scalars(select(WebhookDelivery.event_id)).first()
    page = text_of(visitor.get(f"/events/{event_id}"))
    assert "retrying" in page and "next attempt due" in page


def test_the_debugger_from_an_inbox_delivery_uses_the_owning_keys_secret(app, visitor):
    """Bug 7: the debugger opened from a genuine delivery knows the key that signed it (masked, Reveal)."""
    webhook_id = inbox_webhook(app, visitor)
    visitor.post(f"/webhooks/{webhook_id}/test")
    deliver(app)
    with app.app_context():
        message = db.session.scalars(select(InboxMessage)).one()
        key_id = str(db.session.get(Webhook, uuid.UUID(webhook_id)).api_key_id)
    html = visitor.get(f"/inbox/messages/{message.id}/debug", htmx=True).get_data(as_text=True)
    assert f'name="key_id" value="{key_id}"' in html and "••••" in html and "Reveal" in html
    assert "sk_sandbox_" + "" not in html.replace("sk_sandbox_••••", "")  # the secret is not in the page
    headers = unescape(re.search(r'name="headers"[^>]*>([^<]*)</textarea>', html).group(1))
    body = unescape(re.search(r'name="body"[^>]*>([^<]*)</textarea>', html).group(1))
    form = {"key_id": key_id, "secret": "", "headers": headers, "body": body, "ignore_age": "1"}
    verdict = text_of(visitor.post("/webhooks/debugger", form, htmx=True))
    assert "Valid: Signature valid" in verdict
    # The endpoint page's debugger comes filled in with the newest delivery and the same key.
    endpoint_html = visitor.get(f"/webhooks/{webhook_id}").get_data(as_text=True)
    assert f'name="key_id" value="{key_id}"' in endpoint_html and unescape(endpoint_html).count(body) >= 1
    # Revealing is an explicit POST with the CSRF token, as on the keys page.
    assert visitor.client.get(f"/keys/{key_id}/reveal").status_code == 405
    assert visitor.post(f"/keys/{key_id}/reveal", htmx=True, csrf=False).status_code == 400
    revealed = visitor.post(f"/keys/{key_id}/reveal", htmx=True).get_data(as_text=True)
    assert "sk_sandbox_" in revealed and "••••" not in revealed


def test_the_debugger_does_not_use_another_workspaces_key(app, visitor, other_visitor):
    webhook_id = inbox_webhook(app, other_visitor)
    with app.app_context():
        foreign = str(db.session.get(Webhook, uuid.UUID(webhook_id)).api_key_id)
    form = {"key_id": foreign, "secret": "", "headers": "x-timestamp: 1", "body": "{}"}
    response = visitor.post("/webhooks/debugger", form, htmx=True)
    assert "Not valid" in text_of(response) and foreign not in response.get_data(as_text=True)


def test_quota_meter_and_the_old_version_replacement(app, visitor):
    inbox_webhook(app, visitor)
    assert "1/10" in text_of(visitor.get("/webhooks"))
    with app.app_context():
        url = db.session.scalars(select(Webhook.url)).one()
    form = {"url": url, "status": "active", "enabled_events": ["account.added"], "version": "2023-04-18"}
    visitor.post("/webhooks", form)
    page = text_of(visitor.get("/webhooks"))
    assert "2/10" in page and "will not receive valid Prime events" in page
    with app.app_context():
        old = db.session.scalars(select(Webhook).where(Webhook.version == "2023-04-18")).one()
    page = text_of(visitor.get(f"/webhooks/{old.id}"))
    assert "will not receive valid Prime events" in page and "deletes this one" in page
    response = visitor.post(f"/webhooks/{old.id}/replace")
    with app.app_context():
        live = db.session.scalars(select(Webhook).where(Webhook.deleted_at.is_(None))).all()
        gone = db.session.get(Webhook, old.id)
    assert gone.deleted_at is not None
    [new] = [w for w in live if w.id != old.id and w.enabled_events == ["account.added"]]
    assert new.version == "2023-11-22" and new.url == url and new.status == "active"
    assert response.headers["Location"] == f"/webhooks/{new.id}"
    assert "will not receive valid Prime events" not in text_of(visitor.get(f"/webhooks/{new.id}"))
    assert "2/10" in text_of(visitor.get("/webhooks"))
    # A newer key becomes the console's key: each key's meter is shown.
    visitor.post("/keys", {"mode": "sandbox", "label": "second"})
    page = text_of(visitor.get("/webhooks"))
    assert re.search(r"the console's key “second” \(…[^)]{4}\) 0/10 0/10", page), page
    assert re.search(r"Webhooks of key “[^”]*” \(…[^)]{4}\) 2/10 2/10", page)


def test_another_workspaces_endpoint_page_is_not_found(app, visitor, other_visitor):
    webhook_id = inbox_webhook(app, other_visitor)
    assert visitor.get(f"/webhooks/{webhook_id}").status_code == 404
    assert visitor.post(f"/webhooks/{webhook_id}/replay", {"since": "2000-01-01T00:00"}).status_code == 404
    assert visitor.post(f"/webhooks/{webhook_id}/test").status_code == 404
    assert visitor.get("/webhooks/not-a-uuid").status_code == 404


def test_a_replacement_the_quota_refuses_keeps_the_old_webhook(app, visitor):
    inbox_webhook(app, visitor)
    with app.app_context():
        url = db.session.scalars(select(Webhook.url)).one()
    form = {"url": url, "status": "active", "enabled_events": ["account.added"], "version": "2023-04-18"}
    for _ in range(9):
        visitor.post("/webhooks", form)
    assert "10/10" in text_of(visitor.get("/webhooks")) and "limit reached" in text_of(
        visitor.get("/webhooks")
    )
    with app.app_context():
        old = db.session.scalars(select(Webhook).where(Webhook.version == "2023-04-18")).first()
    response = visitor.post(f"/webhooks/{old.id}/replace")
    assert response.headers["Location"] == f"/webhooks/{old.id}"
    page = text_of(visitor.get(f"/webhooks/{old.id}"))
    assert "POST /webhooks → 403" in page or "→ 403" in page
    assert "WEBHOOK_LIMIT_REACHED" in page
    with app.app_context():
        assert db.session.get(Webhook, old.id).deleted_at is None


def test_a_bad_signature_is_answered_400_whatever_the_mode(app, client, visitor):
    set_behaviour(visitor, "fail")
    event = {"event": "account.added", "event_id": "e1"}
    bad = deliver_to_inbox(app, client, visitor.workspace_id, event, secret="sk_sandbox_someone_else")
    assert bad.status_code == 400
    good = deliver_to_inbox(app, client, visitor.workspace_id, event)
    assert good.status_code == 500 and "set to answer 500" in good.get_json()["error"]
    with app.app_context():
        kept = db.session.scalars(select(InboxMessage).order_by(InboxMessage.received_at)).all()
    assert [(m.verified, m.behaviour) for m in kept] == [(False, None), (True, "fail")]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("javascript:alert(1)", "must be an absolute URL starting with https://"),
        ("http://127.0.0.1:0/hook", "port 0"),
    ],
)
def test_a_refused_own_url_keeps_what_was_typed_with_the_error_on_its_field(app, visitor, url, reason):
    visitor.get("/webhooks")
    with app.app_context():
        before = db.session.scalar(select(func.count()).select_from(Webhook))
    typed = {"url": url, "status": "paused", "enabled_events": ["account.added"], "version": "2023-04-18"}
    for htmx in (True, False):  # the fragment htmx swaps in, and the whole page without JavaScript
        response = visitor.post("/webhooks", typed, htmx=htmx)
        html = unescape(response.get_data(as_text=True))
        assert response.status_code == 200
        assert '<details class="own-url" open>' in html and f'value="{url}"' in html
        assert re.search(r'id="wh2-url-error">url [^<]*' + re.escape(reason), html)
        assert 'aria-invalid="true" aria-describedby="wh2-url-error"' in html
        assert "<option selected>paused</option>" in html
        assert '<option value="2023-04-18" selected>' in html
        assert 'value="account.added" checked' in html and 'value="income.added" checked' not in html
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Webhook)) == before
    ok = {**typed, "url": "http://127.0.0.1:9/hook"}
    html = visitor.post("/webhooks", ok, htmx=True).get_data(as_text=True)
    assert '<details class="own-url">' in html and "wh2-url-error" not in html
