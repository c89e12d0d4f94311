"""GET /v1/accounts (filters, pagination, scoping), /accounts/{id}, its employment and its income."""

from __future__ import annotations

import re
import uuid

import pytest

from console.api.ratelimit import RateLimiter
from console.world.seed_data import DEMO_PEOPLE, EMPLOYER_IDS, PLATFORM_IDS
from tests.conftest import assert_error

TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "12345678"}
ACCOUNT_FIELDS = {
    "id",
    "end_user_id",
    "link_token_id",
    "platform_id",
    "platform_name",
    "created_at",
    "connected",
    "monitoring_status",
}
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$")
GOOD = {"username": "user_good", "password": "pass_good"}


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    """These tests make many calls per second; the limit itself is tested in test_conventions."""
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def connect(api, end_user_id: str | None = "user-1", **choice) -> dict:
    """Create a token and complete it headlessly; returns the completion data."""
    body = {
        "org_name": "Acme",
        "required_jobs": ["direct_deposit_switch"],
        "allocation": {"targets": [TARGET]},
    }
    if end_user_id:
        body["end_user_id"] = end_user_id
    token = api.post("/link_tokens", json=body).get_json()["data"]
    choice.setdefault("credentials", GOOD)
    response = api.post(f"/sandbox/link_tokens/{token['id']}/complete", json=choice)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def paycrest(api, **kw) -> dict:
    return connect(api, platform_id=str(PLATFORM_IDS["paycrest"]), **kw)


def test_get_account_has_the_spec_fields(api):
    done = paycrest(api)
    response = api.get(f"/accounts/{done['account_id']}")
    assert response.status_code == 200
    account = response.get_json()["data"]
    assert set(account) == ACCOUNT_FIELDS
    assert account["id"] == done["account_id"]
    assert account["link_token_id"] == done["link_token_id"]
    assert account["platform_id"] == str(PLATFORM_IDS["paycrest"])
    assert (account["platform_name"], account["end_user_id"]) == ("Paycrest", "user-1")
    assert (account["connected"], account["monitoring_status"]) == (True, "unavailable")
    assert DATETIME.match(account["created_at"])


def test_list_filters_by_end_user_and_link_token(api):
    first = paycrest(api, end_user_id="user-a")
    second = paycrest(api, end_user_id="user-b")
    third = paycrest(api, end_user_id="user-a")
    everything = api.get("/accounts").get_json()
    assert [a["id"] for a in everything["data"]] == [
        third["account_id"],
        second["account_id"],
        first["account_id"],
    ]
    mine = api.get("/accounts?end_user_id=user-a").get_json()
    assert mine["meta"]["count"] == 2 and {a["end_user_id"] for a in mine["data"]} == {"user-a"}
    by_token = api.get(f"/accounts?link_token_id={second['link_token_id']}").get_json()
    assert [a["id"] for a in by_token["data"]] == [second["account_id"]]
    assert api.get("/accounts?end_user_id=nobody").get_json() == {
        "meta": {"count": 0, "next_cursor": None},
        "data": [],
    }


def test_list_rejects_bad_filters(api):
    error = assert_error(api.get("/accounts?link_token_id=nope"), 400, "INVALID_REQUEST_PARAMETERS")
    assert error["fields"][0]["name"] == "link_token_id"
    assert_error(api.get("/accounts?end_user_id="), 400, "INVALID_REQUEST_PARAMETERS")


def test_list_paginates(api):
    ids = [paycrest(api)["account_id"] for _ in range(3)]
    page = api.get("/accounts?limit=2").get_json()
    assert page["meta"]["count"] == 2 and page["meta"]["next_cursor"]
    rest = api.get(f"/accounts?limit=2&cursor={page['meta']['next_cursor']}").get_json()
    assert [a["id"] for a in page["data"] + rest["data"]] == ids[::-1]
    assert rest["meta"]["next_cursor"] is None


def test_accounts_are_scoped_to_mode_and_workspace(api, api_for):
    done = paycrest(api)
    assert_error(api_for("development").get(f"/accounts/{done['account_id']}"), 404, "RECORD_NOT_FOUND")
    assert api_for("development").get("/accounts").get_json()["data"] == []
    assert_error(api.get(f"/accounts/{uuid.uuid4()}"), 404, "RECORD_NOT_FOUND")
    assert_error(api.get("/accounts/not-a-uuid"), 404, "RECORD_NOT_FOUND")


def test_sandbox_employment_is_mock_data_of_the_chosen_employer(api):
    done = connect(api, employer_id=str(EMPLOYER_IDS["lumen-labs"]))
    response = api.get(f"/accounts/{done['account_id']}/employment")
    assert response.status_code == 200
    employment = response.get_json()["data"]
    assert employment["account_id"] == done["account_id"]
    assert (employment["employer_name"], employment["status"]) == ("Lumen Labs", "active")
    assert employment["start_date"] == "2021-01-04" and DATETIME.match(employment["created_at"])
    assert {"id", "employer_name", "status", "start_date", "account_id", "created_at"} <= set(employment)


def test_income_when_the_platform_supports_it(api):
    done = paycrest(api)
    income = api.get(f"/accounts/{done['account_id']}/income").get_json()["data"]
    assert income["currency"] == "USD" and income["annual_income"] == 5_200_000
    assert income["pay_period_income"] == 200_000 and income["pay_frequency"] == "biweekly"


def test_employment_and_income_need_platform_support(api):
    # Meridian Paydesk does switches and employment but not income.
    done = connect(api, platform_id=str(PLATFORM_IDS["meridian-paydesk"]))
    assert api.get(f"/accounts/{done['account_id']}/employment").status_code == 200
    assert_error(
        api.get(f"/accounts/{done['account_id']}/income"),
        400,
        "INVALID_REQUEST_PARAMETERS",
        "INCOME_NOT_SUPPORTED",
    )


def test_benefits_account_has_no_employment(api):
    federal = {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000001"}
    done = connect(api, program_id=str(PLATFORM_IDS["ssa-retirement"]), federal=federal)
    account = api.get(f"/accounts/{done['account_id']}").get_json()["data"]
    assert (account["platform_name"], account["connected"]) == ("Social Security Retirement", False)
    assert_error(
        api.get(f"/accounts/{done['account_id']}/employment"),
        400,
        "INVALID_REQUEST_PARAMETERS",
        "EMPLOYMENT_NOT_SUPPORTED",
    )


def test_development_account_reads_the_world_person(client, api_for):
    dev = api_for("development")
    person = DEMO_PEOPLE["no_mfa"]
    body = {
        "org_name": "Acme",
        "required_jobs": ["direct_deposit_switch"],
        "allocation": {"targets": [TARGET]},
    }
    body["platform_id"] = str(person["platform_id"])
    token = dev.post("/link_tokens", json=body).get_json()["data"]
    # Development has no headless completion: drive the Link screens.
    url = f"/development/link/step?token={token['token']}"
    client.get(f"/development/link?token={token['token']}")
    for form in (
        {"action": "accept"},
        {"action": "login", "username": person["username"], "password": person["password"]},
    ):
        assert client.post(url, data={"token": token["token"], **form}).status_code == 200
    account = dev.get("/accounts").get_json()["data"][0]
    employment = dev.get(f"/accounts/{account['id']}/employment").get_json()["data"]
    assert (
        employment["employer_name"] == person["employer_name"]
        and employment["job_title"] == "Software Engineer"
    )
    income = dev.get(f"/accounts/{account['id']}/income").get_json()["data"]
    assert income["annual_income"] == 11_800_000
