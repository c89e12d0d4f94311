"""Credentials never reach the request log in clear: every sandbox call that carries one, logged redacted.

The calls: a headless `complete` (credentials {username, password}, mfa {method, code}, federal SSN), as
JSON, as JSON cut short or malformed, and form-encoded by mistake; `GET /sandbox/test_data`, whose answer
lists the sandbox passwords and MFA codes; a Link token's creation, whose answer holds the token; and a
credential sent in a query string.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from console.api.ratelimit import RateLimiter
from console.extensions import db
from console.link.sandbox_data import MFA_CODE, PASSWORD
from console.requestlog.models import RequestLogEntry
from console.requestlog.redact import MASK
from console.requestlog.writer import writer_for
from console.world.seed_data import PLATFORM_IDS
from tests.conftest import assert_error
from tests.factories import LINK_TOKEN

PAYCREST = str(PLATFORM_IDS["paycrest"])
SSA = str(PLATFORM_IDS["ssa-retirement"])
WRONG_PASSWORD = "Correct-Horse-Battery-9"


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def new_token(api) -> dict:
    response = api.post(
        "/link_tokens",
        json=LINK_TOKEN,
    )
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def logged(app, response) -> RequestLogEntry:
    """The log row of one response (by its request id), after the writer's flush."""
    writer_for(app).flush()
    request_id = response.headers["x-service-request-id"]
    with app.app_context():
        [row] = db.session.scalars(select(RequestLogEntry).where(RequestLogEntry.request_id == request_id))
        db.session.expunge(row)
    return row


def stored(row: RequestLogEntry) -> str:
    return row.url + json.dumps(row.request_headers) + row.request_body + row.response_body


def test_a_headless_completion_with_credentials_and_mfa_is_logged_without_them(app, api):
    token = new_token(api)
    complete = f"/sandbox/link_tokens/{token['id']}/complete"
    body = {"platform_id": PAYCREST, "credentials": {"username": "user_mfa_sms", "password": PASSWORD}}
    asked = api.post(complete, json=body)
    assert_error(asked, 400, "LINK_ERROR", "MFA_REQUIRED")
    done = api.post(complete, json={"mfa": {"method": "sms", "code": MFA_CODE}})
    assert done.status_code == 200, done.get_json()

    first, second = logged(app, asked), logged(app, done)
    assert json.loads(first.request_body) == {
        "platform_id": PAYCREST,
        "credentials": {"username": MASK, "password": MASK},
    }
    assert json.loads(second.request_body) == {"mfa": {"method": MASK, "code": MASK}}
    for row in (first, second):
        assert PASSWORD not in stored(row) and MFA_CODE not in stored(row)
        assert "user_mfa_sms" not in row.request_body


def test_a_wrong_password_and_a_wrong_code_are_logged_masked_too(app, api):
    token = new_token(api)
    complete = f"/sandbox/link_tokens/{token['id']}/complete"
    wrong = api.post(
        complete,
        json={"platform_id": PAYCREST, "credentials": {"username": "user_good", "password": WRONG_PASSWORD}},
    )
    assert_error(wrong, 400, "LINK_ERROR", "INVALID_CREDENTIALS")
    assert WRONG_PASSWORD not in stored(logged(app, wrong))

    token = new_token(api)
    complete = f"/sandbox/link_tokens/{token['id']}/complete"
    body = {
        "platform_id": PAYCREST,
        "credentials": {"username": "user_mfa_totp", "password": PASSWORD},
        "mfa": {"code": "918273"},
    }
    bad_code = api.post(complete, json=body)
    assert_error(bad_code, 400, "LINK_ERROR", "INVALID_MFA_CODE")
    row = logged(app, bad_code)
    assert "918273" not in stored(row) and PASSWORD not in stored(row)


def test_a_federal_completion_is_logged_without_the_ssn(app, api):
    token = new_token(api)
    done = api.post(
        f"/sandbox/link_tokens/{token['id']}/complete",
        json={
            "program_id": SSA,
            "federal": {"first_name": "Ada", "last_name": "L", "social_security_number": "900000001"},
        },
    )
    assert done.status_code == 200, done.get_json()
    row = logged(app, done)
    assert "900000001" not in stored(row)
    assert json.loads(row.request_body)["federal"]["first_name"] == "Ada"


@pytest.mark.parametrize(
    "text",
    [
        # Malformed JSON (a trailing comma): refused before any step, logged all the same.
        '{"platform_id": "p", "credentials": {"username": "user_good", "password": "%s"},}',
        # Cut short inside the credentials.
        '{"credentials": {"username": "user_good", "password": "%s',
        # A lone password field, outside any container.
        '{"password": "%s", "x": ',
    ],
)
def test_a_completion_body_that_does_not_parse_is_logged_without_its_credentials(app, api, text):
    token = new_token(api)
    response = api.post(
        f"/sandbox/link_tokens/{token['id']}/complete",
        data=text % WRONG_PASSWORD,
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "MALFORMED_JSON")
    row = logged(app, response)
    assert WRONG_PASSWORD not in stored(row) and MASK in row.request_body


def test_a_form_encoded_completion_and_a_credential_in_the_query_are_logged_masked(app, api):
    token = new_token(api)
    response = api.post(
        f"/sandbox/link_tokens/{token['id']}/complete?password={WRONG_PASSWORD}&token=tok_abcdefgh",
        data=f"credentials[username]=user_good&credentials[password]={WRONG_PASSWORD}&mfa[code]=918273",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    # Refused (the endpoint takes no query parameters, and JSON only), and logged all the same.
    assert response.status_code == 400 and {f["name"] for f in response.get_json()["error"]["fields"]} == {
        "password",
        "token",
    }
    row = logged(app, response)
    for secret in (WRONG_PASSWORD, "918273", "tok_abcdefgh"):
        assert secret not in stored(row)
    assert f"credentials[password]={MASK}" in row.request_body and f"?password={MASK}&" in row.url


def test_the_sandbox_test_data_answer_is_logged_without_its_passwords_and_codes(app, api):
    response = api.get("/sandbox/test_data")
    assert response.status_code == 200
    answered = response.get_json()["data"]
    assert answered["password"] == PASSWORD and answered["mfa_code"] == MFA_CODE  # the caller gets them
    row = logged(app, response)
    data = json.loads(row.response_body)["data"]
    assert (data["password"], data["mfa_code"]) == (MASK, MASK)
    assert {c["password"] for c in data["credentials"]} == {MASK}
    assert {m["right_code"] for m in data["mfa"]} == {MASK}
    assert PASSWORD not in row.response_body and MFA_CODE not in row.response_body


def test_a_link_tokens_token_is_logged_with_its_last_four_only(app, api):
    response = api.post(
        "/link_tokens",
        json=LINK_TOKEN,
    )
    token = response.get_json()["data"]["token"]
    row = logged(app, response)
    assert token not in stored(row)
    assert json.loads(row.response_body)["data"]["token"] == "••••" + token[-4:]


def test_an_api_secret_sent_anywhere_else_is_logged_masked(app, api, workspace):
    """Only the x-api-secret header was replaced: a secret pasted into a body field of another name, a query
    parameter, the path (where an id goes) or another header was kept in clear, and the 404 that quotes the
    path put it in the logged answer too."""
    secret = api.secret
    masked = secret[: secret.index("_", 3) + 1] + "••••" + secret[-4:]  # sk_sandbox_••••abcd
    responses = [
        api.post("/link_tokens", json={**LINK_TOKEN, "apiSecret": secret}),
        api.get(f"/jobs?key={secret}"),
        api.get(f"/jobs/{secret}"),
        api.get("/jobs", headers={"X-Api-Key": secret}),
    ]
    assert [r.status_code for r in responses] == [400, 400, 404, 200]
    # The answers never quote it either (the 404 said "No job with id sk_…", a field error named ?sk_…=).
    assert masked in responses[2].get_json()["error"]["message"]
    unknown = api.get(f"/jobs?{secret}=1")
    assert secret not in unknown.get_data(as_text=True) and masked in unknown.get_data(as_text=True)
    for response in responses:
        assert secret not in response.get_data(as_text=True)
    rows = [logged(app, r) for r in responses]
    for row in rows:
        assert secret not in stored(row) + row.path
    assert masked in rows[0].request_body and f"key={masked}" in rows[1].url
    assert rows[2].path.endswith(f"/jobs/{masked}") and masked in rows[2].response_body
    assert rows[3].request_headers["X-Api-Key"] == masked
    assert rows[3].request_headers["X-Api-Secret"] == "<API_SECRET>"  # the header itself, as before
