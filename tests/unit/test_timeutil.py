"""How the API writes a moment: UTC, microseconds always present, `+00:00`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from console.core.timeutil import isoformat


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05.000000+00:00"),
        (
            datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T01:04:05.000007+00:00",
        ),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00.000000+00:00"),
        (datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "2026-12-31T23:59:59.999999+00:00"),
    ],
)
def test_isoformat_is_utc_with_microseconds(value: datetime, text: str) -> None:
    assert isoformat(value) == text


def test_isoformat_keeps_none() -> None:
    assert isoformat(None) is None
