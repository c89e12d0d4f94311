"""The console's built-in inbox as a webhook target: its signed address, and delivery to it in-process.

The inbox lives on this very service, at `/inbox/<token>` where the token is the workspace id signed
with the app's secret key (it can be neither guessed nor forged). Delivering to it over a socket would
mean connecting to the service's own port on loopback, which the egress policy refuses for every
other URL (`urls.Policy`). So a sandbox webhook whose URL is its own workspace's inbox on one of the
service's own roots is handed to the app in-process, through WSGI: no socket is opened, so nothing
but the inbox view can be reached this way.
"""

from __future__ import annotations

import ipaddress
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from flask import Flask
from itsdangerous import BadSignature, URLSafeSerializer
from werkzeug.test import Client

from console.webhooks.urls import DEFAULT_LISTEN_HOST, DEFAULT_LISTEN_PORT

SALT = "console-inbox"
# The inbox view asks for its answer to be held (seconds, or "timeout": past the sender's timeout) with
# this response header. The wait happens here, in the delivering worker thread and bounded by its
# timeout, never in the view: a request from outside gets its answer at once and pins no serving thread.
DELAY_HEADER = "X-Console-Inbox-Delay"
HOLD_PAST_TIMEOUT = "timeout"
PATH = "/inbox/"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

Root = tuple[str, str, int, str]  # scheme, host, port, path prefix


def _serializer(secret_key: str) -> URLSafeSerializer:
    return URLSafeSerializer(secret_key, salt=SALT)


def token_for(secret_key: str, workspace_id: uuid.UUID) -> str:
    return _serializer(secret_key).dumps(str(workspace_id))


def workspace_of_token(secret_key: str, token: str) -> uuid.UUID | None:
    """The workspace an inbox token belongs to, or None for a forged or damaged one."""
    try:
        return uuid.UUID(_serializer(secret_key).loads(token))
    except (BadSignature, ValueError, TypeError):
        return None


def is_inbox_of(secret_key: str, workspace_id: uuid.UUID, url: Any) -> bool:
    """Whether `url` is the workspace's own inbox address (on any root: what the console registered)."""
    return isinstance(url, str) and url.rstrip("/").endswith(PATH + token_for(secret_key, workspace_id))


def _root(url: str) -> Root | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80), parts.path.rstrip("/")


def _is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


@dataclass(frozen=True)
class OwnInbox:
    """Recognises this service's inbox URLs: `/inbox/<token>` under `PUBLIC_URL` or on loopback at its port."""

    roots: frozenset[Root]
    secret_key: str = field(repr=False)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OwnInbox:
        port = int(config.get("LISTEN_PORT") or DEFAULT_LISTEN_PORT)
        listen_host = str(config.get("LISTEN_HOST") or DEFAULT_LISTEN_HOST).strip("[]").lower()
        hosts = {*LOOPBACK_NAMES, *([] if _is_unspecified(listen_host) else [listen_host])}
        roots = {("http", host, port, "") for host in hosts}
        public = _root(config.get("PUBLIC_URL") or "")
        if public is not None:
            roots.add(public)
        return cls(frozenset(roots), str(config["SECRET_KEY"]))

    def workspace_of(self, url: Any) -> uuid.UUID | None:
        """The workspace whose inbox `url` is, when it is an inbox on one of this service's roots."""
        if not isinstance(url, str):
            return None
        root = _root(url)  # None for a URL that does not parse ("https://[::1"): the URL policy says why
        if root is None:
            return None
        parts = urlsplit(url)
        if parts.query or parts.fragment or parts.username or parts.password:
            return None
        scheme, host, port, path = root
        for known_scheme, known_host, known_port, prefix in self.roots:
            if (scheme, host, port) != (known_scheme, known_host, known_port):
                continue
            if path.startswith(prefix + PATH) and "/" not in path[len(prefix + PATH) :]:
                return workspace_of_token(self.secret_key, path[len(prefix + PATH) :])
        return None

    def app_path(self, url: str) -> str:
        """The path of the inbox view inside the app (a `PUBLIC_URL` path prefix is the proxy's)."""
        path = urlsplit(url).path.rstrip("/")
        return path[path.rindex(PATH) :]


def _hold_for(answer_delay: str | None, timeout: float) -> float | None:
    """Seconds to hold the answer, or None for "longer than the sender waits"."""
    if not answer_delay:
        return 0.0
    if answer_delay == HOLD_PAST_TIMEOUT:
        return None
    try:
        seconds = float(answer_delay)
    except ValueError:
        return 0.0
    return seconds if 0 <= seconds < timeout else None


def exchange(
    app: Flask,
    url: str,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    limit: int,
    timeout: float,
) -> tuple[int, list[tuple[str, str]], bytes]:
    """POST to the app itself through WSGI; the status, the headers and at most `limit` bytes of the answer.

    An answer the inbox asks to hold (`DELAY_HEADER`) is held here; one held as long as the
    sender's `timeout` raises `TimeoutError`, exactly as a socket that never answered would.
    """
    parts = urlsplit(url)
    client = Client(app, use_cookies=False)
    answer = client.open(
        path,
        base_url=f"{parts.scheme}://{parts.netloc}",
        method="POST",
        headers=dict(headers),
        data=body,
        environ_overrides={"REMOTE_ADDR": "127.0.0.1"},
    )
    try:
        status, answer_headers, data = (
            answer.status_code,
            list(answer.headers.items()),
            answer.get_data()[:limit],
        )
        delay = answer.headers.get(DELAY_HEADER)
    finally:
        answer.close()  # the view's database session is gone before any wait
    hold = _hold_for(delay, timeout)
    if hold is None:
        time.sleep(timeout)
        raise TimeoutError("the inbox held its answer past the timeout")
    if hold:
        time.sleep(hold)
    return status, answer_headers, data
