"""JSON Schemas of the API's responses, for the OpenAPI document.

Request bodies are not described here: their schemas come from the pydantic models that validate
them (`console.api.openapi.BODIES`), so the document cannot drift from what is enforced.
"""

from __future__ import annotations

from console.conformance.sender import REASONS
from console.events.models import EVENT_TYPES
from console.jobs.plans import OUTCOMES
from console.webhooks.models import DELIVERY_STATUSES

UUID = {"type": "string", "format": "uuid"}
DATETIME = {
    "type": "string",
    "format": "date-time",
    "description": "UTC, always with microseconds: YYYY-MM-DDTHH:MM:SS.ffffff+00:00",
}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
INT = {"type": "integer"}
NULL_UUID = {"type": ["string", "null"], "format": "uuid"}
NULL_DATETIME = {**DATETIME, "type": ["string", "null"]}
NULL_STR = {"type": ["string", "null"]}
NULL_INT = {"type": ["integer", "null"]}


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(properties: dict, required: list[str] | None = None, **extra) -> dict:
    schema = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = required
    return schema


def single(name: str) -> dict:
    return obj({"data": ref(name)}, ["data"])


def collection(name: str) -> dict:
    meta = obj({"count": INT, "next_cursor": {"type": ["string", "null"]}}, ["count", "next_cursor"])
    return obj({"meta": meta, "data": {"type": "array", "items": ref(name)}}, ["meta", "data"])


CLOCK = {
    "now": {**DATETIME, "description": "The workspace clock: real time plus offset_seconds."},
    "offset_seconds": {"type": "number"},
}
MFA_FIELDS = ("method", "username", "right_code", "wrong_code_example", "wrong_code_error")
IDENTITY_FIELDS = (
    "social_security_number",
    "first_name",
    "last_name",
    "date_of_birth",
    "mobile_phone_number",
    "home_address_zip_code",
    "email",
)
FEDERAL_FIELDS = ("social_security_number", "first_name", "last_name", "scenario", "description")

RESPONSE_SCHEMAS: dict[str, dict] = {
    "Error": obj(
        {
            "error": obj(
                {
                    "type": STR,
                    "code": STR,
                    "message": STR,
                    "status_code": INT,
                    "fields": {
                        "type": "array",
                        "items": obj({"name": STR, "message": STR}, ["name", "message"]),
                    },
                },
                ["type", "code", "message", "status_code", "fields"],
            )
        },
        ["error"],
    ),
    "LinkToken": obj(
        {"id": UUID, "expires": DATETIME, "mode": STR, "token": STR}, ["id", "expires", "mode", "token"]
    ),
    "Platform": obj(
        {
            "id": UUID,
            "name": STR,
            "type": {"type": "string", "enum": ["payroll", "benefits"]},
            "partner": BOOL,
            "supported_jobs": {"type": "array", "items": STR},
            "amount_supported": BOOL,
            "mfa_methods": {"type": "array", "items": STR},
            "login_hint": STR,
        },
        ["id", "name"],
    ),
    "Employer": obj(
        {
            "id": UUID,
            "name": STR,
            "platform_id": UUID,
            "platform_name": STR,
            "industry": STR,
            "city": STR,
            "state": STR,
        },
        ["id", "name", "platform_id"],
    ),
    "SearchHit": obj(
        {
            "type": {"type": "string", "enum": ["employer", "platform"]},
            "id": UUID,
            "name": STR,
            "platform_id": UUID,
            "platform_name": STR,
            "platform_type": STR,
        },
        ["type", "id", "name", "platform_id"],
    ),
    "Job": obj(
        {
            "id": UUID,
            "account_id": UUID,
            "link_token_id": UUID,
            "name": STR,
            "timestamp": DATETIME,
            "outcome": {
                "type": "string",
                "enum": ["success", "error", "pending", "processing", "sent", "failure"],
            },
            "params": obj(
                {
                    "action": {"type": "string", "enum": ["full_switch", "partial_switch"]},
                    "allocation": obj(
                        {
                            "type": STR,
                            "value": INT,
                            "target": obj({"account_type": STR}),
                        }
                    ),
                }
            ),
        },
        ["id", "account_id", "link_token_id", "name", "timestamp", "outcome", "params"],
    ),
    "Account": obj(
        {
            "id": UUID,
            "end_user_id": {"type": ["string", "null"]},
            "link_token_id": UUID,
            "platform_id": UUID,
            "platform_name": STR,
            "created_at": DATETIME,
            "connected": BOOL,
            "monitoring_status": STR,
        },
        ["id", "link_token_id", "platform_id", "created_at", "connected"],
    ),
    "Employment": obj(
        {
            "id": UUID,
            "account_id": UUID,
            "employer_id": UUID,
            "employer_name": STR,
            "status": {"type": "string", "enum": ["active", "inactive"]},
            "start_date": {"type": "string", "format": "date"},
            "end_date": {"type": ["string", "null"], "format": "date", "description": "null while active."},
            "job_title": STR,
            "created_at": DATETIME,
        },
        [
            "id",
            "account_id",
            "employer_id",
            "employer_name",
            "status",
            "start_date",
            "end_date",
            "job_title",
            "created_at",
        ],
    ),
    "Income": obj(
        {
            "id": UUID,
            "account_id": UUID,
            "employer_name": STR,
            "currency": {"type": "string", "enum": ["USD"]},
            "annual_income": {**INT, "description": "Cents."},
            "pay_frequency": {**STR, "description": "weekly, biweekly, semimonthly or monthly."},
            "pay_period_income": {**INT, "description": "Cents: annual_income over the periods of a year."},
            "created_at": DATETIME,
        },
        [
            "id",
            "account_id",
            "employer_name",
            "currency",
            "annual_income",
            "pay_frequency",
            "pay_period_income",
            "created_at",
        ],
    ),
    "Webhook": obj(
        {
            "id": UUID,
            "url": {"type": "string", "format": "uri"},
            "status": {"type": "string", "enum": ["active", "paused"]},
            "enabled_events": {"type": "array", "items": STR},
            "version": STR,
            "mode": {"type": "string", "enum": ["sandbox", "development", "production"]},
            "api_key_id": {**UUID, "description": "The key that owns it: its secret signs the deliveries."},
            "created_at": DATETIME,
            "updated_at": DATETIME,
            "paused_at": NULL_DATETIME,
            "pause_reason": {
                "type": ["string", "null"],
                "enum": ["failing", "requested", None],
                "description": "failing: 30 days without a 200; requested: paused by a PUT.",
            },
            "failing_since": NULL_DATETIME,
            "last_success_at": NULL_DATETIME,
            "relayed": {
                **BOOL,
                "description": "Deliveries go through a listener (console listen); url is relay://console-listen.",
            },
        },
        [
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
        ],
    ),
    "Listener": obj(
        {
            "id": UUID,
            "url": STR,
            "status": {"type": "string", "enum": ["active", "paused"]},
            "enabled_events": {"type": "array", "items": STR},
            "version": STR,
            "relayed": BOOL,
            "listener_seen_at": {**DATETIME, "type": ["string", "null"]},
            "listener_connected": BOOL,
            "created": {**BOOL, "description": "false: the key's existing listener, updated."},
        },
        ["id", "url", "status", "enabled_events", "version", "created"],
    ),
    "RelayedRequest": obj(
        {
            "attempt_id": {**UUID, "description": "Report the answer under this id."},
            "kind": {"type": "string", "enum": ["delivery", "exchange"]},
            "delivery_id": {"type": ["string", "null"], "format": "uuid"},
            "event_id": {"type": ["string", "null"], "format": "uuid"},
            "event_type": {"type": ["string", "null"]},
            "method": STR,
            "headers": {"type": "object", "additionalProperties": STR},
            "body": {**STR, "description": "Send these exact bytes (UTF-8): the signature covers them."},
            "timeout_seconds": {"type": "number"},
            "lease_expires_at": DATETIME,
        },
        ["attempt_id", "kind", "method", "headers", "body", "timeout_seconds", "lease_expires_at"],
    ),
    "RelayPoll": obj(
        {
            "requests": {"type": "array", "items": ref("RelayedRequest")},
            "webhook": obj({"id": UUID, "status": {"type": "string", "enum": ["active", "paused"]}}),
        },
        ["requests", "webhook"],
    ),
    "RelayedResult": obj(
        {
            "attempt_id": UUID,
            "delivery_id": {"type": ["string", "null"], "format": "uuid"},
            "status": {"type": "string", "enum": ["pending", "delivered", "failed", "answered"]},
            "attempt_count": INT,
            "next_attempt_at": {**DATETIME, "type": ["string", "null"]},
        },
        ["attempt_id", "status"],
    ),
    "Event": obj(
        {"event": STR, "event_id": UUID, "payload": {"type": "object"}}, ["event", "event_id", "payload"]
    ),
    "DeliveryAttempt": obj(
        {
            "number": {**INT, "description": "1-based over the delivery's life (resends included)."},
            "at": DATETIME,
            "outcome": {"type": "string", "description": "delivered, retry or failed."},
            "status_code": NULL_INT,
            "latency_ms": INT,
            "response_excerpt": {**NULL_STR, "description": "At most the first 1 KB of an HTTP answer."},
            "error": NULL_STR,
            "warning": NULL_STR,
            "next_attempt_at": {**NULL_DATETIME, "description": "When a retry was scheduled."},
        },
        [
            "number",
            "at",
            "outcome",
            "status_code",
            "latency_ms",
            "response_excerpt",
            "error",
            "warning",
            "next_attempt_at",
        ],
    ),
    "Delivery": obj(
        {
            "id": UUID,
            "webhook_id": UUID,
            "status": {"type": "string", "enum": list(DELIVERY_STATUSES)},
            "skip_reason": NULL_STR,
            "test": {**BOOL, "description": "A sandbox test event's delivery."},
            "attempt_count": INT,
            "last_attempt_at": NULL_DATETIME,
            "last_status_code": NULL_INT,
            "last_error": NULL_STR,
            "warning": {**NULL_STR, "description": "The latest attempt's."},
            "delivered_at": NULL_DATETIME,
            "next_attempt_at": {**NULL_DATETIME, "description": "Set while pending."},
            "attempts": {
                "type": "array",
                "items": ref("DeliveryAttempt"),
                "description": "Every attempt, oldest first: only in GET /v1/events/{event_id}.",
            },
        },
        [
            "id",
            "webhook_id",
            "status",
            "skip_reason",
            "test",
            "attempt_count",
            "last_attempt_at",
            "last_status_code",
            "last_error",
            "warning",
            "delivered_at",
            "next_attempt_at",
        ],
    ),
    "EventRecord": obj(
        {
            "id": UUID,
            "type": {"type": "string", "enum": list(EVENT_TYPES)},
            "created_at": DATETIME,
            "link_token_id": NULL_UUID,
            "account_id": NULL_UUID,
            "end_user_id": NULL_STR,
            "via_platform_matching": BOOL,
            "payload": {
                "type": "object",
                "description": "The event's payload (latest version), as delivered.",
            },
            "deliveries": {
                "type": "array",
                "items": ref("Delivery"),
                "description": "One per webhook the event went (or goes) to.",
            },
        },
        [
            "id",
            "type",
            "created_at",
            "link_token_id",
            "account_id",
            "end_user_id",
            "via_platform_matching",
            "payload",
            "deliveries",
        ],
    ),
    "ReplayResult": obj(
        {"webhook_id": UUID, "since": DATETIME, "replayed": {**INT, "description": "Deliveries sent again."}},
        ["webhook_id", "since", "replayed"],
    ),
    "ScheduledItem": obj(
        {
            "task_id": {**NULL_UUID, "description": "null for a webhook delivery."},
            "kind": {
                **STR,
                "description": "job.retry, job.federal_review, link_token.expire, webhook.pause_check, "
                "webhook.delivery, ...",
            },
            "due_at": {**DATETIME, "description": "Workspace clock."},
            "description": STR,
            "payload": {"type": "object"},
        },
        ["task_id", "kind", "due_at", "description", "payload"],
    ),
    "FiredTask": obj(
        {
            "task_id": UUID,
            "kind": STR,
            "due_at": {**DATETIME, "description": "Workspace clock."},
            "summary": STR,
        },
        ["task_id", "kind", "due_at", "summary"],
    ),
    "Clock": obj(
        {**CLOCK, "next_due": {"type": "array", "items": ref("ScheduledItem"), "maxItems": 10}},
        ["now", "offset_seconds", "next_due"],
    ),
    "ClockAdvance": obj(
        {
            **CLOCK,
            "fired": {"type": "array", "items": ref("FiredTask"), "description": "What ran, in due order."},
        },
        ["now", "offset_seconds", "fired"],
    ),
    "ClockAdvanceToNext": obj(
        {
            **CLOCK,
            "advanced_to": ref("ScheduledItem"),
            "fired": {"type": "array", "items": ref("FiredTask"), "description": "What ran, in due order."},
        },
        ["now", "offset_seconds", "advanced_to", "fired"],
    ),
    "LinkCompletion": obj(
        {
            "link_token_id": UUID,
            "account_id": NULL_UUID,
            "job_id": NULL_UUID,
            "outcome": {
                "type": ["string", "null"],
                "enum": [*OUTCOMES, None],
                "description": "The job's outcome (error when the switch failed at once); null without a job.",
            },
            "platform_id": NULL_UUID,
            "state": {**STR, "description": "The flow's state (screen): success once completed."},
            "via_platform_matching": BOOL,
            "completed_at": NULL_DATETIME,
            "client_events": {
                "type": "array",
                "items": obj({"name": STR, "payload": {"type": "object"}}, ["name", "payload"]),
                "description": "The events the SDK would have received, in order.",
            },
        },
        [
            "link_token_id",
            "account_id",
            "job_id",
            "outcome",
            "platform_id",
            "state",
            "via_platform_matching",
            "completed_at",
            "client_events",
        ],
    ),
    "SandboxTestData": obj(
        {
            "password": STR,
            "mfa_code": STR,
            "credentials": {
                "type": "array",
                "items": obj(
                    {
                        "username": STR,
                        "password": STR,
                        "scenario": NULL_STR,
                        "mfa_method": NULL_STR,
                        "error_code": NULL_STR,
                        "description": STR,
                    },
                    ["username", "password", "scenario", "mfa_method", "error_code", "description"],
                ),
            },
            "mfa": {
                "type": "array",
                "items": obj(
                    dict.fromkeys(MFA_FIELDS, STR),
                    list(MFA_FIELDS),
                ),
            },
            "platform_matching": {
                "type": "array",
                "items": obj(
                    {
                        "case": {"type": "string", "enum": ["one", "several", "none"]},
                        "platform_matching": obj(dict.fromkeys(IDENTITY_FIELDS, STR), list(IDENTITY_FIELDS)),
                        "matched_platform_ids": {"type": "array", "items": UUID},
                        "mfa_code": STR,
                        "description": STR,
                    },
                    ["case", "platform_matching", "matched_platform_ids", "mfa_code", "description"],
                ),
            },
            "federal_benefits": {
                "type": "array",
                "items": obj(dict.fromkeys(FEDERAL_FIELDS, STR), list(FEDERAL_FIELDS)),
            },
        },
        ["password", "mfa_code", "credentials", "mfa", "platform_matching", "federal_benefits"],
    ),
    "ConformanceSent": obj(
        {
            "method": {"type": "string", "enum": ["POST"]},
            "url": {"type": "string", "format": "uri"},
            "headers": {
                "type": "object",
                "additionalProperties": STR,
                "description": "As sent, x-service-signature and x-service-conformance: true included.",
            },
            "body": {"type": "string", "description": "The exact body, as text."},
        },
        ["method", "url", "headers", "body"],
    ),
    "ConformanceReceived": obj(
        {
            "status": {"type": ["integer", "null"], "description": "null when no HTTP answer came."},
            "latency_ms": INT,
            "headers": {
                "type": "object",
                "additionalProperties": STR,
                "description": "Only Content-Type, Content-Length, Retry-After, X-Request-Id and Request-Id, "
                "as received (each value at most 200 characters).",
            },
            "body_excerpt": {
                "type": ["string", "null"],
                "description": "At most the first 1 KB (UTF-8) of the answer's body.",
            },
            "error": {
                "type": ["string", "null"],
                "description": "The network error, when there was no answer.",
            },
            "reason": {
                "type": ["string", "null"],
                "enum": [*REASONS, None],
                "description": "Why there was no answer, as a code to branch on (error is for people): "
                "timeout, refused (the egress rules refused the URL: nothing was sent), unreachable, not_http. "
                "null when an answer came. Absent from reports made before it was recorded.",
            },
        },
        ["status", "latency_ms", "headers", "body_excerpt", "error"],
    ),
    "ConformanceCheck": obj(
        {
            "name": {
                "type": "string",
                "description": "signed_event, forged_signature, altered_body, stale_timestamp, duplicate_event, "
                "event:<type>, event:direct_deposit_switch.added:without_action, unsubscribed_event_not_sent.",
            },
            "title": STR,
            "passed": BOOL,
            "detail": STR,
            "warning": {
                "type": ["string", "null"],
                "description": "Set on a passed check that is not quite right (slow answer, 2xx other than 200, "
                "a shape not valid for the webhook's version); never fails the check.",
            },
            "sent": {"oneOf": [ref("ConformanceSent"), {"type": "null"}], "description": "The last request."},
            "received": {
                "oneOf": [ref("ConformanceReceived"), {"type": "null"}],
                "description": "The answer to the last request.",
            },
            "exchanges": {
                "type": "array",
                "items": obj(
                    {"sent": ref("ConformanceSent"), "received": ref("ConformanceReceived")},
                    ["sent", "received"],
                ),
                "description": "Every request of the check in order (two for duplicate_event, none for "
                "unsubscribed_event_not_sent).",
            },
        },
        ["name", "title", "passed", "detail", "warning", "sent", "received", "exchanges"],
    ),
    "ConformanceReport": obj(
        {
            "webhook_id": UUID,
            "url": STR,
            "version": STR,
            "enabled_events": {"type": "array", "items": STR},
            "passed": {"type": "boolean", "description": "Every check passed (warnings do not count)."},
            "ran_at": DATETIME,
            "duration_ms": INT,
            "sample_note": STR,
            "checks": {"type": "array", "items": ref("ConformanceCheck")},
        },
        ["webhook_id", "url", "version", "enabled_events", "passed", "ran_at", "duration_ms", "checks"],
    ),
    "ConformanceRun": obj(
        {
            "id": UUID,
            "webhook_id": UUID,
            "status": {
                "type": "string",
                "enum": ["queued", "running", "done"],
                "description": "queued until the worker takes it, running while it sends, done with a report.",
            },
            "created_at": DATETIME,
            "started_at": {**DATETIME, "type": ["string", "null"]},
            "finished_at": {**DATETIME, "type": ["string", "null"]},
            "passed": {"type": ["boolean", "null"], "description": "The report's `passed`; null until done."},
            "report": {
                "oneOf": [ref("ConformanceReport"), {"type": "null"}],
                "description": "null until done (and for a run whose webhook was deleted before it ran).",
            },
        },
        ["id", "webhook_id", "status", "created_at", "started_at", "finished_at", "passed", "report"],
    ),
}
