"""The OpenAPI document: valid, served under each base URL, and in step with the routes."""

from __future__ import annotations

import json

import pytest
from openapi_spec_validator import validate

from console.api.openapi import EXAMPLES, LINKS, OPERATIONS, route_operations
from console.modes import MODES, URL_PREFIXES


@pytest.mark.parametrize("mode", MODES)
def test_served_without_credentials_under_each_base_url(client, mode):
    response = client.get(f"{URL_PREFIXES[mode]}/v1/openapi.json")
    assert response.status_code == 200
    document = response.get_json()
    assert document["openapi"] == "3.1.0"
    assert document["servers"][0]["url"].endswith(f"{URL_PREFIXES[mode]}/v1")
    assert response.headers["x-service-request-id"]


def test_document_is_valid_openapi(client):
    validate(client.get("/sandbox/v1/openapi.json").get_json())


def test_every_route_is_documented(app):
    with app.app_context():
        missing = route_operations() - set(OPERATIONS)
    assert not missing, f"routes without an OPERATIONS entry: {sorted(missing)}"


def test_every_documented_operation_exists(app):
    with app.app_context():
        stale = set(OPERATIONS) - route_operations()
    assert not stale, f"OPERATIONS entries without a route: {sorted(stale)}"


def test_link_token_request_schema_lists_every_accepted_field(client):
    from console.link_tokens.validation import KNOWN_FIELDS, MATCHING_FIELDS

    schemas = client.get("/sandbox/v1/openapi.json").get_json()["components"]["schemas"]
    schema = schemas["LinkTokenRequest"]
    assert set(schema["properties"]) == KNOWN_FIELDS
    assert set(schemas["PlatformMatching"]["properties"]) == set(MATCHING_FIELDS)


def test_request_schemas_come_from_the_body_models(app, client):
    """Each operation's request body is the schema pydantic derives from the model that validates it."""
    from console.core.bodies import RequestModel, openapi_schemas

    document = client.get("/sandbox/v1/openapi.json").get_json()
    components = document["components"]["schemas"]
    with_body = {key: details for key, details in OPERATIONS.items() if "body" in details}
    assert {method for method, _ in with_body} <= {"POST", "PUT"}
    for (method, path), details in with_body.items():
        model = details["body"]
        assert issubclass(model, RequestModel), (method, path)
        request_body = document["paths"][path][method.lower()]["requestBody"]
        assert request_body["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{model.__name__}"
        }
        assert request_body["required"] == any(f.is_required() for f in model.model_fields.values())
        for name, schema in openapi_schemas([model]).items():
            assert components[name] == schema, name
    # Every POST/PUT route that reads a body names its model (no plain "object" bodies remain).
    with app.app_context():
        writes = {op for op in route_operations() if op[0] in ("POST", "PUT")}
    assert writes == set(with_body)


def test_request_schemas_show_the_enforced_limits(client):
    schemas = client.get("/sandbox/v1/openapi.json").get_json()["components"]["schemas"]
    link = schemas["LinkTokenRequest"]
    assert link["additionalProperties"] is False
    assert link["properties"]["org_name"]["maxLength"] == 200
    assert link["properties"]["required_jobs"]["maxItems"] == 10
    assert schemas["Target"]["properties"]["routing_number"]["pattern"] == "^[0-9]{9}$"
    assert schemas["WebhookRequest"]["properties"]["url"]["maxLength"] == 2048
    assert set(schemas["WebhookRequest"]["required"]) == {"url", "status", "enabled_events", "version"}
    assert "required" not in schemas["WebhookUpdateRequest"]
    clock = schemas["ClockAdvanceRequest"]
    assert set(clock["properties"]) == {"seconds", "hours", "days", "business_days"}
    assert clock["maxProperties"] == 1 and clock["properties"]["business_days"]["type"] == "integer"
    completion = schemas["CompletionRequest"]["properties"]
    assert completion["credentials"]["anyOf"][0] == {"$ref": "#/components/schemas/Credentials"}


NULL_AS_ABSENT_CASES = [
    ({"allocation": {"type": None, "value": None}}, True),
    ({"allocation": {"type": "amount", "value": 7500}}, True),
    ({"allocation": {"type": None, "value": 7500}}, False),
    ({"allocation": {"type": "amount", "value": None}}, False),
    ({"allocation": {"value": 7500}}, False),
    ({"matching": {"social_security_number": "900001001", "social_security_last_four": None}}, True),
    ({"matching": {"social_security_number": None, "social_security_last_four": "1001"}}, True),
    ({"matching": {"social_security_number": None, "social_security_last_four": None}}, False),
    ({"matching": {"social_security_number": "900001001", "social_security_last_four": "1001"}}, False),
]


@pytest.mark.parametrize(("change", "accepted"), NULL_AS_ABSENT_CASES)
def test_the_link_token_schema_and_the_server_agree_on_null_fields(client, api, change, accepted):
    """A generated client sends `null` for a field it leaves unset: the schema must judge such a body as the
    server does (a null is an absent field), or the client refuses what the server takes, and the reverse."""
    from jsonschema import Draft202012Validator

    from tests.factories import LINK_TOKEN, MATCHING

    body = json.loads(json.dumps(LINK_TOKEN))
    if "allocation" in change:
        body["allocation"].update(change["allocation"])
    else:
        matching = {k: v for k, v in MATCHING.items() if not k.startswith("social_security")}
        body["end_user"] = {"platform_matching": {**matching, **change["matching"]}}
    document = client.get("/sandbox/v1/openapi.json").get_json()
    schema = {**document["components"]["schemas"]["LinkTokenRequest"], "components": document["components"]}
    validator = Draft202012Validator(schema)
    assert validator.is_valid(body) is accepted, list(validator.iter_errors(body))
    response = api.post("/link_tokens", json=body)
    assert (response.status_code == 200) is accepted, response.get_json()


def test_every_operation_has_its_own_operation_id_and_shares_one_service_version_type(client):
    """A generated client names its functions by operationId and its types by schema name: without them
    it had `post_sandbox_link_tokens_link_token_id_complete` and one Service-Version enum per operation
    (34 identical types, a different one to pass to each call)."""
    document = client.get("/sandbox/v1/openapi.json").get_json()
    operations = [op for item in document["paths"].values() for op in item.values()]
    ids = [op.get("operationId") for op in operations]
    assert all(ids) and len(set(ids)) == len(ids)
    by_path = {
        (m.upper(), p): op["operationId"] for p, item in document["paths"].items() for m, op in item.items()
    }
    assert by_path[("POST", "/link_tokens")] == "createLinkToken"
    assert by_path[("POST", "/sandbox/link_tokens/{link_token_id}/complete")] == "completeLinkToken"
    assert by_path[("GET", "/jobs")] == "listJobs"
    parameter = document["components"]["parameters"]["ServiceVersion"]
    assert parameter["schema"] == {"$ref": "#/components/schemas/ServiceVersion"}
    assert document["components"]["schemas"]["ServiceVersion"]["enum"] == ["2023-04-18", "2023-11-22"]
    validate(document)


def _pointer(body: dict, expression: str):
    assert expression.startswith("$response.body#/"), expression
    value = body
    for part in expression.removeprefix("$response.body#/").split("/"):
        value = value[part]
    return value


def test_links_name_real_operations_and_their_parameters_and_examples_fit_their_schemas(client):
    from jsonschema import Draft202012Validator

    document = client.get("/sandbox/v1/openapi.json").get_json()
    by_id = {op["operationId"]: op for item in document["paths"].values() for op in item.values()}
    links = examples = 0
    for item in document["paths"].values():
        for op in item.values():
            for response in op["responses"].values():
                for link in response.get("links", {}).values():
                    target = by_id[link["operationId"]]
                    names = {p["name"] for p in target["parameters"] if "name" in p}
                    assert set(link["parameters"]) <= names, (link, names)
                    links += 1
            media = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            if "example" in media:
                schema = {**media["schema"], "components": document["components"]}
                Draft202012Validator(schema).validate(media["example"])
                examples += 1
    assert links == sum(len(v) for v in LINKS.values()) and examples == len(EXAMPLES)


def test_the_documents_examples_and_links_carry_a_client_through_a_switch(client, api):
    """What Schemathesis's examples and stateful phases do: the createLinkToken example is accepted, its
    `complete` link with the completion example completes it, and the `job` link finds the job."""
    document = client.get("/sandbox/v1/openapi.json").get_json()

    def example(path: str) -> dict:
        return document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["example"]

    created = api.post("/link_tokens", json=example("/link_tokens"))
    assert created.status_code == 200, created.get_json()
    links = document["paths"]["/link_tokens"]["post"]["responses"]["200"]["links"]
    token_id = _pointer(created.get_json(), links["complete"]["parameters"]["link_token_id"])
    complete_path = "/sandbox/link_tokens/{link_token_id}/complete"
    completed = api.post(complete_path.format(link_token_id=token_id), json=example(complete_path))
    assert completed.status_code == 200, completed.get_json()
    job_link = document["paths"][complete_path]["post"]["responses"]["200"]["links"]["job"]
    job = api.get(f"/jobs/{_pointer(completed.get_json(), job_link['parameters']['job_id'])}")
    assert job.status_code == 200 and job.get_json()["data"]["outcome"] == "success"
    jobs_link = links["jobs"]
    listed = api.get(
        "/jobs",
        query_string={
            "link_token_id": _pointer(created.get_json(), jobs_link["parameters"]["link_token_id"])
        },
    )
    assert [j["id"] for j in listed.get_json()["data"]] == [job.get_json()["data"]["id"]]


@pytest.mark.parametrize(
    ("allocation", "accepted"),
    [
        ({"type": "full"}, True),
        ({"type": "full", "value": None}, True),
        ({"type": "amount", "value": 7500}, True),
        ({"type": "full", "value": 500}, False),
        ({"value": 500}, False),
    ],
)
def test_the_completion_schema_and_the_server_agree_on_a_value_beside_a_full_switch(
    client, api, allocation, accepted
):
    from jsonschema import Draft202012Validator

    from console.world.seed_data import PLATFORM_IDS
    from tests.factories import LINK_TOKEN

    body = {
        "platform_id": str(PLATFORM_IDS["paycrest"]),
        "credentials": {"username": "user_good", "password": "pass_good"},
        "allocation": allocation,
    }
    document = client.get("/sandbox/v1/openapi.json").get_json()
    schema = {**document["components"]["schemas"]["CompletionRequest"], "components": document["components"]}
    assert Draft202012Validator(schema).is_valid(body) is accepted
    token = api.post("/link_tokens", json=LINK_TOKEN).get_json()["data"]
    response = api.post(f"/sandbox/link_tokens/{token['id']}/complete", json=body)
    # Valid bodies pass validation: 200, or the Link error of an amount the token does not allow.
    assert (response.status_code == 200 or response.get_json()["error"]["type"] == "LINK_ERROR") is accepted
