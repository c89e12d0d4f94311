"""US federal business days: the 11 OPM holidays with the observed-date rule (Sat -> Fri, Sun -> Mon)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

_MON, _THU, _SAT, _SUN = 0, 3, 5, 6


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th given weekday of a month (n >= 1)."""
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _last_weekday(year: int, month: int, weekday: int) -> date:
    """The last given weekday of a month."""
    last = (date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def _observed(d: date) -> date:
    """OPM rule: a Saturday holiday is observed the Friday before, a Sunday one the Monday after."""
    if d.weekday() == _SAT:
        return d - timedelta(days=1)
    if d.weekday() == _SUN:
        return d + timedelta(days=1)
    return d


@lru_cache(maxsize=64)
def _holidays_of(year: int) -> tuple[tuple[date, str], ...]:
    """Observed dates of the holidays whose actual date is in `year` (may spill into year - 1)."""
    actual = [
        (date(year, 1, 1), "New Year's Day"),
        (_nth_weekday(year, 1, _MON, 3), "Martin Luther King Jr. Day"),
        (_nth_weekday(year, 2, _MON, 3), "Washington's Birthday"),
        (_last_weekday(year, 5, _MON), "Memorial Day"),
        (date(year, 7, 4), "Independence Day"),
        (_nth_weekday(year, 9, _MON, 1), "Labor Day"),
        (_nth_weekday(year, 10, _MON, 2), "Columbus Day"),
        (date(year, 11, 11), "Veterans Day"),
        (_nth_weekday(year, 11, _THU, 4), "Thanksgiving Day"),
        (date(year, 12, 25), "Christmas Day"),
    ]
    # Juneteenth became a federal holiday in 2021; earlier payroll dates must not skip it.
    if year >= 2021:
        actual.append((date(year, 6, 19), "Juneteenth National Independence Day"))
    return tuple(sorted((_observed(d), name) for d, name in actual))


def federal_holidays(year: int) -> dict[date, str]:
    """Observed federal holidays falling in `year`, mapped to their names."""
    # Next year's New Year's Day is observed on Dec 31 of this year when Jan 1 is a Saturday.
    pairs = _holidays_of(year) + _holidays_of(year + 1)
    return {d: name for d, name in pairs if d.year == year}


def _calendar_date(d: date) -> date:
    """A plain date; an aware datetime is read in UTC, a naive one as is."""
    if isinstance(d, datetime):
        return (d.astimezone(UTC) if d.tzinfo is not None else d).date()
    return d


def is_business_day(d: date) -> bool:
    """True on weekdays that are not an observed federal holiday."""
    d = _calendar_date(d)
    return d.weekday() < _SAT and d not in federal_holidays(d.year)


def next_business_day(d: date) -> date:
    """The first business day strictly after `d`."""
    d = _calendar_date(d) + timedelta(days=1)
    while not is_business_day(d):
        d += timedelta(days=1)
    return d


def add_business_days(moment: datetime, n: int) -> datetime:
    """The same time of day on the n-th business day after `moment` (before it if n < 0)."""
    if n == 0:
        return moment
    aware = moment.tzinfo is not None
    # Business dates are UTC calendar dates so a moment means the same day on every server.
    base = moment.astimezone(UTC) if aware else moment
    day, step = base.date(), timedelta(days=1 if n > 0 else -1)
    for _ in range(abs(n)):
        day += step
        while not is_business_day(day):
            day += step
    result = datetime.combine(day, base.timetz())
    return result.astimezone(moment.tzinfo) if aware else result
