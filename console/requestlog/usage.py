"""Reading key usage: requests per key and per day, by status class, production ones billable."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import select

from console.core.timeutil import utcnow
from console.extensions import db
from console.requestlog.models import KeyUsageDay

USAGE_DAYS = 30


def recent(workspace_id: uuid.UUID, days: int = USAGE_DAYS) -> list[KeyUsageDay]:
    """The workspace's usage rows of the last `days` real days, newest day first."""
    since = (utcnow() - timedelta(days=days - 1)).date()
    return list(
        db.session.scalars(
            select(KeyUsageDay)
            .where(KeyUsageDay.workspace_id == workspace_id, KeyUsageDay.day >= since)
            .order_by(KeyUsageDay.day.desc(), KeyUsageDay.mode, KeyUsageDay.api_key_id)
        )
    )
