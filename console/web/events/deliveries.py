"""Webhook deliveries as the console shows them: per event, each webhook's delivery and its attempts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from console.events.models import Event
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from console.webhooks import shaping
from console.webhooks.delivery import USER_AGENT
from console.webhooks.models import (
    DELIVERED,
    DELIVERING,
    FAILED,
    PENDING,
    SKIPPED,
    WebhookAttempt,
    WebhookDelivery,
)
from console.webhooks.signing import sign

# Worst first: an event's badge shows the least happy of its deliveries.
_SEVERITY = ("failed", "retrying", "sending", "queued", "pending", "skipped", "delivered")


@dataclass(frozen=True)
class DeliveryView:
    delivery: WebhookDelivery
    url: str
    status: str  # delivered | failed | retrying | sending | queued | pending | skipped
    headers: dict[str, str]  # of the last attempt, reconstructed (see `sent_headers`)
    body: str  # the bytes sent, as the webhook's version shapes them
    next_attempt_at: datetime | None
    attempts: list[WebhookAttempt]

    @property
    def sending_now(self) -> bool:
        """Due now, not waiting for a later retry: the worker sends it within a second."""
        return self.status in SENDING_NOW and self.next_attempt_at is None


SENDING_NOW = ("queued", "pending", "sending")


def any_sending_now(views: list[DeliveryView]) -> bool:
    """Whether one of these deliveries is being sent now: the page showing them asks again until it has
    an answer (a resend's new attempt appears without a reload)."""
    return any(v.sending_now for v in views)


def display_status(status: str, attempt_count: int, round_attempts: int) -> str:
    """One word for a delivery: a pending row is retrying only when its current round was tried.

    A resend starts a new round (`round_attempts` back to 0, due now) while `attempt_count` keeps
    counting every attempt ever made, so a resent delivery is "queued", not "retrying".
    """
    if status == PENDING:
        if round_attempts:
            return "retrying"
        return "queued" if attempt_count else "pending"
    if status == DELIVERING:
        return "sending"
    return {DELIVERED: "delivered", FAILED: "failed", SKIPPED: "skipped"}.get(status, status)


def status_by_event(event_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The least happy delivery status per event; events with no delivery are absent."""
    if not event_ids:
        return {}
    rows = db.session.execute(
        select(
            WebhookDelivery.event_id,
            WebhookDelivery.status,
            WebhookDelivery.attempt_count,
            WebhookDelivery.round_attempts,
        ).where(WebhookDelivery.event_id.in_(list(event_ids)))
    )
    result: dict[uuid.UUID, str] = {}
    for event_id, status, attempts, round_attempts in rows:
        word = display_status(status, attempts, round_attempts)
        current = result.get(event_id)
        if current is None or _SEVERITY.index(word) < _SEVERITY.index(current):
            result[event_id] = word
    return result


def sent_headers(delivery: WebhookDelivery, event: Event, body: bytes) -> dict[str, str]:
    """The headers of the last attempt, rebuilt as the worker builds them (headers are not stored).

    The signature is recomputed with the owning key's current secret, so after a key roll it shows
    what the webhook signs with now.
    """
    last = delivery.attempts[-1] if delivery.attempts else None
    webhook = delivery.webhook
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    if last is not None:
        key = db.session.get(ApiKey, webhook.api_key_id)
        signature = sign(secret_of(key), last.sent_timestamp, body) if key is not None else "—"
        headers["x-service-signature"] = signature
        headers["x-timestamp"] = str(last.sent_timestamp)
    headers["x-service-webhook-id"] = str(webhook.id)
    headers["service-version"] = webhook.version
    return headers


def for_event(event: Event) -> list[DeliveryView]:
    """Every delivery of the event, each with its attempts and the body its webhook was sent."""
    deliveries = db.session.scalars(
        select(WebhookDelivery)
        .where(WebhookDelivery.event_id == event.id)
        .options(selectinload(WebhookDelivery.attempts), selectinload(WebhookDelivery.webhook))
        .order_by(WebhookDelivery.created_at, WebhookDelivery.id)
    )
    views = []
    for d in deliveries:
        shaped = shaping.shape(event.type, event.payload, d.webhook.version, event.via_platform_matching)
        body = shaping.body_bytes(event.type, str(event.id), shaped.payload)
        views.append(
            DeliveryView(
                delivery=d,
                url=d.webhook.url,
                status=display_status(d.status, d.attempt_count, d.round_attempts),
                headers=sent_headers(d, event, body),
                body=body.decode("utf-8"),
                # Only a retry waits; a queued (first or resent) delivery goes out at once.
                next_attempt_at=d.due_at if d.status == PENDING and d.round_attempts else None,
                attempts=list(d.attempts),
            )
        )
    return views
