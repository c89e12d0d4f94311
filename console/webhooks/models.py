"""Webhook, delivery and attempt rows.

A `WebhookDelivery` is one event owed to one webhook; every HTTP try is a `WebhookAttempt`.
Times named `*_at` are on the workspace clock; `run_after` and `claimed_until` are real time,
because the worker polls them against its own clock.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from console.db.base import IdMixin
from console.extensions import db

ACTIVE, PAUSED = "active", "paused"
WEBHOOK_STATUSES = (ACTIVE, PAUSED)

PENDING, DELIVERING, DELIVERED, FAILED, SKIPPED = "pending", "delivering", "delivered", "failed", "skipped"
DELIVERY_STATUSES = (PENDING, DELIVERING, DELIVERED, FAILED, SKIPPED)


class Webhook(IdMixin, db.Model):
    __tablename__ = "webhooks"
    __table_args__ = (
        Index("ix_webhooks_scope", "workspace_id", "mode", "deleted_at", "created_at"),
        Index("ix_webhooks_key", "api_key_id", "deleted_at"),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    # The owning key: its secret signs deliveries, and the 10-webhook quota counts per key.
    api_key_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(16), default=ACTIVE)
    enabled_events: Mapped[list[Any]] = mapped_column(default=list)
    version: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    paused_at: Mapped[datetime | None]
    # Why it is paused: "requested" (by the API) or "failing" (no 200 OK for 30 days).
    pause_reason: Mapped[str | None] = mapped_column(String(16))
    # Start of the current run without a 200 OK; cleared by one. 30 days of it pauses the webhook.
    failing_since: Mapped[datetime | None]
    # When the scheduled pause check for the current failing run is due (avoids scheduling twice).
    pause_check_at: Mapped[datetime | None]
    last_success_at: Mapped[datetime | None]
    # Soft delete: the event log keeps showing what was delivered to a deleted webhook.
    deleted_at: Mapped[datetime | None]
    # A relayed webhook (`relay.RELAY_URL`): when its listener (`console listen`) last polled, real time.
    listener_seen_at: Mapped[datetime | None]


class WebhookDelivery(IdMixin, db.Model):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "webhook_id", name="uq_webhook_deliveries_event_webhook"),
        # The worker's two polls: due pending rows, and leases that expired (a worker died). Relayed
        # rows are the listener's: the worker skips them in the index, however many wait for it.
        Index("ix_webhook_deliveries_due", "status", "relayed", "run_after"),
        Index("ix_webhook_deliveries_lease", "status", "relayed", "claimed_until"),
        # Pausing or deleting a webhook skips its pending rows; the clock rewrites a workspace's rows.
        Index("ix_webhook_deliveries_webhook_status", "webhook_id", "status"),
        Index("ix_webhook_deliveries_workspace_status", "workspace_id", "status"),
        # The console's live pulse reads a workspace's newest attempt (one index step, however many rows).
        Index("ix_webhook_deliveries_workspace_attempted", "workspace_id", "last_attempt_at"),
    )

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    event_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    skip_reason: Mapped[str | None] = mapped_column(String(64))
    # A sample sent by the sandbox test endpoint: goes out even to a paused webhook.
    is_test: Mapped[bool] = mapped_column(default=False)
    # For a relayed webhook: handed to its listener (`console listen`), never sent by the worker.
    relayed: Mapped[bool] = mapped_column(default=False)
    # The x-timestamp of the request handed to the listener under the current claim.
    relay_timestamp: Mapped[int | None]
    attempt_count: Mapped[int] = mapped_column(default=0)  # every attempt, resends included
    # The current round (the first send or a resend): at most 6 attempts within 15 minutes.
    round_attempts: Mapped[int] = mapped_column(default=0)
    first_attempt_at: Mapped[datetime | None]
    last_attempt_at: Mapped[datetime | None]
    last_status_code: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(String(500))
    # Set when the payload is not valid for the webhook's version (see docs/webhooks.md).
    warning: Mapped[str | None] = mapped_column(String(500))
    delivered_at: Mapped[datetime | None]
    due_at: Mapped[datetime]  # workspace clock
    run_after: Mapped[datetime]  # real time: due_at minus the clock offset
    # The lease: a claimed row is re-sent once this passes without a recorded result.
    claimed_until: Mapped[datetime | None]
    claim_token: Mapped[uuid.UUID | None]
    created_at: Mapped[datetime]

    webhook: Mapped[Webhook] = relationship()
    attempts: Mapped[list[WebhookAttempt]] = relationship(
        back_populates="delivery", order_by="WebhookAttempt.number", passive_deletes=True
    )


class WebhookAttempt(IdMixin, db.Model):
    __tablename__ = "webhook_attempts"
    __table_args__ = (
        Index("ix_webhook_attempts_delivery", "delivery_id", "number"),
        Index("ix_webhook_attempts_webhook_at", "webhook_id", "at"),
    )

    delivery_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhook_deliveries.id", ondelete="CASCADE"))
    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_id: Mapped[uuid.UUID]
    number: Mapped[int]  # 1-based over the delivery's life
    at: Mapped[datetime]  # workspace clock
    sent_timestamp: Mapped[int]  # the x-timestamp header sent (real Unix seconds)
    outcome: Mapped[str] = mapped_column(String(16))  # delivered | retry | failed
    status_code: Mapped[int | None]
    latency_ms: Mapped[int]
    response_excerpt: Mapped[str | None] = mapped_column(Text)  # at most 1 KB
    error: Mapped[str | None] = mapped_column(String(500))
    warning: Mapped[str | None] = mapped_column(String(500))
    next_attempt_at: Mapped[datetime | None]  # workspace clock, when a retry was scheduled

    delivery: Mapped[WebhookDelivery] = relationship(back_populates="attempts")


class RelayRoundTrip(IdMixin, db.Model):
    """One ad-hoc request sent through a relayed webhook's listener (`relay.round_trip`), and its answer.

    Times are real time. The row lives only while someone waits for the answer (deleted after).
    """

    __tablename__ = "relay_round_trips"
    __table_args__ = (
        Index("ix_relay_round_trips_webhook", "webhook_id", "status", "created_at"),
        Index("ix_relay_round_trips_expires", "expires_at"),
    )

    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    method: Mapped[str] = mapped_column(String(16))
    headers: Mapped[dict[str, Any]] = mapped_column(default=dict)
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=PENDING)  # pending | delivering | answered
    claim_token: Mapped[uuid.UUID | None]
    claimed_until: Mapped[datetime | None]
    expires_at: Mapped[datetime]  # nobody waits for the answer after this
    created_at: Mapped[datetime]
    status_code: Mapped[int | None]
    latency_ms: Mapped[int | None]
    response_excerpt: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(String(500))
