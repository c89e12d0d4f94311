"""The live event log: newest first, filters, keyset pages, live rows, deliveries and resend."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from html import unescape

import pytest
from sqlalchemy import func, select

from console.core.timeutil import utcnow
from console.events.models import Event
from console.events.services import record_event
from console.extensions import db
from console.webhooks.models import WebhookAttempt, WebhookDelivery
from tests.web.helpers import run_headless


def event_ids(html: str) -> list[str]:
    return re.findall(r'data-event-id="([0-9a-f-]+)"', html)


def seed_events(app, workspace_id, n: int, **fields) -> list[str]:
    """n events, one second apart, oldest first (no webhook fan-out: the test shapes deliveries itself)."""
    start = utcnow() - timedelta(seconds=n)
    with app.app_context():
        events = [
            record_event(
                workspace_id=workspace_id,
                mode="sandbox",
                type=fields.get("type", "account.added"),
                payload={"n": i},
                at=start + timedelta(seconds=i),
                end_user_id=fields.get("end_user_id"),
                fan_out=False,
            )
            for i in range(n)
        ]
        db.session.commit()
        return [str(e.id) for e in events]


def test_newest_first_with_keyset_pages(app, visitor, rendered):
    ids = seed_events(app, visitor.workspace_id, 30)
    html = visitor.get("/events").get_data(as_text=True)
    first_page = event_ids(html)
    assert first_page == list(reversed(ids))[:25]
    older = html.split('hx-get="/events/rows?cursor=', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    rendered.clear()
    second = visitor.get("/events/rows?cursor=" + older, htmx=True).get_data(as_text=True)
    assert rendered == ["console/events/_event_rows.html"]
    assert event_ids(second) == list(reversed(ids))[25:]
    assert "Older events" not in second


def test_filters(app, visitor):
    seed_events(app, visitor.workspace_id, 3, end_user_id="user_a")
    mine = seed_events(app, visitor.workspace_id, 2, end_user_id="user_b")
    html = visitor.get("/events?end_user_id=user_b").get_data(as_text=True)
    assert sorted(event_ids(html)) == sorted(mine)
    assert event_ids(visitor.get("/events?type=income.added").get_data(as_text=True)) == []
    # The short id the rows show: the field says it needs the whole id, and the list does not claim no match.
    bad = visitor.get(f"/events?link_token_id={mine[0][:8]}").get_data(as_text=True)
    assert 'aria-invalid="true"' in bad and "must be the whole id" in bad
    assert "Nothing was filtered: fix the field above." in bad and "match these filters" not in bad
    # Anything else is not called a short id.
    typo = unescape(visitor.get("/events?account_id=zz").get_data(as_text=True))
    assert "must be the whole id" in typo and "not its first 8" not in typo


def test_the_filters_address_keeps_only_the_fields_typed(app, visitor):
    """A GET form sends every field: the address read `?type=&link_token_id=&account_id=…&end_user_id=`. Sent
    without htmx it is redirected to the address of the typed fields; with htmx the page is drawn and the
    address bar is given the clean one (HX-Push-Url)."""
    mine = seed_events(app, visitor.workspace_id, 2, end_user_id="user_b")
    sent = "/events?type=&link_token_id=&account_id=&end_user_id=user_b"
    response = visitor.get(sent)
    assert response.status_code == 302 and response.headers["Location"] == "/events?end_user_id=user_b"
    drawn = visitor.get(sent, htmx=True)
    assert drawn.status_code == 200 and drawn.headers["HX-Push-Url"] == "/events?end_user_id=user_b"
    assert sorted(event_ids(drawn.get_data(as_text=True))) == sorted(mine)
    # Nothing typed: the bare log. A clean address is drawn as it is, with no address pushed.
    assert visitor.get("/events?type=&end_user_id=+").headers["Location"] == "/events"
    clean = visitor.get("/events?end_user_id=user_b", htmx=True)
    assert clean.status_code == 200 and "HX-Push-Url" not in clean.headers
    assert visitor.get("/events?end_user_id=user_b").status_code == 200


def test_new_events_appear_through_the_live_poll(app, visitor, rendered):
    seed_events(app, visitor.workspace_id, 1)
    html = visitor.get("/events").get_data(as_text=True)
    poll = html.split('id="event-poller" hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert 'hx-trigger="every 2s, live-refresh"' in html and "data-poll" in html
    assert visitor.get(poll, htmx=True).status_code == 204
    [fresh] = seed_events(app, visitor.workspace_id, 1)
    rendered.clear()
    answer = visitor.get(poll, htmx=True).get_data(as_text=True)
    assert rendered == ["console/events/_event_poll.html"]
    assert event_ids(answer) == [fresh] and 'hx-swap-oob="afterbegin:#event-list"' in answer


def test_a_row_expands_to_payload_deliveries_and_attempts(app, visitor, rendered):
    run_headless(visitor, "user_good")
    with app.app_context():
        event = db.session.scalars(
            select(Event).where(Event.workspace_id == visitor.workspace_id, Event.type == "account.added")
        ).one()
        delivery = db.session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.event_id == event.id)
        ).one()
        at = utcnow()
        for number, status in ((1, 503), (2, 200)):
            db.session.add(
                WebhookAttempt(
                    delivery_id=delivery.id, webhook_id=delivery.webhook_id, event_id=event.id, number=number,
                    at=at, sent_timestamp=int(at.timestamp()), outcome="retry" if status == 503 else "delivered",
                    status_code=status, latency_ms=12, response_excerpt="busy" if status == 503 else "ok",
                    next_attempt_at=at + timedelta(seconds=20) if status == 503 else None,
                )
            )  # fmt: skip
        delivery.status, delivery.attempt_count = "delivered", 2
        db.session.commit()
        event_id = str(event.id)
    assert "badge-delivery-delivered" in visitor.get("/events").get_data(as_text=True)
    rendered.clear()
    html = unescape(visitor.get(f"/events/{event_id}", htmx=True).get_data(as_text=True))
    assert rendered == ["console/events/_event_detail.html"]
    assert '"connected": true' in html
    assert "x-service-signature" in html and "x-service-webhook-id" in html and "service-version" in html
    assert "503" in html and "busy" in html and "12 ms" in html
    assert visitor.get(f"/events/{event_id}").status_code == 200  # the same detail as a whole page


def test_resend_goes_through_the_api(app, visitor):
    run_headless(visitor, "user_good")
    with app.app_context():
        event_id = str(
            db.session.scalars(select(Event.id).where(Event.workspace_id == visitor.workspace_id)).first()
        )
    html = visitor.post(f"/events/{event_id}/resend", htmx=True).get_data(as_text=True)
    assert f"/sandbox/v1/events/{event_id}/resend" in html and 'status-2xx">200' in html


def test_another_workspaces_event_is_not_found(app, visitor, other_visitor):
    [theirs] = seed_events(app, other_visitor.workspace_id, 1)
    assert visitor.get(f"/events/{theirs}").status_code == 404
    assert visitor.post(f"/events/{theirs}/resend").status_code == 404
    assert visitor.get(f"/events/{uuid.uuid4()}").status_code == 404


def test_the_live_poll_redraws_a_badge_whose_delivery_changed(app, visitor):
    run_headless(visitor, "user_good")
    with app.app_context():
        event = db.session.scalars(
            select(Event).where(Event.workspace_id == visitor.workspace_id, Event.type == "account.added")
        ).one()
        event_id = str(event.id)
    html = visitor.get("/events").get_data(as_text=True)
    poll = html.split('id="event-poller" hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    shown = re.findall(r'name="shown" value="([^"]+)"', html)
    assert f"{event_id}:pending" in shown
    query = "".join(f"&shown={s}" for s in shown)
    assert visitor.get(poll + query, htmx=True).status_code == 204  # nothing changed
    with app.app_context():
        delivery = db.session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.event_id == event.id)
        ).one()
        delivery.status, delivery.attempt_count = "delivered", 1
        db.session.commit()
    answer = visitor.get(poll + query, htmx=True).get_data(as_text=True)
    assert f'id="event-badge-{event_id}" class="badge badge-delivery-delivered" hx-swap-oob="true"' in answer
    assert answer.count("hx-swap-oob") == 1  # only the changed badge, no rows
    # Another workspace's event ids are ignored.
    assert visitor.get(poll + f"&shown={uuid.uuid4()}:pending", htmx=True).status_code == 204


@pytest.mark.committing
def test_a_resent_delivery_is_followed_until_the_worker_has_sent_it(app, visitor):
    """The open detail asks again every second while a delivery is being sent, keeping the resend's
    exchange (only the deliveries block is swapped), and stops once the attempt is in."""
    from console.webhooks.delivery_loop import deliver_due

    run_headless(visitor, "user_good")
    with app.app_context():
        deliver_due(app)
        event_id = str(
            db.session.scalars(select(Event.id).where(Event.workspace_id == visitor.workspace_id)).first()
        )
    block = f'id="event-deliveries-{event_id}"'
    assert (
        "hx-trigger"
        not in visitor.get(f"/events/{event_id}", htmx=True)
        .get_data(as_text=True)
        .split(block)[1]
        .split(">")[0]
    )
    html = unescape(visitor.post(f"/events/{event_id}/resend", htmx=True).get_data(as_text=True))
    opening = html.split(block)[1].split(">")[0]
    assert (
        'hx-trigger="every 1s, live-refresh"' in opening
        and f'hx-select="#event-deliveries-{event_id}"' in opening
    )
    assert "sending now" in html
    with app.app_context():
        attempts_before = db.session.scalar(select(func.count()).select_from(WebhookAttempt))
        deliver_due(app)
    polled = unescape(visitor.get(f"/events/{event_id}", htmx=True).get_data(as_text=True))
    assert "hx-trigger" not in polled.split(block)[1].split(">")[0] and "sending now" not in polled
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(WebhookAttempt)) == attempts_before + 1


def test_an_empty_event_log_says_how_events_arrive(visitor):
    # It said "No events yet." and nothing about what makes one.
    page = unescape(visitor.get("/events").get_data(as_text=True))
    assert "No events yet. A Link flow that completes sends them" in page
    assert 'href="/scenarios"' in page and 'href="/"' in page
    filtered = unescape(visitor.get("/events?type=account.added").get_data(as_text=True))
    assert "No events match these filters yet." in filtered and "A Link flow that completes" not in filtered
