"""One delivery attempt: shape, sign, send, classify; then record attempts in batches and schedule retries.

Sending uses `http.client` with keep-alive connections per sender thread: it writes headers and
body in one send (half the CPU of `requests` per delivery, which is what bounds one worker's
throughput), never follows redirects or reads proxy settings, and checks the address of every new
connection against the URL policy (`urls.peer_refusal`) before a byte goes out. The console's
built-in inbox is the one target reached without a socket (`own_inbox`). A response excerpt is
kept only when the answer was HTTP (a port speaking another protocol is recorded as an error), and
only as `excerpt.answer_excerpt` cuts it, as conformance reports show it.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import random
import socket
import ssl
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import Flask
from sqlalchemy import bindparam, select, update

from console.clock.services import real_time_of
from console.core.timeutil import utcnow
from console.extensions import db
from console.modes import SANDBOX
from console.webhooks import own_inbox, shaping, urls
from console.webhooks.excerpt import EXCERPT_BYTES, answer_excerpt
from console.webhooks.models import (
    DELIVERED,
    DELIVERING,
    FAILED,
    PAUSED,
    PENDING,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from console.webhooks.signing import sign
from console.workspaces.models import Workspace

DEFAULT_TIMEOUT_SECONDS = 15.0
MAX_ATTEMPTS = 6  # the first and up to 5 further (spec, Events: Delivery)
RETRY_WINDOW = timedelta(minutes=15)
RETRY_BASE_SECONDS = 20.0  # 20, 40, 80, 160, 320 s (+/-20% jitter): the last lands by ~12.5 min
DRAIN_BYTES = 64 * 1024  # read this much past the excerpt to keep the connection reusable
USER_AGENT = "payroll-connectivity-webhooks/1"
CONNECTIONS_PER_THREAD = 4  # idle keep-alive sockets per sender thread (128 threads: at most 512)


class AddressRefused(Exception):
    """The connection reached an address the URL policy forbids (DNS changed since registration)."""


@dataclass
class Job:
    """A claimed delivery with everything needed to send it, so sending touches no database."""

    delivery_id: uuid.UUID
    claim_token: uuid.UUID | None  # set when the claim is taken
    event_id: uuid.UUID
    event_type: str
    payload: dict[str, Any]
    via_platform_matching: bool
    webhook_id: uuid.UUID
    workspace_id: uuid.UUID
    mode: str
    url: str
    version: str
    secret: str = field(repr=False)
    clock_offset: float
    attempt_count: int
    round_attempts: int
    first_attempt_at: datetime | None
    is_test: bool


@dataclass
class Result:
    job: Job
    at: datetime  # workspace clock, when the request went out
    sent_timestamp: int
    status_code: int | None
    latency_ms: int
    excerpt: str | None
    error: str | None
    warning: str | None
    version_warning: str | None
    retryable: bool

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


# Transport ----------------------------------------------------------------------------------


def _guarded_connect(mode: str, policy: urls.Policy):
    """`socket.create_connection`, with the name looked up under the DNS deadline (`urls.connect_addresses`),
    refusing a peer the URL policy forbids (before any TLS or HTTP byte)."""

    def create_connection(address, timeout=None, source_address=None):
        host, port = address[0], address[1]
        failure: OSError | None = None
        for ip in urls.connect_addresses(host, port, policy):  # as socket.create_connection: each in turn
            try:
                sock = socket.create_connection((ip, port), timeout, source_address)
                break
            except OSError as exc:
                failure = exc
        else:
            raise failure or OSError(f"no address to connect to for {host!r}")
        reason = urls.peer_refusal(sock, mode, policy)
        if reason:
            sock.close()
            raise AddressRefused(reason)
        return sock

    return create_connection


class Transport:
    """Keep-alive connections per sender thread and origin (http.client: one send per request).

    No proxies from the environment, no redirects, no retries beyond one replay of a request whose
    reused connection turned out to be closed by the server (a duplicate is fine: at least once).
    The app's settings decide the loopback policy; its own inbox is delivered to in-process.
    """

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.policy = urls.Policy.from_config(app.config)
        self.inbox = own_inbox.OwnInbox.from_config(app.config)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._tables: list[OrderedDict] = []  # each sender thread's connections, for close()
        self._tls_context: ssl.SSLContext | None = None

    def _tls(self) -> ssl.SSLContext:
        """The TLS settings of every https connection, made at the first: loading the system's CA
        certificates takes ~35 ms of CPU, and a sandbox that only delivers over http never needs them."""
        with self._lock:
            if self._tls_context is None:
                self._tls_context = ssl.create_default_context()
            return self._tls_context

    def _connection(self, scheme: str, host: str, port: int, mode: str, timeout: float, fresh: bool):
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = OrderedDict()
            with self._lock:
                self._tables.append(conns)
        key = (scheme, host, port, mode)
        conn = conns.pop(key, None)
        if conn is not None and conn.sock is not None and not fresh:
            conns[key] = conn  # most recently used last
            conn.sock.settimeout(timeout)
            return conn, True
        if conn is not None:
            conn.close()
        if scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=self._tls())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn._create_connection = _guarded_connect(mode, self.policy)
        conns[key] = conn
        while len(conns) > CONNECTIONS_PER_THREAD:  # bounded sockets however many origins there are
            conns.popitem(last=False)[1].close()
        return conn, False

    def exchange(
        self, url: str, body: bytes, headers: dict[str, str], timeout: float, mode: str
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """POST and return the status, the response headers and at most EXCERPT_BYTES + 1 bytes."""
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        for replay in (False, True):
            conn, reused = self._connection(scheme, host, port, mode, timeout, fresh=replay)
            try:
                conn.request("POST", target, body=body, headers=headers)
                response = conn.getresponse()
            except (BrokenPipeError, ConnectionResetError, http.client.BadStatusLine):
                conn.close()
                if reused and not replay:
                    continue  # the server had closed the idle keep-alive connection
                raise
            except BaseException:
                conn.close()
                raise
            try:
                raw = response.read(EXCERPT_BYTES + 1)
                if not response.isclosed():
                    response.read(DRAIN_BYTES)
                if not response.isclosed():
                    conn.close()  # a huge answer: drop the connection rather than read it all
            except BaseException:
                conn.close()
                raise
            return response.status, response.getheaders(), raw
        raise AssertionError("unreachable")

    def is_own_inbox(self, job: Job) -> bool:
        """Whether `job` goes to its own workspace's built-in inbox on this service (sandbox only)."""
        return self.is_own_inbox_url(job.url, job.mode, job.workspace_id)

    def is_own_inbox_url(self, url: str, mode: str, workspace_id: uuid.UUID) -> bool:
        """Whether `url` is the built-in inbox of `workspace_id` on this service (sandbox only)."""
        return mode == SANDBOX and self.inbox.workspace_of(url) == workspace_id

    def exchange_with_own_inbox(
        self, url: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """The inbox view, called through the app in-process: the same answer, no socket, same timeout."""
        path = self.inbox.app_path(url)
        return own_inbox.exchange(self.app, url, path, body, headers, EXCERPT_BYTES + 1, timeout)

    def abort(self) -> None:
        """Shut every socket down, waking threads still blocked reading them (a hard deadline), and close."""
        with self._lock:
            tables = list(self._tables)
        for conns in tables:
            for conn in list(conns.values()):
                if conn.sock is not None:
                    with contextlib.suppress(OSError):
                        conn.sock.shutdown(socket.SHUT_RDWR)
        self.close()

    def close(self) -> None:
        """Close every connection; call once the sending threads are done."""
        with self._lock:
            tables, self._tables = self._tables, []
        for conns in tables:
            for conn in conns.values():
                conn.close()
            conns.clear()


def describe_error(exc: BaseException, timeout: float) -> str:
    """A short, secret-free description; exception texts may quote the URL, which can hold tokens."""
    if isinstance(exc, AddressRefused):
        return f"refused: {exc}"
    if isinstance(exc, urls.UrlRefused):
        return f"refused: URL {exc}"
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return "TLS error: the certificate or handshake was refused"
    if isinstance(exc, TimeoutError):
        return f"timeout: no response within {timeout:g} s"
    if isinstance(exc, socket.gaierror):
        return "connection failed: the host does not resolve"
    if isinstance(exc, ConnectionRefusedError):
        return "connection failed: could not connect to the host"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "connection failed: the connection was closed without an answer"
    if isinstance(exc, http.client.BadStatusLine | http.client.LineTooLong | http.client.UnknownProtocol):
        return "not HTTP: the answer was not an HTTP response (nothing of it is kept)"
    if isinstance(exc, ConnectionError | http.client.HTTPException):
        return "connection failed: the connection was closed or reset"
    return f"network error: {type(exc).__name__}"


def signed_headers(
    secret: str, timestamp: int, body: bytes, webhook_id: uuid.UUID | str, version: str
) -> dict[str, str]:
    """The headers of a delivery of `body` sent at `timestamp` (Unix seconds), signed with `secret`."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "x-service-signature": sign(secret, timestamp, body),
        "x-service-webhook-id": str(webhook_id),
        "x-timestamp": str(timestamp),
        "service-version": version,
    }


@dataclass
class Signed:
    """One attempt's request, signed: the bytes signed are the bytes sent (directly or by a listener)."""

    body: bytes
    headers: dict[str, str]
    timestamp: int  # the x-timestamp header (real Unix seconds)
    at: datetime  # workspace clock, when the request goes out
    version_warning: str | None


def sign_request(job: Job, clock=time.time) -> Signed:
    """Shape, serialize and sign `job`'s event as the endpoint receives it."""
    shaped = shaping.shape(job.event_type, job.payload, job.version, job.via_platform_matching)
    body = shaping.body_bytes(job.event_type, str(job.event_id), shaped.payload)
    real = clock()
    timestamp = int(real)
    at = datetime.fromtimestamp(real, tz=UTC) + timedelta(seconds=job.clock_offset)
    headers = signed_headers(job.secret, timestamp, body, job.webhook_id, job.version)
    return Signed(body, headers, timestamp, at, shaped.warning)


def classify(
    job: Job, signed: Signed, status: int | None, excerpt: str | None, error: str | None, latency_ms: int
) -> Result:
    """The attempt's result from what the endpoint answered (`status`, `excerpt`) or the network `error`."""
    warning = None
    retryable = status is None  # a network error: try again
    if status is not None:
        retryable = status >= 500
        if 200 < status < 300:
            warning = f"answered {status}, not 200 OK: delivered, but only a 200 OK counts against pausing"
        elif 300 <= status < 400:
            error = f"answered {status}: redirects are not followed"
        elif status >= 400:
            error = f"answered {status}"
    return Result(
        job,
        signed.at,
        signed.timestamp,
        status,
        latency_ms,
        excerpt,
        error,
        warning,
        signed.version_warning,
        retryable,
    )


def send(job: Job, transport: Transport, timeout: float = DEFAULT_TIMEOUT_SECONDS, clock=time.time) -> Result:
    """Make one attempt over the network (or to the own inbox, in-process)."""
    signed = sign_request(job, clock)
    status = excerpt = error = None
    started = time.perf_counter()
    try:
        if transport.is_own_inbox(job):
            status, headers, raw = transport.exchange_with_own_inbox(
                job.url, signed.body, signed.headers, timeout
            )
        else:
            urls.check_delivery_url(job.url, job.mode, transport.policy)
            status, headers, raw = transport.exchange(job.url, signed.body, signed.headers, timeout, job.mode)
        excerpt = answer_excerpt(status, headers, raw).body  # attempts keep the status and the body
    except (OSError, http.client.HTTPException, AddressRefused, urls.UrlRefused) as exc:
        error = describe_error(exc, timeout)
    latency_ms = int((time.perf_counter() - started) * 1000)
    return classify(job, signed, status, excerpt, error, latency_ms)


# Retry policy -------------------------------------------------------------------------------


def next_attempt_at(
    first_attempt_at: datetime, at: datetime, round_attempts: int, timeout: float
) -> datetime | None:
    """When to try again after failed attempt number `round_attempts`, or None to give up."""
    if round_attempts >= MAX_ATTEMPTS:
        return None
    delay = RETRY_BASE_SECONDS * 2 ** (round_attempts - 1) * random.uniform(0.8, 1.2)
    due = at + timedelta(seconds=delay)
    # The whole attempt, timeout included, has to fit in the window.
    latest = first_attempt_at + RETRY_WINDOW - timedelta(seconds=timeout)
    due = min(due, latest)
    return due if due > at else None


# Recording ----------------------------------------------------------------------------------


@functools.cache
def _update_statement(status: str, keys: tuple[str, ...]):
    """The guarded update recording an outcome: only the claim that sent the attempt may move the row.

    Bind names differ from column names (`v_` prefix): SQLAlchemy reserves those for its own SET binds.
    """
    table = WebhookDelivery.__table__
    columns = {k[2:]: bindparam(k) for k in keys if k.startswith("v_")}
    return (
        update(table)
        .where(table.c.id == bindparam("b_id"), table.c.claim_token == bindparam("b_token"))
        .values(**columns, status=status, claim_token=None, claimed_until=None)
    )


def record(results: list[Result], timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Store every attempt and move each delivery on; the caller commits. Bulk statements, one batch."""
    if not results:
        return
    from console.webhooks import services

    # One query for both: the rows still there (a workspace may be deleted meanwhile) and their clocks.
    rows = db.session.execute(
        select(WebhookDelivery.id, Workspace)
        .join(Workspace, Workspace.id == WebhookDelivery.workspace_id)
        .where(WebhookDelivery.id.in_([r.job.delivery_id for r in results]))
    ).all()
    existing = {delivery_id for delivery_id, _ in rows}
    workspaces = {workspace.id: workspace for _, workspace in rows}
    results = [r for r in results if r.job.delivery_id in existing]
    if not results:
        return
    hooks = {
        h.id: h
        for h in db.session.scalars(
            select(Webhook).where(Webhook.id.in_({r.job.webhook_id for r in results}))
        )
    }
    attempts, delivered, retry, failed = [], [], [], []
    for r in results:
        job = r.job
        first = job.first_attempt_at or r.at
        number = job.attempt_count + 1
        # The delivery shows its latest attempt's warnings (events list), the attempt keeps its own.
        warning = "; ".join(w for w in (r.version_warning, r.warning) if w) or None
        base = {
            "b_id": job.delivery_id,
            "b_token": job.claim_token,
            "v_attempt_count": number,
            "v_round_attempts": job.round_attempts + 1,
            "v_first_attempt_at": first,
            "v_last_attempt_at": r.at,
            "v_last_status_code": r.status_code,
            "v_last_error": r.error,
            "v_warning": warning,
        }
        next_at = None
        if r.delivered:
            outcome = DELIVERED
            delivered.append({**base, "v_delivered_at": r.at})
        elif r.retryable and (next_at := next_attempt_at(first, r.at, job.round_attempts + 1, timeout)):
            outcome = "retry"
            run_after = real_time_of(workspaces[job.workspace_id], next_at)
            retry.append({**base, "v_due_at": next_at, "v_run_after": run_after})
        else:
            outcome = FAILED
            failed.append(base)
        attempts.append(
            {
                "id": uuid.uuid4(),
                "delivery_id": job.delivery_id,
                "webhook_id": job.webhook_id,
                "event_id": job.event_id,
                "number": number,
                "at": r.at,
                "sent_timestamp": r.sent_timestamp,
                "outcome": outcome,
                "status_code": r.status_code,
                "latency_ms": r.latency_ms,
                "response_excerpt": r.excerpt,
                "error": r.error,
                "warning": warning,
                "next_attempt_at": next_at,
            }
        )
    session = db.session
    session.connection().execute(WebhookAttempt.__table__.insert(), attempts)  # Core: no ORM bulk overhead
    for rows, status in ((delivered, DELIVERED), (retry, PENDING), (failed, FAILED)):
        if rows:
            session.connection().execute(_update_statement(status, tuple(rows[0])), rows)
    # Pause bookkeeping, in attempt order; sandbox test sends do not count.
    for r in sorted((r for r in results if not r.job.is_test), key=lambda r: r.at):
        hook = hooks.get(r.job.webhook_id)
        if hook is not None and hook.deleted_at is None:
            services.note_attempt(hook, workspaces[r.job.workspace_id], r.at, r.status_code)
    # Paused or deleted while the attempt was in flight: its retry must not go out. Nor a retry of an event type
    # the webhook stopped subscribing to meanwhile (only subscribed events are sent; `update_webhook` skipped
    # the pending ones, but this attempt was not pending then).
    retried = {row["b_id"] for row in retry}
    for hook in hooks.values():
        if hook.deleted_at is not None or hook.status == PAUSED:
            services.skip_pending(hook, "webhook deleted" if hook.deleted_at else "webhook paused")
        elif any(
            r.job.webhook_id == hook.id
            and r.job.delivery_id in retried
            and not r.job.is_test
            and r.job.event_type not in (hook.enabled_events or ())
            for r in results
        ):
            services.skip_pending(hook, services.UNSUBSCRIBED_REASON, unsubscribed_only=True)
    session.flush()


def claim_values(lease_seconds: float) -> dict[str, Any]:
    """Column values that mark rows as claimed by one worker until the lease runs out."""
    return {
        "status": DELIVERING,
        "claim_token": uuid.uuid4(),
        "claimed_until": utcnow() + timedelta(seconds=lease_seconds),
    }
