"""POST/GET /v1/sandbox/webhooks/{id}/conformance: a conforming receiver passes, each broken one fails its check."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid

import pytest
from sqlalchemy import func, select

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.conformance import runs
from console.events.models import Event
from console.extensions import db
from console.webhooks import WebhookVerificationError, urls, verify
from console.webhooks.models import WebhookDelivery
from tests.conftest import Api, assert_error

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]

ALL_EVENTS = ["account.added", "direct_deposit_switch.added", "employment.added", "income.added"]
SENDING_CHECKS = ["signed_event", "forged_signature", "altered_body", "stale_timestamp", "duplicate_event"]


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


class Endpoint:
    """A receiver's logic: verify (or not), deduplicate (or not); thread-safe, as requests arrive at once."""

    def __init__(self, secret: str, *, check_signature=True, tolerance=300, fail_duplicates=False, delay=0.0):
        self.secret = secret
        self.check_signature = check_signature
        self.tolerance = tolerance
        self.fail_duplicates = fail_duplicates
        self.delay = delay
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, record: dict):
        time.sleep(self.delay)
        headers, body = record["headers"], record["body"]
        try:
            if self.check_signature:
                document = verify(self.secret, headers, body, tolerance=self.tolerance)
            else:
                stamp = int(headers["x-timestamp"])
                if abs(time.time() - stamp) > self.tolerance:
                    return 400, b"stale"
                document = json.loads(body)
        except WebhookVerificationError as exc:
            return 400, str(exc).encode()
        with self.lock:
            duplicate = document["event_id"] in self.seen
            self.seen.add(document["event_id"])
        if duplicate and self.fail_duplicates:
            return 500, b"duplicate key value violates unique constraint"
        return 200, json.dumps({"ok": True}).encode(), {"Content-Type": "application/json"}


def create_webhook(api, url, events=None, version="2023-11-22"):
    body = {"url": url, "status": "active", "enabled_events": events or ALL_EVENTS, "version": version}
    response = api.post("/webhooks", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def start_run(api, hook_id):
    """POST .../conformance: 202 and the queued run, at once."""
    response = api.post(f"/sandbox/webhooks/{hook_id}/conformance")
    assert response.status_code == 202, response.get_json()
    run = response.get_json()["data"]
    assert run["status"] == "queued" and run["report"] is None
    return run


def run_check(api, hook_id):
    """Start a run, let the worker execute it (runs.run_due, as the worker's RunLoop), return its report."""
    run = start_run(api, hook_id)
    assert runs.run_due(api.client.application) == 1
    done = api.get(f"/sandbox/webhooks/{hook_id}/conformance/{run['id']}").get_json()["data"]
    assert done["status"] == "done" and done["passed"] == done["report"]["passed"]
    return done["report"]


def failed(report) -> set[str]:
    return {c["name"] for c in report["checks"] if not c["passed"]}


def by_name(report) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def row_counts(app):
    with app.app_context():
        return (
            db.session.scalar(select(func.count()).select_from(Event)),
            db.session.scalar(select(func.count()).select_from(WebhookDelivery)),
        )


def test_a_conforming_receiver_passes_every_check(app, api, workspace):
    secret = workspace.secrets["sandbox"]
    with Receiver(Endpoint(secret)) as rx:
        hook = create_webhook(api, rx.url)
        report = run_check(api, hook["id"])
    assert report["passed"] is True and failed(report) == set()
    names = [c["name"] for c in report["checks"]]
    assert names == [
        *SENDING_CHECKS,
        "event:account.added",
        "event:direct_deposit_switch.added",
        "event:direct_deposit_switch.added:without_action",
        "event:employment.added",
        "event:income.added",
        "unsubscribed_event_not_sent",
    ]
    for check in report["checks"]:
        assert set(check) == {"name", "title", "passed", "detail", "warning", "sent", "received", "exchanges"}
        assert check["warning"] is None, check
    # Every request: the webhook's URL, marked as conformance traffic, signed; the secret itself never shown.
    assert len(rx.requests) == 11  # 5 + one extra for the duplicate + 5 event shapes
    assert all(r["headers"]["x-service-conformance"] == "true" for r in rx.requests)
    assert secret not in json.dumps(report)
    checks = by_name(report)
    sent = checks["signed_event"]["sent"]
    assert sent["method"] == "POST" and sent["url"] == rx.url
    assert sent["headers"]["x-service-signature"].startswith("v2=")
    assert sent["headers"]["x-service-conformance"] == "true"
    assert sent["headers"]["service-version"] == "2023-11-22"
    assert sent["headers"]["x-service-webhook-id"] == hook["id"]
    assert verify(secret, sent["headers"], sent["body"])["event"] == "account.added"
    received = checks["signed_event"]["received"]
    assert (
        received["status"] == 200 and received["body_excerpt"] == '{"ok": true}' and received["error"] is None
    )
    assert received["headers"]["Content-Type"] == "application/json" and received["latency_ms"] >= 0
    # The duplicate: two exchanges with one event_id, each freshly signed.
    first, second = checks["duplicate_event"]["exchanges"]
    assert json.loads(first["sent"]["body"])["event_id"] == json.loads(second["sent"]["body"])["event_id"]
    assert checks["duplicate_event"]["sent"] == second["sent"]
    # The stale one is correctly signed for its own (old) timestamp.
    stale = checks["stale_timestamp"]["sent"]
    assert time.time() - int(stale["headers"]["x-timestamp"]) >= 300
    verify(secret, stale["headers"], stale["body"], tolerance=3600)
    # The altered one carries a signature that does not match its body.
    altered = checks["altered_body"]["sent"]
    assert json.loads(altered["body"])["payload"]["end_user_id"] == "someone-else"
    with pytest.raises(WebhookVerificationError):
        verify(secret, altered["headers"], altered["body"])
    # Both switch shapes, built by the delivery shaping code: no action means no allocation type/value either.
    partner = json.loads(checks["event:direct_deposit_switch.added:without_action"]["sent"]["body"])[
        "payload"
    ]
    assert "action" not in partner["params"] and set(partner["params"]["allocation"]) == {"target"}
    full = json.loads(checks["event:direct_deposit_switch.added"]["sent"]["body"])["payload"]
    assert full["params"]["action"] == "partial_switch"
    unsubscribed = checks["unsubscribed_event_not_sent"]
    assert (
        unsubscribed["sent"] is None
        and unsubscribed["exchanges"] == []
        and "every event type" in unsubscribed["detail"]
    )


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        ({"check_signature": False}, {"forged_signature", "altered_body"}),
        ({"tolerance": 10**9}, {"stale_timestamp"}),
        ({"fail_duplicates": True}, {"duplicate_event"}),
    ],
    ids=["accepts-any-signature", "accepts-stale-timestamps", "500-on-duplicate"],
)
def test_each_broken_receiver_fails_exactly_its_check(app, api, workspace, broken, expected):
    with Receiver(Endpoint(workspace.secrets["sandbox"], **broken)) as rx:
        hook = create_webhook(api, rx.url)
        report = run_check(api, hook["id"])
    assert report["passed"] is False
    assert failed(report) == expected
    for name in expected:
        check = by_name(report)[name]
        assert check["detail"] and check["received"]["status"] is not None
    if "duplicate_event" in expected:
        check = by_name(report)["duplicate_event"]
        assert [e["received"]["status"] for e in check["exchanges"]] == [200, 500]
        assert "at least once" in check["detail"]
    if "stale_timestamp" in expected:
        assert "replay" in by_name(report)["stale_timestamp"]["detail"]


def test_conformance_traffic_creates_no_event_or_delivery(app, api, workspace):
    with Receiver(Endpoint(workspace.secrets["sandbox"])) as rx:
        hook = create_webhook(api, rx.url)
        before = row_counts(app)
        run_check(api, hook["id"])
    assert row_counts(app) == before == (0, 0)
    assert api.get("/events").get_json()["data"] == []


def test_only_subscribed_types_are_sent_in_the_webhooks_version(app, api, workspace):
    with Receiver(Endpoint(workspace.secrets["sandbox"])) as rx:
        hook = create_webhook(api, rx.url, events=["direct_deposit_switch.added"], version="2023-04-18")
        report = run_check(api, hook["id"])
    assert {json.loads(r["body"])["event"] for r in rx.requests} == {"direct_deposit_switch.added"}
    assert {r["headers"]["service-version"] for r in rx.requests} == {"2023-04-18"}
    checks = by_name(report)
    assert report["passed"] is True
    # The partner shape reaches an old-version webhook too, flagged as real deliveries flag it.
    assert (
        "Not valid for version 2023-04-18"
        in checks["event:direct_deposit_switch.added:without_action"]["warning"]
    )
    assert checks["event:direct_deposit_switch.added"]["warning"] is None
    detail = checks["unsubscribed_event_not_sent"]["detail"]
    assert "account.added, employment.added, income.added events are never sent" in detail


def test_a_slow_endpoint_passes_with_a_warning(app, api, workspace):
    with Receiver(Endpoint(workspace.secrets["sandbox"], delay=1.1)) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        started = time.monotonic()
        report = run_check(api, hook["id"])
        elapsed = time.monotonic() - started
    signed_event = by_name(report)["signed_event"]
    assert signed_event["passed"] and "above 1 s" in signed_event["warning"]
    # Concurrent: one after another, the requests could not take less than a delay each (7 here).
    assert elapsed < len(rx.requests) * 1.1, (elapsed, len(rx.requests))


def test_the_run_is_bounded_by_the_timeout(app, api, workspace):
    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 1.0

    def hang(record):
        rx.released.wait(60)  # answers once released, after the run
        return 200, b"late"

    with Receiver(hang) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        started = time.monotonic()
        report = run_check(api, hook["id"])
        elapsed = time.monotonic() - started
    # The run's deadline (1 s, plus 1 s of grace) ended it, not the endpoint's answer (60 s).
    assert elapsed < 30
    assert failed(report) == {*SENDING_CHECKS, "event:account.added"}
    assert "timeout" in by_name(report)["signed_event"]["received"]["error"]
    assert by_name(report)["signed_event"]["received"]["reason"] == "timeout"  # as data, for CI and the grid


def test_egress_policy_applies(app, api, workspace, monkeypatch):
    hook = create_webhook(api, "http://127.0.0.1:9/hook", events=["account.added"])
    monkeypatch.setitem(app.config, "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS", False)
    monkeypatch.setitem(app.config, "LISTEN_HOST", "0.0.0.0")
    report = run_check(api, hook["id"])
    received = by_name(report)["signed_event"]["received"]
    assert received["error"].startswith("refused: URL") and "loopback" in received["error"]
    assert received["reason"] == "refused"


def test_an_endpoint_nobody_listens_on_is_unreachable_by_reason_code(app, api, workspace):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hook = create_webhook(api, f"http://127.0.0.1:{port}/hook", events=["account.added"])
    received = by_name(run_check(api, hook["id"]))["signed_event"]["received"]
    assert (received["status"], received["reason"]) == (None, "unreachable")
    assert received["error"].startswith("connection failed")


def test_behind_a_tls_proxy_a_loopback_service_is_not_read(app, api, workspace, monkeypatch):
    """The README's TLS setup: https PUBLIC_URL, the server on 127.0.0.1. Another service on this machine
    (a webhook registered before, when the server was a developer's) gets no request, and the report
    shows nothing of it: no status, no headers, no body."""
    internal = (200, b"internal admin page", {"Server": "internal/1.0", "Content-Type": "text/html"})
    with Receiver(lambda r: internal) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        monkeypatch.setitem(app.config, "PUBLIC_URL", "https://demo.example.com")
        assert app.config["LISTEN_HOST"] == "127.0.0.1"
        report = run_check(api, hook["id"])
    assert rx.requests == []
    received = [e["received"] for c in report["checks"] for e in c["exchanges"]]
    assert received and all(r["status"] is None and r["headers"] == {} for r in received)
    assert all(r["body_excerpt"] is None for r in received)
    assert all(
        r["error"].startswith(
            "refused: URL host '127.0.0.1' is a loopback address, and this server does not take"
        )
        for r in received
    )


def test_the_report_keeps_only_an_excerpt_of_the_answer(app, api, workspace):
    """The status, the allowlisted headers and at most 1 KB of the body, cut as deliveries cut it."""
    body = ("a" + "é" * 600).encode()  # 1201 bytes: 1 KB ends inside an "é", which is left out
    answer_headers = {
        "Content-Type": "text/plain; charset=utf-8",
        "Retry-After": "120",
        "X-Request-Id": "req-42",
        "Set-Cookie": "session=internal-secret",
        "X-Internal-Token": "t0ps3cret",
        "Location": "http://10.0.0.5/admin",
    }
    with Receiver(lambda r: (200, body, answer_headers)) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        report = run_check(api, hook["id"])
    received = [e["received"] for c in report["checks"] for e in c["exchanges"]]
    assert received
    for answer in received:
        assert answer["status"] == 200
        assert answer["headers"] == {
            "Content-Type": "text/plain; charset=utf-8",
            "Retry-After": "120",
            "X-Request-Id": "req-42",
            "Content-Length": "1201",
        }  # not Server, Date, Set-Cookie, X-Internal-Token or Location
        assert answer["body_excerpt"] == "a" + "é" * 511
        assert len(answer["body_excerpt"].encode()) <= 1024


def test_latest_report_is_kept_and_replaced(app, api, workspace):
    endpoint = Endpoint(workspace.secrets["sandbox"], fail_duplicates=True)
    with Receiver(endpoint) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        path = f"/sandbox/webhooks/{hook['id']}/conformance"
        assert_error(api.get(path), 404, "RECORD_NOT_FOUND")
        first = run_check(api, hook["id"])
        assert api.get(path).get_json()["data"]["report"] == first
        endpoint.fail_duplicates = False  # the developer fixes the receiver and runs it again
        second = run_check(api, hook["id"])
    assert first["passed"] is False and second["passed"] is True
    latest = api.get(path).get_json()["data"]
    assert latest["status"] == "done" and latest["report"] == second


def test_a_run_is_queued_then_done_and_each_run_stays_readable(app, api, workspace):
    with Receiver(Endpoint(workspace.secrets["sandbox"])) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        path = f"/sandbox/webhooks/{hook['id']}/conformance"
        first = start_run(api, hook["id"])
        assert set(first) == {
            "id",
            "webhook_id",
            "status",
            "created_at",
            "started_at",
            "finished_at",
            "passed",
            "report",
        }
        assert first["webhook_id"] == hook["id"] and first["started_at"] is None and first["passed"] is None
        assert api.get(path).get_json()["data"] == first  # the latest run, still queued
        assert api.get(f"{path}/{first['id']}").get_json()["data"] == first
        assert not rx.requests  # nothing is sent until the worker takes it
        runs.run_due(app)
        second_report = run_check(api, hook["id"])
        done = api.get(f"{path}/{first['id']}").get_json()["data"]
    assert done["status"] == "done" and done["started_at"] and done["finished_at"]
    assert done["report"]["passed"] is True and done["report"] != second_report  # each run keeps its own
    assert api.get(path).get_json()["data"]["report"] == second_report


def test_one_run_per_webhook_and_a_few_per_workspace_in_the_error_shape(app, api, workspace):
    app.config.update(WEBHOOK_TIMEOUT_SECONDS=3, CONFORMANCE_RUNS_PER_WORKSPACE=2)
    hooks = [create_webhook(api, f"http://127.0.0.1:9/hook{i}", events=["account.added"]) for i in range(3)]
    start_run(api, hooks[0]["id"])
    again = api.post(f"/sandbox/webhooks/{hooks[0]['id']}/conformance")
    assert_error(again, 409, "INVALID_REQUEST_PARAMETERS", "CONFLICT")
    assert again.headers["Retry-After"] == "5"  # the 3 s timeout, the 1 s grace, one more
    start_run(api, hooks[1]["id"])
    third = api.post(f"/sandbox/webhooks/{hooks[2]['id']}/conformance")
    assert_error(third, 429, "RATE_LIMIT_EXCEEDED", "RATE_LIMIT_EXCEEDED")
    assert (
        third.headers["Retry-After"] == "5" and "2 conformance runs" in third.get_json()["error"]["message"]
    )
    assert runs.run_due(app) == 2  # once they are done, the third webhook may run
    start_run(api, hooks[2]["id"])


def test_a_retry_told_to_wait_runs_once_waited_with_the_same_idempotency_key(app, api, workspace):
    """A 409 or 429 with Retry-After is not kept for the key: the retry it asks for, sent with the same key,
    runs (it was replayed as the same 409 for 24 hours, its Retry-After gone)."""
    app.config.update(WEBHOOK_TIMEOUT_SECONDS=3, CONFORMANCE_RUNS_PER_WORKSPACE=1)
    hooks = [create_webhook(api, f"http://127.0.0.1:9/hook{i}", events=["account.added"]) for i in range(2)]
    start_run(api, hooks[0]["id"])
    for hook, status in ((hooks[0], 409), (hooks[1], 429)):
        key = {"Idempotency-Key": str(uuid.uuid4())}
        path = f"/sandbox/webhooks/{hook['id']}/conformance"
        refused = api.post(path, headers=key)
        assert refused.status_code == status and refused.headers["Retry-After"]
        again = api.post(path, headers=key)  # still busy: the same answer, run again, not replayed
        assert again.status_code == status and "Idempotent-Replayed" not in again.headers
        assert runs.run_due(app) == 1  # the run in the way finishes
        started = api.post(path, headers=key)
        assert started.status_code == 202, started.get_json()
        assert "Idempotent-Replayed" not in started.headers
        replayed = api.post(path, headers=key)  # a 202 is kept as before
        assert replayed.status_code == 202 and replayed.headers["Idempotent-Replayed"] == "true"
        assert replayed.get_json() == started.get_json()


def test_a_serving_thread_is_never_held_by_a_conformance_run(app, api, workspace, monkeypatch):
    """The endpoint accepts and never answers: the POST still answers, before anything reaches it, and every
    request of the run is sent from a worker thread, never from the thread that served the POST."""
    import select as select_module
    import socket

    from console.conformance import sender

    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 1.0
    senders: list[threading.Thread] = []
    real_send = sender.send

    def recording_send(*args, **kwargs):
        senders.append(threading.current_thread())
        return real_send(*args, **kwargs)

    monkeypatch.setattr(sender, "send", recording_send)
    server = socket.create_server(("127.0.0.1", 0), backlog=64)  # never accepts: connections wait unanswered
    try:
        hook = create_webhook(
            api, f"http://127.0.0.1:{server.getsockname()[1]}/hook", events=["account.added"]
        )
        run = start_run(api, hook["id"])  # status queued, no report
        # Nothing has connected to the endpoint and nothing was sent while the POST was served.
        assert select_module.select([server], [], [], 0)[0] == [] and senders == []
        with app.app_context():
            from console.conformance.models import ConformanceRun

            assert db.session.get(ConformanceRun, uuid.UUID(run["id"])).attempts == 0  # not even claimed
        assert runs.run_due(app) == 1
        assert select_module.select([server], [], [], 0)[0] == [server]  # the worker's requests reached it
    finally:
        server.close()
    assert senders and threading.main_thread() not in senders and threading.current_thread() not in senders
    report = api.get(f"/sandbox/webhooks/{hook['id']}/conformance/{run['id']}").get_json()["data"]["report"]
    assert not by_name(report)["signed_event"]["passed"]
    assert "timeout" in by_name(report)["signed_event"]["received"]["error"]


def test_a_run_of_another_webhook_or_unknown_is_not_found(app, api, workspace):
    hooks = [create_webhook(api, f"http://127.0.0.1:9/hook{i}", events=["account.added"]) for i in range(2)]
    run = start_run(api, hooks[0]["id"])
    for run_id in (str(uuid.uuid4()), "not-a-uuid"):
        response = api.get(f"/sandbox/webhooks/{hooks[0]['id']}/conformance/{run_id}")
        assert_error(response, 404, "RECORD_NOT_FOUND")
    assert_error(
        api.get(f"/sandbox/webhooks/{hooks[1]['id']}/conformance/{run['id']}"), 404, "RECORD_NOT_FOUND"
    )


def test_sandbox_only(api_for, monkeypatch):
    monkeypatch.setattr(urls, "resolve", lambda host, port: ["93.184.216.34"])
    dev = api_for("development")
    hook = create_webhook(dev, "https://hooks.example.com/in")
    for method in ("post", "get"):
        response = getattr(dev, method)(f"/sandbox/webhooks/{hook['id']}/conformance")
        assert_error(response, 403, "FORBIDDEN", "SANDBOX_ONLY")


def test_another_workspaces_webhook_is_not_found(app, client, api, workspace):
    from console.keys.services import create_key
    from console.workspaces.services import create_workspace

    with app.app_context():
        other = create_workspace("Other")
        other_secret = create_key(other.id, "sandbox", "other").secret
        db.session.commit()
    hook = create_webhook(Api(client, other_secret), "http://127.0.0.1:9/hook")
    for method in ("post", "get"):
        response = getattr(api, method)(f"/sandbox/webhooks/{hook['id']}/conformance")
        assert_error(response, 404, "RECORD_NOT_FOUND")
    assert_error(api.post(f"/sandbox/webhooks/{uuid.uuid4()}/conformance"), 404, "RECORD_NOT_FOUND")
    # Its runs too: another workspace's run is not found, by webhook or by run id.
    other = Api(client, other_secret)
    run = other.post(f"/sandbox/webhooks/{hook['id']}/conformance").get_json()["data"]
    response = api.get(f"/sandbox/webhooks/{hook['id']}/conformance/{run['id']}")
    assert_error(response, 404, "RECORD_NOT_FOUND")


def test_unknown_fields_are_refused(api):
    hook = create_webhook(api, "http://127.0.0.1:9/hook")
    response = api.post(f"/sandbox/webhooks/{hook['id']}/conformance", json={"checks": ["signed_event"]})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS")
    assert {f["name"] for f in error["fields"]} == {"checks"}


def test_no_database_connection_is_held_while_the_endpoint_answers(app, api, workspace):
    with app.app_context():
        engine = db.engine
    held: list[int] = []
    endpoint = Endpoint(workspace.secrets["sandbox"])

    def respond(record):
        held.append(engine.pool.checkedout())
        return endpoint(record)

    with Receiver(respond) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        run_check(api, hook["id"])
    assert len(held) == 7 and set(held) == {0}


def test_a_paused_webhook_is_checked_too(app, api, workspace):
    with Receiver(Endpoint(workspace.secrets["sandbox"])) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        api.put(f"/webhooks/{hook['id']}", json={"status": "paused"})
        assert run_check(api, hook["id"])["passed"] is True


def test_with_an_idempotency_key_a_retry_replays_the_run_and_where_to_poll_it(app, api, workspace):
    with Receiver(Endpoint(workspace.secrets["sandbox"])) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        path = f"/sandbox/webhooks/{hook['id']}/conformance"
        first = api.post(path, headers={"Idempotency-Key": "conformance-1"})
        again = api.post(path, headers={"Idempotency-Key": "conformance-1"})
        assert runs.run_due(app) == 1
    assert first.status_code == again.status_code == 202
    assert again.headers["Idempotent-Replayed"] == "true" and again.get_json() == first.get_json()
    assert len(rx.requests) == 7  # the retry did not queue a second run
    # The 202 says where to poll in Location too, and the replay says the same.
    run_id = first.get_json()["data"]["id"]
    assert first.headers["Location"] == f"/sandbox/v1{path}/{run_id}"
    assert again.headers["Location"] == first.headers["Location"]
    polled = api.client.get(first.headers["Location"], headers=api.headers())
    assert polled.status_code == 200 and polled.get_json()["data"]["status"] == "done"


def test_the_built_in_inbox_passes_even_on_an_advanced_clock(app, api, workspace):
    """The inbox accepts timestamps on the workspace clock too; a stale one is still refused."""
    from console.webhooks.own_inbox import token_for

    api.post("/sandbox/clock/advance", json={"seconds": 600})
    with app.app_context():
        url = f"http://127.0.0.1:{app.config['LISTEN_PORT']}/inbox/" + token_for(
            app.config["SECRET_KEY"], uuid.UUID(workspace.id)
        )
    hook = create_webhook(api, url)
    report = run_check(api, hook["id"])
    assert report["passed"] is True, failed(report)
    assert by_name(report)["stale_timestamp"]["received"]["status"] == 400


def test_an_endpoint_refusing_everything_fails_and_its_refusals_are_qualified(app, api, workspace):
    with Receiver(Endpoint("sk_sandbox_some_other_secret")) as rx:
        hook = create_webhook(api, rx.url, events=["account.added"])
        report = run_check(api, hook["id"])
    assert failed(report) == {"signed_event", "duplicate_event", "event:account.added"}
    checks = by_name(report)
    assert f"api_key_id {workspace.key_ids['sandbox']}" in checks["signed_event"]["detail"]
    for name in ("forged_signature", "altered_body", "stale_timestamp"):
        assert checks[name]["passed"] and "proves little" in checks[name]["warning"]
    # The event check's failure points at the signature, not at the event's fields: a receiver verifying with
    # another key's secret (another mode's) was told to "accept every event … including fields you do not use".
    detail = checks["event:account.added"]["detail"]
    assert "see the signed event check" in detail and "fields you do not use" not in detail


def test_an_endpoint_refusing_only_one_event_type_is_told_to_accept_it(app, api, workspace):
    class RefusesSwitches(Endpoint):
        def __call__(self, record: dict):
            if b"direct_deposit_switch" in record["body"]:
                return 400, b"unknown event"
            return super().__call__(record)

    with Receiver(RefusesSwitches(workspace.secrets["sandbox"])) as rx:
        hook = create_webhook(api, rx.url, events=["account.added", "direct_deposit_switch.added"])
        report = run_check(api, hook["id"])
    assert failed(report) == {
        "event:direct_deposit_switch.added",
        "event:direct_deposit_switch.added:without_action",
    }
    assert "fields you do not use" in by_name(report)["event:direct_deposit_switch.added"]["detail"]


def test_a_trickling_endpoint_is_given_up_at_the_deadline(app, api, workspace):
    """Each byte arrives within the socket timeout, yet the run still ends at its deadline."""
    import socket

    app.config["WEBHOOK_TIMEOUT_SECONDS"] = 1.0
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle(conn):
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"k" * 100:
                if stop.wait(0.3):  # the whole answer would take 42 s
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        hook = create_webhook(
            api, f"http://127.0.0.1:{server.getsockname()[1]}/hook", events=["account.added"]
        )
        started = time.monotonic()
        report = run_check(api, hook["id"])
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        server.close()
    assert elapsed < 30  # the run's deadline ended it, not the trickle's end (42 s)
    signed_event = by_name(report)["signed_event"]
    assert not signed_event["passed"] and signed_event["detail"].startswith("No complete answer within 1 s")
    assert signed_event["sent"]["headers"]["x-service-conformance"] == "true"
    assert signed_event["received"]["status"] is None and signed_event["received"]["error"].startswith(
        "timeout"
    )


def test_starts_at_the_same_moment_queue_one_run_and_refuse_the_other(app, api, workspace, monkeypatch):
    """Two POSTs at once both counted no active run of the webhook; the second insert broke the partial unique
    index and answered 500. Now they are counted one after the other: 202, then 409 CONFLICT."""
    from tests.api.at_once import at_once, meeting_before, posting

    hook = create_webhook(api, "http://127.0.0.1:9/hooks")
    monkeypatch.setattr(runs, "_limits", meeting_before(runs._limits))  # reached after the per-webhook count
    path = f"/sandbox/webhooks/{hook['id']}/conformance"
    answers = at_once(app, 2, posting(path, workspace.secrets["sandbox"]))
    assert sorted(a.status_code for a in answers) == [202, 409], [a.text for a in answers]
