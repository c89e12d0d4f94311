"""`console listen` and `console trigger` as subprocesses, against the app served on a real port.

The receiver is a local HTTP server on 127.0.0.1; the service never connects to it: `listen`
fetches each delivery from the service and forwards it, as on a trainee's laptop.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from werkzeug.serving import make_server

from console.api.ratelimit import RateLimiter
from console.webhooks import signing
from tests import waiting
from tests.children import run_python

pytestmark = pytest.mark.committing

ROOT = Path(__file__).resolve().parents[2]
VERSION = "2023-11-22"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check: Callable, seconds: float = 60):
    """tests.waiting.wait_for with this file's longer default: `console listen` processes start and reconnect."""
    return waiting.wait_for(check, seconds, interval=0.1)


class Server:
    """The app on 127.0.0.1:`port` in a thread (werkzeug, threaded), stoppable and restartable."""

    def __init__(self, app, port: int | None = None) -> None:
        self.app = app
        self.port = port or _free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        self.server = None

    def start(self) -> None:
        self.server = make_server("127.0.0.1", self.port, self.app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(timeout=5)
            self.server = None


class Receiver:
    """A local webhook endpoint: records each request; answers the statuses queued, then 200."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append({"headers": dict(self.headers), "body": body, "path": self.path})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                answer = b"ok" if status < 300 else b"broken"
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def event_ids(self) -> list[str]:
        return [json.loads(r["body"])["event_id"] for r in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Listen:
    """`console listen` in a subprocess; its output is collected line by line."""

    def __init__(self, api: str, secret: str, forward_to: str, *extra: str) -> None:
        command = [sys.executable, "-m", "console.cli", "listen", "--api", api, "--key", secret]
        self.process = subprocess.Popen(
            [*command, "--forward-to", forward_to, *extra],
            cwd=ROOT,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_line(self, text: str, seconds: float = 60) -> str:
        found = wait_for(lambda: next((line for line in self.lines if text in line), None), seconds)
        assert found, f"no line with {text!r} in:\n{self.output()}"
        return found

    def stop(self, sig=signal.SIGINT) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=5)
            self.reader.join(timeout=5)
            self.process.stdout.close()


@pytest.fixture
def served(app) -> Iterator[Server]:
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )
    server = Server(app)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def service(served, workspace):
    session = requests.Session()
    session.trust_env = False
    session.headers.update({"x-api-secret": workspace.secrets["sandbox"], "Service-Version": VERSION})
    base = served.root + "/sandbox/v1"

    def call(method: str, path: str, body: dict | None = None) -> requests.Response:
        return session.request(method, base + path, json=body, timeout=10)

    return call


@pytest.fixture
def listeners() -> Iterator[list[Listen]]:
    started: list[Listen] = []
    yield started
    for listen in started:
        listen.stop(signal.SIGKILL)


def start_listen(listeners, served, workspace, receiver, *extra) -> Listen:
    listen = Listen(served.root, workspace.secrets["sandbox"], receiver.url, *extra)
    listeners.append(listen)
    listen.wait_for_line("Ready: relaying sandbox webhook")
    return listen


def send_test_event(service, webhook_id: str) -> str:
    response = service("POST", f"/sandbox/webhooks/{webhook_id}/test", {"event": "account.added"})
    assert response.status_code == 200, response.text
    return response.json()["data"]["id"]


def listener_id(service) -> str:
    [hook] = [h for h in service("GET", "/webhooks").json()["data"] if h["relayed"]]
    return hook["id"]


def delivery_of(service, event_id: str) -> dict:
    return service("GET", f"/events/{event_id}").json()["data"]["deliveries"][0]


def test_listen_forwards_a_real_delivery_and_the_attempt_shows_as_delivered(
    served, workspace, receiver, service, listeners
):
    listen = start_listen(listeners, served, workspace, receiver)
    event_id = send_test_event(service, listener_id(service))
    assert wait_for(lambda: receiver.requests), listen.output()
    [received] = receiver.requests
    # Signed exactly as a direct delivery: the endpoint verifies it with the key's secret.
    payload = signing.verify(workspace.secrets["sandbox"], received["headers"], received["body"])
    assert payload["event_id"] == event_id and received["path"] == "/webhooks"
    assert received["headers"]["x-service-webhook-id"] == listener_id(service)
    delivered = wait_for(lambda: delivery_of(service, event_id)["status"] == "delivered")
    assert delivered, delivery_of(service, event_id)
    [attempt] = delivery_of(service, event_id)["attempts"]
    assert attempt["outcome"] == "delivered" and attempt["status_code"] == 200
    assert attempt["response_excerpt"] == "ok"
    line = listen.wait_for_line(event_id)
    assert "account.added" in line and " 200 " in line and " ms" in line
    assert listen.stop() == 0
    assert "Stopped." in listen.output()


def test_killing_and_restarting_listen_loses_nothing(served, workspace, receiver, service, listeners):
    first = start_listen(listeners, served, workspace, receiver)
    hook = listener_id(service)
    before = send_test_event(service, hook)
    assert wait_for(lambda: before in receiver.event_ids()), first.output()
    first.stop(signal.SIGKILL)  # no goodbye
    while_down = [send_test_event(service, hook) for _ in range(3)]
    time.sleep(1.5)
    assert receiver.event_ids() == [before]
    assert {delivery_of(service, e)["status"] for e in while_down} == {"pending"}  # waiting, not failed
    assert all(delivery_of(service, e)["attempt_count"] == 0 for e in while_down)
    second = start_listen(listeners, served, workspace, receiver)
    assert wait_for(lambda: set(while_down) <= set(receiver.event_ids())), second.output()
    assert wait_for(lambda: all(delivery_of(service, e)["status"] == "delivered" for e in while_down))
    assert listener_id(service) == hook  # the same relayed webhook, reused


def test_a_500_from_the_local_endpoint_is_a_failed_attempt_and_is_retried(
    served, workspace, receiver, service, listeners
):
    receiver.statuses = [500]
    listen = start_listen(listeners, served, workspace, receiver)
    event_id = send_test_event(service, listener_id(service))
    failed = wait_for(lambda: delivery_of(service, event_id)["attempt_count"] == 1)
    assert failed, listen.output()
    delivery = delivery_of(service, event_id)
    assert delivery["status"] == "pending" and delivery["last_status_code"] == 500
    assert delivery["attempts"][0]["outcome"] == "retry" and delivery["attempts"][0]["next_attempt_at"]
    assert " 500 " in listen.wait_for_line(event_id)
    # The retry is due after the usual backoff (20 s +/- 20%): move the workspace clock past it.
    assert service("POST", "/sandbox/clock/advance", {"seconds": 30}).status_code == 200
    assert wait_for(lambda: delivery_of(service, event_id)["status"] == "delivered"), listen.output()
    attempts = delivery_of(service, event_id)["attempts"]
    assert [(a["outcome"], a["status_code"]) for a in attempts] == [("retry", 500), ("delivered", 200)]
    assert receiver.event_ids() == [event_id, event_id]


def test_listen_reconnects_when_the_service_comes_back(app, workspace, receiver, listeners):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )
    server = Server(app)  # not started yet: the service is down
    listen = Listen(server.root, workspace.secrets["sandbox"], receiver.url)
    listeners.append(listen)
    try:
        listen.wait_for_line(
            f"service unavailable (cannot connect to {server.root}/sandbox/v1); retrying in 1 s"
        )
        server.start()
        listen.wait_for_line("Ready: relaying sandbox webhook")
    finally:
        server.stop()
    assert listen.process.poll() is None  # still trying, not crashed
    assert listen.stop() == 0


def test_listen_refuses_a_wrong_key(served, receiver):
    result = run_cli("listen", "--api", served.root, "--key", "sk_wrong", "--forward-to", receiver.url)
    assert result.returncode == 1 and "the service refused the key" in result.stderr


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_trigger_runs_a_scenario_and_listen_receives_its_events(
    served, workspace, receiver, service, listeners
):
    listen = start_listen(listeners, served, workspace, receiver, "--events", "direct_deposit_switch.added")
    result = run_cli(
        "trigger", "success", "--api", served.root, "--key", workspace.secrets["sandbox"], "--json"
    )
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["scenario"] == "user_good" and run["outcome"] == "success" and run["error"] is None
    job = service("GET", f"/jobs/{run['job_id']}").json()["data"]
    assert job["outcome"] == "success"
    assert wait_for(lambda: receiver.requests), listen.output()
    payload = json.loads(receiver.requests[0]["body"])
    assert payload["event"] == "direct_deposit_switch.added" and payload["payload"]["id"] == run["job_id"]


def test_trigger_names_scenarios_and_their_outcomes(served, workspace):
    key = workspace.secrets["sandbox"]
    pending = run_cli("trigger", "pending_then_error", "--api", served.root, "--key", key)
    assert pending.returncode == 0, pending.stderr
    assert "user_pending_error: Link token" in pending.stdout and "outcome pending" in pending.stdout
    federal = run_cli("trigger", "federal_sent", "--api", served.root + "/sandbox/v1", "--key", key)
    assert "outcome processing" in federal.stdout, federal.stderr
    wrong = run_cli("trigger", "wrong_password", "--api", served.root, "--key", key)
    assert wrong.returncode == 0 and "stopped with INVALID_CREDENTIALS" in wrong.stdout
    listed = run_cli("trigger", "--list")
    assert "user_mfa_sms" in listed.stdout and "(also: mfa)" in listed.stdout
    unknown = run_cli("trigger", "teleport", "--api", served.root, "--key", key)
    assert unknown.returncode == 2 and "unknown scenario 'teleport'" in unknown.stderr


def test_trigger_in_ci_waits_out_the_rate_limit_and_retries_with_one_idempotency_key(app, workspace):
    """Two CI steps on one key: the limit answers 429 with Retry-After, and trigger retries after it (the
    same Idempotency-Key, so nothing is made twice) instead of failing the build."""
    from sqlalchemy import func, select

    from console.extensions import db
    from console.link_tokens.models import LinkToken

    # One call per 3 s: the completion follows the token's creation well within that even on a busy machine
    # (with 1/s, a creation slower than a second let the completion through, and nothing was retried).
    limiter = RateLimiter("memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1 per 3 seconds"))
    verdicts = []
    real_hit = limiter.hit

    def recording_hit(mode, key_id):
        verdict = real_hit(mode, key_id)
        verdicts.append(verdict.allowed)
        return verdict

    limiter.hit = recording_hit
    app.extensions["ratelimiter"] = limiter
    server = Server(app)
    server.start()
    try:
        result = run_cli(
            "trigger", "success", "--api", server.root, "--key", workspace.secrets["sandbox"], "--json"
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert False in verdicts, verdicts  # a 429 was answered, and waited out
    run = json.loads(result.stdout)
    assert run["outcome"] == "success" and run["error"] is None
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(LinkToken)) == 1


def test_trigger_names_the_url_it_cannot_reach():
    root = f"http://127.0.0.1:{_free_port()}"
    result = run_cli("trigger", "success", "--api", root, "--key", "sk_sandbox_x")
    assert result.returncode == 1
    assert f"cannot connect to {root}/sandbox/v1" in result.stderr


def test_listen_stops_with_a_clear_message_when_api_is_not_the_service(served, receiver):
    # The service's own 404 names the endpoint meant (console/api/errors.py): the wrong part of --api shows.
    result = run_cli(
        "listen", "--api", served.root + "/nowhere", "--key", "sk_x", "--forward-to", receiver.url
    )
    assert result.returncode == 1
    assert "has /nowhere before the base URL: the endpoint is /sandbox/v1/sandbox/listen" in result.stderr
    # Something else answering at --api (here the receiver, "ok" in plain text) is named as not the service.
    elsewhere = receiver.url.removesuffix("/webhooks")
    result = run_cli("listen", "--api", elsewhere, "--key", "sk_x", "--forward-to", receiver.url)
    assert result.returncode == 1 and "without JSON: is --api the service's URL?" in result.stderr


def test_sandbox_base_accepts_the_root_or_a_base_url():
    from console.listener import sandbox_base

    assert sandbox_base("http://h:5000") == "http://h:5000/sandbox/v1"
    assert sandbox_base("http://h:5000/") == "http://h:5000/sandbox/v1"
    assert sandbox_base("http://h:5000/sandbox") == "http://h:5000/sandbox/v1"
    assert sandbox_base("http://h:5000/sandbox/v1/") == "http://h:5000/sandbox/v1"


@pytest.mark.parametrize(
    ("api", "mode", "root"),
    [
        ("http://h:5000/development", "development", "http://h:5000"),
        ("http://h:5000/development/v1/", "development", "http://h:5000"),
        ("http://h:5000/v1", "production", "http://h:5000"),
    ],
)
def test_another_modes_base_url_is_refused_by_name(api, mode, root):
    """`console trigger --api http://h:5000/development` became `…/development/sandbox/v1`, and the service's
    404 ("has /development before the base URL") named a path the user never wrote."""
    from console.listener import Fatal, sandbox_base

    with pytest.raises(Fatal) as refused:
        sandbox_base(api)
    assert str(refused.value) == (
        f"{api} is the {mode} API's base URL; console listen and console trigger use the sandbox: give the "
        f"server's root ({root}) or its sandbox base URL ({root}/sandbox), and a sandbox key."
    )


def test_trigger_and_listen_say_so_for_another_modes_base_url():
    """Before any call: nothing listens at h:1, so a call would have failed with a connection error instead."""
    for command in (("trigger", "success"), ("listen", "--forward-to", "http://127.0.0.1:1/hooks")):
        result = run_cli(*command, "--api", "http://127.0.0.1:1/development", "--key", "sk_dev_x")
        assert result.returncode == 1, result.stderr
        assert "is the development API's base URL; console listen and console trigger use the sandbox" in (
            result.stderr
        )


@pytest.mark.parametrize(("key", "mode"), [("sk_dev_abcd", "development"), ("sk_live_abcd", "production")])
def test_another_modes_key_is_refused_by_name_before_any_call(key, mode):
    """The service's WRONG_MODE said to send the key to its own base URL, which these commands cannot."""
    from console.listener import Fatal, Service

    with pytest.raises(Fatal) as refused:
        Service("http://127.0.0.1:1", key)
    message = str(refused.value)
    assert message.startswith(f"--key is a {mode} key (") and "give a sandbox key" in message
    assert key not in message  # the secret is never echoed
    result = run_cli("trigger", "success", "--api", "http://127.0.0.1:1", "--key", key)
    assert result.returncode == 1 and f"--key is a {mode} key" in result.stderr
    assert Service("http://127.0.0.1:1", "sk_sandbox_abcd").base == "http://127.0.0.1:1/sandbox/v1"


def test_stop_signals_set_the_event_outside_the_handler_even_inside_set():
    """A handler that set the event itself deadlocked when a second signal came while `set` held the event's
    lock (the worker did, under Ctrl-C plus the master's SIGTERM). In a child process: the handlers and the
    wakeup pipe would otherwise stay installed in this test process."""
    code = (
        "import os, signal, threading\n"
        "from console.core.stopsignals import stop_on_signals\n"
        "class SignalInsideSet(threading.Event):\n"
        "    def set(self):\n"
        "        with self._cond:\n"
        "            os.kill(os.getpid(), signal.SIGTERM)  # a second signal while the lock is held\n"
        "            for _ in range(10_000):\n"
        "                pass\n"
        "            self._flag = True\n"
        "            self._cond.notify_all()\n"
        "stop = stop_on_signals(SignalInsideSet())\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "print(stop.wait(60))\n"
        "for _ in range(100_000):\n"
        "    pass  # the main thread goes on running bytecodes (and handlers) meanwhile\n"
        "print('alive')\n"
    )
    result = run_python(code, timeout=120)
    assert result.stdout.split() == ["True", "alive"], result.stderr
