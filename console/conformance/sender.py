"""Sending one conformance request: the one place conformance traffic leaves the service.

The same road as a real delivery: the URL policy before sending (`urls.check_delivery_url`), the
delivery transport (peer address checked on every connection, no proxies, no redirects), and the
workspace's own built-in inbox handed to the app in-process. Anything that must reach an endpoint
another way (a relay to a developer's laptop) is routed here, so every check goes through it.
"""

from __future__ import annotations

import http.client
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from console.modes import SANDBOX
from console.webhooks import relay, urls
from console.webhooks.delivery import AddressRefused, Transport, describe_error
from console.webhooks.excerpt import Excerpt, answer_excerpt

CONFORMANCE_HEADER = "x-service-conformance"

# Why a request got no HTTP answer (`Received.reason`): data for what reads a report (the check's advice, the
# training grid's word, a CI script), so none of them reads the error's words, which are for people.
TIMEOUT = "timeout"  # no answer within the check's deadline
REFUSED = "refused"  # the egress rules refused the URL or its address: nothing was sent
UNREACHABLE = "unreachable"  # no connection, the host does not resolve, TLS refused, closed or reset
NOT_HTTP = "not_http"  # something answered, not in HTTP
REASONS = (TIMEOUT, REFUSED, UNREACHABLE, NOT_HTTP)

# In-process inbox calls each take a database connection from the serving process's pool (and on
# SQLite the write lock); a run's dozen checks share a couple of slots rather than drain the pool.
_INBOX_SLOTS = threading.BoundedSemaphore(2)


@dataclass(frozen=True)
class Target:
    """The webhook a request goes to, as plain values: sending touches no database."""

    webhook_id: uuid.UUID
    workspace_id: uuid.UUID
    mode: str
    url: str


@dataclass(frozen=True)
class Request:
    """One request exactly as sent."""

    url: str
    headers: dict[str, str]
    body: bytes = field(repr=False)
    method: str = "POST"

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "url": self.url,
            "headers": {**self.headers, "Content-Length": str(len(self.body))},
            "body": self.body.decode("utf-8", errors="replace"),
        }


@dataclass(frozen=True)
class Received:
    """The endpoint's answer as `answer_excerpt` keeps it (status, allowlisted headers, at most 1 KB of the
    body, as deliveries keep it), or why there was none."""

    status: int | None
    latency_ms: int
    headers: dict[str, str] = field(default_factory=dict)
    excerpt: str | None = None
    error: str | None = None
    reason: str | None = None  # one of REASONS when status is None

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def refused(self) -> bool:
        return self.status is not None and 400 <= self.status < 500

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "latency_ms": self.latency_ms,
            "headers": self.headers,
            "body_excerpt": self.excerpt,
            "error": self.error,
            "reason": self.reason,
        }


def send(webhook: Target, request: Request, *, transport: Transport, timeout: float) -> Received:
    """Send `request` to `webhook` under the delivery egress rules; never raises for a network failure."""
    if webhook.mode == SANDBOX and urls.is_relay_url(webhook.url):
        return _through_listener(webhook, request, transport, timeout)
    started = time.perf_counter()
    try:
        if transport.is_own_inbox_url(request.url, webhook.mode, webhook.workspace_id):
            if not _INBOX_SLOTS.acquire(timeout=timeout):
                raise TimeoutError("the built-in inbox is busy")
            try:
                status, headers, raw = transport.exchange_with_own_inbox(
                    request.url, request.body, request.headers, timeout
                )
            finally:
                _INBOX_SLOTS.release()
        else:
            urls.check_delivery_url(request.url, webhook.mode, transport.policy)
            status, headers, raw = transport.exchange(
                request.url, request.body, request.headers, timeout, webhook.mode
            )
    except (OSError, http.client.HTTPException, AddressRefused, urls.UrlRefused) as exc:
        latency_ms = int((time.perf_counter() - started) * 1000)
        return Received(None, latency_ms, error=describe_error(exc, timeout), reason=reason_of(exc))
    latency_ms = int((time.perf_counter() - started) * 1000)
    return _received(answer_excerpt(status, headers, raw), latency_ms)


def reason_of(exc: BaseException) -> str:
    """The reason code of a request that raised `exc` (`describe_error` says it in words)."""
    if isinstance(exc, AddressRefused | urls.UrlRefused):
        return REFUSED
    if isinstance(exc, TimeoutError):
        return TIMEOUT
    if isinstance(exc, http.client.BadStatusLine | http.client.LineTooLong | http.client.UnknownProtocol):
        return NOT_HTTP
    return UNREACHABLE


def _received(
    excerpt: Excerpt, latency_ms: int, error: str | None = None, reason: str | None = None
) -> Received:
    return Received(excerpt.status, latency_ms, excerpt.headers, excerpt.body, error, reason)


def _through_listener(webhook: Target, request: Request, transport: Transport, timeout: float) -> Received:
    """A relayed webhook (`console listen`): the listener posts the request to the developer's endpoint."""
    with transport.app.app_context():
        answer = relay.round_trip(webhook.webhook_id, request.method, request.headers, request.body, timeout)
    return _received(
        answer_excerpt(answer.status_code, (), answer.body),
        answer.latency_ms or 0,
        answer.error,
        _relay_reason(answer),
    )


def _relay_reason(answer: relay.Answer) -> str | None:
    """No answer through a listener: it timed out, or the listener could not reach the endpoint (its own
    words only say how)."""
    if answer.status_code is not None:
        return None
    return TIMEOUT if answer.timed_out else UNREACHABLE
