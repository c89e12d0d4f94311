"""Every API error, whoever answers it (routing, the body checks, the rate limit, a view), carries the API's headers:
the error shape, its own `x-service-request-id`, `Service-Version`, and the API's closed security headers. A 404 or
405 from routing ran no API view, so it got the console page's Content-Security-Policy and referrer rule."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy.exc import OperationalError

from console.api.ratelimit import RateLimiter
from tests.conftest import VERSION, assert_error
from tests.factories import LINK_TOKEN

# The headers that say what kind of answer this is: the API's are the same on every answer.
SECURITY = ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy")


def too_many(app, api):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1/minute")
    )
    assert api.get("/jobs").status_code == 200
    return api.get("/jobs")


def failing(monkeypatch, error: Exception):
    from console.link_tokens import services

    def fail(*_args, **_kwargs):
        raise error

    monkeypatch.setattr(services, "create_link_token", fail)


def too_large(app, api):
    body = "x" * (app.config["MAX_CONTENT_LENGTH"] + 1)
    return api.post("/link_tokens", data=body, headers={"Content-Type": "application/json"})


# (status, type, code, the request)
ERRORS = {
    "route 404": (
        404,
        "RECORD_NOT_FOUND",
        "ROUTE_NOT_FOUND",
        lambda app, api, client, monkeypatch: api.get("/no-such-thing"),
    ),
    "route 404, no key": (
        404,
        "RECORD_NOT_FOUND",
        "ROUTE_NOT_FOUND",
        lambda app, api, client, monkeypatch: client.get("/sandbox/v1/no-such-thing"),
    ),
    "path without /v1": (
        404,
        "RECORD_NOT_FOUND",
        "ROUTE_NOT_FOUND",
        lambda app, api, client, monkeypatch: client.post(
            "/sandbox/link_tokens", json=LINK_TOKEN, headers=api.headers()
        ),
    ),
    "DELETE /v1/jobs": (
        405,
        "INVALID_REQUEST_PARAMETERS",
        "METHOD_NOT_ALLOWED",
        lambda app, api, client, monkeypatch: api.delete("/jobs"),
    ),
    "PUT /v1/link_tokens": (
        405,
        "INVALID_REQUEST_PARAMETERS",
        "METHOD_NOT_ALLOWED",
        lambda app, api, client, monkeypatch: api.put("/link_tokens", json=LINK_TOKEN),
    ),
    "413": (
        413,
        "INVALID_REQUEST_PARAMETERS",
        "BODY_TOO_LARGE",
        lambda app, api, client, monkeypatch: too_large(app, api),
    ),
    "415": (
        415,
        "INVALID_REQUEST_PARAMETERS",
        "UNSUPPORTED_CONTENT_TYPE",
        lambda app, api, client, monkeypatch: api.post(
            "/link_tokens", data="{}", headers={"Content-Type": "text/plain"}
        ),
    ),
    "malformed JSON": (
        400,
        "INVALID_REQUEST_PARAMETERS",
        "MALFORMED_JSON",
        lambda app, api, client, monkeypatch: api.post(
            "/link_tokens", data='{"org_name": "Acme",}', headers={"Content-Type": "application/json"}
        ),
    ),
    "429": (
        429,
        "RATE_LIMIT_EXCEEDED",
        "RATE_LIMIT_EXCEEDED",
        lambda app, api, client, monkeypatch: too_many(app, api),
    ),
    "401": (
        401,
        "UNAUTHORIZED_REQUEST",
        "MISSING_API_SECRET",
        lambda app, api, client, monkeypatch: client.get(
            "/sandbox/v1/jobs", headers={"Service-Version": VERSION}
        ),
    ),
    "500": (
        500,
        "UNKNOWN_ERROR",
        "INTERNAL_ERROR",
        lambda app, api, client, monkeypatch: (
            failing(monkeypatch, RuntimeError("boom")) or api.post("/link_tokens", json=LINK_TOKEN)
        ),
    ),
    "503": (
        503,
        "SERVICE_UNAVAILABLE",
        "SERVICE_UNAVAILABLE",
        lambda app, api, client, monkeypatch: (
            failing(monkeypatch, OperationalError("SELECT 1", {}, Exception("database is locked")))
            or api.post("/link_tokens", json=LINK_TOKEN)
        ),
    ),
    "record 404": (
        404,
        "RECORD_NOT_FOUND",
        "RECORD_NOT_FOUND",
        lambda app, api, client, monkeypatch: api.get(f"/jobs/{uuid.uuid4()}"),
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_every_api_error_has_the_error_shape_a_request_id_and_the_apis_headers(
    app, api, client, monkeypatch, case
):
    status, type_, code, send = ERRORS[case]
    ordinary = api.get("/jobs")
    assert ordinary.status_code == 200
    response = send(app, api, client, monkeypatch)
    assert_error(response, status, type_, code)
    request_id = response.headers.get("x-service-request-id")
    assert request_id and uuid.UUID(request_id) and request_id != ordinary.headers["x-service-request-id"]
    assert response.headers["Service-Version"] == VERSION
    assert response.headers["Content-Type"] == "application/json"
    if status in (429, 503):
        assert int(response.headers["Retry-After"]) > 0
    assert {name: response.headers.get(name) for name in SECURITY} == {
        name: ordinary.headers[name] for name in SECURITY
    }
