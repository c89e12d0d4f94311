"""The console's client for the `/v1` API: real HTTP requests with the workspace's key, each one logged.

The console is an honest client: what it shows is what the API answered. In production the
requests go over the network to `PUBLIC_URL` (or the host the visitor used); under the Flask
test client a small `requests` adapter hands them to the same WSGI app in-process instead, so
tests need no server yet exercise the identical request path.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
from flask import Flask, current_app, has_request_context, request
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from werkzeug.test import Client

from console.api.versions import LATEST_VERSION
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from console.modes import base_url
from console.web import requestlog
from console.web.models import ConsoleRequest

TIMEOUT = 30
MAX_BODY_CHARS = 64_000
# An honest client backs off on 429; one short wait keeps a demo from failing on a burst of clicks.
MAX_RATE_LIMIT_WAIT = 2.0


class WSGIAdapter(BaseAdapter):
    """A `requests` transport that dispatches to a WSGI app in-process (werkzeug's test client)."""

    def __init__(self, app: Flask) -> None:
        super().__init__()
        self.app = app

    def send(self, prepared, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        parts = urlsplit(prepared.url)
        headers = {k: v for k, v in prepared.headers.items() if k.lower() != "content-length"}
        body = prepared.body.encode() if isinstance(prepared.body, str) else (prepared.body or b"")
        client = Client(self.app, use_cookies=False)
        answer = client.open(
            parts.path,
            base_url=f"{parts.scheme}://{parts.netloc}",
            query_string=parts.query,
            method=prepared.method,
            headers=headers,
            data=body,
        )
        response = requests.Response()
        response.status_code = answer.status_code
        response.reason = answer.status.partition(" ")[2]
        response.headers = CaseInsensitiveDict(answer.headers.items())
        response._content = answer.get_data()
        response.encoding = answer.mimetype_params.get("charset", "utf-8")
        response.url = prepared.url
        response.request = prepared
        answer.close()
        return response

    def close(self) -> None:
        """Nothing to release: no sockets are opened."""


def transport(app: Flask) -> requests.Session:
    """A requests session for the configured transport: `wsgi` (in-process) or `http`."""
    kind = app.config.get("CONSOLE_API_TRANSPORT") or ("wsgi" if app.testing else "http")
    session = requests.Session()
    # The API is this very server: proxies from the environment must not intercept it.
    session.trust_env = False
    if kind == "wsgi":
        adapter = WSGIAdapter(app)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
    return session


def api_root() -> str:
    """The server root the console calls (and shows in curl): PUBLIC_URL, else the visitor's host."""
    configured = current_app.config.get("PUBLIC_URL")
    if configured:
        return configured.rstrip("/")
    if has_request_context():
        return request.host_url.rstrip("/")
    return "http://127.0.0.1:5000"


def response_json(row: ConsoleRequest) -> Any:
    """The parsed response body of a logged exchange, or None when it is not JSON."""
    try:
        return json.loads(row.response_body) if row.response_body else None
    except ValueError:
        return None


class ApiClient:
    """Calls one mode's API with one key and records every exchange in the request log."""

    def __init__(self, workspace_id, mode: str, key: ApiKey | None, *, root: str | None = None) -> None:
        self.workspace_id = workspace_id
        self.mode = mode
        self.key = key
        self.root = root or api_root()

    def url(self, path: str, params: dict | None = None) -> str:
        query = {k: v for k, v in (params or {}).items() if v not in (None, "")}
        url = f"{base_url(self.root, self.mode)}/v1{path}"
        return f"{url}?{urlencode(query)}" if query else url

    def call(
        self, method: str, path: str, *, body: Any = None, params: dict | None = None, step: str = ""
    ) -> ConsoleRequest:
        """Send one request, log it (committed), and return the exchange (status None on network failure)."""
        # End our transaction first: the API commits on its own connection, and on SQLite a
        # transaction held open here would either block it or hide its writes from us afterwards.
        db.session.commit()
        url = self.url(path, params)
        headers = {"Service-Version": LATEST_VERSION}
        if self.key is not None:
            headers["x-api-secret"] = secret_of(self.key)
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        row = self._send(method, url, headers, data, step)
        if row.status == 429:
            wait = min(float(row.response_headers.get("Retry-After", "1") or 1), MAX_RATE_LIMIT_WAIT)
            time.sleep(wait)
            row = self._send(method, url, headers, data, step)
        return row

    def _send(self, method: str, url: str, headers: dict, data: str | None, step: str) -> ConsoleRequest:
        session = transport(current_app._get_current_object())
        started = time.perf_counter()
        try:
            response = session.request(method, url, headers=headers, data=data, timeout=TIMEOUT)
        except requests.RequestException as exc:
            response, error = None, f"{type(exc).__name__}: {exc}"[:500]
        else:
            error = None
        finally:
            session.close()
        elapsed = (time.perf_counter() - started) * 1000
        row = requestlog.record(
            workspace_id=self.workspace_id,
            mode=self.mode,
            step=step,
            api_key_id=self.key.id if self.key is not None else None,
            method=method,
            url=url,
            path=urlsplit(url).path,
            request_headers=headers,
            request_body=data or "",
            status=response.status_code if response is not None else None,
            response_headers=dict(response.headers) if response is not None else {},
            response_body=response.text[:MAX_BODY_CHARS] if response is not None else "",
            duration_ms=round(elapsed, 1),
            error=error,
        )
        # Committed at once: the log keeps the exchange whatever follows, and the next call finds
        # no transaction of ours open.
        db.session.commit()
        return row
