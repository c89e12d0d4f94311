"""Writing events to the outbox, fanned out to subscribed webhooks in the same transaction.

Reading the event log and resending live in `console.events.queries`; sending is the webhooks worker's job.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from console.events.models import EVENT_TYPES, Event
from console.extensions import db
from console.webhooks.services import fan_out as fan_out_to_webhooks


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
    fan_out: bool = True,
) -> Event:
    """Add an event and its webhook deliveries to the current transaction; they commit with the change.

    Each active webhook of the workspace and mode subscribed to `type` gets a pending delivery, each
    paused one a `skipped` delivery (resendable). `fan_out=False` is for the sandbox test event only.
    """
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}")
    event = Event(
        id=uuid.uuid4(),
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
    if fan_out:
        fan_out_to_webhooks(event)
    db.session.flush()
    return event
