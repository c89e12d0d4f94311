"""Personal data and Link tokens out of logged bodies: SSNs, account numbers, dates of birth, phone
numbers, emails, and the `token` a Link token's creation answers.

JSON bodies are masked by field name (the spec's own names, and any name ending in them; `token` by that
exact name only, since `link_token_id` and the like are ids, not credentials), and every string value,
and any body that is not JSON, is also scanned for SSN-shaped (123-45-6789) and email-shaped text. Masks:
`[redacted]`; an account number and a Link token keep their last four (`••••6789`), enough to tell them
apart in the log, not to use them. The service otherwise keeps a Link token only as a hash.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from console.core import jsontext

MASK = "[redacted]"
# Field names whose values are personal data, matched on the lower-cased name or its `_`-suffix.
PERSONAL_FIELDS = (
    "social_security_number",
    "social_security_last_four",
    "ssn",
    "date_of_birth",
    "dob",
    "birth_date",
    "mobile_phone_number",
    "phone_number",
    "phone",
    "email",
    "email_address",
)
# Account numbers keep their last four characters: enough to tell accounts apart, not to pay into them.
ACCOUNT_FIELDS = ("account_number",)
# Credentials, by their exact name, masked as account numbers are: a Link token opens Link for an hour.
SECRET_FIELDS = ("token",)
# Only the dashed form in free text: bare nine digits are as often a routing number or an id.
SSN_TEXT = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
EMAIL_TEXT = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
# A personal field inside JSON text that does not parse (a body cut at the log's size limit).
FIELD_TEXT = re.compile(
    r'("(?:[A-Za-z0-9]*_)?(?:' + "|".join(PERSONAL_FIELDS + ACCOUNT_FIELDS) + r')"\s*:\s*)'
    r'("(?:[^"\\]|\\.)*"?|-?[0-9]+)',
    re.IGNORECASE,
)
SECRET_TEXT = re.compile(r'("(?:' + "|".join(SECRET_FIELDS) + r')"\s*:\s*)("(?:[^"\\]|\\.)*"?)')


# What could need a mask, as cheap tests: a body without any of it (most responses) is kept without
# parsing it. One alternation regex with IGNORECASE took ~0.5 ms on a 3 KB page of jobs, twice per API
# request; lower-casing once and a few substring tests take ~10 µs. Each personal field name contains
# one of these words (tests/unit/test_redaction.py checks each), so they find every body the full list
# of names would, in 7 passes over the text instead of 12. An SSN needs "-dd-dddd", a literal dash
# first, which the regex engine finds fast; the full SSN shape is checked only after it.
_FIELD_WORDS = ("account_number", "birth", "dob", "email", "phone", "social_security", "ssn")
_SSN_TAIL = re.compile(r"-\d\d-\d\d\d\d")


def _personal_data_possible(text: str) -> bool:
    if "@" in text:
        return True
    if _SSN_TAIL.search(text) is not None and SSN_TEXT.search(text) is not None:
        return True
    lowered = text.lower()
    return any(word in lowered for word in _FIELD_WORDS)


@functools.lru_cache(maxsize=1024)
def _kind(name: str) -> str:
    """ "account", "personal" or "" for a field name (its lower-cased name, or a `_`-suffix of it; a secret
    field by its exact name)."""
    if name in SECRET_FIELDS:  # by its exact name, as `redact_body` finds it
        return "account"  # masked the same way: its last four kept
    lowered = name.lower()
    for kind, fields in (("account", ACCOUNT_FIELDS), ("personal", PERSONAL_FIELDS)):
        if any(lowered == f or lowered.endswith("_" + f) for f in fields):
            return kind
    return ""


def _mask_account(value: Any) -> str:
    text = str(value)
    return "••••" + text[-4:] if len(text) > 4 else MASK


def redact_text(text: str) -> str:
    """SSN- and email-shaped substrings masked (each regex only where its anchor character occurs)."""
    if "-" in text:
        text = SSN_TEXT.sub(MASK, text)
    if "@" in text:
        text = EMAIL_TEXT.sub(MASK, text)
    return text


def _redact_unparsed(text: str) -> str:
    text = SECRET_TEXT.sub(lambda m: f'{m.group(1)}"{MASK}"', text)
    return redact_text(FIELD_TEXT.sub(lambda m: f'{m.group(1)}"{MASK}"', text))


def _mask_secret_string(match: re.Match) -> str:
    quoted = match.group(2)
    if "\\" not in quoted and len(quoted) > 1 and quoted.endswith('"'):  # no escapes: the text is the value
        return f'{match.group(1)}"{_mask_account(quoted[1:-1])}"'
    try:
        value = json.loads(quoted)
    except ValueError:  # a string cut short by the log's size limit
        return f'{match.group(1)}"{MASK}"'
    return match.group(1) + json.dumps(_mask_account(value), ensure_ascii=False)


def _mask_secrets(text: str) -> str:
    """Secret fields' string values masked in JSON text, the rest kept byte for byte.

    For a body with nothing personal in it (a Link token's creation answers only ids and its token):
    parsing, walking and re-encoding it cost ~15 µs of the writer's time per row, this ~2. A key inside a
    string value is escaped (`\\"token\\"`), so only real keys match.
    """
    return SECRET_TEXT.sub(_mask_secret_string, text)


def redact_value(value: Any, name: str = "") -> Any:
    """A parsed JSON value with personal fields masked, recursively; the same object where nothing was.

    Why the same object: most of a logged body is kept as sent, and rebuilding every dict and list only to
    compare the copy with the original cost half of a Link token request's redaction (the account number
    in its allocation sends every such body through here). JSON parses to exact dicts, lists and strs.
    """
    cls = value.__class__
    if cls is dict:
        changed: dict | None = None
        for key, item in value.items():
            masked = redact_value(item, key)
            if masked is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = masked
        return value if changed is None else changed
    if cls is list:
        changed_items: list | None = None
        for index, item in enumerate(value):
            masked = redact_value(item, name)
            if masked is not item:
                if changed_items is None:
                    changed_items = list(value)
                changed_items[index] = masked
        return value if changed_items is None else changed_items
    if value is None:
        return None
    if name:
        kind = _kind(name)
        if kind == "account":
            return _mask_account(value)
        if kind == "personal":
            return MASK
    if cls is str:
        masked_text = redact_text(value)
        return value if masked_text == value else masked_text
    return value


def redact_body(text: str) -> str:
    """A logged body with personal data masked.

    JSON with nothing to mask is kept as sent, byte for byte, and so is one whose only mask is a secret
    field's (a Link token's creation), but for that value; otherwise it is re-encoded with the masks.
    Text that is not JSON (or JSON cut short) is scanned for personal fields and shapes.
    """
    if not text:
        return text
    if not _personal_data_possible(text):
        return _mask_secrets(text) if '"token"' in text else text  # the one secret field, by its exact name
    try:
        parsed = jsontext.loads(text)
    except ValueError:
        return _redact_unparsed(text)
    redacted = redact_value(parsed)
    if redacted is parsed:  # nothing masked
        return text
    return json.dumps(redacted, ensure_ascii=False)
