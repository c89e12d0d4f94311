"""Wall-clock time and the one datetime format the API speaks.

Business code asks a workspace clock (`console.clock`) for "now"; only the clock
itself and bookkeeping columns call `utcnow` directly.
"""

from __future__ import annotations

from datetime import UTC, date, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def isoformat(value: datetime | None) -> str | None:
    """Render as `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`, microseconds always present."""
    if value is None:
        return None
    # isoformat, not strftime: the same text for a UTC time, at a quarter of the cost (every timestamp
    # of every API answer and event goes through here).
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def isodate(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def parse_datetime(text: str) -> datetime:
    """Parse an ISO 8601 datetime; naive values are taken as UTC.

    Anything that is not one, including a datetime that leaves the representable range once
    converted to UTC (`0001-01-01T00:00:00+01:00`), is a `ValueError`.
    """
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError(f"{text!r} is outside the datetimes this service can represent") from exc
