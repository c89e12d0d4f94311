"""Webhook egress in a deployment: sandbox loopback policy, the service's own port, the in-process inbox,
and response excerpts kept only when the answer was HTTP. Everything stays on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import uuid

import pytest
from sqlalchemy import select

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.extensions import db
from console.web.webhooks.inbox import inbox_token
from console.web.webhooks.models import InboxMessage
from console.webhooks import delivery
from console.webhooks.delivery_loop import deliver_due
from tests.conftest import assert_error

BODY = {"status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"}


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def register(api, url):
    return api.post("/webhooks", json={**BODY, "url": url})


def send_test_event(app, api, hook_id) -> dict:
    """Record a sandbox test event for the webhook, deliver it, and return its only attempt."""
    response = api.post(f"/sandbox/webhooks/{hook_id}/test", json={"event": "account.added"})
    assert response.status_code == 200, response.get_json()
    event_id = response.get_json()["data"]["id"]
    with app.app_context():
        assert deliver_due(app) == 1
    return attempt_of(api, event_id)


def attempt_of(api, event_id) -> dict:
    (delivery_,) = api.get(f"/events/{event_id}").get_json()["data"]["deliveries"]
    (attempt,) = delivery_["attempts"]
    return attempt


def url_message(response) -> str:
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    (field,) = error["fields"]
    assert field["name"] == "url"
    return field["message"]


# Sandbox loopback: allowed on a developer's machine, refused on a shared server -----------------


def test_loopback_is_accepted_when_the_server_listens_on_loopback(app, api):
    assert app.config.get("LISTEN_HOST", "127.0.0.1") == "127.0.0.1"
    with Receiver(lambda r: (200, b"ok")) as rx:
        hook = register(api, rx.url).get_json()["data"]
        attempt = send_test_event(app, api, hook["id"])
    assert attempt["status_code"] == 200 and len(rx.requests) == 1


@pytest.mark.parametrize("listen_host", ["0.0.0.0", "::", "10.0.0.7"])
def test_a_shared_server_refuses_loopback_targets(app, api, listen_host):
    app.config["LISTEN_HOST"] = listen_host
    for url in ("http://127.0.0.1:6379/", "http://localhost:8080/hook", "http://[::1]:22/"):
        assert "does not take loopback webhooks" in url_message(register(api, url))


def test_the_operator_can_allow_loopback_on_a_shared_server(app, api):
    app.config.update(LISTEN_HOST="0.0.0.0", SANDBOX_ALLOW_LOOPBACK_WEBHOOKS=True)
    with Receiver(lambda r: (200, b"ok")) as rx:
        response = register(api, rx.url)
        assert response.status_code == 200, response.get_json()
        attempt = send_test_event(app, api, response.get_json()["data"]["id"])
    assert attempt["status_code"] == 200 and len(rx.requests) == 1


def test_a_webhook_registered_before_the_policy_changed_is_refused_at_delivery(app, api):
    with Receiver(lambda r: (200, b"secret internals")) as rx:
        hook = register(api, rx.url).get_json()["data"]
        app.config["LISTEN_HOST"] = "0.0.0.0"  # the server was restarted on every interface
        attempt = send_test_event(app, api, hook["id"])
    assert rx.requests == []
    assert attempt["status_code"] is None and attempt["response_excerpt"] is None
    assert attempt["error"].startswith("refused: URL host '127.0.0.1' is a loopback address")


# Behind a TLS proxy (the README's setup): the server listens on 127.0.0.1, people reach PUBLIC_URL ----

BEHIND_PROXY = {"PUBLIC_URL": "https://demo.example.com", "LISTEN_HOST": "127.0.0.1", "LISTEN_PORT": 5000}


@pytest.fixture
def behind_proxy(app, monkeypatch):
    for name, value in BEHIND_PROXY.items():
        monkeypatch.setitem(app.config, name, value)


def test_behind_a_tls_proxy_loopback_targets_are_refused(app, api, behind_proxy):
    with Receiver(lambda r: (200, b"internal")) as rx:
        for url in (rx.url, "http://localhost:6379/", "http://[::1]:8080/x"):
            message = url_message(register(api, url))
            assert (
                "does not take loopback webhooks" in message and "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS" in message
            )
    assert rx.requests == []


def test_behind_a_tls_proxy_an_older_loopback_webhook_is_refused_at_delivery(app, api, monkeypatch):
    with Receiver(lambda r: (200, b"internal status page")) as rx:
        hook = register(api, rx.url).get_json()["data"]  # registered while the server was a developer's
        for name, value in BEHIND_PROXY.items():
            monkeypatch.setitem(app.config, name, value)
        attempt = send_test_event(app, api, hook["id"])
    assert rx.requests == []
    assert attempt["status_code"] is None and attempt["response_excerpt"] is None
    assert attempt["error"].startswith("refused: URL host '127.0.0.1' is a loopback address, and this server")


def test_behind_a_tls_proxy_the_operator_can_allow_loopback_but_not_the_services_ports(
    app, api, monkeypatch, behind_proxy
):
    monkeypatch.setitem(app.config, "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS", True)
    with Receiver(lambda r: (200, b"ok")) as rx:
        response = register(api, rx.url)
        assert response.status_code == 200, response.get_json()
        attempt = send_test_event(app, api, response.get_json()["data"]["id"])
    assert attempt["status_code"] == 200 and len(rx.requests) == 1
    # Where the server listens, and PUBLIC_URL's port (the proxy on this machine, which forwards to it).
    for url in ("http://127.0.0.1:5000/sandbox/v1/webhooks", "http://127.0.0.1:443/", "https://localhost/"):
        assert "this service's own port" in url_message(register(api, url))
    message = url_message(register(api, "https://demo.example.com/sandbox/v1/webhooks"))
    assert "this service's own address (PUBLIC_URL)" in message


def test_a_loopback_public_url_allows_loopback_targets(app, api, monkeypatch):
    monkeypatch.setitem(app.config, "LISTEN_HOST", "0.0.0.0")
    monkeypatch.setitem(app.config, "PUBLIC_URL", "http://localhost:5000")
    with Receiver(lambda r: (200, b"ok")) as rx:
        response = register(api, rx.url)
        assert response.status_code == 200, response.get_json()
        attempt = send_test_event(app, api, response.get_json()["data"]["id"])
    assert attempt["status_code"] == 200 and len(rx.requests) == 1


# The service's own port ---------------------------------------------------------------------


def test_the_services_own_port_is_refused_even_when_loopback_is_allowed(app, api):
    app.config.update(LISTEN_PORT=8123, SANDBOX_ALLOW_LOOPBACK_WEBHOOKS=True)
    for url in ("http://127.0.0.1:8123/sandbox/v1/webhooks", "http://localhost:8123/", "http://[::1]:8123/x"):
        assert "own port (8123)" in url_message(register(api, url))
    assert register(api, "http://127.0.0.1:8124/").status_code == 200


def test_own_port_is_checked_again_at_delivery(app, api):
    with Receiver(lambda r: (200, b"ok")) as rx:
        hook = register(api, rx.url).get_json()["data"]
        app.config["LISTEN_PORT"] = int(rx.url.split(":")[2].split("/")[0])  # now it is the service's port
        attempt = send_test_event(app, api, hook["id"])
    assert rx.requests == [] and "own port" in attempt["error"]


# The built-in inbox: on the service's own root, delivered in-process ---------------------------


@pytest.fixture
def no_sockets(monkeypatch):
    """Any outgoing webhook connection fails the test: the inbox must be reached without one."""

    def refuse(*args, **kwargs):
        raise AssertionError("a socket was opened for an in-process delivery")

    monkeypatch.setattr(delivery.socket, "create_connection", refuse)


@pytest.mark.parametrize(
    "root",
    [
        "http://127.0.0.1:{port}",  # `make run` with PUBLIC_URL unset
        "http://localhost:{port}",
        "https://demo.example.com",  # PUBLIC_URL behind a TLS proxy (no DNS needed)
        "https://demo.example.com/console",  # ... mounted under a path by the proxy
    ],
)
@pytest.mark.committing
def test_the_inbox_is_delivered_in_process(app, api, workspace, no_sockets, root):
    port = free_port()  # nothing listens there: a socket delivery could only fail
    public = root.format(port=port) if "example" in root else None
    app.config.update(LISTEN_PORT=port, PUBLIC_URL=public)
    with app.app_context():
        url = f"{root.format(port=port)}/inbox/{inbox_token(uuid.UUID(workspace.id))}"
    response = register(api, url)
    assert response.status_code == 200, response.get_json()
    attempt = send_test_event(app, api, response.get_json()["data"]["id"])
    assert attempt["status_code"] == 200 and attempt["error"] is None
    assert '"received":true' in attempt["response_excerpt"]
    with app.app_context():
        (message,) = db.session.scalars(select(InboxMessage)).all()
        assert message.verified and message.event_type == "account.added"


def test_another_workspaces_inbox_is_not_exempt(app, api):
    app.config["LISTEN_PORT"] = 8123
    with app.app_context():
        someone_else = inbox_token(uuid.uuid4())
    assert "own port" in url_message(register(api, f"http://127.0.0.1:8123/inbox/{someone_else}"))
    assert "own port" in url_message(register(api, "http://127.0.0.1:8123/inbox/forged.token"))


def test_the_inbox_path_on_another_port_is_an_ordinary_url(app, api, workspace):
    """Only the service's own root is its inbox: elsewhere the path means nothing and goes out as usual."""
    with app.app_context():
        token = inbox_token(uuid.UUID(workspace.id))
    with Receiver(lambda r: (200, b"ok")) as rx:
        hook = register(api, f"{rx.url.rstrip('/').rsplit('/', 1)[0]}/inbox/{token}").get_json()["data"]
        attempt = send_test_event(app, api, hook["id"])
    assert attempt["status_code"] == 200 and len(rx.requests) == 1
    with app.app_context():
        assert db.session.scalars(select(InboxMessage)).all() == []


# Response excerpts only from HTTP answers -----------------------------------------------------


class RawServer:
    """A TCP port that is not HTTP: it reads the request and answers `answer` (or nothing), then closes."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            _read_request(conn)  # all of it: closing with bytes unread would send a reset, not a close
            if self.answer:
                conn.sendall(self.answer)

    def __enter__(self) -> RawServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()
        self.thread.join(timeout=5)


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"-ERR unknown command 'POST', with args beginning with: '/'\r\n" + b"k" * 2000, "not HTTP"),
        (b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", "not HTTP"),
        (b"x" * 70_000, "not HTTP"),  # one endless line
        (b"", "closed without an answer"),
    ],
)
def test_a_port_that_does_not_speak_http_shows_no_excerpt(app, api, answer, error):
    with RawServer(answer) as server:
        hook = register(api, server.url).get_json()["data"]
        attempt = send_test_event(app, api, hook["id"])
    assert attempt["status_code"] is None and attempt["response_excerpt"] is None
    assert error in attempt["error"] and "ERR" not in attempt["error"] and "SSH" not in attempt["error"]


def test_an_http_answer_keeps_its_first_kilobyte(app, api):
    with Receiver(lambda r: (404, b"n" * 5000)) as rx:
        hook = register(api, rx.url).get_json()["data"]
        attempt = send_test_event(app, api, hook["id"])
    assert attempt["status_code"] == 404 and attempt["response_excerpt"] == "n" * 1024


def test_a_delivery_keeps_the_excerpt_a_conformance_report_shows(app, api):
    """One cut for both: at most 1 KB of UTF-8, a character split by the cut left out (not replaced)."""
    with Receiver(lambda r: (500, ("a" + "é" * 600).encode())) as rx:
        hook = register(api, rx.url).get_json()["data"]
        attempt = send_test_event(app, api, hook["id"])
    assert attempt["status_code"] == 500 and attempt["response_excerpt"] == "a" + "é" * 511
