"""The console's client for the `/v1` API: requests with the workspace's key, each one logged.

The console is an honest client: what it shows is what the API answered. Its requests are handed to
this same WSGI app in-process: they go through the same authentication, version, rate limit and view
code as a customer's, but open no socket, take no serving thread, and so can neither be steered to
another host nor stall the server they run in. The URL logged (and shown in curl and Python
snippets) is the configured public root (`console.config.public_root`), never a visitor's `Host`.
"""

from __future__ import annotations

import io
import json
import sys
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes, urlencode, urlsplit

from flask import Flask, current_app

from console.api.conventions import CONSOLE_ENVIRON_KEY
from console.config import public_root
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from console.modes import URL_PREFIXES
from console.requestlog.capture import CONSOLE_ENVIRON, MAX_BODY_CHARS
from console.requestlog.models import RequestLogEntry
from console.versions import LATEST_VERSION
from console.web.requests import queries as requestlog
from console.web.shared.pageslots import slot_released

# An honest client backs off on 429; one short wait keeps a demo from failing on a burst of clicks.
MAX_RATE_LIMIT_WAIT = 2.0


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def _environ(method: str, root: str, path: str, query: str, headers: dict, body: bytes) -> dict:
    """The WSGI environ of one request to `root` + `path`, as a front server would build it."""
    parts = urlsplit(root)
    secure = parts.scheme == "https"
    environ = {
        "REQUEST_METHOD": method,
        # A root with a path (behind a proxy that strips it) is where the app is mounted.
        "SCRIPT_NAME": parts.path.rstrip("/"),
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query,
        "SERVER_NAME": parts.hostname or "127.0.0.1",
        "SERVER_PORT": str(parts.port or (443 if secure else 80)),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": parts.netloc,
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": parts.scheme or "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        # Marks the console's own calls (training exercises tell them from a customer's backend).
        CONSOLE_ENVIRON_KEY: True,
    }
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
    return environ


def dispatch(
    app: Flask,
    method: str,
    root: str,
    path: str,
    query: str,
    headers: dict,
    body: bytes,
    extra_environ: dict | None = None,
) -> Answer:
    """Run one API request through the app in-process and return its answer.

    A fresh application context gives the request its own `g` and its own database session, whose
    connection goes back to the pool when the context ends; without it Flask would reuse the
    console request's context, and the API would share (and commit) the console's session.
    """
    environ = _environ(method, root, path, query, headers, body)
    environ.update(extra_environ or {})
    started: list = []

    def start_response(status, response_headers, exc_info=None):
        started[:] = [status, response_headers]
        return lambda data: None

    with app.app_context():
        chunks = app(environ, start_response)
        try:
            content = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
    status, response_headers = started
    merged: dict[str, str] = {}
    for name, value in response_headers:
        merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return Answer(int(status.split(" ", 1)[0]), merged, content)


def api_root() -> str:
    """The server root shown in curl and Python snippets and used for the inbox URL."""
    return public_root(current_app.config)


def response_json(row: RequestLogEntry) -> Any:
    """The parsed response body of an exchange, or None when it is not JSON: as the API answered it when
    this request made the call (the log's copy is redacted), else as the log keeps it."""
    body = row.answer_body if row.answer_body is not None else row.response_body
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


class ApiClient:
    """Calls one mode's API with one key and records every exchange in the request log.

    The row is the one the API's request-log hook built (`console.requestlog.capture`), handed back
    through the environ and written here at once, with the console's `step`: the page that made the
    call shows it. A call the API refused before authentication (no active key) has no such row;
    the console logs it anyway, since it knows whose call it was.
    """

    def __init__(self, workspace_id, mode: str, key: ApiKey | None) -> None:
        self.workspace_id = workspace_id
        self.mode = mode
        self.key = key

    def path(self, path: str) -> str:
        return f"{URL_PREFIXES[self.mode]}/v1{path}"

    def call(
        self, method: str, path: str, *, body: Any = None, params: dict | None = None, step: str = ""
    ) -> RequestLogEntry:
        """Send one request, log it (committed), and return the exchange."""
        headers = {"Service-Version": LATEST_VERSION}
        key_id = None
        if self.key is not None:
            headers["x-api-secret"] = secret_of(self.key)
            key_id = self.key.id
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        # End our transaction, and so give our connection back to the pool, before the API runs: it
        # commits with its own session, and on SQLite a transaction held open here would block it or
        # hide its writes from us afterwards. Everything read from the key is read above, since the
        # commit expires it and reading it again would take a connection while the API waits for one.
        db.session.commit()
        request = (method, path, _query(params), headers, data, step, key_id)
        row = self._send(*request)
        if row.status == 429:
            wait = min(float(row.response_headers.get("Retry-After", "1") or 1), MAX_RATE_LIMIT_WAIT)
            with slot_released():
                time.sleep(wait)
            row = self._send(*request)
        return row

    def _send(
        self, method: str, path: str, query: str, headers: dict, data: str | None, step: str, key_id
    ) -> RequestLogEntry:
        root = api_root()
        started = time.perf_counter()
        handed_back: dict = {}
        answer = dispatch(
            current_app._get_current_object(),
            method,
            root,
            self.path(path),
            query,
            headers,
            data.encode() if data else b"",
            extra_environ={CONSOLE_ENVIRON: handed_back},
        )
        elapsed = (time.perf_counter() - started) * 1000
        url = root + self.path(path) + (f"?{query}" if query else "")
        logged = handed_back.get("row") or {}
        row = requestlog.record(
            created_at=logged.get("created_at"),
            clock_at=logged.get("clock_at"),
            workspace_id=self.workspace_id,
            mode=self.mode,
            step=step,
            api_key_id=key_id,
            method=method,
            url=url,
            path=self.path(path),
            request_headers=headers,
            request_body=data or "",
            status=answer.status,
            response_headers=answer.headers,
            response_body=answer.body.decode("utf-8", errors="replace")[:MAX_BODY_CHARS],
            duration_ms=logged.get("duration_ms", round(elapsed, 1)),
            error=None,
        )
        # Committed at once: the log keeps the exchange whatever follows, and the next call finds
        # no transaction of ours open.
        db.session.commit()
        row.answer_body = answer.body
        return row


def _query(params: dict | None) -> str:
    return urlencode({k: v for k, v in (params or {}).items() if v not in (None, "")})
