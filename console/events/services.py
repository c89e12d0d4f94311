"""Writing events to the outbox; delivery is the webhooks package's job."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from console.events.models import Event
from console.extensions import db

EVENT_TYPES = ("account.added", "direct_deposit_switch.added", "employment.added", "income.added")


def record_event(
    *,
    workspace_id: uuid.UUID,
    mode: str,
    type: str,
    payload: dict[str, Any],
    at: datetime,
    link_token_id: uuid.UUID | None = None,
    account_id: uuid.UUID | None = None,
    end_user_id: str | None = None,
    job_id: uuid.UUID | None = None,
    via_platform_matching: bool = False,
) -> Event:
    """Add an event to the current transaction; it commits (or not) with the change that caused it."""
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}")
    event = Event(
        workspace_id=workspace_id,
        mode=mode,
        type=type,
        payload=payload,
        created_at=at,
        link_token_id=link_token_id,
        account_id=account_id,
        end_user_id=end_user_id,
        job_id=job_id,
        via_platform_matching=via_platform_matching,
    )
    db.session.add(event)
    db.session.flush()
    return event
