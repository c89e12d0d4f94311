"""The OpenAPI document: valid, served under each base URL, and in step with the routes."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from console.api.openapi import OPERATIONS, route_operations
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
