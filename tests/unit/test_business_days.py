"""Unit tests for console.clock.business_days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from console.clock.business_days import (
    add_business_days,
    federal_holidays,
    is_business_day,
    next_business_day,
)


def test_2026_calendar() -> None:
    assert federal_holidays(2026) == {
        date(2026, 1, 1): "New Year's Day",
        date(2026, 1, 19): "Martin Luther King Jr. Day",
        date(2026, 2, 16): "Washington's Birthday",
        date(2026, 5, 25): "Memorial Day",
        date(2026, 6, 19): "Juneteenth National Independence Day",
        date(2026, 7, 3): "Independence Day",
        date(2026, 9, 7): "Labor Day",
        date(2026, 10, 12): "Columbus Day",
        date(2026, 11, 11): "Veterans Day",
        date(2026, 11, 26): "Thanksgiving Day",
        date(2026, 12, 25): "Christmas Day",
    }


@pytest.mark.parametrize("year", range(2021, 2041))
def test_every_year_has_observed_dates_on_weekdays(year: int) -> None:
    holidays = federal_holidays(year)
    assert all(d.year == year and d.weekday() < 5 for d in holidays)
    # 11 holidays a year, give or take the New Year's Day that moved to/from Dec 31.
    assert len(holidays) in (10, 11, 12)


def test_thanksgiving_2026() -> None:
    assert federal_holidays(2026)[date(2026, 11, 26)] == "Thanksgiving Day"
    assert not is_business_day(date(2026, 11, 26))
    assert is_business_day(date(2026, 11, 27))


def test_independence_day_2026_saturday_observed_friday() -> None:
    assert date(2026, 7, 4).weekday() == 5
    assert federal_holidays(2026)[date(2026, 7, 3)] == "Independence Day"
    assert date(2026, 7, 4) not in federal_holidays(2026)
    assert not is_business_day(date(2026, 7, 3))
    assert is_business_day(date(2026, 7, 6))


def test_sunday_holiday_observed_monday() -> None:
    # July 4 2027 is a Sunday.
    assert federal_holidays(2027)[date(2027, 7, 5)] == "Independence Day"
    assert not is_business_day(date(2027, 7, 5))


def test_christmas_2027_saturday_observed_friday() -> None:
    assert federal_holidays(2027)[date(2027, 12, 24)] == "Christmas Day"
    assert not is_business_day(date(2027, 12, 24))


def test_new_year_2028_saturday_observed_dec_31_2027() -> None:
    assert date(2028, 1, 1).weekday() == 5
    assert federal_holidays(2027)[date(2027, 12, 31)] == "New Year's Day"
    assert all(d.year == 2028 for d in federal_holidays(2028))
    assert date(2028, 1, 1) not in federal_holidays(2028)
    assert not is_business_day(date(2027, 12, 31))
    # Dec 23 2027 (Thu) -> skips Christmas-observed Fri, weekend, lands Mon Dec 27.
    assert next_business_day(date(2027, 12, 23)) == date(2027, 12, 27)
    # Thu Dec 30 -> Fri Dec 31 observed, weekend -> Mon Jan 3 2028.
    assert next_business_day(date(2027, 12, 30)) == date(2028, 1, 3)


def test_new_year_sunday_observed_monday_jan_2() -> None:
    assert federal_holidays(2023)[date(2023, 1, 2)] == "New Year's Day"
    assert date(2022, 12, 31) not in federal_holidays(2022)


def test_juneteenth_only_from_2021() -> None:
    assert "Juneteenth National Independence Day" not in federal_holidays(2020).values()
    assert federal_holidays(2021)[date(2021, 6, 18)] == "Juneteenth National Independence Day"


def test_federal_holidays_returns_fresh_dict() -> None:
    federal_holidays(2026).clear()
    assert len(federal_holidays(2026)) == 11


def test_weekends_are_not_business_days() -> None:
    assert not is_business_day(date(2026, 3, 7))
    assert not is_business_day(date(2026, 3, 8))
    assert is_business_day(date(2026, 3, 9))


def test_next_business_day() -> None:
    assert next_business_day(date(2026, 3, 9)) == date(2026, 3, 10)
    assert next_business_day(date(2026, 3, 6)) == date(2026, 3, 9)
    assert next_business_day(date(2026, 3, 7)) == date(2026, 3, 9)
    assert next_business_day(date(2026, 9, 4)) == date(2026, 9, 8)


def test_friday_plus_one_is_monday() -> None:
    friday = datetime(2026, 3, 6, 14, 30)
    assert add_business_days(friday, 1) == datetime(2026, 3, 9, 14, 30)


def test_friday_before_labor_day_plus_one_is_tuesday() -> None:
    friday = datetime(2026, 9, 4, 9, 0, tzinfo=UTC)
    assert add_business_days(friday, 1) == datetime(2026, 9, 8, 9, 0, tzinfo=UTC)


def test_add_several_business_days_across_thanksgiving() -> None:
    wednesday = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert add_business_days(wednesday, 1) == datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    assert add_business_days(wednesday, 3) == datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_add_from_weekend_lands_on_first_business_day() -> None:
    saturday = datetime(2026, 3, 7, 8, 0, tzinfo=UTC)
    assert add_business_days(saturday, 1) == datetime(2026, 3, 9, 8, 0, tzinfo=UTC)


def test_add_zero_business_days_returns_moment_unchanged() -> None:
    saturday = datetime(2026, 3, 7, 8, 0, tzinfo=UTC)
    assert add_business_days(saturday, 0) is saturday


def test_negative_business_days() -> None:
    tuesday = datetime(2026, 9, 8, 9, 0, tzinfo=UTC)
    assert add_business_days(tuesday, -1) == datetime(2026, 9, 4, 9, 0, tzinfo=UTC)


def test_timezone_aware_input_is_preserved() -> None:
    eastern = timezone(timedelta(hours=-5))
    friday = datetime(2026, 3, 6, 10, 15, 30, 123, tzinfo=eastern)
    result = add_business_days(friday, 1)
    assert result.tzinfo is eastern
    assert result == datetime(2026, 3, 9, 10, 15, 30, 123, tzinfo=eastern)


def test_calendar_date_is_computed_in_utc() -> None:
    # Thu Sep 3 2026 22:00 in UTC-5 is Fri Sep 4 03:00 UTC, so +1 skips Labor Day to Tue Sep 8 UTC.
    eastern = timezone(timedelta(hours=-5))
    thursday_evening = datetime(2026, 9, 3, 22, 0, tzinfo=eastern)
    result = add_business_days(thursday_evening, 1)
    assert result.astimezone(UTC) == datetime(2026, 9, 8, 3, 0, tzinfo=UTC)
    assert result.tzinfo is eastern
    assert result == datetime(2026, 9, 7, 22, 0, tzinfo=eastern)


def test_zoneinfo_keeps_utc_time_across_dst() -> None:
    ny = ZoneInfo("America/New_York")
    # DST starts Sun Mar 8 2026; the UTC time of day is what is kept.
    friday = datetime(2026, 3, 6, 9, 0, tzinfo=ny)
    result = add_business_days(friday, 1)
    assert result.tzinfo is ny
    assert result.astimezone(UTC) == datetime(2026, 3, 9, 14, 0, tzinfo=UTC)


def test_is_business_day_reads_aware_datetime_in_utc() -> None:
    eastern = timezone(timedelta(hours=-5))
    # Fri Mar 6 2026 20:00 UTC-5 is Sat Mar 7 01:00 UTC.
    assert not is_business_day(datetime(2026, 3, 6, 20, 0, tzinfo=eastern))
    assert is_business_day(datetime(2026, 3, 6, 20, 0))
