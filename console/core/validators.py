"""Pure field validators: each returns an error message, or None when the value is acceptable.

Returning messages instead of raising lets a caller collect every field error in one pass. Values are
checked as given (no trimming or reformatting) so what is validated is exactly what gets stored.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime
from typing import Any

from email_validator import EmailNotValidError, validate_email

NOT_A_STRING = "must be a string"

# [0-9] rather than \d: \d also matches non-ASCII digits such as "٣".
_DIGITS = re.compile(r"[0-9]+")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# Boundaries exclude letters and digits so UUID/hex ids (digit runs of 8 or 12) are not flagged.
_EMAIL_LIKE = re.compile(r"[^\s@]+@[^\s@]+\.[A-Za-z]{2,}")
_PHONE_LIKE = re.compile(
    r"(?<![A-Za-z0-9])(?:\+?1[\s.-]?)?(?:\([0-9]{3}\)|[0-9]{3})[\s.-]?[0-9]{3}[\s.-]?[0-9]{4}(?![A-Za-z0-9])"
)
_SSN_LIKE = re.compile(r"(?<![A-Za-z0-9])[0-9]{3}([- ]?)[0-9]{2}\1[0-9]{4}(?![A-Za-z0-9])")


def _digits_error(value: Any, length: int, what: str = "") -> str | None:
    """Shared check for a string of exactly `length` ASCII digits."""
    if not isinstance(value, str):
        return NOT_A_STRING
    if len(value) != length or not _DIGITS.fullmatch(value):
        return f"must be exactly {length} digits{what}"
    return None


def aba_routing_error(value: Any) -> str | None:
    """A 9-digit ABA routing number with a valid checksum."""
    if error := _digits_error(value, 9):
        return error
    d = [int(c) for c in value]
    if (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10:
        return "is not a valid ABA routing number (checksum failed)"
    return None


def account_number_error(value: Any) -> str | None:
    """A bank account number of 4 to 17 digits."""
    if not isinstance(value, str):
        return NOT_A_STRING
    if not (4 <= len(value) <= 17 and _DIGITS.fullmatch(value)):
        return "must be 4 to 17 digits"
    return None


def email_error(value: Any) -> str | None:
    """A syntactically valid email address on a globally routable domain (no DNS lookup)."""
    if not isinstance(value, str):
        return NOT_A_STRING
    try:
        domain = validate_email(value, check_deliverability=False).ascii_domain
    except EmailNotValidError as exc:
        return f"must be a valid email address ({exc})"
    # email_validator takes any syntactically valid last label; no public top-level domain has one character.
    top_level = domain.rsplit(".", 1)[-1]
    if len(top_level) < 2:
        return f"must be a valid email address (no public domain ends in '.{top_level}')"
    return None


def ssn_error(value: Any, strict: bool = False) -> str | None:
    """A 9-digit SSN; `strict` also refuses numbers the SSA never issues."""
    if error := _digits_error(value, 9, " with no dashes"):
        return error
    # Not strict by default: sandbox test SSNs commonly start with 9, which SSA never issues.
    if strict:
        area, group, serial = value[:3], value[3:5], value[5:]
        if area in ("000", "666") or area.startswith("9"):
            return "is not a valid SSN (area number is never issued)"
        if group == "00":
            return "is not a valid SSN (group number 00 is never issued)"
        if serial == "0000":
            return "is not a valid SSN (serial number 0000 is never issued)"
    return None


def ssn_last_four_error(value: Any) -> str | None:
    """The last four digits of an SSN."""
    return _digits_error(value, 4)


def phone_error(value: Any) -> str | None:
    """A 10-digit US phone number without country code or separators."""
    return _digits_error(value, 10, " with no country code, spaces or punctuation")


def zip_error(value: Any) -> str | None:
    """A 5-digit US ZIP code."""
    return _digits_error(value, 5)


def past_date_error(value: Any, today: date | None = None) -> str | None:
    """A real `YYYY-MM-DD` calendar date strictly before today (UTC)."""
    if not isinstance(value, str):
        return NOT_A_STRING
    # fromisoformat alone would also take "20200101" and other ISO variants.
    if not _ISO_DATE.fullmatch(value):
        return "must be a date in YYYY-MM-DD format"
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        return "must be a real calendar date in YYYY-MM-DD format"
    if parsed >= (today or datetime.now(UTC).date()):
        return "must be in the past"
    return None


def looks_like_personal_data(value: Any) -> str | None:
    """Why a string looks like it carries an email, phone number or SSN; None otherwise."""
    # Type errors are the caller's field validator's job; this only answers "is it PII-shaped".
    if not isinstance(value, str):
        return None
    value = _plain(value)
    if _EMAIL_LIKE.search(value):
        return "looks like an email address"
    if _shaped(_SSN_LIKE, value):
        return "looks like a Social Security number"
    if _shaped(_PHONE_LIKE, value):
        return "looks like a phone number"
    return None


def _plain(value: str) -> str:
    """`value` with compatibility forms as their plain characters and every decimal digit as its ASCII one: an
    SSN or phone number in fullwidth (U+FF10...) or Arabic-Indic digits, or an email with a fullwidth at sign
    (U+FF20), is the same personal data, and passed."""
    value = unicodedata.normalize("NFKC", value)
    if value.isascii():
        return value
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in value)


def _shaped(pattern: re.Pattern[str], value: str) -> bool:
    """Whether `pattern` finds a number written as one (`123-45-6789`, `(555) 123-4567`) anywhere in `value`, or a
    bare digit run that is the whole value (`123456789`). A bare run inside an id (`order_2024111512`,
    `user-123456789`) is an order number or a counter far more often than personal data, and was refused."""
    whole = value.strip()
    return any(not match.group().isdigit() or match.group() == whole for match in pattern.finditer(value))
