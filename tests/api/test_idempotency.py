"""Idempotency-Key on every /v1 POST: stored, replayed, refused when reused or in use, scoped, expiring."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
import requests
from sqlalchemy import event, func, select, update
from werkzeug.serving import make_server

from console.api import link_tokens as link_tokens_view
from console.core.timeutil import utcnow
from console.extensions import db
from console.idempotency import services as idempotency
from console.idempotency.models import APPLIED, DONE, STARTED, IdempotencyKey
from console.keys.secrets import unseal
from console.link_tokens import services as link_token_services
from console.link_tokens.models import LinkToken
from tests.conftest import VERSION, Api, assert_error
from tests.factories import LINK_TOKEN
from tests.waiting import wait_for

pytestmark = pytest.mark.both_backends


def key_header(key: str | None = None) -> dict:
    return {"Idempotency-Key": key or str(uuid.uuid4())}


def link_token_count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(LinkToken))


def records(app) -> list[IdempotencyKey]:
    with app.app_context():
        rows = list(db.session.scalars(select(IdempotencyKey)))
        db.session.expunge_all()
        return rows


def set_record(app, **values) -> None:
    with app.app_context():
        db.session.execute(update(IdempotencyKey).values(**values))
        db.session.commit()


@pytest.fixture
def view_calls(monkeypatch):
    """Counts how many times the link token view's service actually runs."""
    calls = []
    original = link_token_services.create_link_token

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(link_token_services, "create_link_token", counting)
    return calls


# --- Replay ---------------------------------------------------------------------------------------------


def test_a_retry_gets_the_stored_response_without_running_again(app, api, view_calls):
    headers = key_header()
    first = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert first.status_code == retry.status_code == 200
    assert retry.get_data() == first.get_data()
    assert retry.headers["Content-Type"] == first.headers["Content-Type"] == "application/json"
    assert "Idempotent-Replayed" not in first.headers
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.headers["Original-Request"] == first.headers["x-service-request-id"]
    assert retry.headers["x-service-request-id"] != first.headers["x-service-request-id"]
    assert len(view_calls) == 1
    assert link_token_count(app) == 1


def test_a_replay_keeps_the_version_of_the_first_response(api):
    headers = key_header()
    first = api.post("/link_tokens", json=LINK_TOKEN, headers={**headers, "Service-Version": "2023-04-18"})
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers={**headers, "Service-Version": "2023-11-22"})
    assert retry.get_data() == first.get_data()
    assert retry.headers["Service-Version"] == "2023-04-18"


def test_requests_without_the_header_run_every_time_and_touch_no_record(app, api, view_calls):
    statements: list[str] = []
    with app.app_context():
        engine = db.engine

    def capture(_conn, _cursor, statement, *_args):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", capture)
    try:
        first = api.post("/link_tokens", json=LINK_TOKEN)
        second = api.post("/link_tokens", json=LINK_TOKEN)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert first.status_code == second.status_code == 200
    assert first.get_json()["data"]["id"] != second.get_json()["data"]["id"]
    assert len(view_calls) == 2
    assert statements, "the capture saw the requests' own queries"
    assert not [s for s in statements if "idempotency_keys" in s]
    assert records(app) == []


def test_only_posts_use_the_header(app, api):
    response = api.get("/platforms", headers={"Idempotency-Key": "x" * 300})
    assert response.status_code == 200
    assert records(app) == []


def test_a_clock_advance_is_not_repeated_by_its_retry(api):
    headers = key_header()
    first = api.post("/sandbox/clock/advance", json={"hours": 1}, headers=headers)
    retry = api.post("/sandbox/clock/advance", json={"hours": 1}, headers=headers)
    assert first.status_code == retry.status_code == 200
    assert retry.get_json() == first.get_json()
    assert api.get("/sandbox/clock").get_json()["data"]["offset_seconds"] == 3600


# --- What is stored -------------------------------------------------------------------------------------


def test_a_client_error_from_the_view_is_stored_and_replayed(app, api, view_calls):
    headers = key_header()
    first = api.post("/link_tokens", json={"org_name": "Acme"}, headers=headers)
    assert_error(first, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    retry = api.post("/link_tokens", json={"org_name": "Acme"}, headers=headers)
    assert_error(retry, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.get_data() == first.get_data()
    assert len(view_calls) == 1


def test_a_server_error_before_any_commit_releases_the_key(app, api, monkeypatch):
    def boom(*_args, **_kwargs):
        raise RuntimeError("database exploded")

    headers = key_header()
    with monkeypatch.context() as patch:
        patch.setattr(link_token_services, "create_link_token", boom)
        assert_error(api.post("/link_tokens", json=LINK_TOKEN, headers=headers), 500, "UNKNOWN_ERROR")
    assert records(app) == []
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert retry.status_code == 200
    assert "Idempotent-Replayed" not in retry.headers
    assert link_token_count(app) == 1


def test_a_server_error_after_the_view_committed_is_stored_so_the_change_is_not_repeated(
    app, api, monkeypatch
):
    def broken_jsonify(*_args, **_kwargs):
        raise RuntimeError("answer exploded")

    headers = key_header()
    with monkeypatch.context() as patch:
        # jsonify runs after the view's commit (the body is built before it).
        patch.setattr(link_tokens_view, "jsonify", broken_jsonify)
        first = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert_error(first, 500, "UNKNOWN_ERROR", "INTERNAL_ERROR")
    assert link_token_count(app) == 1
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert_error(retry, 500, "UNKNOWN_ERROR", "INTERNAL_ERROR")
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert link_token_count(app) == 1


@pytest.mark.committing
def test_the_applied_mark_commits_with_the_views_change(app, api, monkeypatch):
    """Seen from another connection right after the view's commit: the change and the mark, together."""
    seen = {}
    original = link_tokens_view.jsonify

    def look_then_answer(body):
        with db.engine.connect() as other:
            seen["status"] = other.scalar(select(IdempotencyKey.status))
            seen["tokens"] = other.scalar(select(func.count()).select_from(LinkToken))
        return original(body)

    # jsonify runs right after the view's commit.
    monkeypatch.setattr(link_tokens_view, "jsonify", look_then_answer)
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=key_header()).status_code == 200
    assert seen == {"status": APPLIED, "tokens": 1}
    [record] = records(app)
    assert record.status == DONE and record.response_status == 200


@pytest.mark.committing
def test_the_reservation_is_committed_before_the_view_runs(app, api, monkeypatch):
    seen = {}
    original = link_token_services.create_link_token

    def look_then_create(*args, **kwargs):
        with db.engine.connect() as other:
            seen["status"] = other.scalar(select(IdempotencyKey.status))
        return original(*args, **kwargs)

    monkeypatch.setattr(link_token_services, "create_link_token", look_then_create)
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=key_header()).status_code == 200
    assert seen == {"status": STARTED}


def test_requests_refused_before_the_view_do_not_use_the_key(app, client, workspace, api):
    headers = key_header()
    missing_version = api.post("/link_tokens", json=LINK_TOKEN, headers={**headers, "Service-Version": None})
    assert_error(missing_version, 400, "INVALID_REQUEST_PARAMETERS", "MISSING_VERSION_HEADER")
    unauthenticated = Api(client, "sk_sandbox_wrong").post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert_error(unauthenticated, 401, "UNAUTHORIZED_REQUEST")
    too_large = api.post(
        "/link_tokens",
        data='{"org_name": "' + "a" * 2_000_000 + '"}',
        headers={**headers, "Content-Type": "application/json"},
    )
    assert_error(too_large, 413, "INVALID_REQUEST_PARAMETERS", "BODY_TOO_LARGE")
    assert records(app) == []
    response = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert response.status_code == 200 and "Idempotent-Replayed" not in response.headers


def test_a_rate_limited_request_does_not_use_the_key(app, api):
    limits = {"sandbox": "1/minute", "development": "1/minute", "production": "1/minute"}
    app.extensions["ratelimiter"].__init__("memory://", limits)
    assert api.post("/link_tokens", json=LINK_TOKEN).status_code == 200
    headers = key_header()
    assert_error(api.post("/link_tokens", json=LINK_TOKEN, headers=headers), 429, "RATE_LIMIT_EXCEEDED")
    assert records(app) == []
    app.extensions["ratelimiter"].__init__("memory://", dict.fromkeys(limits, "10/second"))
    response = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert response.status_code == 200 and "Idempotent-Replayed" not in response.headers


def test_the_stored_body_is_sealed(app, api):
    response = api.post("/link_tokens", json=LINK_TOKEN, headers=key_header())
    token = response.get_json()["data"]["token"]
    [record] = records(app)
    assert token.encode() not in record.response_body
    with app.app_context():
        assert token in unseal(record.response_body)


def test_a_response_sealed_with_another_secret_key_is_not_run_again(app, api, view_calls):
    headers = key_header()
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=headers).status_code == 200
    app.config["SECRET_KEY"] = "another-secret-key-for-this-test"
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert_error(retry, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_RESPONSE_LOST")
    assert len(view_calls) == 1


# --- Reuse with another request -------------------------------------------------------------------------


def test_the_same_key_with_another_body_is_409(app, api, view_calls):
    headers = key_header()
    first = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert first.status_code == 200
    other = api.post("/link_tokens", json={**LINK_TOKEN, "org_name": "Other"}, headers=headers)
    error = assert_error(other, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_KEY_REUSED")
    assert "Idempotency-Key" in error["message"]
    assert len(view_calls) == 1
    # The stored response is untouched by the refused request.
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=headers).get_data() == first.get_data()


def test_the_same_key_on_another_path_is_409(api):
    headers = key_header()
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=headers).status_code == 200
    response = api.post("/sandbox/clock/advance", json={"hours": 1}, headers=headers)
    assert_error(response, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_KEY_REUSED")
    assert api.get("/sandbox/clock").get_json()["data"]["offset_seconds"] == 0


def test_the_body_is_compared_byte_for_byte(api):
    headers = {**key_header(), "Content-Type": "application/json"}
    assert api.post("/link_tokens", data='{"org_name": "Acme"}', headers=headers).status_code == 400
    response = api.post("/link_tokens", data='{"org_name":"Acme"}', headers=headers)
    assert_error(response, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_KEY_REUSED")


# --- The key itself -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["", "k" * 256, "bell\x07", "abc\x01def", "esc\x1b", "nul\x00", "tab\there", "del\x7f", "café"],
    ids=["empty", "256-chars", "control", "soh", "escape", "nul", "tab", "delete", "non-ascii"],
)
def test_a_bad_key_is_400_naming_the_header(app, api, key):
    """What the app answers for any key that reaches it. Behind `console run`, Granian itself refuses a
    control character other than a tab with a bare 400 first (tests/unit/test_serving_edges.py)."""
    response = api.post("/link_tokens", json=LINK_TOKEN, headers={"Idempotency-Key": key})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_IDEMPOTENCY_KEY")
    assert uuid.UUID(response.headers["x-service-request-id"])
    assert [field["name"] for field in error["fields"]] == ["Idempotency-Key"]
    assert link_token_count(app) == 0
    if key in ("", "café"):  # behind Granian a non-ASCII value arrives empty: both name the rule
        assert "printable ASCII" in error["message"], error


def test_a_key_of_255_printable_characters_is_accepted(api):
    key = ("k ~!" * 64)[:255]
    first = api.post("/link_tokens", json=LINK_TOKEN, headers={"Idempotency-Key": key})
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers={"Idempotency-Key": key})
    assert first.status_code == 200 and retry.headers["Idempotent-Replayed"] == "true"


def test_authentication_is_checked_before_the_key(client):
    response = Api(client, None).post("/link_tokens", json=LINK_TOKEN, headers={"Idempotency-Key": "\x01"})
    assert_error(response, 401, "UNAUTHORIZED_REQUEST", "MISSING_API_SECRET")


# --- Scope ----------------------------------------------------------------------------------------------


def test_the_key_belongs_to_one_api_key(app, client, workspace, api, view_calls):
    from console.keys.services import create_key
    from console.workspaces.services import create_workspace

    with app.app_context():
        other_workspace = create_workspace("Other")
        other_secret = create_key(other_workspace.id, "sandbox", "other").secret
        db.session.commit()
    headers = key_header("order-42")
    mine = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    theirs = Api(client, other_secret).post("/link_tokens", json=LINK_TOKEN, headers=headers)
    production = Api(client, workspace.secrets["production"], "production").post(
        "/link_tokens", json=LINK_TOKEN, headers=headers
    )
    assert [r.status_code for r in (mine, theirs, production)] == [200, 200, 200]
    assert not any("Idempotent-Replayed" in r.headers for r in (theirs, production))
    assert theirs.get_json()["data"]["token"] != mine.get_json()["data"]["token"]
    assert len(view_calls) == 3
    # Another workspace's different body under the same key is not a reuse either.
    other_body = Api(client, other_secret).post(
        "/link_tokens", json={**LINK_TOKEN, "org_name": "Other"}, headers=key_header("order-43")
    )
    assert other_body.status_code == 200
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=headers).headers["Idempotent-Replayed"] == "true"


# --- Concurrency ----------------------------------------------------------------------------------------


@pytest.mark.committing
def test_a_key_in_use_is_409_with_retry_after_then_replays(app, api, monkeypatch):
    entered, release = threading.Event(), threading.Event()
    original = link_token_services.create_link_token

    def slow(*args, **kwargs):
        entered.set()
        assert release.wait(60)
        return original(*args, **kwargs)

    monkeypatch.setattr(link_token_services, "create_link_token", slow)
    headers = key_header()
    first: dict = {}
    other_api = Api(app.test_client(), api.secret)
    thread = threading.Thread(
        target=lambda: first.setdefault(
            "response", other_api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
        )
    )
    thread.start()
    try:
        assert entered.wait(60)
        busy = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
        assert_error(busy, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_KEY_IN_USE")
        assert busy.headers["Retry-After"] == "1"
    finally:
        release.set()
        thread.join(60)
    assert first["response"].status_code == 200
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.get_data() == first["response"].get_data()
    assert link_token_count(app) == 1


@pytest.mark.committing
def test_concurrent_requests_on_a_real_server_run_once(app, workspace, monkeypatch):
    """Threads sending one key to a threaded HTTP server at once: one runs, the rest wait their turn or 409."""
    original = link_token_services.create_link_token

    def slowish(*args, **kwargs):
        # Runs until another request was refused for the key in use, or all the others were answered (a
        # backstop): every other request arrives while this one runs, however the threads are scheduled.
        wait_for(
            lambda: any(r.status_code == 409 for r in responses) or len(responses) >= count - 1, 60, 0.01
        )
        return original(*args, **kwargs)

    monkeypatch.setattr(link_token_services, "create_link_token", slowish)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    url = f"http://127.0.0.1:{server.server_port}/sandbox/v1/link_tokens"
    headers = {"x-api-secret": workspace.secrets["sandbox"], "Service-Version": VERSION, **key_header()}
    count = 6
    barrier = threading.Barrier(count)
    responses: list[requests.Response] = []

    def send():
        barrier.wait()
        responses.append(requests.post(url, json=LINK_TOKEN, headers=headers, timeout=120))

    threads = [threading.Thread(target=send) for _ in range(count)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        server.shutdown()
        server.server_close()
        serving.join(5)
    statuses = sorted(r.status_code for r in responses)
    assert len(responses) == count and set(statuses) <= {200, 409}, [r.text for r in responses]
    assert statuses.count(409) >= 1
    for response in responses:
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "IDEMPOTENCY_KEY_IN_USE"
            assert response.headers["Retry-After"] == "1"
    assert link_token_count(app) == 1
    assert len({r.content for r in responses if r.status_code == 200}) == 1


# --- Crashes and expiry ---------------------------------------------------------------------------------


def _first_then_age(app, api, status: str, age: timedelta) -> dict:
    headers = key_header()
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=headers).status_code == 200
    set_record(app, status=status, locked_at=utcnow() - age, response_status=None, response_body=None)
    return headers


def test_an_abandoned_reservation_is_taken_over_once_stale(app, api, view_calls):
    """A `started` row whose request died (nothing committed) blocks only until it is stale."""
    headers = _first_then_age(app, api, STARTED, idempotency.STALE_AFTER + timedelta(seconds=1))
    response = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert response.status_code == 200 and "Idempotent-Replayed" not in response.headers
    assert len(view_calls) == 2
    assert api.post("/link_tokens", json=LINK_TOKEN, headers=headers).get_data() == response.get_data()


@pytest.mark.parametrize("status", [STARTED, APPLIED])
def test_a_fresh_unfinished_reservation_is_in_use(app, api, view_calls, status):
    headers = _first_then_age(app, api, status, timedelta(seconds=10))
    response = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert_error(response, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_KEY_IN_USE")
    assert len(view_calls) == 1


def test_a_change_whose_response_was_lost_is_never_run_again(app, api, view_calls):
    """`applied` without a response: the server died between the view's commit and storing its answer."""
    headers = _first_then_age(app, api, APPLIED, idempotency.STALE_AFTER + timedelta(seconds=1))
    response = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    error = assert_error(response, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_RESPONSE_LOST")
    assert "new key" in error["message"]
    assert len(view_calls) == 1


def test_a_failure_to_store_the_response_still_answers_and_never_reruns(app, api, monkeypatch, view_calls):
    def broken_finish(*_args, **_kwargs):
        raise RuntimeError("database went away")

    headers = key_header()
    with monkeypatch.context() as patch:
        patch.setattr(idempotency, "finish", broken_finish)
        first = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert first.status_code == 200 and first.get_json()["data"]["token"]
    [record] = records(app)
    assert record.status == APPLIED
    retry = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert_error(retry, 409, "INVALID_REQUEST_PARAMETERS", "IDEMPOTENCY_KEY_IN_USE")
    assert len(view_calls) == 1


def test_records_last_24_hours(app, api):
    api.post("/link_tokens", json=LINK_TOKEN, headers=key_header())
    [record] = records(app)
    assert record.expires_at - record.created_at == timedelta(hours=24)


def test_after_expiry_the_request_runs_again(app, api, view_calls):
    headers = key_header()
    first = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    set_record(app, expires_at=utcnow() - timedelta(seconds=1))
    again = api.post("/link_tokens", json=LINK_TOKEN, headers=headers)
    assert again.status_code == 200 and "Idempotent-Replayed" not in again.headers
    assert again.get_json()["data"]["id"] != first.get_json()["data"]["id"]
    assert len(view_calls) == 2
    [record] = records(app)
    assert record.expires_at > utcnow() + timedelta(hours=23)
    # Expired and then reused with another body: a fresh request, not a reuse.
    set_record(app, expires_at=utcnow() - timedelta(seconds=1))
    assert (
        api.post("/link_tokens", json={**LINK_TOKEN, "org_name": "New"}, headers=headers).status_code == 200
    )


def test_the_worker_sweeps_expired_records(app, api):
    from console.idempotency.sweep_loop import SweepLoop
    from console.worker import LOOPS, load_loop

    assert load_loop("console.idempotency.sweep_loop.SweepLoop") is SweepLoop
    assert "console.idempotency.sweep_loop.SweepLoop" in LOOPS
    expired, fresh = key_header(), key_header()
    api.post("/link_tokens", json=LINK_TOKEN, headers=expired)
    set_record(app, expires_at=utcnow() - timedelta(seconds=1))
    api.post("/link_tokens", json=LINK_TOKEN, headers=fresh)
    assert SweepLoop(app).run_once() == 1
    assert [r.key for r in records(app)] == [fresh["Idempotency-Key"]]
    assert SweepLoop(app).run_once() == 0


def test_the_sweep_works_in_batches(app, api):
    for _ in range(5):
        api.post("/link_tokens", json=LINK_TOKEN, headers=key_header())
    set_record(app, expires_at=utcnow() - timedelta(seconds=1))
    from console.idempotency.sweep_loop import SweepLoop

    loop = SweepLoop(app)
    loop.batch = 2
    assert loop.run_once() == 5
    assert records(app) == []


# --- Documentation --------------------------------------------------------------------------------------


def test_every_post_documents_the_header_and_the_409(client):
    document = client.get("/sandbox/v1/openapi.json").get_json()
    parameter = document["components"]["parameters"]["IdempotencyKey"]
    assert parameter["name"] == "Idempotency-Key" and parameter["schema"]["maxLength"] == 255
    posts = [(path, ops["post"]) for path, ops in document["paths"].items() if "post" in ops]
    assert len(posts) >= 6
    for path, operation in posts:
        assert {"$ref": "#/components/parameters/IdempotencyKey"} in operation["parameters"], path
        assert "409" in operation["responses"], path
        success = operation["responses"].get("200") or operation["responses"]["202"]  # 202: a queued run
        assert "Idempotent-Replayed" in success["headers"], path
    for ops in document["paths"].values():
        for method, operation in ops.items():
            if method != "post":
                assert {"$ref": "#/components/parameters/IdempotencyKey"} not in operation["parameters"]
