"""Render a logged exchange for people: pretty bodies, and runnable curl and Python `requests` code."""

from __future__ import annotations

import json
import pprint
import shlex
from dataclasses import dataclass
from typing import Any

from console.core import jsontext
from console.keys.models import ApiKey
from console.keys.secrets import PREFIXES
from console.requestlog.capture import SECRET_HEADER, SECRET_PLACEHOLDER
from console.requestlog.models import RequestLogEntry
from console.requestlog.redact import MASK

# Response headers worth a developer's attention, in the order they are shown.
SHOWN_RESPONSE_HEADERS = (
    "x-service-request-id",
    "Service-Version",
    "Content-Type",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "Retry-After",
    "Location",
)


def masked_secret(key: ApiKey | None) -> str:
    """How a secret is shown until someone asks to reveal it: its mode prefix and last four characters."""
    if key is None:
        return SECRET_PLACEHOLDER
    return f"{PREFIXES.get(key.mode, '')}••••{key.secret_last4}"


def pretty(text: str) -> str:
    """Indented JSON when the text is JSON, else the text itself."""
    if not text:
        return ""
    try:
        shown = json.dumps(jsontext.loads(text), indent=2, ensure_ascii=False)
    except ValueError:  # not JSON, or too deep to indent safely
        return text
    if not shown.isascii() and jsontext.LONE_SURROGATE.search(shown):
        # A lone surrogate escaped in the JSON (`"\\ud800"`): kept as its escape, which a page can show.
        return json.dumps(jsontext.loads(text), indent=2)
    return shown


MASKED_NOTE = "masked values ({shown}) are what the request log keeps, not what was sent: put real ones in before running"


def masked_values(row: RequestLogEntry) -> str:
    """The masks in a logged request body, as the note names them ("••••7890, [redacted]"); "" when none.

    Why: the log keeps account numbers as their last four and credentials as `[redacted]`, so code made from
    it was refused as pasted (`account_number must be 4 to 17 digits`) with nothing saying why."""
    body = row.request_body or ""
    found = [mask for mask in ("••••", MASK) if mask in body]
    return ", ".join("••••1234" if mask == "••••" else mask for mask in found)


def _headers_with_secret(row: RequestLogEntry, secret: str) -> dict[str, str]:
    return {k: (secret if k.lower() == SECRET_HEADER else v) for k, v in row.request_headers.items()}


def curl(row: RequestLogEntry, secret: str) -> str:
    """The exchange as a curl command line."""
    lines = [f"curl -X {row.method} {shlex.quote(row.url)}"]
    for name, value in _headers_with_secret(row, secret).items():
        lines.append(f"-H {shlex.quote(f'{name}: {value}')}")
    if row.request_body:
        lines.append(f"-d {shlex.quote(row.request_body)}")
    command = " \\\n  ".join(lines)
    masked = masked_values(row)
    return f"# {MASKED_NOTE.format(shown=masked)}\n{command}" if masked else command


def python(row: RequestLogEntry, secret: str) -> str:
    """The exchange as Python using `requests`."""
    headers = {
        k: v for k, v in _headers_with_secret(row, secret).items() if k.lower() != "content-type"
    }  # `json=` sets Content-Type itself
    args = [repr(row.url), f"headers={_py(headers, 4)}"]
    if row.request_body:
        try:
            args.append(f"json={_py(jsontext.loads(row.request_body), 4)}")
        except ValueError:  # not JSON, or nested too deep (json.loads would raise RecursionError)
            args.append(f"data={row.request_body!r}")
    args.append("timeout=30")
    call = ",\n    ".join(args)
    masked = masked_values(row)
    return (
        (f"# {MASKED_NOTE.format(shown=masked)}\n" if masked else "") + "import requests\n\n"
        f"response = requests.{row.method.lower()}(\n    {call},\n)\n"
        'print(response.status_code, response.headers["x-service-request-id"])\n'
        "print(response.json())"
    )


def _py(value: Any, indent: int) -> str:
    """A Python literal for JSON data (True/False/None), indented like the surrounding call."""
    text = pprint.pformat(value, width=96 - indent, sort_dicts=False)
    return text.replace("\n", "\n" + " " * indent)


@dataclass(frozen=True)
class ExchangeView:
    """What the exchange partial shows."""

    row: RequestLogEntry
    revealed: bool
    request_headers: dict[str, str]
    response_headers: list[tuple[str, str]]
    request_body: str
    response_body: str
    curl: str
    python: str


def view(row: RequestLogEntry, key: ApiKey | None, secret: str | None = None) -> ExchangeView:
    """Prepare an exchange for display; the secret appears only when `secret` is given (revealed)."""
    shown_secret = secret if secret is not None else masked_secret(key)
    lower = {k.lower(): (k, v) for k, v in row.response_headers.items()}
    response_headers = [lower[h.lower()] for h in SHOWN_RESPONSE_HEADERS if h.lower() in lower]
    return ExchangeView(
        row=row,
        revealed=secret is not None,
        request_headers=_headers_with_secret(row, shown_secret),
        response_headers=response_headers,
        request_body=pretty(row.request_body),
        response_body=pretty(row.response_body),
        curl=curl(row, shown_secret),
        python=python(row, shown_secret),
    )
