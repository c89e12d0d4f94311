"""One webhook's endpoint page, read side: its recent attempts, a latency chart, success rates, owner key.

Everything is on the workspace clock (attempt times are stamped with it), so advancing the clock
moves the 24-hour and 7-day windows the way it moves everything else.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case, func, select

from console.extensions import db
from console.keys.models import ApiKey
from console.versions import LATEST_VERSION, PRIME_MIN_VERSION
from console.webhooks.models import DELIVERED, Webhook, WebhookAttempt, WebhookDelivery
from console.webhooks.services import MAX_WEBHOOKS_PER_KEY, owned_count, webhooks_per_key

RECENT_ATTEMPTS = 50
WINDOWS = (("Last 24 hours", timedelta(hours=24)), ("Last 7 days", timedelta(days=7)))
# The chart's drawing box (SVG user units); bars are scaled to the slowest attempt shown.
CHART_WIDTH, CHART_HEIGHT = 600, 120


@dataclass(frozen=True)
class Rate:
    label: str
    attempts: int
    delivered: int

    @property
    def percent(self) -> float | None:
        return 100.0 * self.delivered / self.attempts if self.attempts else None


@dataclass(frozen=True)
class Bar:
    """One attempt in the chart: an SVG rect (attributes only, so no inline style under the CSP)."""

    attempt: WebhookAttempt
    x: float
    y: float
    width: float
    height: float
    outcome: str  # delivered | retry | failed: the CSS class colours it


@dataclass(frozen=True)
class Quota:
    key: ApiKey
    used: int
    limit: int = MAX_WEBHOOKS_PER_KEY

    @property
    def full(self) -> bool:
        return self.used >= self.limit


def predates_prime(webhook: Webhook) -> bool:
    """Versions before 2023-11-22 cannot carry Prime switch events validly (spec, Versioning)."""
    return webhook.version < PRIME_MIN_VERSION


def recent_attempts(webhook_id: uuid.UUID, limit: int = RECENT_ATTEMPTS) -> list[WebhookAttempt]:
    """The newest attempts first, each with its delivery (for the event link)."""
    return list(
        db.session.scalars(
            select(WebhookAttempt)
            .where(WebhookAttempt.webhook_id == webhook_id)
            .order_by(WebhookAttempt.at.desc(), WebhookAttempt.number.desc())
            .limit(limit)
        )
    )


def success_rates(webhook_id: uuid.UUID, at: datetime) -> list[Rate]:
    """Attempts answered 2xx out of all attempts, per window ending at `at` (one query)."""
    delivered = WebhookAttempt.outcome == DELIVERED
    columns = []
    for _, span in WINDOWS:
        inside = WebhookAttempt.at >= at - span
        columns += [
            func.count(case((inside, 1))),
            func.count(case(((inside & delivered), 1))),
        ]
    row = db.session.execute(
        select(*columns).where(WebhookAttempt.webhook_id == webhook_id, WebhookAttempt.at <= at)
    ).one()
    return [Rate(label, row[2 * i], row[2 * i + 1]) for i, (label, _) in enumerate(WINDOWS)]


def chart(attempts: list[WebhookAttempt]) -> list[Bar]:
    """Latency bars, oldest on the left; a bar is at least 2 units tall so a fast attempt still shows."""
    ordered = list(reversed(attempts))
    if not ordered:
        return []
    slowest = max(a.latency_ms for a in ordered) or 1
    slot = CHART_WIDTH / max(len(ordered), 1)
    bars = []
    for i, a in enumerate(ordered):
        height = max(2.0, CHART_HEIGHT * a.latency_ms / slowest)
        bars.append(
            Bar(
                a,
                round(i * slot + slot * 0.1, 2),
                round(CHART_HEIGHT - height, 2),
                round(slot * 0.8, 2),
                round(height, 2),
                a.outcome,
            )
        )
    return bars


def owner_key(webhook: Webhook) -> ApiKey | None:
    """The key whose secret signs the webhook's deliveries."""
    return db.session.get(ApiKey, webhook.api_key_id)


def quota(key: ApiKey) -> Quota:
    return Quota(key, owned_count(key.id), webhooks_per_key())


def quotas(workspace_id: uuid.UUID, mode: str, console_key: ApiKey | None) -> list[Quota]:
    """n/10 for the console's key (it registers the console's webhooks) and every other key owning one."""
    owners = db.session.scalars(
        select(Webhook.api_key_id)
        .where(Webhook.workspace_id == workspace_id, Webhook.mode == mode, Webhook.deleted_at.is_(None))
        .distinct()
    ).all()
    ids = list(dict.fromkeys([*([console_key.id] if console_key is not None else []), *owners]))
    keys = {k.id: k for k in db.session.scalars(select(ApiKey).where(ApiKey.id.in_(ids)))} if ids else {}
    return [quota(keys[i]) for i in ids if i in keys]


def failed_count(webhook_id: uuid.UUID) -> int:
    return db.session.scalar(
        select(func.count())
        .select_from(WebhookDelivery)
        .where(WebhookDelivery.webhook_id == webhook_id, WebhookDelivery.status == "failed")
    )


def replacement_body(webhook: Webhook) -> dict:
    """The same webhook on the latest version (POST /v1/webhooks), status included."""
    return {
        "url": webhook.url,
        "status": webhook.status,
        "enabled_events": list(webhook.enabled_events),
        "version": LATEST_VERSION,
    }
