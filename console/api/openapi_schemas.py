"""JSON Schemas of the API's objects, for the OpenAPI document."""

from __future__ import annotations

UUID = {"type": "string", "format": "uuid"}
DATETIME = {
    "type": "string",
    "format": "date-time",
    "description": "UTC, always with microseconds: YYYY-MM-DDTHH:MM:SS.ffffff+00:00",
}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
INT = {"type": "integer"}


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


TARGET = obj(
    {
        "type": {"type": "string", "enum": ["checking", "savings"]},
        "routing_number": {
            "type": "string",
            "pattern": "^[0-9]{9}$",
            "description": "Passes the ABA checksum.",
        },
        "account_number": {"type": "string", "pattern": "^[0-9]{4,17}$"},
    },
    ["type", "routing_number", "account_number"],
)
PLATFORM_MATCHING = obj(
    {
        "social_security_number": {"type": "string", "pattern": "^[0-9]{9}$"},
        "social_security_last_four": {"type": "string", "pattern": "^[0-9]{4}$"},
        "first_name": STR,
        "last_name": STR,
        "date_of_birth": {"type": "string", "format": "date"},
        "mobile_phone_number": {"type": "string", "pattern": "^[0-9]{10}$"},
        "home_address_zip_code": {"type": "string", "pattern": "^[0-9]{5}$"},
        "email": {"type": "string", "format": "email"},
    },
    ["first_name", "last_name", "date_of_birth", "mobile_phone_number", "home_address_zip_code", "email"],
    description="Exactly one of social_security_number or social_security_last_four.",
)
SCHEMAS: dict[str, dict] = {
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
    "LinkTokenRequest": obj(
        {
            "org_name": STR,
            "end_user_id": {"type": "string", "description": "Your own opaque id; no personal data."},
            "end_user": obj({"platform_matching": PLATFORM_MATCHING}),
            "allocation": obj(
                {
                    "targets": {"type": "array", "minItems": 1, "items": TARGET},
                    "type": {"type": "string", "enum": ["amount", "percent"]},
                    "value": {
                        "type": "integer",
                        "description": "Cents for amount, whole percent for percent.",
                    },
                },
                ["targets"],
            ),
            "required_jobs": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "string",
                    "enum": ["direct_deposit_switch", "employment", "income", "identity"],
                },
            },
            "account_id": UUID,
            "platform_id": UUID,
            "employer_id": UUID,
            "skip_intro_screen": BOOL,
            "amount": {"type": "integer", "minimum": 1, "description": "Pre-configured amount in cents."},
            "disable_direct_deposit_splitting": BOOL,
        },
        ["org_name", "allocation", "required_jobs"],
        additionalProperties=False,
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
            "employer_name": STR,
            "status": STR,
            "start_date": {"type": "string", "format": "date"},
            "account_id": UUID,
            "created_at": DATETIME,
        },
        ["id", "employer_name", "status", "account_id"],
    ),
    "Webhook": obj(
        {
            "id": UUID,
            "url": {"type": "string", "format": "uri"},
            "status": {"type": "string", "enum": ["active", "paused"]},
            "enabled_events": {"type": "array", "items": STR},
            "version": STR,
            "created_at": DATETIME,
            "updated_at": DATETIME,
        },
        ["id", "url", "status", "enabled_events", "version"],
    ),
    "WebhookRequest": obj(
        {
            "url": {
                "type": "string",
                "description": "https://; the sandbox also accepts http://localhost, 127.0.0.1, [::1].",
            },
            "status": {"type": "string", "enum": ["active", "paused"]},
            "enabled_events": {
                "type": "array",
                "items": {
                    "type": "string",
                    "enum": [
                        "account.added",
                        "direct_deposit_switch.added",
                        "employment.added",
                        "income.added",
                    ],
                },
            },
            "version": {"type": "string", "enum": ["2023-04-18", "2023-11-22"]},
        },
        ["url", "status", "enabled_events", "version"],
    ),
    "SandboxComplete": obj(
        {
            "platform_id": UUID,
            "employer_id": UUID,
            "program_id": UUID,
            "matched_platform_id": UUID,
            "credentials": obj({"username": STR, "password": STR}),
            "mfa": obj({"method": {"type": "string", "enum": ["sms", "email", "totp"]}, "code": STR}),
            "allocation": obj(
                {
                    "type": {"type": "string", "enum": ["full", "amount", "percent"]},
                    "value": INT,
                    "target_index": INT,
                }
            ),
            "federal": obj({"first_name": STR, "last_name": STR, "social_security_number": STR}),
        },
        description="Only the parts a step needs are read; see the sandbox test data.",
    ),
    "Event": obj(
        {"event": STR, "event_id": UUID, "payload": {"type": "object"}}, ["event", "event_id", "payload"]
    ),
    "Object": {"type": "object"},
}
