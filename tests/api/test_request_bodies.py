"""Every request body: wrong JSON types anywhere, NUL bytes, nesting depth, size limits, bounded error lists.

Each body endpoint is swept: every node of a valid body is replaced by values of other JSON types, and
the answer must be a 400 in the error shape naming that node's JSON path (never a 500).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from console.api.ratelimit import RateLimiter
from console.core.bodies import json_path
from console.core.errors import FieldError, ValidationFailed
from console.core.jsontext import MAX_JSON_DEPTH, json_depth
from console.world.seed_data import EMPLOYER_IDS, PLATFORM_IDS
from tests.conftest import assert_error
from tests.factories import MATCHING, TARGET

LINK_TOKEN = {
    "org_name": "Acme",
    "end_user_id": "user-123",
    "end_user": {"platform_matching": MATCHING},
    "required_jobs": ["direct_deposit_switch", "income"],
    "allocation": {"targets": [TARGET], "type": "amount", "value": 2500},
    "amount": 2500,
    "skip_intro_screen": False,
    "disable_direct_deposit_splitting": True,
}
LINK_TOKEN_ROUTED = {
    "org_name": "Acme",
    "required_jobs": ["direct_deposit_switch"],
    "allocation": {"targets": [TARGET]},
    "platform_id": str(PLATFORM_IDS["paycrest"]),
    "employer_id": str(EMPLOYER_IDS["sparrow-software"]),
}
WEBHOOK = {"url": "http://127.0.0.1:9/hook", "status": "active", "enabled_events": ["account.added"],
           "version": "2023-11-22"}  # fmt: skip
COMPLETION = {
    "platform_id": str(PLATFORM_IDS["paycrest"]),
    "credentials": {"username": "user_good", "password": "pass_good"},
    "mfa": {"method": "sms", "code": "123456"},
    "allocation": {"type": "amount", "value": 100, "target_index": 0},
    "federal": {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000001"},
}

# Values of every other JSON type, per type of the value they replace (1.5 is a fine number of hours).
WRONG: dict[type, list[Any]] = {
    str: [{}, [], [{}], 7, 1.5, True, "with \u0000 inside"],
    int: [{}, [], "7", 1.5, True],
    float: [{}, [], "1", True],
    bool: [{}, [], 1, "true"],
    list: [{}, "x", 1, True],
    dict: [[], "x", 1, True],
}


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


@pytest.fixture
def endpoints(api) -> dict[str, tuple[str, str, dict]]:
    """name -> (method, path, a valid body) for every API operation that reads a body."""
    hook = api.post("/webhooks", json=WEBHOOK).get_json()["data"]["id"]
    token = api.post("/link_tokens", json=LINK_TOKEN_ROUTED).get_json()["data"]["id"]
    event = api.post(f"/sandbox/webhooks/{hook}/test", json={"event": "account.added"}).get_json()["data"][
        "id"
    ]
    return {
        "link_token": ("POST", "/link_tokens", LINK_TOKEN),
        "link_token_routed": ("POST", "/link_tokens", LINK_TOKEN_ROUTED),
        "webhook_create": ("POST", "/webhooks", WEBHOOK),
        "webhook_update": ("PUT", f"/webhooks/{hook}", WEBHOOK),
        "webhook_test": ("POST", f"/sandbox/webhooks/{hook}/test", {"event": "account.added"}),
        "resend": ("POST", f"/events/{event}/resend", {"webhook_id": hook}),
        "clock": ("POST", "/sandbox/clock/advance", {"hours": 1.5}),
        "complete": ("POST", f"/sandbox/link_tokens/{token}/complete", COMPLETION),
    }


def nodes(value: Any, loc: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, value) below the root of a JSON document."""
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        yield (*loc, key), child
        yield from nodes(child, (*loc, key))


def replaced(body: dict, loc: tuple, new: Any) -> dict:
    result = json.loads(json.dumps(body))
    parent = result
    for key in loc[:-1]:
        parent = parent[key]
    parent[loc[-1]] = new
    return result


def field_names(error: dict) -> list[str]:
    return [f["name"] for f in error["fields"]]


@pytest.mark.parametrize(
    "name",
    ["link_token", "link_token_routed", "webhook_create", "webhook_update", "webhook_test", "resend", "clock",
     "complete"],
)  # fmt: skip
def test_a_wrong_type_anywhere_is_a_400_naming_its_path(api, endpoints, name):
    method, path, body = endpoints[name]
    checked = 0
    for loc, original in nodes(body):
        for wrong in WRONG[type(original)]:
            response = api.request(method, path, json=replaced(body, loc, wrong))
            error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
            assert json_path(loc) in field_names(error), (loc, wrong, error)
            checked += 1
    assert checked >= 4


def test_required_jobs_with_an_object_item(api):
    error = assert_error(
        api.post("/link_tokens", json={**LINK_TOKEN, "required_jobs": [{}]}),
        400,
        "INVALID_REQUEST_PARAMETERS",
    )
    assert error["fields"] == [
        {
            "name": "required_jobs[0]",
            "message": "must be one of direct_deposit_switch, employment, income, identity",
        }
    ]


def test_wrong_types_keep_their_messages(api):
    body = {**LINK_TOKEN_ROUTED, "org_name": 5, "skip_intro_screen": "yes", "amount": 1.5,
            "allocation": {"targets": [dict(TARGET, account_number=12345678)]}, "employer_id": 7}  # fmt: skip
    error = assert_error(
        api.post("/link_tokens", json=body), 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS"
    )
    assert {f["name"]: f["message"] for f in error["fields"]} == {
        "org_name": "must be a string",
        "skip_intro_screen": "must be a boolean",
        "amount": "must be an integer",
        "allocation.targets[0].account_number": "must be a string",
        "employer_id": "must be a string",
    }


@pytest.mark.parametrize(
    ("name", "loc"),
    [
        ("link_token", ("org_name",)),
        ("link_token", ("end_user_id",)),
        ("link_token", ("end_user", "platform_matching", "first_name")),
        ("link_token", ("end_user", "platform_matching", "email")),
        ("link_token", ("allocation", "targets", 0, "routing_number")),
        ("webhook_create", ("url",)),
        ("resend", ("webhook_id",)),
        ("complete", ("credentials", "username")),
        ("complete", ("platform_id",)),
    ],
)
def test_a_nul_byte_in_a_string_is_a_400_naming_the_field(app, api, endpoints, name, loc):
    from sqlalchemy import func, select

    from console.extensions import db
    from console.link_tokens.models import LinkToken

    method, path, body = endpoints[name]
    with app.app_context():
        tokens_before = db.session.scalar(select(func.count()).select_from(LinkToken))
    response = api.request(method, path, json=replaced(body, loc, "user\u0000x"))
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert error["fields"] == [
        {"name": json_path(loc), "message": "must not contain NUL characters (\\u0000)"}
    ]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(LinkToken)) == tokens_before


def test_a_nul_byte_in_an_unknown_field_name_is_refused(api):
    error = assert_error(
        api.post("/link_tokens", json={**LINK_TOKEN, "a\u0000b": 1}), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert field_names(error) == ["a\u0000b"]


def test_an_unpaired_surrogate_is_a_400_naming_the_field(api):
    raw = json.dumps({**LINK_TOKEN_ROUTED, "org_name": "a\ud800b", "\udfff": 1})
    assert "\\ud800" in raw  # sent as JSON allows it: an escape
    response = api.post("/link_tokens", data=raw, headers={"Content-Type": "application/json"})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert error["fields"] == [
        {"name": "org_name", "message": "must be valid Unicode text (no unpaired surrogate such as \\ud800)"},
        {"name": "\\udfff", "message": "is not a known field"},
    ]


# Depth -------------------------------------------------------------------------------------------


def nested(depth: int, kind: str = "[") -> str:
    if kind == "[":
        return "[" * depth + "]" * depth
    return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)


@pytest.mark.parametrize(
    "name", ["link_token", "webhook_create", "webhook_update", "webhook_test", "resend", "clock", "complete"]
)
@pytest.mark.parametrize("kind", ["[", "{"])
def test_json_nested_10000_deep_is_refused_before_parsing(api, endpoints, name, kind):
    method, path, _ = endpoints[name]
    raw = '{"org_name": ' + nested(10_000, kind) + "}"
    response = api.request(method, path, data=raw, headers={"Content-Type": "application/json"})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "JSON_TOO_DEEP")
    assert str(MAX_JSON_DEPTH) in error["message"]


def test_depth_limit_is_exact(api):
    def post(depth: int):
        # The body object is level 1, so the value may nest MAX_JSON_DEPTH - 1 levels.
        raw = '{"org_name": ' + nested(depth - 1) + "}"
        return api.post("/link_tokens", data=raw, headers={"Content-Type": "application/json"})

    assert_error(post(MAX_JSON_DEPTH), 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert_error(post(MAX_JSON_DEPTH + 1), 400, "INVALID_REQUEST_PARAMETERS", "JSON_TOO_DEEP")


def test_brackets_inside_strings_do_not_count(api):
    name = '[[[{{{"\\"' * 15
    response = api.post("/link_tokens", json={**LINK_TOKEN_ROUTED, "org_name": name})
    assert response.status_code == 200, response.get_json()


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"{}", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'{"a": "[[[[{{{{"}', 1),
        (b'{"a": "\\"[[", "b": [[]]}', 3),
        (b'["\\\\", ["]"]]', 2),
        (b"[" * 10_000, 10_000),
        (b"1", 0),
    ],
)
def test_json_depth_counts_brackets_outside_strings(raw, depth):
    assert json_depth(raw) == depth


# Sizes and bounded errors --------------------------------------------------------------------------


def test_100000_bad_required_jobs_give_a_small_fast_answer(api):
    raw = json.dumps({**LINK_TOKEN, "required_jobs": [{}] * 100_000})
    assert len(raw) > 200_000
    started = time.thread_time()  # the request runs on this thread: its CPU time, whatever else runs
    response = api.post("/link_tokens", data=raw, headers={"Content-Type": "application/json"})
    elapsed = time.thread_time() - started
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert error["fields"] == [{"name": "required_jobs", "message": "must have at most 10 items"}]
    assert len(response.get_data()) < 2_000
    assert elapsed < 2.0


def base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
        if not number:
            return text


def test_an_error_lists_at_most_50_fields_and_counts_the_rest(api):
    body = {**LINK_TOKEN, **{base36(i): 1 for i in range(100_000)}}
    raw = json.dumps(body, separators=(",", ":"))
    assert len(raw) < 1024 * 1024
    started = time.thread_time()  # the request runs on this thread: its CPU time, whatever else runs
    response = api.post("/link_tokens", data=raw, headers={"Content-Type": "application/json"})
    elapsed = time.thread_time() - started
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert len(error["fields"]) == 50
    assert error["fields"][0] == {"name": "0", "message": "is not a known field"}
    assert error["message"].endswith(" and 99,950 more.")
    assert len(response.get_data()) < 10_000
    assert elapsed < 3.0


def test_a_huge_unknown_field_name_is_cut_in_the_error(api):
    response = api.post("/link_tokens", json={**LINK_TOKEN, "x" * 500_000: 1})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert field_names(error) == ["x" * 100 + "…"]
    assert len(response.get_data()) < 2_000


def test_validation_failed_bounds_any_list_of_fields():
    fields = [FieldError(f"f{i}", "bad") for i in range(120)]
    error = ValidationFailed(fields)
    assert len(error.fields) == 50 and error.omitted == 70
    assert error.message.endswith("f49 and 70 more.")
    worded = ValidationFailed(fields, "Custom.")
    assert worded.message == "Custom. (50 fields listed and 70 more.)"
    assert ValidationFailed(fields[:2]).message == "Invalid request parameters: f0, f1."


@pytest.mark.parametrize(
    ("name", "loc", "value", "message"),
    [
        ("link_token", ("org_name",), "a" * 201, "must be at most 200 characters"),
        ("link_token", ("end_user_id",), "a" * 256, "must be at most 255 characters"),
        (
            "link_token",
            ("end_user", "platform_matching", "last_name"),
            "a" * 101,
            "must be at most 100 characters",
        ),
        ("link_token", ("required_jobs",), ["income"] * 11, "must have at most 10 items"),
        ("link_token", ("allocation", "targets"), [TARGET] * 11, "must have at most 10 items"),
        ("webhook_create", ("url",), "http://127.0.0.1:9/" + "a" * 2040, "must be at most 2048 characters"),
        ("webhook_create", ("enabled_events",), ["account.added"] * 11, "must have at most 10 items"),
        ("complete", ("credentials", "password"), "a" * 201, "must be at most 200 characters"),
        ("resend", ("webhook_id",), "a" * 101, "must be at most 100 characters"),
    ],
)
def test_size_limits(api, endpoints, name, loc, value, message):
    method, path, body = endpoints[name]
    error = assert_error(
        api.request(method, path, json=replaced(body, loc, value)), 400, "INVALID_REQUEST_PARAMETERS"
    )
    assert error["fields"] == [{"name": json_path(loc), "message": message}]


def test_documented_limits_are_the_enforced_ones(api, client):
    """maxLength/maxItems read from the served document: the limit passes, one more is refused."""
    schemas = client.get("/sandbox/v1/openapi.json").get_json()["components"]["schemas"]
    request = schemas["LinkTokenRequest"]["properties"]
    longest = request["org_name"]["maxLength"]
    assert api.post("/link_tokens", json={**LINK_TOKEN_ROUTED, "org_name": "a" * longest}).status_code == 200
    assert (
        api.post("/link_tokens", json={**LINK_TOKEN_ROUTED, "org_name": "a" * (longest + 1)}).status_code
        == 400
    )
    most = request["required_jobs"]["maxItems"]
    jobs = ["direct_deposit_switch"] * most
    assert api.post("/link_tokens", json={**LINK_TOKEN_ROUTED, "required_jobs": jobs}).status_code == 200
    jobs.append("income")
    assert api.post("/link_tokens", json={**LINK_TOKEN_ROUTED, "required_jobs": jobs}).status_code == 400
    most = schemas["LinkTokenAllocation"]["properties"]["targets"]["maxItems"]
    for count, status in ((most, 200), (most + 1, 400)):
        body = {**LINK_TOKEN_ROUTED, "allocation": {"targets": [TARGET] * count}}
        assert api.post("/link_tokens", json=body).status_code == status


def test_null_is_not_given(api):
    body = {**LINK_TOKEN_ROUTED, "end_user_id": None, "amount": None, "end_user": None}
    assert api.post("/link_tokens", json=body).status_code == 200
    error = assert_error(api.post("/link_tokens", json={**LINK_TOKEN_ROUTED, "org_name": None}), 400,
                         "INVALID_REQUEST_PARAMETERS")  # fmt: skip
    assert error["fields"] == [{"name": "org_name", "message": "is required"}]


def test_cross_field_rules_are_reported_with_other_bad_fields(api):
    matching = {k: v for k, v in MATCHING.items() if k != "social_security_number"}
    body = {**LINK_TOKEN, "org_name": "", "skip_intro_screen": True, "platform_id": str(uuid.uuid4()),
            "end_user": {"platform_matching": {**matching, "email": "nope"}}}  # fmt: skip
    error = assert_error(
        api.post("/link_tokens", json=body), 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS"
    )
    assert set(field_names(error)) == {
        "org_name",
        "skip_intro_screen",
        "end_user.platform_matching.social_security_number",
        "end_user.platform_matching.email",
    }


def test_unknown_fields_are_refused_in_every_body(api, endpoints):
    for name, (method, path, body) in endpoints.items():
        error = assert_error(
            api.request(method, path, json={**body, "colour": "blue"}), 400, "INVALID_REQUEST_PARAMETERS"
        )
        assert {"name": "colour", "message": "is not a known field"} in error["fields"], name
