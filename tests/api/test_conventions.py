"""Rules every /v1 endpoint follows: auth, version, request id, error shape, bodies, rate limits."""

from __future__ import annotations

import re
import uuid

import pytest

from console.modes import MODES, URL_PREFIXES
from tests.conftest import VERSION, Api, assert_error
from tests.factories import LINK_TOKEN


def _is_uuid(value: str) -> bool:
    return str(uuid.UUID(value)) == value


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_has_its_own_base_url(client, workspace, mode):
    response = Api(client, workspace.secrets[mode], mode).post("/link_tokens", json=LINK_TOKEN)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"]["mode"] == mode


@pytest.mark.parametrize(
    ("key_mode", "url_mode"),
    [(k, u) for k in MODES for u in MODES if k != u],
)
def test_key_is_rejected_at_another_modes_base_url(client, workspace, key_mode, url_mode):
    response = Api(client, workspace.secrets[key_mode], url_mode).post("/link_tokens", json=LINK_TOKEN)
    error = assert_error(response, 401, "UNAUTHORIZED_REQUEST", "WRONG_MODE")
    assert workspace.secrets[key_mode] not in error["message"]
    # Where the key does work: its own mode's paths.
    assert error["message"].endswith(f"send it to paths starting {URL_PREFIXES[key_mode]}/v1/.")


def test_missing_secret_is_401(client):
    assert_error(
        Api(client, None).post("/link_tokens", json=LINK_TOKEN),
        401,
        "UNAUTHORIZED_REQUEST",
        "MISSING_API_SECRET",
    )


def test_an_empty_secret_says_so_and_why_it_may_be(client):
    # Behind Granian (`console run`) a header value with non-ASCII bytes reaches the app empty.
    response = Api(client, "").post("/link_tokens", json=LINK_TOKEN)
    error = assert_error(response, 401, "UNAUTHORIZED_REQUEST", "MISSING_API_SECRET")
    assert "is empty" in error["message"] and "non-ASCII" in error["message"]
    absent = assert_error(
        Api(client, None).post("/link_tokens", json=LINK_TOKEN), 401, "UNAUTHORIZED_REQUEST"
    )
    assert absent["message"] == "Missing x-api-secret header."


def test_wrong_secret_is_401(client, workspace):
    response = Api(client, workspace.secrets["sandbox"] + "x").post("/link_tokens", json=LINK_TOKEN)
    error = assert_error(response, 401, "UNAUTHORIZED_REQUEST", "INVALID_API_SECRET")
    assert "console keys create" in error["message"]  # where a valid secret comes from


def test_the_banners_masked_secret_is_401_saying_it_is_masked(client, workspace):
    """`make run` under a pipe prints `sk_sandbox_****` + the last four; pasted as is, the answer says why."""
    masked = "sk_sandbox_****" + workspace.secrets["sandbox"][-4:]
    response = Api(client, masked).post("/link_tokens", json=LINK_TOKEN)
    error = assert_error(response, 401, "UNAUTHORIZED_REQUEST", "INVALID_API_SECRET")
    assert "masked" in error["message"] and "console keys create --mode sandbox" in error["message"]
    assert masked not in error["message"]


def test_revoked_key_is_401(app, api, workspace):
    from console.extensions import db
    from console.keys.services import get_key, revoke_key

    assert api.post("/link_tokens", json=LINK_TOKEN).status_code == 200
    with app.app_context():
        revoke_key(get_key(workspace.key_ids["sandbox"]))
        db.session.commit()
    assert_error(api.post("/link_tokens", json=LINK_TOKEN), 401, "UNAUTHORIZED_REQUEST", "API_KEY_REVOKED")


def test_missing_version_header_is_400(api):
    response = api.post("/link_tokens", json=LINK_TOKEN, headers={"Service-Version": None})
    assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "MISSING_VERSION_HEADER")
    assert response.headers["Service-Version"] == VERSION
    # Refused before the rate limit counts it (docs/api.md): no rate-limit headers, none of the key's rate used.
    assert "X-RateLimit-Remaining" not in response.headers
    counted = api.get("/jobs")
    assert counted.headers["X-RateLimit-Remaining"] == str(int(counted.headers["X-RateLimit-Limit"]) - 1)


def test_unsupported_version_names_the_supported_ones(api):
    response = api.post("/link_tokens", json=LINK_TOKEN, headers={"Service-Version": "2020-01-01"})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "UNSUPPORTED_VERSION")
    assert "2023-04-18" in error["message"] and "2023-11-22" in error["message"]


def test_an_empty_version_says_so_and_names_the_supported_ones(api):
    response = api.post("/link_tokens", json=LINK_TOKEN, headers={"Service-Version": " "})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "UNSUPPORTED_VERSION")
    assert "is empty" in error["message"] and "non-ASCII" in error["message"]
    assert "2023-04-18" in error["message"] and "2023-11-22" in error["message"]


@pytest.mark.parametrize("version", ["2023-04-18", "2023-11-22"])
def test_response_names_the_version_used(api, version):
    response = api.post("/link_tokens", json=LINK_TOKEN, headers={"Service-Version": version})
    assert response.status_code == 200
    assert response.headers["Service-Version"] == version


def test_authentication_is_checked_before_the_version(client):
    response = Api(client, None).post("/link_tokens", json=LINK_TOKEN, headers={"Service-Version": None})
    assert_error(response, 401, "UNAUTHORIZED_REQUEST")


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("POST", "/link_tokens", 200),
        ("POST", "/link_tokens", 401),
        ("GET", "/no_such_thing", 404),
        ("DELETE", "/link_tokens", 405),
    ],
)
def test_every_response_has_a_fresh_request_id(client, workspace, method, path, status):
    secret = None if status == 401 else workspace.secrets["sandbox"]
    api = Api(client, secret)
    first = api.request(method, path, json=LINK_TOKEN if method == "POST" else None)
    second = api.request(method, path, json=LINK_TOKEN if method == "POST" else None)
    assert first.status_code == status
    assert _is_uuid(first.headers["x-service-request-id"])
    assert first.headers["x-service-request-id"] != second.headers["x-service-request-id"]
    assert first.headers["Service-Version"]


def test_unknown_path_is_404_in_the_error_shape(api):
    response = api.get("/nope")
    error = assert_error(response, 404, "RECORD_NOT_FOUND", "ROUTE_NOT_FOUND")
    assert "/sandbox/v1/nope" in error["message"] and "twice" not in error["message"]


def test_a_path_with_v1_twice_is_told_so(api):
    """The banner lists each API's base as `…/sandbox/v1`; pasted where the README's `$BASE` goes, the path gets
    /v1 twice and otherwise looks right."""
    response = api.post("/v1/link_tokens", json={})  # the client adds /sandbox/v1 itself
    error = assert_error(response, 404, "RECORD_NOT_FOUND", "ROUTE_NOT_FOUND")
    assert error["message"] == (
        "No endpoint at /sandbox/v1/v1/link_tokens. The path says /v1 twice: the base URL already ended in /v1."
    )


def test_an_api_call_without_v1_in_its_path_is_told_the_path_it_meant(client, workspace):
    """The spec's header example omits /v1 for the Link token path: copied, it reached the console's HTML 404."""
    headers = {"x-api-secret": workspace.secrets["sandbox"], "Service-Version": "2023-11-22"}
    response = client.post("/sandbox/link_tokens", json={}, headers=headers)
    error = assert_error(response, 404, "RECORD_NOT_FOUND", "ROUTE_NOT_FOUND")
    assert error["message"] == (
        "No endpoint at /sandbox/link_tokens. The API's paths start with /v1 after the mode's base: "
        "/sandbox/v1/link_tokens."
    )
    assert (
        "/v1/jobs." in assert_error(client.get("/jobs", headers=headers), 404, "RECORD_NOT_FOUND")["message"]
    )
    # A browser's GET of a page that does not exist still gets the console's page, and so does a wrong guess.
    assert client.get("/sandbox/jobs").content_type.startswith("text/html")
    assert client.get("/sandbox/nothing", headers=headers).content_type.startswith("text/html")


def test_the_404_for_a_path_without_v1_carries_the_api_headers(client, workspace):
    """Answered in the API's error shape, it lacked the Service-Version header every API answer carries."""
    headers = {"x-api-secret": workspace.secrets["sandbox"], "Service-Version": "2023-04-18"}
    for path in ("/sandbox/link_tokens", "/sandbox/sandbox/v1/link_tokens"):
        response = client.post(path, json={}, headers=headers)
        assert_error(response, 404, "RECORD_NOT_FOUND", "ROUTE_NOT_FOUND")
        assert response.headers["Service-Version"] == "2023-04-18"
        assert _is_uuid(response.headers["x-service-request-id"])
    # A console page keeps its own headers.
    assert "Service-Version" not in client.get("/sandbox/jobs").headers


def test_a_trailing_slash_is_named_as_the_problem(api):
    """`…/v1/link_tokens/` (a client joining paths with a slash) got only "No endpoint at …/link_tokens/."."""
    error = assert_error(api.post("/link_tokens/", json={}), 404, "RECORD_NOT_FOUND", "ROUTE_NOT_FOUND")
    assert error["message"] == (
        "No endpoint at /sandbox/v1/link_tokens/. Leave out the trailing slash: /sandbox/v1/link_tokens."
    )
    # A path that exists without the slash for other methods only (GET): still the slash, then the 405.
    assert (
        "Leave out the trailing slash: /sandbox/v1/link_tokens."
        in api.get("/link_tokens/").get_json()["error"]["message"]
    )
    # No such endpoint without the slash either: nothing to suggest.
    assert assert_error(api.get("/nothing/"), 404, "RECORD_NOT_FOUND")["message"] == (
        "No endpoint at /sandbox/v1/nothing/."
    )


def test_an_api_call_with_its_base_url_given_twice_is_told_the_endpoint(client, workspace):
    """`$BASE/sandbox/v1/link_tokens` with BASE already ending in /sandbox (docs/api.md once showed that full
    path beside the README's $BASE): it reached the console's HTML 404."""
    headers = {"x-api-secret": workspace.secrets["sandbox"], "Service-Version": "2023-11-22"}
    response = client.post("/sandbox/sandbox/v1/link_tokens", json={}, headers=headers)
    error = assert_error(response, 404, "RECORD_NOT_FOUND", "ROUTE_NOT_FOUND")
    assert error["message"] == (
        "No endpoint at /sandbox/sandbox/v1/link_tokens. It repeats part of the base URL: "
        "the endpoint is /sandbox/v1/link_tokens."
    )
    assert (
        "/development/v1/jobs."
        in client.get("/x/development/v1/jobs", headers=headers).get_json()["error"]["message"]
    )
    assert (
        "endpoint is /v1/jobs." in client.get("/api/v1/jobs", headers=headers).get_json()["error"]["message"]
    )
    # Another mode's base before this one's (a sandbox-only client, pcc.py, given the development base URL).
    assert client.post("/development/sandbox/v1/link_tokens", json={}, headers=headers).get_json()["error"][
        "message"
    ] == (
        "No endpoint at /development/sandbox/v1/link_tokens. It puts another mode's base URL, /development, "
        "before this one's: the endpoint is /sandbox/v1/link_tokens."
    )
    # Not an endpoint after the repeat either, or not an API call: the console's page, as before.
    assert client.get("/sandbox/sandbox/v1/nothing", headers=headers).content_type.startswith("text/html")
    assert client.get("/sandbox/sandbox/v1/jobs").content_type.startswith("text/html")


def test_unknown_method_is_405_in_the_error_shape(api):
    response = api.request("PATCH", "/link_tokens", json={})
    error = assert_error(response, 405, "INVALID_REQUEST_PARAMETERS", "METHOD_NOT_ALLOWED")
    # In the order OPTIONS names them, in the header and the message alike.
    assert response.headers["Allow"] == "POST, OPTIONS"
    assert (
        error["message"] == "Method PATCH is not allowed on /sandbox/v1/link_tokens. Allowed: POST, OPTIONS."
    )
    webhooks = api.request("PATCH", "/webhooks", json={})
    assert webhooks.status_code == 405 and webhooks.headers["Allow"] == "GET, HEAD, POST, OPTIONS"


def _api_paths(app) -> dict[str, set[str]]:
    """Every API path (one concrete path per rule, its placeholders filled) with the methods its rules take."""
    paths: dict[str, set[str]] = {}
    record_id = str(uuid.uuid4())  # one id for all, so rules of one path with other methods meet
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("api_"):
            continue
        path = re.sub(r"<(?:[^:<>]+:)?[^<>]+>", record_id, rule.rule)
        paths.setdefault(path, set()).update(rule.methods)
    return paths


def test_options_on_every_api_path_is_204_naming_its_methods_before_authentication(app, client):
    paths = _api_paths(app)
    assert len(paths) > 60  # every mode's copy of every endpoint
    for path, methods in paths.items():
        # No key and no version, as a browser's CORS preflight sends it.
        response = client.open(path, method="OPTIONS", headers={"Origin": "https://app.example.com"})
        assert response.status_code == 204, (path, response.get_data(as_text=True))
        assert response.get_data() == b"" and "Content-Type" not in response.headers, path
        assert set(response.headers["Allow"].split(", ")) == methods, path
        assert response.headers["Service-Version"] and response.headers["x-service-request-id"]
        # No CORS story: the API is called from a backend with a secret, so a browser refuses the call.
        assert not [name for name, _ in response.headers if name.lower().startswith("access-control-")]


def test_options_lists_methods_in_one_order_and_uses_none_of_the_keys_rate(api):
    response = api.request("OPTIONS", "/webhooks")
    assert response.status_code == 204
    assert response.headers["Allow"] == "GET, HEAD, POST, OPTIONS"
    assert "X-RateLimit-Remaining" not in response.headers  # not counted: answered before the key is read
    assert api.request("OPTIONS", "/link_tokens").headers["Allow"] == "POST, OPTIONS"


def test_options_on_an_unknown_api_path_is_the_apis_404(client):
    response = client.open("/sandbox/v1/nope", method="OPTIONS")
    assert_error(response, 404, "RECORD_NOT_FOUND", "ROUTE_NOT_FOUND")


def test_malformed_json_is_400(api):
    response = api.post("/link_tokens", data="{not json", headers={"Content-Type": "application/json"})
    assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "MALFORMED_JSON")


def test_malformed_json_says_where(api):
    """A trailing comma or single quotes got only "not valid JSON": the parser's words and place now, never the
    body's own text."""
    trailing_comma = '{"org_name": "Acme",\n "required_jobs": ["direct_deposit_switch"],}'
    response = api.post("/link_tokens", data=trailing_comma, headers={"Content-Type": "application/json"})
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "MALFORMED_JSON")
    assert error["message"] == (
        "The request body is not valid JSON: Expecting property name enclosed in double quotes at line 2, "
        "column 45."
    )
    bad_utf8 = api.post(
        "/link_tokens", data=b'{"org_name": "\xff"}', headers={"Content-Type": "application/json"}
    )
    assert assert_error(bad_utf8, 400, "INVALID_REQUEST_PARAMETERS", "MALFORMED_JSON")["message"] == (
        "The request body is not valid JSON."
    )


def test_wrong_content_type_is_415(api):
    response = api.post("/link_tokens", data="org_name=Acme", headers={"Content-Type": "text/plain"})
    assert_error(response, 415, "INVALID_REQUEST_PARAMETERS", "UNSUPPORTED_CONTENT_TYPE")


@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "42", "null"])
def test_body_that_is_not_an_object_is_400(api, body):
    response = api.post("/link_tokens", data=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] in ("BODY_NOT_OBJECT", "MALFORMED_JSON")


def test_oversized_body_is_413_in_the_error_shape(api):
    response = api.post(
        "/link_tokens",
        data='{"org_name": "' + "a" * 2_000_000 + '"}',
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 413, "INVALID_REQUEST_PARAMETERS", "BODY_TOO_LARGE")


def test_unexpected_failure_is_500_unknown_error(app, api, monkeypatch):
    from console.link_tokens import services

    def boom(*_args, **_kwargs):
        raise RuntimeError("database exploded")

    monkeypatch.setattr(services, "create_link_token", boom)
    response = api.post("/link_tokens", json=LINK_TOKEN)
    error = assert_error(response, 500, "UNKNOWN_ERROR", "INTERNAL_ERROR")
    assert "exploded" not in error["message"]
    assert _is_uuid(response.headers["x-service-request-id"])


def test_rate_limit_returns_429_with_retry_after(app, client, workspace):
    app.extensions["ratelimiter"].__init__(
        "memory://", {"sandbox": "3/minute", "development": "3/minute", "production": "5/minute"}
    )
    api = Api(client, workspace.secrets["sandbox"])
    statuses = [api.post("/link_tokens", json=LINK_TOKEN).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = api.post("/link_tokens", json=LINK_TOKEN)
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED", "RATE_LIMIT_EXCEEDED")
    assert int(response.headers["Retry-After"]) >= 1
    assert response.headers["X-RateLimit-Limit"] == "3"
    assert response.headers["X-RateLimit-Remaining"] == "0"


def test_rate_limit_is_per_key(app, client, workspace):
    app.extensions["ratelimiter"].__init__(
        "memory://", {"sandbox": "1/minute", "development": "1/minute", "production": "1/minute"}
    )
    for mode in MODES:
        assert (
            Api(client, workspace.secrets[mode], mode).post("/link_tokens", json=LINK_TOKEN).status_code
            == 200
        )
    assert Api(client, workspace.secrets["sandbox"]).post("/link_tokens", json=LINK_TOKEN).status_code == 429


def test_default_rate_limits_follow_the_spec(app):
    limits = app.extensions["ratelimiter"].limits
    assert (limits["sandbox"].amount, limits["sandbox"].get_expiry()) == (10, 1)
    assert (limits["development"].amount, limits["development"].get_expiry()) == (10, 1)
    assert (limits["production"].amount, limits["production"].get_expiry()) == (50, 1)


def test_sandbox_allows_ten_requests_per_second(client, workspace):
    api = Api(client, workspace.secrets["sandbox"])
    statuses = [api.post("/link_tokens", json=LINK_TOKEN).status_code for _ in range(12)]
    # Twelve requests take far less than a second here; the first ten pass, the rest are limited.
    assert statuses[:10] == [200] * 10
    assert 429 in statuses[10:]


def test_an_answer_given_before_the_version_check_names_the_version_asked_for(client, api):
    # A 401 and a 404 are answered before the version is checked; the client reads them in the version it sent.
    refused = Api(client, "sk_sandbox_not_a_key").get("/jobs", headers={"Service-Version": "2023-04-18"})
    assert refused.status_code == 401
    assert refused.headers["Service-Version"] == "2023-04-18"
    missing = api.get("/no_such_collection", headers={"Service-Version": "2023-04-18"})
    assert missing.status_code == 404
    assert missing.headers["Service-Version"] == "2023-04-18"
    # A version the service does not serve is not echoed as if it were used: the latest is named.
    unknown = Api(client, "sk_sandbox_not_a_key").get("/jobs", headers={"Service-Version": "1999-01-01"})
    assert unknown.headers["Service-Version"] == "2023-11-22"


def test_a_secret_in_quotes_is_401_saying_to_drop_them(client, workspace):
    """`docker run --env-file` keeps the quotes of `API_SECRET="sk_…"`; the 401 said only "not a valid API
    secret: send a whole secret as it was shown", and the secret looked whole."""
    secret = workspace.secrets["sandbox"]
    for quoted in (f'"{secret}"', f"'{secret}'"):
        error = assert_error(
            Api(client, quoted).post("/link_tokens", json=LINK_TOKEN),
            401,
            "UNAUTHORIZED_REQUEST",
            "INVALID_API_SECRET",
        )
        assert (
            error["message"] == "The x-api-secret is wrapped in quotes: send the secret alone, without them."
        )
    # One quote alone is just a wrong secret.
    error = assert_error(
        Api(client, f'"{secret}').post("/link_tokens", json=LINK_TOKEN), 401, "UNAUTHORIZED_REQUEST"
    )
    assert "wrapped in quotes" not in error["message"]


def test_a_secret_sent_as_a_bearer_token_is_401_saying_where_it_goes(client, workspace):
    """The usual first mistake: `Authorization: Bearer sk_…` (or curl -u), or `x-api-secret: Bearer sk_…`."""
    secret = workspace.secrets["sandbox"]
    for authorization in (f"Bearer {secret}", "Basic c2tfc2FuZGJveF94Og=="):
        response = Api(client, None).post(
            "/link_tokens", json=LINK_TOKEN, headers={"Authorization": authorization}
        )
        error = assert_error(response, 401, "UNAUTHORIZED_REQUEST", "MISSING_API_SECRET")
        assert (
            "Authorization header was sent" in error["message"]
            and "x-api-secret: sk_sandbox_" in error["message"]
        )
        assert secret not in error["message"]
    response = Api(client, f"Bearer {secret}").post("/link_tokens", json=LINK_TOKEN)
    error = assert_error(response, 401, "UNAUTHORIZED_REQUEST", "INVALID_API_SECRET")
    assert "drop the `Bearer `" in error["message"] and secret not in error["message"]
    # Alongside a right x-api-secret, an Authorization header is simply not read.
    response = Api(client, secret).post(
        "/link_tokens", json=LINK_TOKEN, headers={"Authorization": "Bearer x"}
    )
    assert response.status_code == 200, response.get_json()
