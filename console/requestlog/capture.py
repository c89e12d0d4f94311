"""The API's after-request hook: one request-log row per authenticated `/v1` request, handed to the writer.

It runs on every API request, so it runs no SQL: it shapes and redacts the row (`prepared`) from what is
in memory and leaves the database to the writer thread. Shaping it here rather than in the writer a second
later was measured (`python -m bench.api`'s GET under wrk, 5 alternated rounds): serving CPU per GET 1.54
against 1.83 ms, 1,225 against 1,026 req/s, p99 37.5 against 47.0 ms; the POST even. The request's data is
still in the CPU's caches here, and the writer no longer runs a second's worth of Python as a third thread
beside the two requests a serving process runs, each switch of the GIL between them costing both. Requests
refused before authentication have no workspace, so no workspace's log shows them.

The console's own calls come through the same hook: `ApiClient` puts a dict under `CONSOLE_ENVIRON`
in the in-process request's environ (a key no HTTP client can set), the hook puts the row there
instead of queueing it, and the client writes it at once with its step label, since the console
shows the exchange in the page that made it. One row per call either way.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from flask import current_app, g, request
from sqlalchemy import inspect
from werkzeug.datastructures import EnvironHeaders
from werkzeug.exceptions import HTTPException

from console.config import public_root
from console.core.ids import uuid7
from console.core.timeutil import utcnow
from console.db.rows import session_instance
from console.requestlog.redact import mask_api_secrets, redact_body, redact_pairs

log = logging.getLogger(__name__)

CONSOLE_ENVIRON = "console.request_log"
SECRET_HEADER = "x-api-secret"
# Stored in place of the secret: the log must never hold a credential in clear.
SECRET_PLACEHOLDER = "<API_SECRET>"
# Request headers not stored: credentials, and what the transport added rather than the caller.
UNSTORED_HEADERS = frozenset({"cookie", "authorization", "host", "content-length", "connection"})
MAX_BODY_CHARS = 64_000


def stored_headers(headers) -> dict[str, str]:
    """Request headers as the log keeps them: the secret replaced, credentials and transport ones dropped, a
    secret in any other header masked."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lowered = name.lower()
        if lowered == SECRET_HEADER:
            kept[name] = SECRET_PLACEHOLDER
        elif lowered not in UNSTORED_HEADERS:
            kept[name] = mask_api_secrets(value)  # a secret sent under another name too (X-Api-Key)
    return kept


def text(data: bytes) -> str:
    # PostgreSQL text holds no NUL; a body the API refused for one is still logged, readably.
    return data[:MAX_BODY_CHARS].decode("utf-8", errors="replace").replace("\x00", "\ufffd")


def clean(value: str) -> str:
    return value.replace("\x00", "\ufffd")


def _request_body(req) -> bytes:
    if not req.content_length and "chunked" not in req.headers.get("Transfer-Encoding", ""):
        return b""
    try:
        return req.get_data(cache=True)
    except HTTPException:  # a body over MAX_CONTENT_LENGTH (answered 413): logged without it
        return b""


def collect(response):
    """Capture an authenticated API request for the log and usage (an app `after_request` hook).

    Registered before the hook that adds `x-service-request-id` and the rate-limit headers, so it
    runs after it (Flask runs after-request hooks in reverse) and logs every header the caller got.
    The writer gets the finished row (`prepared`), which holds plain values only (no werkzeug object
    stays alive until its flush); the console's own calls get the raw capture, for `ApiClient`.
    """
    values = g._get_current_object()
    key = getattr(values, "api_key", None)
    if key is None:  # public endpoint, console page, or refused before authentication
        return response
    req = request._get_current_object()
    started = getattr(values, "request_started", None)
    workspace = values.workspace  # the request's snapshot (console.api.conventions)
    offset = workspace.clock_offset_seconds
    instance = session_instance(workspace)
    if instance is not None:
        # A view took the workspace's ORM object (to move its clock, say), and its commit may have expired
        # it: the clock time is then left to the writer, which reads the new one.
        offset = inspect(instance).dict.get("clock_offset_seconds")
    created_at = utcnow()
    row: dict[str, Any] = {
        "workspace_id": workspace.id,
        "mode": values.api_mode,
        "api_key_id": key.id,
        # Read by `prepared` at once; the queued row keeps none of it (see above).
        "environ": req.environ,
        "request_body": _request_body(req),
        "status": response.status_code,
        "response_headers": response.headers.to_wsgi_list(),
        "response_body": b"" if response.is_streamed else response.get_data(),
        "request_id": getattr(values, "request_id", None),
        "duration_ms": round((time.perf_counter() - started) * 1000, 1) if started else 0.0,
        "created_at": created_at,
        # Unknown here when the view's commit expired the workspace: the writer reads it then.
        "clock_at": created_at + timedelta(seconds=offset) if offset is not None else None,
    }
    marker = req.environ.get(CONSOLE_ENVIRON)
    writer = current_app.extensions["requestlog_writer"]
    if marker is not None:
        # Without the environ: it holds the marker, and the cycle would keep the whole request alive until
        # a garbage collection (ApiClient reads only the times).
        del row["environ"]
        marker["row"] = row
        writer.submit(row, log_row=False)
    else:
        try:
            shaped = prepared(row, current_app.config)
        except Exception as exc:  # the log must never cost a caller its answer: counted as unlogged instead
            # The exception's type only: its message or traceback could quote a body or a header.
            log.warning("Request log: row of request %s not made (%s)", row["request_id"], type(exc).__name__)
            writer.submit(row, log_row=False, unlogged=True)
        else:
            writer.submit(shaped)
    return response


def prepared(raw: dict[str, Any], config) -> dict[str, Any]:
    """The `request_log_entries` row of a captured request: shaped, redacted, the secret header replaced."""
    environ = raw["environ"]
    query = redact_pairs(environ.get("QUERY_STRING", ""))  # `?token=...` is a credential too
    # As werkzeug's `Request.path` reads it (PATH_INFO is latin-1 text of the raw bytes), without
    # building a Request per row.
    path = clean("/" + environ.get("PATH_INFO", "").encode("latin-1").decode(errors="replace").lstrip("/"))
    path = mask_api_secrets(path)  # a secret pasted where an id goes (GET /v1/jobs/sk_…) is no id to keep
    return {
        "id": uuid7(),  # time-ordered: a chunk of rows fills the end of the id index (console.core.ids)
        "workspace_id": raw["workspace_id"],
        "mode": raw["mode"],
        "step": "",
        "api_key_id": raw["api_key_id"],
        "method": environ.get("REQUEST_METHOD", "GET").upper()[:8],
        "url": clean(public_root(config) + path + (f"?{query}" if query else ""))[:2000],
        "path": path[:1000],
        "request_headers": stored_headers(EnvironHeaders(environ)),
        "request_body": redact_body(text(raw["request_body"])),
        "status": raw["status"],
        "response_headers": dict(raw["response_headers"]),
        "response_body": redact_body(text(raw["response_body"])),
        "request_id": raw["request_id"],
        "duration_ms": raw["duration_ms"],
        "error": None,
        "created_at": raw["created_at"],
        "clock_at": raw["clock_at"],
    }
