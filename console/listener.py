"""`console listen`: receive a workspace's sandbox deliveries on a laptop the server cannot reach.

The client half of the relay (console/webhooks/relay.py). It opens the key's relayed webhook,
polls the service with short requests (once a second when idle, at once while work keeps
coming), posts each delivery to the local endpoint exactly as received (the same headers, body
and signature a direct delivery carries) and reports the answer, which the service records as an
attempt. When the service is unreachable it retries with backoff; nothing is lost meanwhile:
deliveries wait on the server, and one handed out but never reported goes out again after its lease.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import requests

from console.keys.secrets import PREFIXES
from console.modes import SANDBOX
from console.versions import LATEST_VERSION

SERVICE_TIMEOUT = (5.0, 15.0)  # connect, read: every call to the service answers at once
IDLE_SECONDS = 1.0  # between polls that found nothing
MAX_BACKOFF_SECONDS = 30.0
EXCERPT_BYTES = 1024
REPORT_TRIES = 3


class Fatal(Exception):
    """A problem retrying cannot fix (a wrong key, a URL that is not the service); the message says which."""


class Unavailable(Exception):
    """The service did not answer usefully this time (down, restarting, overloaded); `retry_after` is the
    wait it asked for (429, 503), if it named one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def sandbox_base(api: str) -> str:
    """The sandbox API base from what the user gave: the server root, `.../sandbox` or `.../sandbox/v1`.
    Another mode's base URL (`…/development`, or the production `…/v1` the start-up banner lists too) is
    refused by name: taken as a root, it became `…/development/sandbox/v1`, which the service answered with a
    404 about a path the user never wrote."""
    base = api.rstrip("/")
    path = urlsplit(base).path
    other, root = None, base
    if path.endswith(("/development", "/development/v1")):
        other, root = "development", base[: base.rfind("/development")]
    elif path == "/v1":
        other, root = "production", base.removesuffix("/v1")
    if other:
        raise Fatal(
            f"{api} is the {other} API's base URL; console listen and console trigger use the sandbox: give "
            f"the server's root ({root}) or its sandbox base URL ({root}/sandbox), and a sandbox key."
        )
    if base.endswith("/v1"):
        return base
    if base.endswith("/sandbox"):
        return base + "/v1"
    return base + "/sandbox/v1"


class Service:
    """Calls to the service's sandbox API with the key; every call has a timeout."""

    def __init__(self, api: str, key: str, session: requests.Session | None = None) -> None:
        self.base = sandbox_base(api)
        other = next((m for m, prefix in PREFIXES.items() if m != SANDBOX and key.startswith(prefix)), None)
        if other:
            # The service's WRONG_MODE 401 says to call the key's own base URL, which these commands cannot.
            raise Fatal(
                f"--key is a {other} key ({PREFIXES[other]}…); console listen and console trigger use the "
                "sandbox: give a sandbox key (sk_sandbox_…; `console keys create --mode sandbox` makes one)."
            )
        self.session = session or requests.Session()
        self.session.headers.update({"x-api-secret": key, "Service-Version": LATEST_VERSION})

    def post(
        self, path: str, body: dict[str, Any] | None = None, *, idempotency_key: str | None = None
    ) -> requests.Response:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        try:
            # Never followed: requests sends session headers (the x-api-secret) on to any redirect's host; it
            # strips only Authorization.
            response = self.session.post(
                self.base + path,
                json=body or {},
                headers=headers,
                timeout=SERVICE_TIMEOUT,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise Unavailable(_network_problem(exc, self.base)) from None
        if response.is_redirect:
            raise Fatal(
                f"{self.base}{path} answered {response.status_code}, a redirect to "
                f"{response.headers.get('Location', '?')}: the key is not sent on to it; give --api as the "
                "service's own URL."
            )
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        if response.status_code == 429:
            raise Unavailable(f"rate limited; retry after {retry_after or 1:g} s", retry_after or 1.0)
        if response.status_code >= 500:
            # With the service's own words when it gave some ("busy", "cannot save changes"): the bare status
            # sent people to the server's log for what the answer already said.
            said = f": {error_message(response)}" if _is_json(response) else ""
            raise Unavailable(f"the service answered {response.status_code}{said}", retry_after)
        if not _is_json(response):
            raise Fatal(
                f"{self.base}{path} answered {response.status_code} without JSON: is --api the service's URL?"
            )
        if response.status_code == 401:
            raise Fatal(f"the service refused the key: {error_message(response)}")
        if response.status_code == 403:
            raise Fatal(error_message(response))
        return response


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header's wait in seconds; None when absent or not a number (an HTTP date)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _is_json(response: requests.Response) -> bool:
    return response.headers.get("Content-Type", "").startswith("application/json")


def error_message(response: requests.Response) -> str:
    try:
        error = response.json()["error"]
        return f"{error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"


def _network_problem(exc: requests.RequestException, base: str) -> str:
    if isinstance(exc, requests.Timeout):
        return f"no answer in time from {base}"
    if isinstance(exc, requests.ConnectionError):
        return f"cannot connect to {base}"
    return f"{type(exc).__name__} calling {base}"


def forward(
    session: requests.Session, url: str, item: dict[str, Any]
) -> tuple[int | None, int, str | None, str | None]:
    """Send one relayed request to the local endpoint: (status, latency ms, excerpt, error)."""
    timeout = float(item.get("timeout_seconds") or 15)
    started = time.perf_counter()
    try:
        response = session.request(
            item["method"],
            url,
            headers=item["headers"],
            data=item["body"].encode("utf-8"),
            timeout=timeout,
            allow_redirects=False,  # a direct delivery does not follow them either
            stream=True,
        )
        try:
            raw = response.raw.read(EXCERPT_BYTES, decode_content=True) or b""
        finally:
            response.close()
    except requests.Timeout:
        return None, _ms(started), None, f"timeout: no response within {timeout:g} s"
    except requests.ConnectionError:
        parts = urlsplit(url)
        return None, _ms(started), None, f"connection failed: could not connect to {parts.netloc}"
    except requests.RequestException as exc:
        return None, _ms(started), None, f"network error: {type(exc).__name__}"
    excerpt = raw.decode("utf-8", errors="replace") if raw else None
    return response.status_code, _ms(started), excerpt, None


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


class Listener:
    """The loop of `console listen`; `run(stop)` returns when `stop` is set (or on a Fatal problem)."""

    def __init__(
        self,
        service: Service,
        forward_to: str,
        *,
        events: list[str] | None = None,
        version: str | None = None,
        echo: Callable[[str], None] = print,
        idle: float = IDLE_SECONDS,
    ) -> None:
        self.service = service
        self.forward_to = forward_to
        self.events = events
        self.version = version
        self.echo = echo
        self.idle = idle
        self.webhook_id: str | None = None
        self.local = requests.Session()
        self.local.trust_env = False  # the endpoint is local: no proxy from the environment

    def open(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.events:
            body["enabled_events"] = self.events
        if self.version:
            body["version"] = self.version
        response = self.service.post("/sandbox/listen", body)
        if response.status_code != 200:
            raise Fatal(f"could not open a listener: {error_message(response)}")
        data = response.json()["data"]
        self.webhook_id = data["id"]
        return data

    def run(self, stop: threading.Event) -> None:
        backoff = 1.0
        down_since: float | None = None
        while not stop.is_set():
            try:
                if self.webhook_id is None:
                    self._announce(self.open())
                found = self.step(stop)
            except Unavailable as exc:
                if down_since is None:
                    down_since = time.monotonic()
                self.echo(f"{_now()}  service unavailable ({exc}); retrying in {backoff:g} s")
                stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                continue
            if down_since is not None:
                self.echo(f"{_now()}  reconnected")
                down_since = None
            backoff = 1.0
            if not found:
                stop.wait(self.idle)

    def _announce(self, data: dict[str, Any]) -> None:
        events = ", ".join(data["enabled_events"])
        self.echo(
            f"Ready: relaying sandbox webhook {data['id']} ({events}; version {data['version']}) "
            f"to {self.forward_to}. Ctrl-C stops."
        )
        if data["status"] != "active":
            self.echo(
                f"Note: this webhook is {data['status']}; reactivate it (PUT /v1/webhooks/{data['id']} "
                '{"status": "active"}) to receive events.'
            )

    def step(self, stop: threading.Event | None = None) -> int:
        """One poll: forward and report everything handed out; returns how many there were."""
        response = self.service.post(f"/sandbox/listen/{self.webhook_id}/poll", {})
        if response.status_code == 404:
            self.webhook_id = None  # deleted meanwhile: open a new listener
            return 0
        if response.status_code != 200:
            raise Fatal(f"polling failed: {error_message(response)}")
        items = response.json()["data"]["requests"]
        for item in items:
            self.handle(item)
        return len(items)

    def handle(self, item: dict[str, Any]) -> None:
        status, latency, excerpt, error = forward(self.local, self.forward_to, item)
        result: dict[str, Any] = {"latency_ms": latency}
        if status is not None:
            result["status_code"] = status
            if excerpt:
                result["response_excerpt"] = excerpt
        else:
            result["error"] = error
        recorded = self._report(item["attempt_id"], result)
        shown = str(status) if status is not None else error
        kind = item.get("event_type") or item["kind"]
        self.echo(f"{_now()}  {kind:<30} {item.get('event_id') or '-':<36}  {shown}  {latency} ms{recorded}")

    def _report(self, attempt_id: str, result: dict[str, Any]) -> str:
        path = f"/sandbox/listen/{self.webhook_id}/deliveries/{attempt_id}/result"
        for attempt in range(REPORT_TRIES):
            try:
                response = self.service.post(path, result)
            except Unavailable:
                time.sleep(2**attempt)
                continue
            if response.status_code == 200:
                data = response.json()["data"]
                retry = data.get("next_attempt_at")
                return f"  (retry at {retry})" if retry else ""
            return f"  (not recorded: {error_message(response)})"
        # Unreported: the lease runs out and the delivery is handed out again (at least once).
        return "  (not recorded: service unavailable; it will be delivered again)"


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S")
