"""The event log (newest first, with each webhook's delivery status), resending, and sample events."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select

from console.accounts.services import (
    PERIODS_PER_YEAR,
    SANDBOX_ANNUAL_INCOME_CENTS,
    SANDBOX_PAY_FREQUENCY,
    SANDBOX_START_DATE,
    SANDBOX_TITLE,
)
from console.clock.services import now
from console.core.bodies import NOT_A_DATETIME
from console.core.errors import Conflict, FieldError, ServiceError, ValidationFailed
from console.core.timeutil import isodate, isoformat, parse_datetime
from console.db.locking import lock_row
from console.db.lookup import get_scoped
from console.events.models import EVENT_TYPES, Event
from console.events.services import record_event
from console.extensions import db
from console.webhooks import services as webhooks
from console.webhooks.models import ACTIVE, PENDING, Webhook, WebhookAttempt, WebhookDelivery
from console.workspaces.models import Workspace

FILTERS = ("type", "link_token_id", "account_id", "since")
SAMPLE_EMPLOYER = "Sample Employer Inc."


def _uuid_filter(name: str, value: str, errors: list[FieldError]) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        errors.append(FieldError(name, "must be a UUID"))
        return None


def _not_a_datetime(value: str) -> str:
    """Why `since` is refused. An event's own `created_at` pasted into a URL unencoded (`?since=…+00:00`, as a
    poller formats it) arrives with its `+` read as a space: name that, since the value looked right."""
    head, space, offset = value.rpartition(" ")
    if space and head:
        try:
            parse_datetime(f"{head}+{offset}")
        except ValueError:
            pass
        else:
            return (
                f"{NOT_A_DATETIME}; it reads '{value}': a + in a URL's query string is a space, so send the "
                "offset's + as %2B (or end the time with Z)"
            )
    return NOT_A_DATETIME


def list_query(workspace_id: uuid.UUID, mode: str, filters: dict[str, str]) -> Select:
    """Events of a workspace and mode matching `filters` (type, link_token_id, account_id, since)."""
    query = select(Event).where(Event.workspace_id == workspace_id, Event.mode == mode)
    errors: list[FieldError] = []
    if (type_ := filters.get("type")) is not None:
        if type_ not in EVENT_TYPES:
            errors.append(FieldError("type", f"must be one of {', '.join(EVENT_TYPES)}"))
        query = query.where(Event.type == type_)
    for name, column in (("link_token_id", Event.link_token_id), ("account_id", Event.account_id)):
        if (value := filters.get(name)) is not None:
            query = query.where(column == _uuid_filter(name, value, errors))
    if (since := filters.get("since")) is not None:
        try:
            query = query.where(Event.created_at >= parse_datetime(since))
        except ValueError:
            errors.append(FieldError("since", _not_a_datetime(since)))
    if errors:
        raise ValidationFailed(errors)
    return query


def deliveries_by_event(event_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[WebhookDelivery]]:
    """Deliveries of a page of events, in one query."""
    grouped: dict[uuid.UUID, list[WebhookDelivery]] = defaultdict(list)
    if event_ids:
        rows = db.session.scalars(
            select(WebhookDelivery)
            .where(WebhookDelivery.event_id.in_(event_ids))
            .order_by(WebhookDelivery.created_at, WebhookDelivery.id)
        )
        for delivery in rows:
            grouped[delivery.event_id].append(delivery)
    return grouped


def serialize_attempt(attempt: WebhookAttempt) -> dict[str, Any]:
    return {
        "number": attempt.number,
        "at": isoformat(attempt.at),
        "outcome": attempt.outcome,
        "status_code": attempt.status_code,
        "latency_ms": attempt.latency_ms,
        "response_excerpt": attempt.response_excerpt,
        "error": attempt.error,
        "warning": attempt.warning,
        "next_attempt_at": isoformat(attempt.next_attempt_at),
    }


def serialize_delivery(delivery: WebhookDelivery, *, with_attempts: bool = False) -> dict[str, Any]:
    data = {
        "id": str(delivery.id),
        "webhook_id": str(delivery.webhook_id),
        "status": delivery.status,
        "skip_reason": delivery.skip_reason,
        "test": delivery.is_test,
        "attempt_count": delivery.attempt_count,
        "last_attempt_at": isoformat(delivery.last_attempt_at),
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "warning": delivery.warning,
        "delivered_at": isoformat(delivery.delivered_at),
        "next_attempt_at": isoformat(delivery.due_at) if delivery.status == PENDING else None,
    }
    if with_attempts:
        data["attempts"] = [serialize_attempt(a) for a in delivery.attempts]
    return data


def serialize_event(
    event: Event, deliveries: list[WebhookDelivery], *, with_attempts: bool = False
) -> dict[str, Any]:
    return {
        "id": str(event.id),
        "type": event.type,
        "created_at": isoformat(event.created_at),
        "link_token_id": str(event.link_token_id) if event.link_token_id else None,
        "account_id": str(event.account_id) if event.account_id else None,
        "end_user_id": event.end_user_id,
        "via_platform_matching": event.via_platform_matching,
        "payload": event.payload,
        "deliveries": [serialize_delivery(d, with_attempts=with_attempts) for d in deliveries],
    }


def get_event(workspace_id: uuid.UUID, mode: str, event_id: uuid.UUID | str) -> Event:
    return get_scoped(Event, workspace_id, mode, event_id, "event")


def resend(event: Event, workspace: Workspace, webhook_id: str | None = None) -> list[WebhookDelivery]:
    """Deliver `event` again to one webhook, or to every active webhook subscribed to its type."""
    # Resends of one event are run one after the other: two at once both found no delivery to a webhook made
    # after the event, and the second insert broke the (event, webhook) unique index (a 500).
    lock_row(Event, event.id)
    if webhook_id is not None:
        if not isinstance(webhook_id, str):
            raise ValidationFailed([FieldError("webhook_id", "must be a string")])
        hook = webhooks.get_webhook(event.workspace_id, event.mode, webhook_id)
        if event.type not in hook.enabled_events:
            raise ServiceError(
                f"Webhook {hook.id} is not subscribed to {event.type}; add it to enabled_events first."
            )
        if hook.status != ACTIVE:
            raise Conflict(f"Webhook {hook.id} is paused; make it active (PUT status=active) and resend.")
        hooks = [hook]
    else:
        candidates = db.session.scalars(webhooks.list_query(event.workspace_id, event.mode)).all()
        hooks = [h for h in candidates if h.status == ACTIVE and event.type in h.enabled_events]
        if not hooks:
            raise Conflict(f"No active webhook is subscribed to {event.type}.")
    at = now(workspace)
    existing = {d.webhook_id: d for d in deliveries_by_event([event.id])[event.id]}
    result = []
    for hook in hooks:
        delivery = existing.get(hook.id)
        if delivery is None:  # the webhook was created or subscribed after the event
            delivery = webhooks.new_delivery(event, hook, workspace)
            db.session.add(delivery)
        webhooks.requeue(delivery, at)
        result.append(delivery)
    db.session.flush()
    return result


def sample_payload(event_type: str, at: datetime) -> dict[str, Any]:
    """A realistic payload for the sandbox test event; its ids refer to nothing."""
    ids = {name: str(uuid.uuid4()) for name in ("id", "account_id", "link_token_id", "platform_id")}
    common = {"account_id": ids["account_id"], "end_user_id": "sample-end-user", "created_at": isoformat(at)}
    if event_type == "account.added":
        return {
            **common,
            "link_token_id": ids["link_token_id"],
            "platform_id": ids["platform_id"],
            "connected": True,
        }
    if event_type == "direct_deposit_switch.added":
        return {
            "id": ids["id"],
            "account_id": ids["account_id"],
            "end_user_id": "sample-end-user",
            "link_token_id": ids["link_token_id"],
            "name": "direct_deposit_switch",
            "timestamp": isoformat(at),
            "outcome": "success",
            "params": {
                "action": "partial_switch",
                "allocation": {"type": "amount", "value": 25000, "target": {"account_type": "checking"}},
            },
        }
    # employment.added and income.added carry the Employment or Income object plus `end_user_id` and
    # `link_token_id`, as a real account's do (accounts.services); the sample used to lack most of them.
    resource = {**common, "id": ids["id"], "link_token_id": ids["link_token_id"]}
    if event_type == "employment.added":
        return {
            **resource,
            "employer_id": str(uuid.uuid4()),
            "employer_name": SAMPLE_EMPLOYER,
            "status": "active",
            "start_date": isodate(SANDBOX_START_DATE),
            "end_date": None,
            "job_title": SANDBOX_TITLE,
        }
    periods = PERIODS_PER_YEAR[SANDBOX_PAY_FREQUENCY]
    return {
        **resource,
        "employer_name": SAMPLE_EMPLOYER,
        "currency": "USD",
        "annual_income": SANDBOX_ANNUAL_INCOME_CENTS,
        "pay_frequency": SANDBOX_PAY_FREQUENCY,
        "pay_period_income": SANDBOX_ANNUAL_INCOME_CENTS // periods,
    }


def send_test_event(webhook: Webhook, workspace: Workspace, event_type: Any) -> tuple[Event, WebhookDelivery]:
    """Record a sample event delivered only to `webhook` (even paused or unsubscribed: it was asked for)."""
    if event_type is None:
        event_type = webhook.enabled_events[0]
    if event_type not in EVENT_TYPES:
        raise ValidationFailed(
            [FieldError("event", f"must be one of {', '.join(EVENT_TYPES)}")],
            f"Unknown event. Valid event names: {', '.join(EVENT_TYPES)}.",
        )
    at = now(workspace)
    payload = sample_payload(event_type, at)
    event = record_event(
        workspace_id=webhook.workspace_id,
        mode=webhook.mode,
        type=event_type,
        payload=payload,
        at=at,
        end_user_id=payload["end_user_id"],
        fan_out=False,
    )
    delivery = webhooks.new_delivery(event, webhook, workspace, is_test=True)
    db.session.add(delivery)
    db.session.flush()
    return event, delivery
