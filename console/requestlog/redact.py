"""Personal data and credentials out of logged bodies: SSNs, account numbers, dates of birth, phone
numbers, emails; passwords, MFA codes, secrets, tokens (the `token` a Link token's creation answers) and
everything under `credentials` or `mfa` (a headless completion's username, password and code); and an API
secret by its shape wherever it is (`mask_api_secrets`: bodies, query strings, paths, headers).

JSON bodies are masked by field name (the spec's own names, and any name ending in them; `token` by that
exact name or a `_token` suffix, since `link_token_id` and the like are ids, not credentials), and every
string value, and any body that is not JSON, is also scanned for SSN-shaped (123-45-6789) and email-shaped
text. Masks: `[redacted]`; an account number and a Link token keep their last four (`••••6789`), enough to
tell them apart in the log, not to use them. The service otherwise keeps a Link token only as a hash.
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
# Credentials masked whole, matched on the lower-cased name or its `_`-suffix (`api_secret`, `new_password`).
CREDENTIAL_FIELDS = ("password", "secret", "mfa_code", "token")
# Everything under these (any depth, any name: username, code, method) is masked whole.
CREDENTIAL_CONTAINERS = ("credentials", "mfa")
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
# A credential field inside JSON text that does not parse.
CREDENTIAL_TEXT = re.compile(
    r'("(?:[A-Za-z0-9]*_)?(?:' + "|".join(CREDENTIAL_FIELDS) + r')"\s*:\s*)'
    r'("(?:[^"\\]|\\.)*"?|-?[0-9]+)',
    re.IGNORECASE,
)
# The start of a credential container's value inside JSON text that does not parse.
CONTAINER_TEXT = re.compile(
    r'"(?:[A-Za-z0-9]*_)?(?:' + "|".join(CREDENTIAL_CONTAINERS) + r')"\s*:\s*', re.IGNORECASE
)
# `name=value` pairs of a query string or a form-encoded body (sent where JSON was expected).
CREDENTIAL_PAIR = re.compile(
    r"(?<![A-Za-z0-9])((?:[A-Za-z0-9]*_)?(?:password|secret|mfa_code|token|username|code)"
    r"|credentials\[[^\]=&]*\]|mfa\[[^\]=&]*\])=([^&\s]*)",
    re.IGNORECASE,
)


# An API secret by its shape, wherever it was sent: a body field of any name, a query parameter, the path, a
# header other than x-api-secret (which is replaced whole). Kept: its mode's prefix and last four, as the console
# names keys (`sk_sandbox_••••abcd`). The alphabet (base64url) holds no quote or backslash, so the mask is
# applied to JSON text as it stands. The console's masked form and "sk_sandbox_…" in prose do not match.
API_SECRET_TEXT = re.compile(r"(?<![A-Za-z0-9])(sk_(?:sandbox|dev|live)_)[A-Za-z0-9_-]{20,}")


def mask_api_secrets(text: str) -> str:
    """Every API-secret-shaped run in `text` masked to its prefix and last four characters."""
    if "sk_" not in text:
        return text
    return API_SECRET_TEXT.sub(lambda m: m.group(1) + "••••" + m.group(0)[-4:], text)


# What could need a mask, as cheap tests: a body without any of it (most responses) is kept without
# parsing it. One alternation regex with IGNORECASE took ~0.5 ms on a 3 KB page of jobs, twice per API
# request; lower-casing once and a few substring tests take ~10 µs. Each personal field name contains
# one of these words (tests/unit/test_redaction.py checks each), so they find every body the full list
# of names would, in 7 passes over the text instead of 12. An SSN needs "-dd-dddd", a literal dash
# first, which the regex engine finds fast; the full SSN shape is checked only after it.
_FIELD_WORDS = ("account_number", "birth", "dob", "email", "phone", "social_security", "ssn")
# Each credential field and container name contains one of these ("token" only as `_token"`: the bare
# name is handled without parsing, and `link_token_id` must not send every job list to the parser).
_CREDENTIAL_WORDS = ("password", "secret", "mfa", "credentials", '_token"')
_SSN_TAIL = re.compile(r"-\d\d-\d\d\d\d")


def _personal_data_possible(text: str) -> bool:
    if "@" in text:
        return True
    if _SSN_TAIL.search(text) is not None and SSN_TEXT.search(text) is not None:
        return True
    lowered = text.lower()
    return any(word in lowered for word in _FIELD_WORDS) or any(word in lowered for word in _CREDENTIAL_WORDS)


@functools.lru_cache(maxsize=1024)
def _kind(name: str) -> str:
    """ "account", "personal", "container" or "" for a field name (its lower-cased name, or a `_`-suffix of
    it; a secret field by its exact name). Credentials are "personal": masked whole."""
    if name in SECRET_FIELDS:  # by its exact name, as `redact_body` finds it
        return "account"  # masked the same way: its last four kept
    lowered = name.lower()
    for kind, fields in (
        ("account", ACCOUNT_FIELDS),
        ("personal", PERSONAL_FIELDS + CREDENTIAL_FIELDS),
        ("container", CREDENTIAL_CONTAINERS),
    ):
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


def _value_end(text: str, start: int) -> int:
    """Where the JSON value starting at `start` ends (the text's end for one cut short)."""
    depth = 0
    index = start
    while index < len(text):
        char = text[index]
        if char == '"':
            index += 1
            while index < len(text) and text[index] != '"':
                index += 2 if text[index] == "\\" else 1
            if depth == 0:
                return min(index + 1, len(text))
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth <= 0:
                return index + 1
        elif depth == 0 and char in ",\n":
            return index
        index += 1
    return len(text)


def _mask_containers(text: str) -> str:
    """Each credential container's whole value replaced by the mask, in JSON text that does not parse."""
    parts = []
    position = 0
    for match in CONTAINER_TEXT.finditer(text):
        if match.start() < position:  # inside a container already masked
            continue
        parts.append(text[position : match.end()] + f'"{MASK}"')
        position = _value_end(text, match.end())
    return "".join(parts) + text[position:] if parts else text


def redact_pairs(text: str) -> str:
    """Credentials in `name=value` pairs (a query string, a form-encoded body) masked, and an API secret
    under any name."""
    text = CREDENTIAL_PAIR.sub(lambda m: f"{m.group(1)}={MASK}", text) if "=" in text else text
    return mask_api_secrets(text)


def _redact_unparsed(text: str) -> str:
    text = _mask_containers(text)
    text = SECRET_TEXT.sub(lambda m: f'{m.group(1)}"{MASK}"', text)
    text = CREDENTIAL_TEXT.sub(lambda m: f'{m.group(1)}"{MASK}"', text)
    return redact_pairs(redact_text(FIELD_TEXT.sub(lambda m: f'{m.group(1)}"{MASK}"', text)))


def _json_text(value: Any) -> str:
    """JSON text of a re-encoded body, readable (non-ASCII kept) unless it holds a lone surrogate.

    `"\\ud800"` is valid JSON, but the string it parses to cannot be stored in a text column (UTF-8 has no
    encoding for it): such a body keeps its \\u escapes, or the log would drop the whole row."""
    out = json.dumps(value, ensure_ascii=False)
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value)
    return out


def _mask_secret_string(match: re.Match) -> str:
    quoted = match.group(2)
    if "\\" not in quoted and len(quoted) > 1 and quoted.endswith('"'):  # no escapes: the text is the value
        return f'{match.group(1)}"{_mask_account(quoted[1:-1])}"'
    try:
        value = json.loads(quoted)
    except ValueError:  # a string cut short by the log's size limit
        return f'{match.group(1)}"{MASK}"'
    return match.group(1) + _json_text(_mask_account(value))


def _mask_secrets(text: str) -> str:
    """Secret fields' string values masked in JSON text, the rest kept byte for byte.

    For a body with nothing personal in it (a Link token's creation answers only ids and its token):
    parsing, walking and re-encoding it cost ~15 µs of the writer's time per row, this ~2. A key inside a
    string value is escaped (`\\"token\\"`), so only real keys match.
    """
    return SECRET_TEXT.sub(_mask_secret_string, text)


def redact_value(value: Any, name: str = "", hidden: bool = False) -> Any:
    """A parsed JSON value with personal fields masked, recursively; the same object where nothing was.

    `hidden`: the value is under a credential container (`credentials`, `mfa`), so every scalar is masked.

    Why the same object: most of a logged body is kept as sent, and rebuilding every dict and list only to
    compare the copy with the original cost half of a Link token request's redaction (the account number
    in its allocation sends every such body through here). JSON parses to exact dicts, lists and strs.
    """
    cls = value.__class__
    if cls is dict:
        changed: dict | None = None
        for key, item in value.items():
            masked = redact_value(item, key, hidden or _kind(key) == "container")
            if masked is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = masked
        return value if changed is None else changed
    if cls is list:
        changed_items: list | None = None
        for index, item in enumerate(value):
            masked = redact_value(item, name, hidden)
            if masked is not item:
                if changed_items is None:
                    changed_items = list(value)
                changed_items[index] = masked
        return value if changed_items is None else changed_items
    if value is None:
        return None
    if hidden:
        return MASK
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
    return mask_api_secrets(_redact_fields(text))


def _redact_fields(text: str) -> str:
    if not _personal_data_possible(text):
        if "=" in text and text[:1] not in "{[":  # perhaps form-encoded: `password=...`
            text = redact_pairs(text)
        return _mask_secrets(text) if '"token"' in text else text  # the one secret field, by its exact name
    try:
        parsed = jsontext.loads(text)
    except ValueError:
        return _redact_unparsed(text)
    redacted = redact_value(parsed)
    if redacted is parsed:  # nothing masked
        return text
    return _json_text(redacted)
