"""Hostile query and path parameters: each is a 400 naming the parameter, never a 500.

Tampered cursors on every list, datetimes that leave the representable range, NUL characters
anywhere (PostgreSQL cannot store them), odd integers; and the documented parameter constraints
are the ones the code enforces.
"""

from __future__ import annotations

import base64
import json
import random
import uuid

import pytest

from console.api.pagination import decode_cursor, encode_cursor
from console.api.ratelimit import RateLimiter
from console.core.errors import ValidationFailed
from console.core.timeutil import parse_datetime
from console.events.models import Event
from console.world.models import Platform
from tests.conftest import assert_error
from tests.factories import new_switch

LISTS = ("/platforms", "/employers", "/jobs", "/accounts", "/webhooks", "/events")
ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor_of(value) -> str:
    return b64(json.dumps(value).encode())


_random = random.Random(10)
TAMPERED = {
    "same text twice": cursor_of([["v", "abc"], ["v", "abc"]]),
    "flat uuid pair": cursor_of(["uuid", 1]),
    "flat null pair": cursor_of(["v", None]),
    "datetime out of range in UTC": cursor_of([["dt", "0001-01-01T00:00:00+01:00"], ["uuid", ZERO_UUID]]),
    "datetime past year 9999 in UTC": cursor_of([["dt", "9999-12-31T23:59:59-01:00"], ["uuid", ZERO_UUID]]),
    "uuid not a string": cursor_of([["dt", "2024-01-01T00:00:00+00:00"], ["uuid", 1]]),
    "nulls": cursor_of([["v", None], ["v", None]]),
    "objects": cursor_of([["v", {}], ["v", []]]),
    "three items": cursor_of([["v", "a"], ["uuid", ZERO_UUID], ["v", "b"]]),
    "one item": cursor_of([["uuid", ZERO_UUID]]),
    "an object": cursor_of({"dt": "2024-01-01"}),
    "a string": cursor_of("abc"),
    "a huge number": cursor_of([["v", 1e308], ["uuid", ZERO_UUID]]),
    "a NUL in a value": cursor_of([["v", "a\u0000"], ["uuid", ZERO_UUID]]),
    "bad datetime": cursor_of([["dt", "yesterday"], ["uuid", ZERO_UUID]]),
    "bad uuid": cursor_of([["dt", "2024-01-01T00:00:00+00:00"], ["uuid", "not-a-uuid"]]),
    "unknown tag": cursor_of([["int", "1"], ["uuid", ZERO_UUID]]),
    "not JSON": b64(b"[[not json"),
    "invalid UTF-8": b64(b"\xff\xfe\xfd\x00"),
    "random bytes": b64(_random.randbytes(48)),
    "not base64url": "!!!!",
    "padding in the middle": "W1=sid",
    "too long": b64(json.dumps([["v", "x" * 600], ["uuid", ZERO_UUID]]).encode()),
}


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def assert_names(response, *names: str) -> dict:
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert [f["name"] for f in error["fields"]] == list(names)
    return error


@pytest.mark.parametrize("path", LISTS)
def test_a_tampered_cursor_is_a_400_naming_it_on_every_list(api, path):
    for label, cursor in TAMPERED.items():
        response = api.get(path, query_string={"cursor": cursor})
        assert response.status_code == 400, (label, response.get_json())
        assert_names(response, "cursor")


@pytest.mark.parametrize("path", LISTS)
def test_an_empty_cursor_is_a_400_naming_it_on_every_list(api, path):
    """`?cursor=` is not "no cursor": no list returns an empty one, and the document's pattern needs a
    character. The first page is asked for by leaving the parameter out."""
    assert api.get(path).status_code == 200
    for query in ("cursor=", "limit=2&cursor=", "cursor=&limit=2"):
        error = assert_names(api.get(f"{path}?{query}"), "cursor")
        assert "empty" in error["fields"][0]["message"], error


def test_a_cursor_of_another_lists_shape_is_refused(api, app, workspace):
    """Platforms sort by (name, id), jobs by (created_at, id): one's cursor is not the other's."""
    with app.app_context():
        new_switch(workspace.id, "success")
        new_switch(workspace.id, "success")
    job_cursor = api.get("/jobs?limit=1").get_json()["meta"]["next_cursor"]
    platform_cursor = api.get("/platforms?limit=1").get_json()["meta"]["next_cursor"]
    assert job_cursor and platform_cursor
    assert api.get("/jobs", query_string={"cursor": job_cursor}).status_code == 200
    assert_names(api.get("/platforms", query_string={"cursor": job_cursor}), "cursor")
    assert_names(api.get("/jobs", query_string={"cursor": platform_cursor}), "cursor")


def test_a_cursor_of_another_list_of_the_same_shape_or_written_by_hand_is_refused(api, app, workspace):
    """Events and jobs both sort by (created_at, id): a cursor names its list, and carries a MAC, so neither
    another list's cursor nor a well-formed one made up by a client passes for one this list returned."""
    with app.app_context():
        new_switch(workspace.id, "success")
        new_switch(workspace.id, "success")
    job_cursor = api.get("/jobs?limit=1").get_json()["meta"]["next_cursor"]
    assert job_cursor and api.get("/jobs", query_string={"cursor": job_cursor}).status_code == 200
    for other in ("/events", "/accounts", "/webhooks"):
        assert_names(api.get(other, query_string={"cursor": job_cursor}), "cursor")
    # The shape this service's cursors had before they were signed: well-formed, made up.
    made_up = cursor_of([["dt", "2099-01-01T00:00:00.000000+00:00"], ["uuid", ZERO_UUID]])
    named = cursor_of(["jobs", ["dt", "2099-01-01T00:00:00.000000+00:00"], ["uuid", ZERO_UUID]])
    for cursor in (made_up, named, job_cursor[:-2] + ("AA" if not job_cursor.endswith("AA") else "BB")):
        error = assert_names(api.get("/jobs", query_string={"cursor": cursor}), "cursor")
        assert "is not a cursor this list returned" in error["fields"][0]["message"]


def test_cursors_round_trip_and_decode_strictly(app):
    with app.app_context():
        columns = (Event.created_at, Event.id)
        when = parse_datetime("2024-05-01T12:00:00Z")
        values = decode_cursor(encode_cursor([when, uuid.UUID(ZERO_UUID)], columns), columns)
        assert values[0] == when and str(values[1]) == ZERO_UUID
        with pytest.raises(ValidationFailed) as refused:
            decode_cursor(TAMPERED["nulls"], (Platform.name, Platform.id), name="after")
        assert [f.name for f in refused.value.fields] == ["after"]


@pytest.mark.parametrize(
    "since",
    [
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        "yesterday",
        "2024-13-01T00:00:00Z",
        "2024-01-01T00:00:00+25:00",
        "\u0000",
    ],
)
def test_a_since_that_is_not_a_representable_datetime_is_a_400(api, since):
    assert_names(api.get("/events", query_string={"since": since}), "since")


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00-01:00", "2024-01-01"])
def test_extreme_but_valid_since_values_work(api, since):
    assert api.get("/events", query_string={"since": since}).status_code == 200


def test_parse_datetime_raises_value_error_out_of_range():
    with pytest.raises(ValueError, match="outside"):
        parse_datetime("0001-01-01T00:00:00+01:00")


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/jobs?end_user_id=%00", "end_user_id"),
        ("/accounts?end_user_id=%00", "end_user_id"),
        ("/platforms?q=%00", "q"),
        ("/employers?q=%00", "q"),
        ("/search?q=ab%00c", "q"),
        ("/events?type=%00", "type"),
        ("/events?since=%00", "since"),
        ("/jobs?outcome=success&link_token_id=x%00", "link_token_id"),
        ("/platforms?supported_jobs=income&supported_jobs=%00", "supported_jobs"),
        ("/webhooks?unknown=%00", "unknown"),
        ("/jobs/%00", "job_id"),
        ("/accounts/a%00b/income", "account_id"),
        ("/webhooks/%00", "webhook_id"),
        ("/platforms/%00", "platform_id"),
    ],
)
def test_a_nul_in_any_query_or_path_parameter_is_a_400_naming_it(api, url, name):
    error = assert_names(api.get(url), name)
    assert "NUL" in error["fields"][0]["message"]


def test_a_nul_on_other_methods_too(api):
    assert_names(api.delete("/webhooks/%00"), "webhook_id")
    assert_names(api.post("/events/%00/resend", json={}), "event_id")


def test_authentication_still_comes_first(client):
    response = client.get("/sandbox/v1/jobs?end_user_id=%00", headers={"Service-Version": "2023-11-22"})
    assert_error(response, 401, "UNAUTHORIZED_REQUEST", "MISSING_API_SECRET")


@pytest.mark.parametrize(
    "limit", ["1_0", " 5", "+5", "\uff15", "\u0663", "5.0", "99999999999999999999999", "-1", ""]
)
def test_limit_takes_plain_digits_only(api, limit):
    assert_names(api.get("/platforms", query_string={"limit": limit}), "limit")


# The documented constraints of every query parameter, tried against the code (a value that breaks
# the schema is refused naming the parameter; the documented extremes are accepted).
def _query_parameters(document: dict):
    for path, item in document["paths"].items():
        operation = item.get("get")
        if operation is None:
            continue
        for param in operation["parameters"]:
            if param.get("in") == "query":
                yield path, param["name"], param["schema"]


def _valid_and_invalid(name: str, schema: dict) -> tuple[list[str], list[str]]:
    kind = schema.get("type")
    if "enum" in schema:
        return [str(v) for v in schema["enum"]], ["bogus"]
    if kind == "array":
        items = [str(v) for v in schema["items"]["enum"]]
        return [",".join(items)], ["bogus"]
    if kind == "integer":
        return [str(schema["minimum"]), str(schema["maximum"])], [
            str(schema["minimum"] - 1),
            str(schema["maximum"] + 1),
        ]
    if kind == "boolean":
        return ["true", "false"], ["maybe"]
    if schema.get("format") == "uuid":
        return [ZERO_UUID], ["not-a-uuid"]
    if schema.get("format") == "date-time":
        return ["2024-01-01T00:00:00Z"], ["not-a-datetime"]
    if name == "cursor":
        return [], ["x" * (schema["maxLength"] + 1), "!"]
    if "maxLength" in schema:
        too_short = [""] if schema.get("minLength") else []
        return ["x" * schema["maxLength"]], ["x" * (schema["maxLength"] + 1), *too_short]
    return ["anything"], []


def test_every_documented_query_constraint_is_the_one_enforced(api):
    document = api.get("/openapi.json").get_json()
    checked = 0
    for path, name, schema in _query_parameters(document):
        assert schema != {"type": "string"} or name == "q", f"{path} {name} is documented without constraints"
        valid, invalid = _valid_and_invalid(name, schema)
        for value in valid:
            response = api.get(path, query_string={name: value})
            assert response.status_code == 200, (path, name, value, response.get_json())
        for value in invalid:
            response = api.get(path, query_string={name: value})
            assert response.status_code == 400, (path, name, value, response.get_json())
            assert_names(response, name)
            checked += 1
    assert checked > 20


def test_limit_is_documented_with_its_bounds(api):
    document = api.get("/openapi.json").get_json()
    limits = [s for _, name, s in _query_parameters(document) if name == "limit"]
    assert limits and all(s["minimum"] == 1 and s["maximum"] == 100 for s in limits)


def test_every_operation_documents_the_errors_it_can_answer(api):
    document = api.get("/openapi.json").get_json()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            codes = set(operation["responses"])
            if operation.get("security") == []:
                continue
            assert {"400", "401", "429"} <= codes, (method, path)
            assert ("404" in codes) == ("{" in path), (method, path)
            assert ("413" in codes and "415" in codes) == ("requestBody" in operation), (method, path)
            if path.startswith("/sandbox/"):
                assert "403" in codes, (method, path)


def test_a_query_parameter_the_endpoint_does_not_take_is_a_400_naming_it(api, app, workspace):
    """A misspelt filter was ignored, and the list answered unfiltered: `?linktoken_id=` listed every job."""
    with app.app_context():
        job_id = new_switch(workspace.id, "success").id
    error = assert_names(api.get("/jobs?linktoken_id=x&limit=5"), "linktoken_id")
    assert error["fields"][0]["message"] == (
        "is not a parameter of this endpoint (it takes: account_id, cursor, end_user_id, limit, link_token_id, outcome)"
    )
    error = assert_names(api.get(f"/jobs/{job_id}?expand=account"), "expand")
    assert "(it takes: none)" in error["fields"][0]["message"]
    assert api.get("/jobs?limit=5&outcome=success").status_code == 200
    # The same in every mode, each with its own key (the document's paths are the modes' alike).
    for mode in ("development", "production"):
        other = type(api)(api.client, workspace.secrets[mode], mode)
        assert_names(other.get("/accounts?enduser_id=u"), "enduser_id")


def test_a_repeated_query_parameter_is_a_400_naming_it_unless_it_takes_several(api, app, workspace):
    """`?outcome=success&outcome=error` answered the success jobs alone, as if the list held both outcomes."""
    with app.app_context():
        new_switch(workspace.id, "success")
        new_switch(workspace.id, "error")
    error = assert_names(api.get("/jobs?outcome=success&outcome=error"), "outcome")
    assert error["fields"][0]["message"] == "is given 2 times; it takes one value (one call per value)"
    assert_names(api.get("/jobs?limit=1&limit=2"), "limit")
    # An array parameter takes repeats, as the document says (`supported_jobs`: comma-separated or repeated).
    response = api.get("/platforms?supported_jobs=income&supported_jobs=employment&limit=1")
    assert response.status_code == 200, response.get_json()


def test_a_gets_body_is_refused_naming_what_to_send_as_query_parameters(api, app, workspace):
    """`requests.get(url, json={"link_token_id": …})`: the body was ignored and the list answered unfiltered."""
    with app.app_context():
        new_switch(workspace.id, "success")
    response = api.get("/jobs", json={"link_token_id": str(uuid.uuid4())})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_REQUEST")
    assert error["message"] == (
        "A GET request's body is not read: send its link_token_id as query parameters (?link_token_id=…), "
        "and no body."
    )
    response = api.get("/jobs", data="outcome=success", headers={"Content-Type": "text/plain"})
    assert (
        "send its filters as query parameters"
        in assert_error(response, 400, "INVALID_REQUEST_PARAMETERS")["message"]
    )
    # An empty body (a client that always sends one) changes nothing.
    assert api.get("/jobs", data="", headers={"Content-Type": "application/json"}).status_code == 200
    assert api.get("/jobs").status_code == 200


@pytest.mark.parametrize(
    ("path", "first", "other"),
    [
        ("/platforms", {"type": "payroll"}, {"type": "benefits"}),
        ("/platforms", {"type": "payroll"}, {}),
        ("/employers", {"q": "a"}, {"q": "e"}),
        ("/search", {"q": "pay"}, {"q": "social"}),
        ("/jobs", {"outcome": "success"}, {"outcome": "error"}),
        ("/jobs", {}, {"outcome": "success"}),
    ],
)
def test_a_cursor_continues_only_the_filters_it_was_returned_for(api, app, workspace, path, first, other):
    """A CI job that changed a filter mid-way (or reused a cursor across lists) got a silent, partial page:
    the other filter's rows after the cursor's position, those before it skipped. Now a 400 says so; the
    same filters with any `limit` continue."""
    with app.app_context():
        for outcome in ("success", "success", "error", "error", "success", "error"):
            new_switch(workspace.id, outcome)
    page = api.get(path, query_string={**first, "limit": 1}).get_json()
    cursor = page["meta"]["next_cursor"]
    assert cursor, page
    assert api.get(path, query_string={**first, "limit": 3, "cursor": cursor}).status_code == 200
    error = assert_names(api.get(path, query_string={**other, "cursor": cursor}), "cursor")
    assert "was returned for other filters" in error["fields"][0]["message"]
