"""GET /v1/openapi.json: the OpenAPI 3.1 document, built from the routes themselves.

Paths and methods come from Flask's URL map, so an endpoint cannot exist without
appearing here; `OPERATIONS` adds what a route cannot say (summary, schemas,
parameters). A test fails when a route has no entry or an entry has no route.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from types import MappingProxyType

from flask import current_app, jsonify, request

from console.api.clock import ClockAdvanceRequest, ClockJumpRequest, ClockNextRequest
from console.api.conventions import public
from console.api.events import ResendRequest
from console.api.listen import PollRequest
from console.api.openapi_schemas import RESPONSE_SCHEMAS, collection, ref, single
from console.api.pagination import DEFAULT_LIMIT, MAX_CURSOR_LENGTH, MAX_LIMIT
from console.api.webhooks import ConformanceRequest, ReplayRequest, TestEventRequest
from console.api.world import PLATFORM_TYPES
from console.core.bodies import openapi_schemas
from console.core.routes import Routes
from console.events.models import EVENT_TYPES
from console.jobs.plans import OUTCOMES
from console.link.headless import CompletionRequest
from console.link_tokens.validation import JOB_NAMES, LinkTokenRequest
from console.modes import URL_PREFIXES
from console.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from console.webhooks.relay import ListenRequest, RelayResultRequest
from console.webhooks.services import WebhookRequest, WebhookUpdateRequest
from console.world.seed_data import PLATFORM_IDS

routes = Routes()


def q(name: str, description: str, schema: dict | None = None, **extra) -> dict:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema or {"type": "string"},
        **extra,
    }


# What the views enforce on each query parameter (a value outside it is a 400 naming the parameter).
# No parameter may contain NUL (U+0000); that is said once, in the 400 response, not per schema.
UUID_PARAM = {"type": "string", "format": "uuid"}
END_USER_ID = {"type": "string", "minLength": 1, "maxLength": 255}
JOBS_LIST = {"type": "array", "items": {"type": "string", "enum": list(JOB_NAMES)}}
LIMIT = q(
    "limit",
    f"Items per page, 1-{MAX_LIMIT} (default {DEFAULT_LIMIT}).",
    {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
)
CURSOR = q(
    "cursor",
    "next_cursor of the previous page of the same list, as returned (opaque).",
    {"type": "string", "maxLength": MAX_CURSOR_LENGTH, "pattern": "^[A-Za-z0-9_-]+={0,2}$"},
)
PAGE = [LIMIT, CURSOR]
SUPPORTED_JOBS = q(
    "supported_jobs",
    "Job names, comma-separated (or the parameter repeated).",
    JOBS_LIST,
    style="form",
    explode=False,
)

# (method, path) -> operation details. Responses: "single:X", "collection:X", "empty", or "object" (only the
# document itself: tests/api/test_openapi_responses.py refuses any other success answer without a schema);
# "body" is the pydantic model that validates the request body, and its schema in this document.
OPERATIONS: dict[tuple[str, str], dict] = {
    ("POST", "/link_tokens"): {
        "summary": "Create a Link token",
        "tag": "Link tokens",
        "body": LinkTokenRequest,
        "response": "single:LinkToken",
    },
    ("GET", "/platforms"): {
        "summary": "List platforms",
        "tag": "World",
        "response": "collection:Platform",
        "params": [
            q("q", "Name contains (case-insensitive)."),
            q("type", "payroll or benefits.", {"type": "string", "enum": list(PLATFORM_TYPES)}),
            SUPPORTED_JOBS,
            q("amount_supported", "true or false (also 1 or 0).", {"type": "boolean"}),
            *PAGE,
        ],
    },
    ("GET", "/platforms/{platform_id}"): {
        "summary": "Get a platform",
        "tag": "World",
        "response": "single:Platform",
    },
    ("GET", "/employers"): {
        "summary": "List employers",
        "tag": "World",
        "response": "collection:Employer",
        "params": [q("q", "Name contains (case-insensitive)."), *PAGE],
    },
    ("GET", "/employers/{employer_id}"): {
        "summary": "Get an employer",
        "tag": "World",
        "response": "single:Employer",
    },
    ("GET", "/search"): {
        "summary": "Search employers and platforms together",
        "tag": "World",
        "response": "collection:SearchHit",
        "params": [q("q", "Name contains (case-insensitive)."), SUPPORTED_JOBS, *PAGE],
    },
    ("GET", "/jobs"): {
        "summary": "List jobs",
        "tag": "Jobs",
        "response": "collection:Job",
        "params": [
            q("link_token_id", "Jobs of this Link token.", UUID_PARAM),
            q("account_id", "Jobs of this account.", UUID_PARAM),
            q("end_user_id", "Jobs of this end user.", END_USER_ID),
            q("outcome", "The job's current outcome.", {"type": "string", "enum": list(OUTCOMES)}),
            *PAGE,
        ],
    },
    ("GET", "/jobs/{job_id}"): {"summary": "Get a job", "tag": "Jobs", "response": "single:Job"},
    ("GET", "/accounts"): {
        "summary": "List accounts",
        "tag": "Accounts",
        "response": "collection:Account",
        "params": [
            q("end_user_id", "Accounts of this end user.", END_USER_ID),
            q("link_token_id", "Accounts connected through this Link token.", UUID_PARAM),
            *PAGE,
        ],
    },
    ("GET", "/accounts/{account_id}"): {
        "summary": "Get an account",
        "tag": "Accounts",
        "response": "single:Account",
    },
    ("GET", "/accounts/{account_id}/employment"): {
        "summary": "Get the account's employment",
        "tag": "Accounts",
        "response": "single:Employment",
    },
    ("GET", "/accounts/{account_id}/income"): {
        "summary": "Get the account's income",
        "tag": "Accounts",
        "response": "single:Income",
    },
    ("POST", "/webhooks"): {
        "summary": "Create a webhook (at most 10 per API key)",
        "tag": "Webhooks",
        "body": WebhookRequest,
        "response": "single:Webhook",
        "errors": {
            "403": "This API key already has its limit of webhooks, 10 unless the server sets WEBHOOKS_PER_KEY (WEBHOOK_LIMIT_REACHED)."
        },
    },
    ("GET", "/webhooks"): {
        "summary": "List webhooks",
        "tag": "Webhooks",
        "response": "collection:Webhook",
        "params": PAGE,
    },
    ("GET", "/webhooks/{webhook_id}"): {
        "summary": "Get a webhook",
        "tag": "Webhooks",
        "response": "single:Webhook",
    },
    ("PUT", "/webhooks/{webhook_id}"): {
        "summary": "Update a webhook (status active reactivates a paused one)",
        "tag": "Webhooks",
        "body": WebhookUpdateRequest,
        "response": "single:Webhook",
    },
    ("DELETE", "/webhooks/{webhook_id}"): {
        "summary": "Delete a webhook",
        "tag": "Webhooks",
        "response": "empty",
    },
    ("POST", "/webhooks/{webhook_id}/replay"): {
        "summary": "Resend every failed delivery of events since a moment (the webhook must be active)",
        "tag": "Webhooks",
        "body": ReplayRequest,
        "response": "single:ReplayResult",
    },
    ("GET", "/events"): {
        "summary": "List events with their delivery status",
        "tag": "Events",
        "response": "collection:EventRecord",
        "params": [
            q("type", "Event type.", {"type": "string", "enum": list(EVENT_TYPES)}),
            q("link_token_id", "Link token id.", UUID_PARAM),
            q("account_id", "Account id.", UUID_PARAM),
            q(
                "since",
                "Only events at or after this ISO 8601 datetime (no offset: UTC).",
                {"type": "string", "format": "date-time"},
            ),
            *PAGE,
        ],
    },
    ("GET", "/events/{event_id}"): {
        "summary": "Get an event with every delivery attempt",
        "tag": "Events",
        "response": "single:EventRecord",
    },
    ("POST", "/events/{event_id}/resend"): {
        "summary": "Resend an event to one webhook or all subscribed ones",
        "tag": "Events",
        "body": ResendRequest,
        "response": "single:EventRecord",
        "errors": {"409": "The webhook is paused, or no active webhook subscribes to the event (CONFLICT)."},
    },
    ("GET", "/sandbox/test_data"): {
        "summary": "Sandbox test credentials, identities and SSNs",
        "tag": "Sandbox",
        "response": "single:SandboxTestData",
        "sandbox": True,
    },
    ("POST", "/sandbox/link_tokens/{link_token_id}/complete"): {
        "summary": "Complete a Link flow headlessly",
        "tag": "Sandbox",
        "body": CompletionRequest,
        "response": "single:LinkCompletion",
        "sandbox": True,
    },
    ("GET", "/sandbox/clock"): {
        "summary": "The workspace clock",
        "tag": "Sandbox",
        "response": "single:Clock",
        "sandbox": True,
    },
    ("POST", "/sandbox/clock/advance"): {
        "summary": "Advance the workspace clock and fire what became due",
        "tag": "Sandbox",
        "body": ClockAdvanceRequest,
        "response": "single:ClockAdvance",
        "sandbox": True,
    },
    ("POST", "/sandbox/clock/jump"): {
        "summary": "Move the workspace clock to a later moment and fire what became due",
        "tag": "Sandbox",
        "body": ClockJumpRequest,
        "response": "single:ClockAdvance",
        "sandbox": True,
    },
    ("POST", "/sandbox/clock/advance_to_next"): {
        "summary": "Advance the workspace clock to its next scheduled item and fire it",
        "tag": "Sandbox",
        "body": ClockNextRequest,
        "response": "single:ClockAdvanceToNext",
        "sandbox": True,
        "errors": {
            "409": "Nothing is scheduled (NOTHING_SCHEDULED), the next item is more than 400 days away "
            "(NEXT_ITEM_TOO_FAR), or it is past the clock's limit of 100 years ahead (CLOCK_LIMIT_REACHED)."
        },
    },
    ("POST", "/sandbox/webhooks/{webhook_id}/test"): {
        "summary": "Send a sample event to a webhook",
        "tag": "Sandbox",
        "body": TestEventRequest,
        "response": "single:EventRecord",
        "sandbox": True,
    },
    ("POST", "/sandbox/listen"): {
        "summary": "Open a listener: the key's relayed webhook (console listen), created or updated",
        "tag": "Sandbox",
        "body": ListenRequest,
        "response": "single:Listener",
        "sandbox": True,
    },
    ("POST", "/sandbox/listen/{webhook_id}/poll"): {
        "summary": "Fetch due deliveries of a relayed webhook, signed, under a lease (answers at once)",
        "tag": "Sandbox",
        "body": PollRequest,
        "response": "single:RelayPoll",
        "sandbox": True,
    },
    ("POST", "/sandbox/listen/{webhook_id}/deliveries/{attempt_id}/result"): {
        "summary": "Report what the local endpoint answered to a relayed delivery (recorded as an attempt)",
        "tag": "Sandbox",
        "body": RelayResultRequest,
        "response": "single:RelayedResult",
        "sandbox": True,
    },
    ("POST", "/sandbox/webhooks/{webhook_id}/conformance"): {
        "summary": "Start an endpoint conformance run against a webhook; answers at once with the queued run",
        "tag": "Sandbox",
        "body": ConformanceRequest,
        "response": "single:ConformanceRun",
        "status": "202",
        "sandbox": True,
        "errors": {
            "409": "A run of this webhook is already queued or running (CONFLICT); poll it, see Retry-After.",
            "429": "Too many runs of this workspace at a time (RATE_LIMIT_EXCEEDED); see Retry-After.",
        },
    },
    ("GET", "/sandbox/webhooks/{webhook_id}/conformance"): {
        "summary": "The webhook's latest conformance run, with its report once done (404 before the first run)",
        "tag": "Sandbox",
        "response": "single:ConformanceRun",
        "sandbox": True,
    },
    ("GET", "/sandbox/webhooks/{webhook_id}/conformance/{run_id}"): {
        "summary": "One conformance run of the webhook, with its report once done",
        "tag": "Sandbox",
        "response": "single:ConformanceRun",
        "sandbox": True,
    },
    ("GET", "/openapi.json"): {
        "summary": "This document",
        "tag": "Meta",
        "response": "object",
        "public": True,
    },
}

BODIES = [details["body"] for details in OPERATIONS.values() if "body" in details]
# Each operation's operationId: the name a generated client gives its function (`create_link_token`, not
# `post_sandbox_link_tokens_link_token_id_complete`). Unique; a test checks every operation has one.
OPERATION_IDS: dict[tuple[str, str], str] = {
    ("POST", "/link_tokens"): "createLinkToken",
    ("GET", "/platforms"): "listPlatforms",
    ("GET", "/platforms/{platform_id}"): "getPlatform",
    ("GET", "/employers"): "listEmployers",
    ("GET", "/employers/{employer_id}"): "getEmployer",
    ("GET", "/search"): "search",
    ("GET", "/jobs"): "listJobs",
    ("GET", "/jobs/{job_id}"): "getJob",
    ("GET", "/accounts"): "listAccounts",
    ("GET", "/accounts/{account_id}"): "getAccount",
    ("GET", "/accounts/{account_id}/employment"): "getAccountEmployment",
    ("GET", "/accounts/{account_id}/income"): "getAccountIncome",
    ("POST", "/webhooks"): "createWebhook",
    ("GET", "/webhooks"): "listWebhooks",
    ("GET", "/webhooks/{webhook_id}"): "getWebhook",
    ("PUT", "/webhooks/{webhook_id}"): "updateWebhook",
    ("DELETE", "/webhooks/{webhook_id}"): "deleteWebhook",
    ("POST", "/webhooks/{webhook_id}/replay"): "replayWebhook",
    ("GET", "/events"): "listEvents",
    ("GET", "/events/{event_id}"): "getEvent",
    ("POST", "/events/{event_id}/resend"): "resendEvent",
    ("GET", "/sandbox/test_data"): "getSandboxTestData",
    ("POST", "/sandbox/link_tokens/{link_token_id}/complete"): "completeLinkToken",
    ("GET", "/sandbox/clock"): "getClock",
    ("POST", "/sandbox/clock/advance"): "advanceClock",
    ("POST", "/sandbox/clock/jump"): "jumpClock",
    ("POST", "/sandbox/clock/advance_to_next"): "advanceClockToNext",
    ("POST", "/sandbox/webhooks/{webhook_id}/test"): "sendTestEvent",
    ("POST", "/sandbox/listen"): "openListener",
    ("POST", "/sandbox/listen/{webhook_id}/poll"): "pollListener",
    ("POST", "/sandbox/listen/{webhook_id}/deliveries/{attempt_id}/result"): "reportListenerResult",
    ("POST", "/sandbox/webhooks/{webhook_id}/conformance"): "startConformanceRun",
    ("GET", "/sandbox/webhooks/{webhook_id}/conformance"): "getLatestConformanceRun",
    ("GET", "/sandbox/webhooks/{webhook_id}/conformance/{run_id}"): "getConformanceRun",
    ("GET", "/openapi.json"): "getOpenApiDocument",
}
assert len(set(OPERATION_IDS.values())) == len(OPERATION_IDS), "an operationId is used twice"

# A request body that works as it stands in the sandbox (the README's first calls): Schemathesis sends each
# in its examples phase and the console's "Try it" could start from them. A test posts them.
_TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "1234567890"}
EXAMPLES: dict[tuple[str, str], dict] = {
    ("POST", "/link_tokens"): {
        "org_name": "Acme",
        "end_user_id": "user-1",
        "required_jobs": ["direct_deposit_switch"],
        "allocation": {"targets": [_TARGET]},
    },
    ("POST", "/sandbox/link_tokens/{link_token_id}/complete"): {
        "platform_id": str(PLATFORM_IDS["paycrest"]),
        "credentials": {"username": "user_good", "password": "pass_good"},
    },
    ("POST", "/webhooks"): {
        "url": "https://example.com/hooks",
        "status": "active",
        "version": LATEST_VERSION,
        "enabled_events": ["account.added", "direct_deposit_switch.added"],
    },
    ("POST", "/sandbox/webhooks/{webhook_id}/test"): {"event": "account.added"},
    ("POST", "/sandbox/clock/advance"): {"hours": 1},
}


def _link(operation_id: str, **parameters: str) -> dict:
    return {"operationId": operation_id, "parameters": parameters}


_TOKEN_ID = "$response.body#/data/id"
_WEBHOOK_ID = "$response.body#/data/id"
# OpenAPI links: where an answer's ids go next (a generated client's docs show them; Schemathesis's stateful
# phase follows them, so it tests the operations on records that exist).
LINKS: dict[tuple[str, str], dict[str, dict]] = {
    ("POST", "/link_tokens"): {
        "complete": _link("completeLinkToken", link_token_id=_TOKEN_ID),
        "jobs": _link("listJobs", link_token_id=_TOKEN_ID),
        "accounts": _link("listAccounts", link_token_id=_TOKEN_ID),
        "events": _link("listEvents", link_token_id=_TOKEN_ID),
    },
    ("POST", "/sandbox/link_tokens/{link_token_id}/complete"): {
        "job": _link("getJob", job_id="$response.body#/data/job_id"),
        "account": _link("getAccount", account_id="$response.body#/data/account_id"),
        "employment": _link("getAccountEmployment", account_id="$response.body#/data/account_id"),
        "income": _link("getAccountIncome", account_id="$response.body#/data/account_id"),
    },
    ("POST", "/webhooks"): {
        name: _link(operation_id, webhook_id=_WEBHOOK_ID)
        for name, operation_id in (
            ("get", "getWebhook"),
            ("update", "updateWebhook"),
            ("delete", "deleteWebhook"),
            ("replay", "replayWebhook"),
            ("test", "sendTestEvent"),
            ("conformance", "startConformanceRun"),
            ("latest_conformance", "getLatestConformanceRun"),
        )
    },
    ("POST", "/sandbox/webhooks/{webhook_id}/test"): {
        "event": _link("getEvent", event_id="$response.body#/data/id"),
        "resend": _link("resendEvent", event_id="$response.body#/data/id"),
    },
    ("POST", "/sandbox/webhooks/{webhook_id}/conformance"): {
        "run": _link(
            "getConformanceRun",
            webhook_id="$response.body#/data/webhook_id",
            run_id="$response.body#/data/id",
        ),
    },
    ("POST", "/sandbox/listen"): {"poll": _link("pollListener", webhook_id="$response.body#/data/id")},
}

REQUEST_SCHEMAS = openapi_schemas(BODIES)
# One named schema, so a generated client has one ServiceVersion type rather than one per operation.
SERVICE_VERSION = {
    "type": "string",
    "enum": list(SUPPORTED_VERSIONS),
    "description": "An API version (Service-Version header; a webhook's version).",
}
SCHEMAS = {**RESPONSE_SCHEMAS, **REQUEST_SCHEMAS, "ServiceVersion": SERVICE_VERSION}
assert not set(RESPONSE_SCHEMAS) & set(REQUEST_SCHEMAS), "a request model is named like a response schema"

ERRORS = {
    "400": "Invalid request: a missing or unsupported Service-Version, a bad query or path parameter "
    "(any NUL character; a cursor this list did not return; a value outside the parameter's schema), "
    "or an invalid body. `fields` names each bad parameter or body field.",
    "401": "Missing, wrong, revoked or other-mode API secret.",
    "403": "Forbidden: a sandbox-only endpoint at another base URL (SANDBOX_ONLY), or a limit reached (see code).",
    "404": "Not found (or another workspace's or mode's).",
    "409": "Conflicts with the current state (see message).",
    "413": "Body larger than the limit.",
    "415": "Body is not JSON: send Content-Type: application/json.",
    "429": "Rate limit exceeded; see Retry-After.",
    "503": "The database is saturated or did not answer in time (SERVICE_UNAVAILABLE); see Retry-After.",
}
# Every POST takes an Idempotency-Key (docs/api.md, "Safe retries").
IDEMPOTENT_ERRORS = {
    "409": "Idempotency-Key reused with another request (IDEMPOTENCY_KEY_REUSED), still in use by a running "
    "request (IDEMPOTENCY_KEY_IN_USE; see Retry-After), or its first request's response was lost "
    "(IDEMPOTENCY_RESPONSE_LOST).",
}
REPLAY_HEADERS = {
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored response of an earlier request with the same "
        "Idempotency-Key (the request did not run again); absent otherwise.",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "Original-Request": {
        "description": "On a replay, the x-service-request-id of the request that produced the response.",
        "schema": {"type": "string", "format": "uuid"},
    },
}


def _error_codes(path: str, details: dict) -> list[str]:
    """The error statuses an operation can answer (each documented, so a client can expect them)."""
    codes = {"400", "401", "429", "503", *details.get("errors", ())}
    if "{" in path:
        codes.add("404")
    if details.get("sandbox"):
        codes.add("403")
    if "body" in details:
        codes |= {"413", "415"}
    return sorted(codes)


def document_path(rule: str, mode: str) -> str:
    """A route of `mode`'s API blueprint (`/sandbox/v1/jobs/<job_id>`) as the document's path (`/jobs/{job_id}`)."""
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule[len(URL_PREFIXES[mode] + "/v1") :])


def route_operations() -> set[tuple[str, str]]:
    """(method, path) of every route of the API blueprint, in OpenAPI path syntax."""
    found = set()
    for rule in current_app.url_map.iter_rules():
        if not rule.endpoint.startswith("api_sandbox."):
            continue
        path = document_path(rule.rule, "sandbox")
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            found.add((method, path))
    return found


def query_parameters(method: str, rule: str, mode: str) -> Mapping[str, bool] | None:
    """The query parameters the document gives the operation of a route of `mode`'s API blueprint, each with
    whether it may be repeated (an array, `supported_jobs`), or None: not an operation of the document.
    `console.api.conventions` refuses any other, and a repeat of any other (wired in `console.api.init_app`)."""
    return _query_parameters("GET" if method == "HEAD" else method, document_path(rule, mode))


@functools.cache
def _query_parameters(method: str, path: str) -> Mapping[str, bool] | None:
    details = OPERATIONS.get((method, path))
    if details is None:
        return None
    return MappingProxyType(
        {
            param["name"]: param.get("schema", {}).get("type") == "array"
            for param in details.get("params", ())
            if param.get("in") == "query"
        }
    )


def _response(kind: str, status: str = "200") -> dict:
    if kind == "empty":
        return {"204": {"description": "Deleted; no body."}}
    if kind == "object":
        return {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}}
    shape, name = kind.split(":")
    schema = single(name) if shape == "single" else collection(name)
    description = "Accepted: queued, to be polled" if status == "202" else "OK"
    return {status: {"description": description, "content": {"application/json": {"schema": schema}}}}


def _operation(method: str, path: str, details: dict) -> dict:
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
        for name in re.findall(r"{([^}]+)}", path)
    ]
    idempotent = method == "POST" and not details.get("public")
    if not details.get("public"):
        params.append({"$ref": "#/components/parameters/ServiceVersion"})
    if idempotent:
        params.append({"$ref": "#/components/parameters/IdempotencyKey"})
    params += details.get("params", [])
    success = details.get("status", "200")
    responses = _response(details["response"], success)
    if not details.get("public"):
        errors = dict({**ERRORS, **IDEMPOTENT_ERRORS} if idempotent else ERRORS)
        for status, text in details.get("errors", {}).items():  # this operation's own reasons
            errors[status] = f"{errors[status]} Or: {text}" if status in errors else text
        responses.update(
            {
                code: {"description": errors[code], "content": {"application/json": {"schema": ref("Error")}}}
                for code in sorted({*_error_codes(path, details), *(IDEMPOTENT_ERRORS if idempotent else ())})
            }
        )
    if idempotent:
        responses[success]["headers"] = dict(REPLAY_HEADERS)
    if success == "202":
        responses[success].setdefault("headers", {})["Location"] = {
            "description": "The queued run's URL (a path on this server): poll it until `status` is `done`.",
            "required": True,
            "schema": {"type": "string"},
        }
    if (method, path) in LINKS:
        responses[success]["links"] = LINKS[(method, path)]
    operation = {
        "operationId": OPERATION_IDS[(method, path)],
        "summary": details["summary"],
        "tags": [details["tag"]],
        "parameters": params,
        "responses": responses,
    }
    if details.get("sandbox"):
        operation["description"] = "Sandbox only: other modes answer 403 SANDBOX_ONLY."
    if details.get("public"):
        operation["security"] = []
    if "body" in details:
        model = details["body"]
        operation["requestBody"] = {
            # A body whose every field is optional may be left out altogether.
            "required": any(field.is_required() for field in model.model_fields.values()),
            "content": {"application/json": {"schema": ref(model.__name__)}},
        }
        if (method, path) in EXAMPLES:
            operation["requestBody"]["content"]["application/json"]["example"] = EXAMPLES[(method, path)]
    return operation


def build_document(server_url: str) -> dict:
    paths: dict[str, dict] = {}
    for method, path in sorted(route_operations()):
        details = OPERATIONS.get((method, path))
        if details is None:
            continue  # the drift test names it
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, details)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Payroll Connectivity Service",
            "version": LATEST_VERSION,
            "description": "Send `x-api-secret` and `Service-Version` on every call. "
            f"Supported versions: {', '.join(SUPPORTED_VERSIONS)}.",
        },
        "servers": [{"url": server_url}],
        "security": [{"ApiSecret": []}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"ApiSecret": {"type": "apiKey", "in": "header", "name": "x-api-secret"}},
            "parameters": {
                "ServiceVersion": {
                    "name": "Service-Version",
                    "in": "header",
                    "required": True,
                    "schema": ref("ServiceVersion"),
                },
                "IdempotencyKey": {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "description": "Makes a POST safe to retry: the first response for this key is stored for "
                    "24 hours and returned again to a retry with the same method, path and body "
                    "(Idempotent-Replayed: true). 1-255 printable ASCII characters; a UUID is a good key.",
                    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"},
                },
            },
        },
    }


@routes.get("/openapi.json")
@public
def openapi_document():
    """The document for this base URL (its `servers` entry names the mode's own base URL)."""
    prefix = request.path[: -len("/openapi.json")]
    return jsonify(build_document(request.host_url.rstrip("/") + prefix))
