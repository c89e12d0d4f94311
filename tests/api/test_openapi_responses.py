"""The OpenAPI document's success responses: every one has a real schema, and real answers match it.

A 200 documented as a bare `{"type": "object"}` tells a client nothing and lets the fuzz test accept
anything, so the walk below refuses one (an allowlist names the exceptions, each with its reason).
The other tests call the endpoints whose schemas were once bare and validate the actual answer
against the served document, strictly: every documented object is closed (additionalProperties false,
added here, not in the document), so a field the serializer returns but the document omits fails too.
"""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.core.timeutil import isoformat, parse_datetime
from console.webhooks.delivery_loop import deliver_due
from tests.api.test_events import hook
from tests.api.test_sandbox_complete import PAYCREST, complete, creds, new_token, ok

# (method, path) -> why its success answer may be an object without documented properties.
BARE_OBJECT_ALLOWED = {
    ("get", "/openapi.json"): "the OpenAPI document itself; its schema is the OpenAPI 3.1 specification",
}
SCHEMA_PREFIX = "#/components/schemas/"


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def _resolve(schema: dict, components: dict) -> dict:
    while "$ref" in schema:
        schema = components[schema["$ref"].removeprefix(SCHEMA_PREFIX)]
    return schema


def _success_schemas(document: dict):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if status.startswith("2") and "content" in response:
                    yield method, path, response["content"]["application/json"]["schema"]


def _bare(schema: dict) -> bool:
    """An object schema that says nothing of its fields."""
    return schema.get("type") == "object" and not {
        "properties",
        "additionalProperties",
        "oneOf",
        "anyOf",
    } & set(schema)


def test_every_success_response_documents_its_fields(client):
    """The envelope, its `data` and (for a list) its items are each an object with documented properties."""
    document = client.get("/sandbox/v1/openapi.json").get_json()
    components = document["components"]["schemas"]
    bare, checked = [], 0
    for method, path, schema in _success_schemas(document):
        checked += 1
        envelope = _resolve(schema, components)
        if _bare(envelope):
            if (method, path) not in BARE_OBJECT_ALLOWED:
                bare.append((method, path, "the response"))
            continue
        assert (method, path) not in BARE_OBJECT_ALLOWED, f"{method} {path} is allowlisted but has a schema"
        data = envelope["properties"].get("data")
        assert data is not None and "data" in envelope.get("required", ()), (method, path)
        data = _resolve(data, components)
        if data.get("type") == "array":
            data = _resolve(data["items"], components)
        if _bare(data):
            bare.append((method, path, "data"))
    assert checked > 30
    assert not bare, f"success responses without documented fields: {bare}"


def test_every_component_object_documents_its_fields(client):
    """No response component is a bare object (payloads nested inside one may be, with a description)."""
    schemas = client.get("/sandbox/v1/openapi.json").get_json()["components"]["schemas"]
    assert not [name for name, schema in schemas.items() if _bare(schema)]


def _closed(schema):
    """A copy in which every object with documented properties refuses undocumented ones."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {key: _closed(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        closed["additionalProperties"] = False
    return closed


class Document:
    """The served document, to validate an answer against an operation's documented success schema."""

    def __init__(self, api) -> None:
        self.document = api.get("/openapi.json").get_json()

    def validate(self, method: str, path: str, response, status: str = "200") -> dict:
        assert response.status_code == int(status), response.get_json()
        operation = self.document["paths"][path][method]
        schema = copy.deepcopy(operation["responses"][status]["content"]["application/json"]["schema"])
        root = {**_closed(schema), "components": {"schemas": _closed(self.document["components"]["schemas"])}}
        validator = Draft202012Validator(root, format_checker=FormatChecker())
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(response.get_json())]
        assert not errors, f"{method.upper()} {path} answered outside its documented schema: {errors}"
        return response.get_json()["data"]


def test_the_validator_refuses_an_undocumented_field(api):
    """The strict check is not vacuous: an extra field, or a missing required one, fails it."""
    doc = Document(api)
    operation = doc.document["paths"]["/sandbox/clock"]["get"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    root = {**_closed(schema), "components": {"schemas": _closed(doc.document["components"]["schemas"])}}
    validator = Draft202012Validator(root, format_checker=FormatChecker())
    answer = api.get("/sandbox/clock").get_json()
    assert validator.is_valid(answer)
    assert not validator.is_valid({"data": {**answer["data"], "surprise": 1}})
    assert not validator.is_valid({"data": {k: v for k, v in answer["data"].items() if k != "next_due"}})


def test_completion_accounts_and_sandbox_answers_match_the_document(api):
    doc = Document(api)
    doc.validate("get", "/sandbox/test_data", api.get("/sandbox/test_data"))

    token = new_token(api)
    path = "/sandbox/link_tokens/{link_token_id}/complete"
    done = doc.validate(
        "post", path, complete(api, token, platform_id=PAYCREST, credentials=creds("user_good"))
    )
    assert done["outcome"] == "success" and done["client_events"]

    employment = doc.validate(
        "get", "/accounts/{account_id}/employment", api.get(f"/accounts/{done['account_id']}/employment")
    )
    assert {"employer_id", "end_date", "job_title"} <= set(employment)
    doc.validate("get", "/accounts/{account_id}/income", api.get(f"/accounts/{done['account_id']}/income"))

    # A failed switch still answers 200, with outcome error.
    failed = complete(api, new_token(api), platform_id=PAYCREST, credentials=creds("user_error"))
    assert doc.validate("post", path, failed)["outcome"] == "error"


def test_event_answers_match_the_document(app, api):
    doc = Document(api)
    with Receiver() as rx:
        webhook_id = hook(api, rx.url, enabled_events=["account.added", "employment.added"])
        ok(complete(api, new_token(api), platform_id=PAYCREST, credentials=creds("user_good")))
        with app.app_context():
            assert deliver_due(app) >= 1

        events = doc.validate("get", "/events", api.get("/events"))
        assert events and all(event["deliveries"] for event in events if event["type"] == "account.added")
        event_id = next(event["id"] for event in events if event["type"] == "account.added")

        detail = doc.validate("get", "/events/{event_id}", api.get(f"/events/{event_id}"))
        assert detail["deliveries"][0]["attempts"], "an attempt is listed, so its schema is checked"

        resent = api.post(f"/events/{event_id}/resend", json={"webhook_id": webhook_id})
        doc.validate("post", "/events/{event_id}/resend", resent)

        test_event = api.post(f"/sandbox/webhooks/{webhook_id}/test", json={"event": "account.added"})
        assert doc.validate("post", "/sandbox/webhooks/{webhook_id}/test", test_event)["deliveries"][0][
            "test"
        ]

        since = isoformat(parse_datetime(events[-1]["created_at"]) - timedelta(minutes=1))
        replay = api.post(f"/webhooks/{webhook_id}/replay", json={"since": since})
        assert doc.validate("post", "/webhooks/{webhook_id}/replay", replay)["webhook_id"] == webhook_id


def test_clock_answers_match_the_document(api):
    doc = Document(api)
    # A pending switch schedules its retry, so the clock has something due and something to fire.
    ok(complete(api, new_token(api), platform_id=PAYCREST, credentials=creds("user_pending_success")))

    clock = doc.validate("get", "/sandbox/clock", api.get("/sandbox/clock"))
    assert clock["next_due"], "a scheduled item is listed, so its schema is checked"

    moved = api.post("/sandbox/clock/advance_to_next", json={})
    moved = doc.validate("post", "/sandbox/clock/advance_to_next", moved)
    assert moved["advanced_to"] and moved["fired"], "a fired task is listed, so its schema is checked"

    doc.validate("post", "/sandbox/clock/advance", api.post("/sandbox/clock/advance", json={"hours": 1}))
    later = isoformat(parse_datetime(moved["now"]) + timedelta(days=2))
    doc.validate("post", "/sandbox/clock/jump", api.post("/sandbox/clock/jump", json={"to": later}))


def test_webhook_answers_match_the_document(api):
    """Every field a webhook answers with is documented (mode, api_key_id, the pause and failure times were not)."""
    doc = Document(api)
    body = {"url": "http://127.0.0.1:9/hook", "status": "active", "enabled_events": ["account.added"],
            "version": "2023-11-22"}  # fmt: skip
    created = doc.validate("post", "/webhooks", api.post("/webhooks", json=body))
    doc.validate("get", "/webhooks/{webhook_id}", api.get(f"/webhooks/{created['id']}"))
    paused = doc.validate(
        "put", "/webhooks/{webhook_id}", api.put(f"/webhooks/{created['id']}", json={"status": "paused"})
    )
    assert paused["pause_reason"] == "requested" and paused["paused_at"]
    doc.validate("get", "/webhooks", api.get("/webhooks"))
