"""/v1/webhooks: create, list, get, update (pause and reactivation), delete, validation, quota, test event."""

from __future__ import annotations

import json
import threading
import uuid

import pytest

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import WebhookVerificationError, dns, services, urls, verify
from console.webhooks.delivery_loop import deliver_due
from console.webhooks.models import Webhook
from tests.conftest import assert_error
from tests.waiting import wait_for

pytestmark = pytest.mark.both_backends

LOCAL = "http://127.0.0.1:9/hook"
BODY = {"url": LOCAL, "status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"}
FIELDS = {
    "id",
    "url",
    "status",
    "enabled_events",
    "version",
    "mode",
    "api_key_id",
    "created_at",
    "updated_at",
    "paused_at",
    "pause_reason",
    "failing_since",
    "last_success_at",
    "relayed",
}


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    """Many calls per second here; the limit itself is tested in test_conventions."""
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


@pytest.fixture
def public_dns(monkeypatch):
    monkeypatch.setattr(urls, "resolve", lambda host, port: ["93.184.216.34"])


def create(api, **changes):
    response = api.post("/webhooks", json={**BODY, **changes})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def test_create_get_list(api, workspace):
    data = create(api, enabled_events=["account.added", "income.added", "account.added"])
    assert set(data) == FIELDS
    assert data["url"] == LOCAL and data["status"] == "active" and data["version"] == "2023-11-22"
    assert data["enabled_events"] == ["account.added", "income.added"]
    assert data["mode"] == "sandbox" and data["api_key_id"] == workspace.key_ids["sandbox"]
    assert api.get(f"/webhooks/{data['id']}").get_json()["data"] == data
    listed = api.get("/webhooks").get_json()
    assert listed["meta"] == {"count": 1, "next_cursor": None} and listed["data"] == [data]


def test_webhooks_are_per_mode(api, api_for, public_dns):
    hook = create(api)
    dev = api_for("development")
    assert dev.get("/webhooks").get_json()["data"] == []
    assert_error(dev.get(f"/webhooks/{hook['id']}"), 404, "RECORD_NOT_FOUND")
    dev_hook = dev.post("/webhooks", json={**BODY, "url": "https://hooks.example.com/in"}).get_json()["data"]
    assert dev_hook["mode"] == "development"
    assert [h["id"] for h in api.get("/webhooks").get_json()["data"]] == [hook["id"]]


def test_update_any_field(api, public_dns):
    hook = create(api)
    body = {
        "url": "https://hooks.example.com/new",
        "enabled_events": ["employment.added"],
        "version": "2023-04-18",
    }
    response = api.put(f"/webhooks/{hook['id']}", json=body)
    assert response.status_code == 200, response.get_json()
    data = response.get_json()["data"]
    assert {k: data[k] for k in body} == body and data["updated_at"] >= hook["updated_at"]


def test_pause_and_reactivate(app, api):
    hook = create(api)
    paused = api.put(f"/webhooks/{hook['id']}", json={"status": "paused"}).get_json()["data"]
    assert paused["status"] == "paused" and paused["paused_at"] and paused["pause_reason"] == "requested"
    with app.app_context():
        db.session.get(Webhook, uuid.UUID(hook["id"])).failing_since = db.session.get(
            Webhook, uuid.UUID(hook["id"])
        ).created_at
        db.session.commit()
    active = api.put(f"/webhooks/{hook['id']}", json={"status": "active"}).get_json()["data"]
    assert active["status"] == "active"
    assert active["paused_at"] is None and active["failing_since"] is None and active["pause_reason"] is None


def test_create_paused(api):
    assert create(api, status="paused")["status"] == "paused"


def test_delete(api):
    hook = create(api)
    response = api.delete(f"/webhooks/{hook['id']}")
    assert response.status_code == 204 and response.get_data() == b""
    assert "Content-Type" not in response.headers  # no body, so no type (not text/html)
    assert_error(api.get(f"/webhooks/{hook['id']}"), 404, "RECORD_NOT_FOUND")
    assert_error(api.delete(f"/webhooks/{hook['id']}"), 404, "RECORD_NOT_FOUND")
    assert api.get("/webhooks").get_json()["data"] == []


def test_unknown_id(api):
    assert_error(api.get("/webhooks/not-a-uuid"), 404, "RECORD_NOT_FOUND")
    assert_error(api.put(f"/webhooks/{uuid.uuid4()}", json={"status": "active"}), 404, "RECORD_NOT_FOUND")


def field_names(error):
    return {f["name"] for f in error["fields"]}


def test_required_fields_and_unknown_ones(api):
    error = assert_error(api.post("/webhooks", json={"colour": "red"}), 400, "INVALID_REQUEST_PARAMETERS")
    assert field_names(error) == {"url", "status", "enabled_events", "version", "colour"}


def test_unknown_event_lists_the_valid_ones(api):
    response = api.post("/webhooks", json={**BODY, "enabled_events": ["account.added", "payroll.done"]})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert field_names(error) == {"enabled_events[1]"}
    for name in ("account.added", "direct_deposit_switch.added", "employment.added", "income.added"):
        assert name in error["message"] and name in error["fields"][0]["message"]


@pytest.mark.parametrize("events", [[], "account.added", None, [1]])
def test_enabled_events_shape(api, events):
    error = assert_error(
        api.post("/webhooks", json={**BODY, "enabled_events": events}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert any(name.startswith("enabled_events") for name in field_names(error))


@pytest.mark.parametrize("version", ["2022-01-01", "latest", 20231122])
def test_unsupported_version(api, version):
    error = assert_error(
        api.post("/webhooks", json={**BODY, "version": version}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert field_names(error) == {"version"} and "2023-04-18" in error["fields"][0]["message"]


def test_bad_status(api):
    error = assert_error(
        api.post("/webhooks", json={**BODY, "status": "on"}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert field_names(error) == {"status"}


@pytest.mark.parametrize(
    ("mode", "url", "reason"),
    [
        ("sandbox", "http://example.com/hook", "https://"),
        ("development", LOCAL, "https://"),
        ("development", "https://127.0.0.1/hook", "loopback"),
        ("production", "https://localhost/hook", "loopback"),
        ("production", "https://10.0.0.8/hook", "private"),
        ("production", "https://169.254.169.254/latest", "link-local"),
        ("sandbox", "http://127.0.0.1:0/hook", "port 0"),
        ("sandbox", "https://[::1", "is not a valid URL"),
        # No scheme: the sandbox names its http:// hosts too, so nobody goes looking for a certificate.
        (
            "sandbox",
            "localhost:8000/hooks",
            "starting with https:// (the sandbox also accepts http://localhost",
        ),
        ("development", "hooks.example.com/payroll", "must be an absolute URL starting with https://"),
    ],
)
def test_url_policy(api_for, mode, url, reason):
    error = assert_error(
        api_for(mode).post("/webhooks", json={**BODY, "url": url}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert field_names(error) == {"url"} and reason in error["fields"][0]["message"]


def test_ssrf_check_on_update_too(api_for, public_dns):
    dev = api_for("development")
    hook = dev.post("/webhooks", json={**BODY, "url": "https://hooks.example.com/"}).get_json()["data"]
    error = assert_error(
        dev.put(f"/webhooks/{hook['id']}", json={"url": "https://192.168.0.2/"}),
        400,
        "INVALID_REQUEST_PARAMETERS",
    )
    assert "private" in error["fields"][0]["message"]


@pytest.mark.parametrize("body", [{}, {"status": None}, {"url": None, "enabled_events": None}])
def test_empty_update_is_refused(api, body):
    """Nulls change nothing, so a body of only nulls is refused as an empty one is."""
    hook = create(api)
    assert_error(
        api.put(f"/webhooks/{hook['id']}", json=body), 400, "INVALID_REQUEST_PARAMETERS", "INVALID_REQUEST"
    )
    assert api.get(f"/webhooks/{hook['id']}").get_json()["data"]["updated_at"] == hook["updated_at"]


def test_quota_of_10_per_key(app, api, workspace):
    with app.app_context():
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        for _ in range(9):
            services.create_webhook(key, dict(BODY))
        db.session.commit()
    tenth = create(api)
    error = assert_error(api.post("/webhooks", json=BODY), 403, "FORBIDDEN", "WEBHOOK_LIMIT_REACHED")
    assert "10" in error["message"]
    assert api.delete(f"/webhooks/{tenth['id']}").status_code == 204
    create(api)  # a deleted webhook frees its slot


def test_quota_counts_per_key(app, client, api, workspace):
    from console.keys.services import create_key
    from tests.conftest import Api

    with app.app_context():
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        for _ in range(10):
            services.create_webhook(key, dict(BODY))
        other = create_key(key.workspace_id, "sandbox", "second")
        db.session.commit()
    assert_error(api.post("/webhooks", json=BODY), 403, "FORBIDDEN", "WEBHOOK_LIMIT_REACHED")
    second = Api(client, other.secret)
    assert second.post("/webhooks", json=BODY).status_code == 200
    assert second.get("/webhooks").get_json()["meta"]["count"] == 11  # a key sees its workspace's webhooks


def test_test_event_is_sent_signed_and_verifiable(app, api, workspace):
    with Receiver() as rx:
        hook = create(api, url=rx.url)
        response = api.post(
            f"/sandbox/webhooks/{hook['id']}/test", json={"event": "direct_deposit_switch.added"}
        )
        assert response.status_code == 200, response.get_json()
        data = response.get_json()["data"]
        assert data["type"] == "direct_deposit_switch.added"
        assert [(d["webhook_id"], d["status"], d["test"]) for d in data["deliveries"]] == [
            (hook["id"], "pending", True)
        ]
        with app.app_context():
            assert deliver_due(app) == 1
    (request,) = rx.requests
    body = verify(workspace.secrets["sandbox"], request["headers"], request["body"])
    assert body["event_id"] == data["id"] and body["event"] == "direct_deposit_switch.added"
    assert body["payload"]["params"]["action"] == "partial_switch" and body["payload"]["end_user_id"]
    with pytest.raises(WebhookVerificationError):
        verify(workspace.secrets["development"], request["headers"], request["body"])
    shown = api.get("/events").get_json()["data"][0]
    assert shown["id"] == data["id"] and shown["deliveries"][0]["status"] == "delivered"
    assert shown["deliveries"][0]["last_status_code"] == 200


def test_test_event_validation_and_sandbox_only(api, api_for, public_dns):
    hook = create(api)
    error = assert_error(
        api.post(f"/sandbox/webhooks/{hook['id']}/test", json={"event": "nope"}),
        400,
        "INVALID_REQUEST_PARAMETERS",
    )
    assert "account.added" in error["message"]
    default = api.post(f"/sandbox/webhooks/{hook['id']}/test").get_json()["data"]
    assert default["type"] == "account.added"
    dev = api_for("development")
    dev_hook = dev.post("/webhooks", json={**BODY, "url": "https://hooks.example.com/"}).get_json()["data"]
    refused = dev.post(f"/sandbox/webhooks/{dev_hook['id']}/test", json={})
    assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "SANDBOX_ONLY"


def test_test_events_carry_the_fields_of_real_events(app, api):
    """A sample event has every field its type's real event has (docs/api.md: the Income payload is the Income
    object plus end_user_id and link_token_id); income.added and employment.added samples lacked most."""
    from console.events.models import EVENT_TYPES, Event
    from console.world.seed_data import PLATFORM_IDS

    target = {"type": "checking", "routing_number": "011000015", "account_number": "12345678"}
    token = api.post(
        "/link_tokens",
        json={
            "org_name": "Acme",
            "end_user_id": "user-1",
            "required_jobs": ["direct_deposit_switch"],
            "allocation": {"targets": [target]},
        },
    ).get_json()["data"]
    done = api.post(
        f"/sandbox/link_tokens/{token['id']}/complete",
        json={
            "platform_id": str(PLATFORM_IDS["paycrest"]),
            "credentials": {"username": "user_good", "password": "pass_good"},
        },
    )
    assert done.status_code == 200, done.get_json()
    with app.app_context():
        real = {e.type: set(e.payload) for e in db.session.scalars(db.select(Event)).all()}
    assert set(real) == set(EVENT_TYPES)  # Paycrest provides employment and income
    hook = create(api, enabled_events=list(EVENT_TYPES))
    for event_type in EVENT_TYPES:
        response = api.post(f"/sandbox/webhooks/{hook['id']}/test", json={"event": event_type})
        assert response.status_code == 200, response.get_json()
        assert set(response.get_json()["data"]["payload"]) == real[event_type], event_type


def test_a_real_switch_reaches_a_local_endpoint_signed(app, api, workspace):
    """The issue's "done when": register a local endpoint, run a scenario, verify what arrives."""
    from tests.factories import new_switch

    with Receiver() as rx:
        create(api, url=rx.url, enabled_events=["direct_deposit_switch.added"])
        with app.app_context():
            job_id = str(new_switch(workspace.id, "success").id)
            deliver_due(app)
    assert rx.requests
    for request in rx.requests:
        body = verify(workspace.secrets["sandbox"], request["headers"], request["body"])
        assert body["event"] == "direct_deposit_switch.added" and body["payload"]["id"] == job_id
    assert json.loads(rx.requests[-1]["body"])["payload"]["outcome"] == "success"


def test_a_host_whose_dns_does_not_answer_in_time_is_refused_by_name_and_holds_only_its_workspace_s_share(
    app, api, workspace, monkeypatch
):
    """A tenant's DNS servers never hold a serving thread past `WEBHOOK_DNS_SECONDS` (console.webhooks.dns)."""
    answers = threading.Event()

    def resolve(host, port):
        if host == "slow.example.com":
            answers.wait(60)  # a zone whose servers do not answer until the test ends
        return ["93.184.216.34"]

    monkeypatch.setattr(urls, "resolve", resolve)
    app.config["WEBHOOK_DNS_SECONDS"] = 0.05
    slow = {**BODY, "url": "https://slow.example.com/hook"}
    try:
        for _ in range(dns.PER_OWNER):
            error = assert_error(api.post("/webhooks", json=slow), 400, "INVALID_REQUEST_PARAMETERS")
            assert "host 'slow.example.com' did not resolve within 0.05 s" in error["fields"][0]["message"]
        # Those lookups still wait for an answer: this workspace's next one is refused at once.
        error = assert_error(
            api.post("/webhooks", json={**BODY, "url": "https://hooks.example.com/in"}),
            400,
            "INVALID_REQUEST_PARAMETERS",
        )
        assert "DNS lookups of this workspace are still waiting" in error["fields"][0]["message"]
        # Another workspace registers its webhook as usual.
        with app.app_context():
            from console.keys.services import create_key
            from console.workspaces.services import create_workspace

            other = create_workspace("Other")
            secret = create_key(other.id, "sandbox", "other").secret
            db.session.commit()
        other_api = type(api)(api.client, secret, "sandbox")
        created = other_api.post("/webhooks", json={**BODY, "url": "https://hooks.example.com/in"})
        assert created.status_code == 200, created.get_json()
    finally:
        answers.set()
    assert wait_for(lambda: dns.running(workspace.id) == 0)
    assert api.post("/webhooks", json=slow).status_code == 200


def test_every_webhook_of_the_workspace_gets_every_keys_events_signed_by_its_own_owner(
    app, client, api, workspace
):
    """docs/webhooks.md: two keys of one workspace (two CI jobs) each receive the other's events."""
    from console.keys.services import create_key
    from console.world.seed_data import PLATFORM_IDS
    from tests.conftest import Api
    from tests.factories import LINK_TOKEN

    with app.app_context():
        other = create_key(uuid.UUID(workspace.id), "sandbox", "second CI job")
        db.session.commit()
    second = Api(client, other.secret)
    with Receiver() as first_rx, Receiver() as second_rx:
        create(api, url=first_rx.url)
        create(second, url=second_rx.url)
        token = second.post("/link_tokens", json=LINK_TOKEN).get_json()["data"]
        completion = {
            "platform_id": str(PLATFORM_IDS["paycrest"]),
            "credentials": {"username": "user_good", "password": "pass_good"},
        }
        response = second.post(f"/sandbox/link_tokens/{token['id']}/complete", json=completion)
        assert response.status_code == 200, response.get_json()
        with app.app_context():
            deliver_due(app)
    for rx, secret in ((first_rx, workspace.secrets["sandbox"]), (second_rx, other.secret)):
        (request,) = rx.requests
        body = verify(secret, request["headers"], request["body"])
        assert body["event"] == "account.added" and body["payload"]["link_token_id"] == token["id"]
    with pytest.raises(WebhookVerificationError):
        verify(other.secret, first_rx.requests[0]["headers"], first_rx.requests[0]["body"])
