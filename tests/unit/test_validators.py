"""Unit tests for console.core.validators."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from console.core.validators import (
    aba_routing_error,
    account_number_error,
    email_error,
    looks_like_personal_data,
    past_date_error,
    phone_error,
    ssn_error,
    ssn_last_four_error,
    zip_error,
)

ALL_VALIDATORS: list[Callable[[Any], str | None]] = [
    aba_routing_error,
    account_number_error,
    email_error,
    ssn_error,
    ssn_last_four_error,
    phone_error,
    zip_error,
    past_date_error,
]


@pytest.mark.parametrize("validator", ALL_VALIDATORS)
@pytest.mark.parametrize("value", [None, 123456789, 12.5, ["011000015"], {"a": 1}, b"011000015", True])
def test_wrong_types_get_a_message_not_an_exception(
    validator: Callable[[Any], str | None], value: Any
) -> None:
    assert validator(value) == "must be a string"


def test_strict_ssn_wrong_type() -> None:
    assert ssn_error(123456789, strict=True) == "must be a string"


# --- routing numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["011000015", "021000021", "111000025", "122105278"])
def test_valid_routing_numbers(value: str) -> None:
    assert aba_routing_error(value) is None


def test_routing_checksum_failure() -> None:
    assert aba_routing_error("123456789") == "is not a valid ABA routing number (checksum failed)"
    assert aba_routing_error("021000022") is not None


@pytest.mark.parametrize(
    "value", ["", "02100002", "0210000210", "02100002a", " 021000021", "021-000-021", "٠٢١٠٠٠٠٢١"]
)
def test_routing_shape(value: str) -> None:
    assert aba_routing_error(value) == "must be exactly 9 digits"


# --- account numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1234", "000123456789", "12345678901234567"])
def test_valid_account_numbers(value: str) -> None:
    assert account_number_error(value) is None


@pytest.mark.parametrize("value", ["", "123", "123456789012345678", "1234-5678", "12 34", "abcd"])
def test_invalid_account_numbers(value: str) -> None:
    assert account_number_error(value) == "must be 4 to 17 digits"


# --- email -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["jane@example.com", "jane.doe+payroll@mail.example.co.uk", "a@b.co"])
def test_valid_emails(value: str) -> None:
    assert email_error(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "",
        "jane",
        "jane@",
        "@example.com",
        "jane@localhost",
        "jane@example",
        "a@@b.com",
        "a@b.123",
        "a b@c.com",
    ],
)
def test_invalid_emails(value: str) -> None:
    error = email_error(value)
    assert error is not None
    assert error.startswith("must be a valid email address (")


def test_email_message_includes_reason() -> None:
    assert "period" in (email_error("jane@example") or "")


# --- SSN -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["123456789", "900123456", "000000000", "666121234"])
def test_lenient_ssn_accepts_any_nine_digits(value: str) -> None:
    assert ssn_error(value) is None


@pytest.mark.parametrize("value", ["", "12345678", "1234567890", "123-45-6789", "12345678a"])
def test_ssn_shape(value: str) -> None:
    assert ssn_error(value) == "must be exactly 9 digits with no dashes"
    assert ssn_error(value, strict=True) == "must be exactly 9 digits with no dashes"


def test_strict_ssn_accepts_issuable_number() -> None:
    assert ssn_error("123456789", strict=True) is None
    assert ssn_error("899991234", strict=True) is None


@pytest.mark.parametrize(
    ("value", "part"),
    [
        ("000121234", "area"),
        ("666121234", "area"),
        ("900121234", "area"),
        ("999121234", "area"),
        ("123001234", "group"),
        ("123450000", "serial"),
    ],
)
def test_strict_ssn_refuses_never_issued(value: str, part: str) -> None:
    error = ssn_error(value, strict=True)
    assert error is not None
    assert part in error


@pytest.mark.parametrize(
    ("value", "ok"), [("1234", True), ("0000", True), ("123", False), ("12345", False), ("12a4", False)]
)
def test_ssn_last_four(value: str, ok: bool) -> None:
    assert (ssn_last_four_error(value) is None) is ok


# --- phone and ZIP ---------------------------------------------------------------------------------------


def test_valid_phone() -> None:
    assert phone_error("5551234567") is None


@pytest.mark.parametrize(
    "value", ["", "555123456", "15551234567", "+15551234567", "555-123-4567", "(555) 1234567"]
)
def test_invalid_phone_mentions_country_code(value: str) -> None:
    error = phone_error(value)
    assert error is not None
    assert "10 digits" in error
    assert "country code" in error


@pytest.mark.parametrize(
    ("value", "ok"), [("02134", True), ("2134", False), ("02134-1234", False), ("0213a", False)]
)
def test_zip(value: str, ok: bool) -> None:
    assert (zip_error(value) is None) is ok


# --- past dates ------------------------------------------------------------------------------------------

TODAY = date(2026, 3, 10)


def test_past_date_ok() -> None:
    assert past_date_error("1990-05-17", today=TODAY) is None
    assert past_date_error("2026-03-09", today=TODAY) is None
    assert past_date_error("2024-02-29", today=TODAY) is None


def test_today_and_future_are_not_past() -> None:
    assert past_date_error("2026-03-10", today=TODAY) == "must be in the past"
    assert past_date_error("2030-01-01", today=TODAY) == "must be in the past"


def test_past_date_defaults_to_utc_today() -> None:
    today = datetime.now(UTC).date()
    assert past_date_error((today - timedelta(days=1)).isoformat()) is None
    assert past_date_error(today.isoformat()) == "must be in the past"


@pytest.mark.parametrize(
    "value", ["", "1990/05/17", "17-05-1990", "19900517", "1990-5-17", "1990-05-17T00:00", " 1990-05-17"]
)
def test_past_date_bad_format(value: str) -> None:
    assert past_date_error(value, today=TODAY) == "must be a date in YYYY-MM-DD format"


@pytest.mark.parametrize("value", ["2023-02-29", "2025-13-01", "2025-04-31", "2025-00-10"])
def test_past_date_not_a_real_date(value: str) -> None:
    assert past_date_error(value, today=TODAY) == "must be a real calendar date in YYYY-MM-DD format"


# --- personal data detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("jane@example.com", "email"),
        ("user-jane.doe@corp.io", "email"),
        ("5551234567", "phone"),
        ("15551234567", "phone"),
        ("+1 555 123 4567", "phone"),
        ("+1 (555) 123-4567", "phone"),
        ("555.123.4567", "phone"),
        ("1-555-123-4567", "phone"),
        ("emp_555-123-4567", "phone"),
        ("123456789", "Social Security"),
        ("123-45-6789", "Social Security"),
        ("123 45 6789", "Social Security"),
        ("ssn:123-45-6789", "Social Security"),
        (" 123456789 ", "Social Security"),
        ("tel:+15551234567", "phone"),
        # Compatibility and non-ASCII digits are the same data (fullwidth, Arabic-Indic): they passed.
        ("\uff11\uff12\uff13-\uff14\uff15-\uff16\uff17\uff18\uff19", "Social Security"),
        ("\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19", "Social Security"),
        ("\u0665\u0665\u0665\u0661\u0662\u0663\u0664\u0665\u0666\u0667", "phone"),
        ("jane\uff20example.com", "email"),
    ],
)
def test_personal_data_is_detected(value: str, kind: str) -> None:
    reason = looks_like_personal_data(value)
    assert reason is not None
    assert kind in reason


@pytest.mark.parametrize(
    "value",
    [
        "emp_12345",
        "user-42",
        "550e8400-e29b-41d4-a716-446655440000",
        "12345678-1234-1234-1234-123456789012",
        "a1b2c3d4e5f6",
        "12345678",
        "123456789012",
        "123-456-78",
        "jane@localhost",
        "",
        # A bare digit run inside an id: an order number or a counter, not a phone number or an SSN.
        "order_2024111512",
        "user-123456789",
        "acct 5551234567 x",
    ],
)
def test_ordinary_ids_are_not_flagged(value: str) -> None:
    assert looks_like_personal_data(value) is None


@pytest.mark.parametrize("value", [None, 5551234567, ["jane@example.com"]])
def test_personal_data_wrong_type_does_not_raise(value: Any) -> None:
    assert looks_like_personal_data(value) is None
