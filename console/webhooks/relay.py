"""Relayed sandbox webhooks: deliveries fetched by a listener (`console listen`), never sent by the server.

A trainee's endpoint on a laptop is out of the server's reach. `POST /v1/sandbox/listen` gives the
key one *relayed* webhook (url `urls.RELAY_URL`); its deliveries are `relayed`, so the delivery
worker never claims them. The listener polls with short requests (`poll` answers at once, so a
room of listeners never holds the serving threads); each delivery handed out is claimed under a
lease exactly as the worker claims one, and carries the request signed as the endpoint would
receive it directly (`delivery.sign_request`). The listener posts it to the local endpoint and
reports the answer (`report`), which is recorded by `delivery.record` like any attempt: retries
with the usual backoff, delivered on 2xx, the event log as usual. A listener that dies leaves its
lease to expire and the delivery is handed out again (at least once); while no listener polls,
deliveries simply wait, pending, with no attempt recorded.

`round_trip` sends one ad-hoc request through the listener (the conformance check uses it for
relayed webhooks) and waits for the answer; the request and its answer are rows, so any serving
process can hand it out and record the answer.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import and_, delete, or_, select, true, update

from console import runslots
from console.core.bodies import RequestModel, field_error, integer, text, validate
from console.core.errors import NotFound, ServiceError, shown
from console.core.timeutil import isoformat, utcnow
from console.db.locking import lock_row
from console.events.models import EVENT_TYPES
from console.extensions import db
from console.keys.models import ApiKey
from console.modes import SANDBOX
from console.versions import LATEST_VERSION
from console.webhooks import delivery, services, urls
from console.webhooks.delivery_loop import Claimer, settings
from console.webhooks.excerpt import answer_excerpt
from console.webhooks.models import (
    ACTIVE,
    DELIVERING,
    PENDING,
    RelayRoundTrip,
    Webhook,
    WebhookDelivery,
)

MAX_BATCH = 10  # deliveries handed out per poll
SEEN_EVERY = timedelta(seconds=5)  # `listener_seen_at` is written at most this often
CONNECTED_WITHIN = timedelta(seconds=30)  # a listener that polled this recently counts as connected
LEASE_MARGIN_SECONDS = 15.0  # beyond the endpoint's timeout: the listener's round trips to us
ROUND_TRIP_POLL_SECONDS = 0.1
ANSWERED = "answered"
D = WebhookDelivery.__table__


class LeaseLost(ServiceError):
    status_code = 409
    code = "RELAY_LEASE_LOST"


# Opening a listener ---------------------------------------------------------------------------


class ListenRequest(RequestModel):
    """POST /v1/sandbox/listen: the events to receive (default: every type) and the payload version."""

    enabled_events: services.EnabledEvents | None = None
    version: services.Version | None = None


def open_listener(key: ApiKey, body: Any) -> tuple[Webhook, bool]:
    """The key's relayed webhook, created or brought up to date with `body`; (webhook, created)."""
    request = validate(ListenRequest, body or {})
    events = list(dict.fromkeys(request.enabled_events)) if request.enabled_events else None
    # One per key even when two listeners start at once: without the lock both found none and both made one,
    # and each event then went to the key's listeners twice.
    lock_row(ApiKey, key.id)
    webhook = db.session.scalars(
        select(Webhook).where(
            Webhook.api_key_id == key.id, Webhook.url == urls.RELAY_URL, Webhook.deleted_at.is_(None)
        )
    ).first()
    if webhook is None:
        webhook = services.add_webhook(
            key, urls.RELAY_URL, events or list(EVENT_TYPES), request.version or LATEST_VERSION, ACTIVE
        )
        created = True
    else:
        changes = {"enabled_events": events, "version": request.version}
        changes = {name: value for name, value in changes.items() if value is not None}
        if changes:
            services.update_webhook(webhook, key.workspace, changes)
        created = False
    webhook.listener_seen_at = utcnow()
    db.session.flush()
    return webhook, created


def get_listener(workspace_id: uuid.UUID, mode: str, webhook_id: str) -> Webhook:
    """A live relayed webhook of the workspace; any other webhook id is not found here."""
    webhook = services.get_webhook(workspace_id, mode, webhook_id)
    if not urls.is_relay_url(webhook.url):
        raise NotFound(
            f"Webhook {webhook_id} is not relayed; create a listener with POST /v1/sandbox/listen."
        )
    return webhook


def listener_connected(webhook: Webhook) -> bool:
    seen = webhook.listener_seen_at
    return seen is not None and utcnow() - seen <= CONNECTED_WITHIN


def describe(webhook: Webhook) -> dict[str, Any]:
    return {
        **services.serialize(webhook),
        "listener_seen_at": isoformat(webhook.listener_seen_at),
        "listener_connected": listener_connected(webhook),
    }


# Handing out ----------------------------------------------------------------------------------


def _timing() -> tuple[float, float]:
    """(endpoint timeout, lease) in seconds, from the delivery settings."""
    timeout = settings(current_app)["timeout"]
    lease = float(current_app.config.get("WEBHOOK_RELAY_LEASE_SECONDS", timeout + LEASE_MARGIN_SECONDS))
    return timeout, lease


def _note_seen(webhook: Webhook) -> None:
    at = utcnow()
    if webhook.listener_seen_at is None or at - webhook.listener_seen_at >= SEEN_EVERY:
        webhook.listener_seen_at = at


def poll(webhook: Webhook, limit: int = MAX_BATCH) -> list[dict[str, Any]]:
    """Claim what is due for the listener (ad-hoc round trips first) and return it signed; caller commits."""
    _note_seen(webhook)
    timeout, lease = _timing()
    items = _hand_out_round_trips(webhook, limit, timeout, lease)
    if len(items) < limit:
        items += _hand_out_deliveries(webhook, limit - len(items), timeout, lease)
    return items


def _claimable(now: datetime):
    return or_(
        and_(D.c.status == PENDING, D.c.run_after <= now),
        and_(D.c.status == DELIVERING, D.c.claimed_until <= now),  # the listener holding it went away
    )


def _hand_out_deliveries(webhook: Webhook, limit: int, timeout: float, lease: float) -> list[dict[str, Any]]:
    now = utcnow()
    query = (
        select(D.c.id)
        .where(D.c.webhook_id == webhook.id, D.c.relayed == true(), _claimable(now))
        .order_by(D.c.run_after)
        .limit(limit)
    )
    if db.session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    ids = list(db.session.execute(query).scalars())
    if not ids:
        return []
    real = time.time()
    until = now + timedelta(seconds=lease)
    items = []
    for job in Claimer(lease).jobs(ids):
        token = uuid.uuid4()
        taken = db.session.execute(
            update(D)
            .where(D.c.id == job.delivery_id, _claimable(now))
            .values(status=DELIVERING, claim_token=token, claimed_until=until, relay_timestamp=int(real))
            .returning(D.c.id)
        ).first()
        if taken is None:
            continue  # another listener of the same webhook took it meanwhile
        job.claim_token = token
        signed = delivery.sign_request(job, clock=lambda: real)
        items.append(
            {
                "attempt_id": str(token),
                "kind": "delivery",
                "delivery_id": str(job.delivery_id),
                "event_id": str(job.event_id),
                "event_type": job.event_type,
                "method": "POST",
                "headers": signed.headers,
                "body": signed.body.decode("utf-8"),
                "timeout_seconds": timeout,
                "lease_expires_at": isoformat(until),
            }
        )
    return items


def _hand_out_round_trips(webhook: Webhook, limit: int, timeout: float, lease: float) -> list[dict[str, Any]]:
    now = utcnow()
    X = RelayRoundTrip
    rows = db.session.scalars(
        select(X)
        .where(
            X.webhook_id == webhook.id,
            X.expires_at > now,
            or_(X.status == PENDING, and_(X.status == DELIVERING, X.claimed_until <= now)),
        )
        .order_by(X.created_at)
        .limit(limit)
    ).all()
    items = []
    for row in rows:
        row.status = DELIVERING
        row.claim_token = uuid.uuid4()
        row.claimed_until = now + timedelta(seconds=lease)
        items.append(
            {
                "attempt_id": str(row.claim_token),
                "kind": "round_trip",
                "delivery_id": None,
                "event_id": None,
                "event_type": None,
                "method": row.method,
                "headers": dict(row.headers),
                "body": row.body,
                "timeout_seconds": timeout,
                "lease_expires_at": isoformat(row.claimed_until),
            }
        )
    return items


# Reporting ------------------------------------------------------------------------------------


class RelayResultRequest(RequestModel):
    """POST /v1/sandbox/listen/{id}/deliveries/{attempt_id}/result: what the local endpoint answered.

    Exactly one of `status_code` (the endpoint answered HTTP) and `error` (it did not: refused,
    timed out, not HTTP).
    """

    status_code: integer(100, 599, description="The endpoint's HTTP status.") | None = None
    latency_ms: integer(0, 3_600_000, description="From sending the request to the answer.")
    response_excerpt: (
        text(delivery.EXCERPT_BYTES * 4, blank=True, description="The start of the answer's body.") | None
    ) = None
    error: text(300, description="Why no HTTP answer came (network error, timeout).") | None = None

    @classmethod
    def presence_rules(cls, data: dict[str, Any]) -> list:
        given = [name for name in ("status_code", "error") if name in data]
        if len(given) == 1:
            return []
        return [
            field_error((name,), "give exactly one of status_code, error")
            for name in given or ("status_code", "error")
        ]


def _excerpt(value: str | None) -> str | None:
    """The listener's excerpt, cut as every answer is (a listener reports no headers)."""
    return answer_excerpt(None, (), value).body


def report(webhook: Webhook, attempt_id: str, body: Any) -> dict[str, Any]:
    """Record the listener's answer for the hand-out `attempt_id`; the caller commits."""
    result = validate(RelayResultRequest, body)
    try:
        token = uuid.UUID(str(attempt_id))
    except ValueError:
        raise NotFound(f"No attempt {shown(attempt_id)} handed out for this webhook.") from None
    # Reports for one webhook are recorded one after the other: two of one attempt at once (a listener's retry
    # of a report that was slow, not lost) both found it handed out and both stored an attempt, so the
    # delivery counted one attempt and listed two. The second now finds it recorded: 409 RELAY_LEASE_LOST.
    lock_row(Webhook, webhook.id)
    _note_seen(webhook)
    trip = db.session.scalars(
        select(RelayRoundTrip).where(
            RelayRoundTrip.webhook_id == webhook.id, RelayRoundTrip.claim_token == token
        )
    ).first()
    if trip is not None:
        return _record_round_trip(trip, result)
    row = db.session.execute(
        select(D.c.id, D.c.status, D.c.relay_timestamp).where(
            D.c.webhook_id == webhook.id, D.c.claim_token == token
        )
    ).first()
    if row is None or row.status != DELIVERING:
        raise LeaseLost(
            f"Attempt {attempt_id} is no longer handed out (its lease ran out and it went to another "
            "listener, or its result was already recorded)."
        )
    timeout, lease = _timing()
    [job] = Claimer(lease).jobs([row.id])
    job.claim_token = token
    signed = delivery.sign_request(job, clock=lambda: float(row.relay_timestamp))
    outcome = delivery.classify(
        job,
        signed,
        result.status_code,
        _excerpt(result.response_excerpt),
        f"via listener: {result.error}" if result.error else None,
        result.latency_ms,
    )
    delivery.record([outcome], timeout)
    db.session.flush()
    attempt = db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.id == row.id)).one()
    return {
        "attempt_id": str(token),
        "delivery_id": str(row.id),
        "status": attempt.status,
        "attempt_count": attempt.attempt_count,
        "next_attempt_at": isoformat(attempt.due_at) if attempt.status == PENDING else None,
    }


def _record_round_trip(trip: RelayRoundTrip, result: RelayResultRequest) -> dict[str, Any]:
    if trip.status != DELIVERING:
        raise LeaseLost(f"Attempt {trip.claim_token} was already answered.")
    trip.status = ANSWERED
    trip.status_code = result.status_code
    trip.latency_ms = result.latency_ms
    trip.response_excerpt = _excerpt(result.response_excerpt)
    trip.error = result.error
    return {"attempt_id": str(trip.claim_token), "delivery_id": None, "status": ANSWERED}


# Ad-hoc round trips -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the endpoint behind a listener answered to one `round_trip` (or why there is no answer)."""

    status_code: int | None
    latency_ms: int | None
    body: str | None  # the start of the answer (at most 1 KB)
    error: str | None  # no HTTP answer: the listener's network error, or no listener answered in time
    timed_out: bool = False  # no answer came through a listener within the timeout


def round_trip(
    webhook_id: uuid.UUID | str,
    method: str,
    headers: dict[str, str],
    body: bytes | str,
    timeout: float = delivery.DEFAULT_TIMEOUT_SECONDS,
) -> Answer:
    """Send one request through a relayed webhook's listener and wait up to `timeout` s for its answer.

    Runs in its own transactions (the caller's session is left alone; on SQLite the caller must not
    hold uncommitted writes, which would lock this out). The request's headers and body reach the
    endpoint exactly as given (no signing here: the caller signs as it means to test).
    """
    if isinstance(body, bytes):
        body = body.decode("utf-8")  # relayed as JSON text; the caller's bodies are JSON
    ident = uuid.UUID(str(webhook_id))
    started = utcnow()
    expires = started + timedelta(seconds=timeout)
    engine = db.engine
    with engine.begin() as conn:
        conn.execute(
            delete(RelayRoundTrip.__table__).where(RelayRoundTrip.expires_at < started - timedelta(hours=1))
        )
        row_id = uuid.uuid4()
        conn.execute(
            RelayRoundTrip.__table__.insert().values(
                id=row_id,
                webhook_id=ident,
                method=method.upper(),
                headers=dict(headers),
                body=body,
                status=PENDING,
                expires_at=expires,
                created_at=started,
            )
        )
    X = RelayRoundTrip.__table__
    try:
        while True:
            with engine.connect() as conn:
                row = conn.execute(select(X).where(X.c.id == row_id)).first()
            if row is not None and row.status == ANSWERED:
                return Answer(row.status_code, row.latency_ms, row.response_excerpt, row.error)
            if utcnow() >= expires:
                picked = row is not None and row.status == DELIVERING
                why = "the endpoint did not answer" if picked else "no listener fetched the request"
                error = f"timeout: {why} within {timeout:g} s (console listen)"
                return Answer(None, None, None, error, timed_out=True)
            with runslots.released():  # waiting on the listener, not running
                time.sleep(ROUND_TRIP_POLL_SECONDS)
    finally:
        with engine.begin() as conn:
            conn.execute(delete(X).where(X.c.id == row_id))


def is_relayed(webhook: Webhook) -> bool:
    """Whether `webhook`'s requests go through a listener (`round_trip`) rather than over the network."""
    return webhook.mode == SANDBOX and urls.is_relay_url(webhook.url)
