"""POST /v1/sandbox/link_tokens/{id}/complete for every sandbox row, and GET /v1/sandbox/test_data."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from console.api.ratelimit import RateLimiter
from console.events.models import Event
from console.extensions import db
from console.link_tokens.models import LinkToken
from console.workspaces.models import Workspace
from console.world.seed_data import (
    EMPLOYER_IDS,
    PAYROLL_PLATFORMS,
    PLATFORM_IDS,
    SANDBOX_MATCH_EXPECTED,
    SANDBOX_MATCH_IDENTITIES,
)
from tests.conftest import assert_error

TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "12345678"}
PAYCREST = str(PLATFORM_IDS["paycrest"])
SSA = str(PLATFORM_IDS["ssa-retirement"])


def creds(username: str, password: str = "pass_good") -> dict:
    return {"username": username, "password": password}


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


def new_token(api, **changes) -> dict:
    body = {
        "org_name": "Acme",
        "end_user_id": "user-1",
        "required_jobs": ["direct_deposit_switch"],
        "allocation": {"targets": [TARGET]},
    }
    body.update(changes)
    response = api.post("/link_tokens", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def complete(api, token: dict, **body):
    return api.post(f"/sandbox/link_tokens/{token['id']}/complete", json=body)


def ok(response) -> dict:
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def link_error(response, code: str) -> dict:
    return assert_error(response, 400, "LINK_ERROR", code)


@pytest.mark.parametrize(
    ("username", "outcome"),
    [
        ("user_good", "success"),
        ("user_pending_success", "pending"),
        ("user_pending_error", "pending"),
        ("user_pending_timeout", "pending"),
        ("user_error", "error"),
    ],
)
def test_credential_scenarios(api, username, outcome):
    token = new_token(api)
    data = ok(complete(api, token, platform_id=PAYCREST, credentials=creds(username)))
    assert data["outcome"] == outcome and data["state"] == ("error" if outcome == "error" else "success")
    job = api.get(f"/jobs/{data['job_id']}").get_json()["data"]
    assert (job["account_id"], job["link_token_id"], job["outcome"]) == (
        data["account_id"],
        token["id"],
        outcome,
    )
    listed = api.get(f"/jobs?link_token_id={token['id']}").get_json()["data"]
    assert [j["id"] for j in listed] == [data["job_id"]]
    assert api.get(f"/accounts/{data['account_id']}").status_code == 200
    names = [e["name"] for e in data["client_events"]]
    assert names.index("login_attempt") < names.index("login") < names.index("input_allocation")
    assert names[-1] == ("error" if outcome == "error" else "success")


def test_writes_the_same_events_as_link(api, app):
    data = ok(complete(api, new_token(api), platform_id=PAYCREST, credentials=creds("user_good")))
    with app.app_context():
        events = db.session.scalars(select(Event).order_by(Event.created_at, Event.type)).all()
        by_type = {e.type: e for e in events}
        # Paycrest provides employment and income, so both are announced with the account.
        assert set(by_type) == {
            "account.added",
            "employment.added",
            "income.added",
            "direct_deposit_switch.added",
        }
        assert by_type["account.added"].payload["account_id"] == data["account_id"]
        income = by_type["income.added"].payload
        assert income["account_id"] == data["account_id"] and income["currency"] == "USD"
        assert income["end_user_id"] == by_type["account.added"].payload["end_user_id"]
        assert isinstance(income["annual_income"], int) and income["pay_period_income"] > 0
        assert set(by_type["account.added"].payload) == {
            "account_id", "end_user_id", "link_token_id", "platform_id", "created_at", "connected",
        }  # fmt: skip
        assert by_type["direct_deposit_switch.added"].payload["id"] == data["job_id"]


def test_wrong_password_then_retry(api):
    token = new_token(api)
    error = link_error(
        complete(api, token, platform_id=PAYCREST, credentials=creds("user_good", "bad")),
        "INVALID_CREDENTIALS",
    )
    assert "incorrect" in error["message"]
    data = ok(complete(api, token, credentials=creds("user_good")))  # resumes at the login step
    assert data["outcome"] == "success"


def test_locked_account(api):
    token = new_token(api)
    link_error(complete(api, token, platform_id=PAYCREST, credentials=creds("user_locked")), "ACCOUNT_LOCKED")
    link_error(complete(api, token, credentials=creds("user_good")), "LINK_TOKEN_ALREADY_USED")


@pytest.mark.parametrize("method", ["sms", "email", "totp"])
def test_mfa_right_and_wrong(api, method):
    token = new_token(api)
    body = {"platform_id": PAYCREST, "credentials": creds(f"user_mfa_{method}")}
    link_error(complete(api, token, **body), "MFA_REQUIRED")
    link_error(complete(api, token, mfa={"code": "000000"}), "INVALID_MFA_CODE")
    data = ok(complete(api, token, mfa={"method": method, "code": "123456"}))
    assert data["outcome"] == "success"


@pytest.mark.parametrize(("method", "other"), [("sms", "email"), ("email", "totp"), ("totp", "sms")])
def test_an_mfa_method_other_than_the_test_user_s_is_refused_naming_it(api, method, other):
    """A person cannot choose how a login's code is sent (Link's code screen offers no choice): a headless
    call naming another method succeeded, so a CI could pass with a method its users never see."""
    token = new_token(api)
    link_error(
        complete(api, token, platform_id=PAYCREST, credentials=creds(f"user_mfa_{method}")), "MFA_REQUIRED"
    )
    error = link_error(complete(api, token, mfa={"method": other, "code": "123456"}), "INVALID_MFA_METHOD")
    assert f"by {method}" in error["message"] and f"send mfa.method {method}" in error["message"]
    # Not a code attempt: the flow stays on the code step, and the right method (or none) goes on.
    data = ok(complete(api, token, mfa={"method": method, "code": "123456"}))
    assert data["outcome"] == "success"


def test_platform_matching_refuses_a_method_it_does_not_offer_naming_those_it_does(api):
    token = new_token(api, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["one"]})
    slug = SANDBOX_MATCH_EXPECTED["one"][0]
    offered = next(row[5] for row in PAYROLL_PLATFORMS if row[0] == slug)
    refused = next(method for method in ("sms", "email", "totp") if method not in offered)
    body = {"matched_platform_id": str(PLATFORM_IDS[slug]), "mfa": {"method": refused, "code": "123456"}}
    error = link_error(complete(api, token, **body), "INVALID_MFA_METHOD")
    assert f"send one of {', '.join(offered)}" in error["message"]  # Link's screen said "the listed" only


def test_allocations(api):
    amount = ok(complete(api, new_token(api), platform_id=PAYCREST, credentials=creds("user_good"),
                         allocation={"type": "amount", "value": 7500}))  # fmt: skip
    job = api.get(f"/jobs/{amount['job_id']}").get_json()["data"]
    assert job["params"] == {
        "action": "partial_switch",
        "allocation": {"type": "amount", "value": 7500, "target": {"account_type": "checking"}},
    }
    token = new_token(api)
    bad = {"type": "percent", "value": 150}
    link_error(
        complete(api, token, platform_id=PAYCREST, credentials=creds("user_good"), allocation=bad),
        "INVALID_ALLOCATION",
    )


def test_a_split_the_token_does_not_offer_is_refused_not_turned_into_a_full_switch(api):
    """Link's screen offers no split when the token disables splitting or sets the amount itself: a CI asking
    for one is told so (it got a full switch, or the token's amount, and passed unawares)."""
    partial = {"type": "amount", "value": 7500}
    for token in (
        new_token(api, disable_direct_deposit_splitting=True),
        new_token(api, allocation={"targets": [TARGET], "type": "percent", "value": 40}),
    ):
        error = link_error(
            complete(api, token, platform_id=PAYCREST, credentials=creds("user_good"), allocation=partial),
            "INVALID_ALLOCATION",
        )
        assert "leave allocation out" in error["message"]
        # The same token then completes without it, as Link's screen would.
        done = ok(complete(api, token, platform_id=PAYCREST, credentials=creds("user_good")))
        assert api.get(f"/jobs/{done['job_id']}").get_json()["data"]["outcome"] == "success"
    no_split = api.get(f"/jobs/{done['job_id']}").get_json()["data"]["params"]
    assert no_split["allocation"]["type"] == "percent" and no_split["allocation"]["value"] == 40


def test_a_federal_split_or_second_account_is_refused_not_turned_into_a_full_switch(api):
    """A federal benefits switch is full and uses the token's first account (spec): Link's federal screen offers
    neither a split nor a choice of account, so a CI asking for one is told so instead of passing unawares."""
    savings = {**TARGET, "type": "savings", "account_number": "87654321"}
    federal = {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000001"}
    token = new_token(api, allocation={"targets": [TARGET, savings]})
    for allocation in (
        {"type": "amount", "value": 7500},
        {"type": "percent", "value": 40},
        {"target_index": 1},
    ):
        error = link_error(
            complete(api, token, program_id=SSA, federal=federal, allocation=allocation), "INVALID_ALLOCATION"
        )
        assert "leave allocation out" in error["message"]
    # The same token then completes without it (or with a full switch to the first account), as Link would.
    done = ok(complete(api, token, federal=federal, allocation={"type": "full", "target_index": 0}))
    params = api.get(f"/jobs/{done['job_id']}").get_json()["data"]["params"]
    assert params["action"] == "full_switch" and params["allocation"]["target"] == {
        "account_type": "checking"
    }


def test_partner_platform_omits_the_action(api):
    data = ok(
        complete(
            api, new_token(api), platform_id=str(PLATFORM_IDS["harbor-pay"]), credentials=creds("user_good")
        )
    )
    job = api.get(f"/jobs/{data['job_id']}").get_json()["data"]
    assert job["params"] == {"allocation": {"target": {"account_type": "checking"}}}


def test_employer_routing_and_unsupported_platforms(api):
    token = new_token(api, employer_id=str(EMPLOYER_IDS["sparrow-software"]))
    data = ok(complete(api, token, credentials=creds("user_good")))
    assert data["platform_id"] == str(PLATFORM_IDS["worknest"])
    routed = new_token(api, platform_id=str(PLATFORM_IDS["keystone-wages"]))
    link_error(complete(api, routed, credentials=creds("user_good")), "PLATFORM_NOT_SUPPORTED")
    searched = new_token(api)
    link_error(
        complete(api, searched, platform_id=str(PLATFORM_IDS["keystone-wages"])), "PLATFORM_NOT_SUPPORTED"
    )


@pytest.mark.parametrize("case", ["one", "several"])
def test_platform_matching_identities(api, app, case):
    token = new_token(api, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES[case]})
    expected = [str(PLATFORM_IDS[slug]) for slug in SANDBOX_MATCH_EXPECTED[case]]
    error = link_error(complete(api, token), "MATCHED_PLATFORM_REQUIRED")
    assert all(pid in error["message"] for pid in expected)
    data = ok(
        complete(api, token, matched_platform_id=expected[-1], mfa={"method": "email", "code": "123456"})
    )
    assert data["via_platform_matching"] and data["platform_id"] == expected[-1]
    with app.app_context():
        assert db.session.get(LinkToken, uuid.UUID(token["id"])).platform_matching is None


def test_platform_matching_without_match_uses_search(api):
    token = new_token(api, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["none"]})
    data = ok(complete(api, token, platform_id=PAYCREST, credentials=creds("user_good")))
    assert not data["via_platform_matching"]
    assert [e["payload"]["to"] for e in data["client_events"] if e["name"] == "screen_transition"][:4] == [
        "intro", "matching", "search", "login",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("ssn", "outcome"), [("900000001", "processing"), ("900000002", "processing"), ("900000003", "error")]
)
def test_federal_ssns(api, ssn, outcome):
    federal = {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": ssn}
    data = ok(complete(api, new_token(api, amount=5000), program_id=SSA, federal=federal))
    assert data["outcome"] == outcome
    job = api.get(f"/jobs/{data['job_id']}").get_json()["data"]
    assert job["params"]["action"] == "full_switch"


def test_federal_errors(api):
    token = new_token(api)
    link_error(complete(api, token, program_id=SSA), "FEDERAL_IDENTITY_REQUIRED")
    unknown = {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000099"}
    link_error(complete(api, token, federal=unknown), "BENEFICIARY_NOT_FOUND")


def test_on_demand_update(api):
    first = ok(
        complete(
            api,
            new_token(api),
            platform_id=PAYCREST,
            credentials=creds("user_mfa_sms"),
            mfa={"code": "123456"},
        )
    )
    update = new_token(api, account_id=first["account_id"], end_user_id=None)
    link_error(complete(api, update), "MFA_REQUIRED")  # login skipped, MFA is not
    data = ok(complete(api, update, mfa={"code": "123456"}))
    assert data["account_id"] == first["account_id"]
    job = api.get(f"/jobs/{data['job_id']}").get_json()["data"]
    assert job["link_token_id"] == update["id"]


def test_used_and_expired_tokens(api, app, workspace):
    token = new_token(api)
    ok(complete(api, token, platform_id=PAYCREST, credentials=creds("user_good")))
    link_error(
        complete(api, token, platform_id=PAYCREST, credentials=creds("user_good")), "LINK_TOKEN_ALREADY_USED"
    )
    late = new_token(api)
    with app.app_context():
        db.session.get(Workspace, uuid.UUID(workspace.id)).clock_offset_seconds = 3601
        db.session.commit()
    link_error(
        complete(api, late, platform_id=PAYCREST, credentials=creds("user_good")), "LINK_TOKEN_EXPIRED"
    )
    link_error(complete(api, late), "LINK_TOKEN_EXPIRED")


def test_request_errors(api, api_for):
    token = new_token(api)
    error = assert_error(
        complete(api, token, surprise=1), 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS"
    )
    assert error["fields"] == [{"name": "surprise", "message": "is not a known field"}]
    assert_error(complete(api, token, credentials="user_good"), 400, "INVALID_REQUEST_PARAMETERS")
    link_error(complete(api, token), "PLATFORM_REQUIRED")
    assert_error(complete(api, {"id": str(uuid.uuid4())}), 404, "RECORD_NOT_FOUND")
    dev = api_for("development")
    dev_token = dev.post("/link_tokens", json={"org_name": "A", "required_jobs": ["direct_deposit_switch"],
                                               "allocation": {"targets": [TARGET]}}).get_json()["data"]  # fmt: skip
    assert_error(
        dev.post(f"/sandbox/link_tokens/{dev_token['id']}/complete", json={}),
        403,
        "FORBIDDEN",
        "SANDBOX_ONLY",
    )


def test_test_data_lists_every_row(api, api_for):
    data = api.get("/sandbox/test_data").get_json()["data"]
    usernames = {row["username"] for row in data["credentials"]}
    assert {"user_good", "user_pending_success", "user_pending_error", "user_pending_timeout", "user_error",
            "user_locked", "user_mfa_sms", "user_mfa_email", "user_mfa_totp"} <= usernames  # fmt: skip
    assert any(row["error_code"] == "INVALID_CREDENTIALS" for row in data["credentials"])
    assert {row["method"] for row in data["mfa"]} == {"sms", "email", "totp"}
    assert [row["case"] for row in data["platform_matching"]] == ["one", "several", "none"]
    assert {row["scenario"] for row in data["federal_benefits"]} == {
        "federal_sent",
        "federal_failure",
        "federal_rejected",
    }
    assert_error(api_for("production").get("/sandbox/test_data"), 403, "FORBIDDEN", "SANDBOX_ONLY")


def test_the_tokens_token_where_its_id_goes_is_404_saying_which_is_the_id(api):
    token = new_token(api)
    response = complete(api, {"id": token["token"]}, platform_id=PAYCREST, credentials=creds("user_good"))
    error = assert_error(response, 404, "RECORD_NOT_FOUND", "RECORD_NOT_FOUND")
    assert (
        "`data.id` of POST /v1/link_tokens" in error["message"] and "`token` opens Link" in error["message"]
    )
    assert token["token"] not in error["message"]
    assert complete(api, token, platform_id=PAYCREST, credentials=creds("user_good")).status_code == 200


@pytest.mark.parametrize("allocation", [{"type": "full", "value": 500}, {"value": 500}])
def test_a_value_beside_a_full_switch_is_refused_not_dropped(api, allocation):
    """It made a full switch, the value dropped without a word, though the caller meant a split."""
    token = new_token(api)
    response = complete(
        api, token, platform_id=PAYCREST, credentials=creds("user_good"), allocation=allocation
    )
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    assert [f["name"] for f in error["fields"]] == ["allocation.value"]
    assert "only for type amount or percent" in error["fields"][0]["message"]
    full = complete(
        api, token, platform_id=PAYCREST, credentials=creds("user_good"), allocation={"type": "full"}
    )
    assert full.status_code == 200, full.get_json()


def test_a_target_index_past_the_tokens_accounts_names_the_range(api):
    """Link's screen says only "Enter which account to use."; a headless call names the valid range."""
    error = link_error(
        complete(api, new_token(api), platform_id=PAYCREST, credentials=creds("user_good"),
                 allocation={"type": "full", "target_index": 3}),
        "INVALID_ALLOCATION",
    )  # fmt: skip
    assert "target_index 3" in error["message"] and "0 to 0" in error["message"]


def test_a_payroll_platform_sent_as_program_id_is_refused_by_name_not_asked_for_credentials(api):
    error = link_error(
        complete(api, new_token(api), program_id=PAYCREST,
                 federal={"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000001"}),
        "INVALID_SELECTION",
    )  # fmt: skip
    assert "is a payroll platform" in error["message"] and "platform_id" in error["message"]
    # The same platform as platform_id goes on to its login, as before.
    link_error(complete(api, new_token(api), platform_id=PAYCREST), "CREDENTIALS_REQUIRED")


def test_another_platform_than_the_one_the_flow_is_on_is_refused_not_ignored(api):
    """A token routed to Paycrest, completed with another platform_id, made the switch on Paycrest: no step
    reads the choice once a platform is chosen, and the CI passed believing it switched on the other one."""
    harbor = str(PLATFORM_IDS["harbor-pay"])
    routed = new_token(api, platform_id=PAYCREST)
    error = link_error(
        complete(api, routed, platform_id=harbor, credentials=creds("user_good")), "INVALID_SELECTION"
    )
    assert error["message"] == (
        f"platform_id {harbor} is not the platform this flow is on: it is on Paycrest (platform_id {PAYCREST}), "
        "since the Link token's platform_id or employer_id routes straight to it. Leave platform_id out to go "
        "on there, or create a new Link token to choose another."
    )
    # Recoverable, and nothing was attempted: the same call without it (or naming Paycrest) goes on.
    assert (
        ok(complete(api, routed, platform_id=PAYCREST, credentials=creds("user_good")))["platform_id"]
        == PAYCREST
    )

    # Chosen by an earlier call (search, then a wrong password): the retry may not switch platforms either.
    searched = new_token(api)
    link_error(
        complete(api, searched, platform_id=PAYCREST, credentials=creds("user_good", "x")),
        "INVALID_CREDENTIALS",
    )
    error = link_error(
        complete(api, searched, program_id=SSA, credentials=creds("user_good")), "INVALID_SELECTION"
    )
    assert "since it was chosen on search (by a platform_id, employer_id or program_id" in error["message"]
    # An employer on the flow's own platform is the same choice.
    employer_on_paycrest = next(
        e["id"] for e in api.get("/employers?limit=100").get_json()["data"] if e["platform_id"] == PAYCREST
    )
    ok(complete(api, searched, employer_id=employer_on_paycrest, credentials=creds("user_good")))

    # A matched platform, and another platform_id beside it.
    matching = new_token(api, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES["one"]})
    matched = str(PLATFORM_IDS[SANDBOX_MATCH_EXPECTED["one"][0]])
    error = link_error(
        complete(api, matching, matched_platform_id=matched, platform_id=PAYCREST, mfa={"code": "123456"}),
        "INVALID_SELECTION",
    )
    assert "it is the matched platform chosen (matched_platform_id)" in error["message"]

    # An on-demand update is on its account's platform.
    update = new_token(api, account_id=ok(complete(api, new_token(api), platform_id=PAYCREST,
                                                   credentials=creds("user_good")))["account_id"], end_user_id=None)  # fmt: skip
    error = link_error(complete(api, update, platform_id=harbor), "INVALID_SELECTION")
    assert "account_id (an on-demand update) routes straight to it" in error["message"]


@pytest.mark.committing
def test_completions_racing_to_start_one_tokens_flow_answer_as_one_after_the_other(
    app, api, workspace, monkeypatch
):
    """Two completions of a new token at once (a CI's retry of a timed-out call without an Idempotency-Key)
    both found no flow and both started one: the loser's insert broke the session row's unique token id, a 500.
    Now it runs again on the winner's flow, as Link's own pages do, and is told the token was used."""
    import threading

    from console.link import flow as link_flow
    from tests.api.at_once import at_once, posting

    token = new_token(api)
    both_looked = threading.Barrier(2, timeout=20)
    original_start = link_flow.Flow.start

    def start_together(self):
        both_looked.wait()  # each request has read "no flow yet" before either starts one
        original_start(self)

    monkeypatch.setattr(link_flow.Flow, "start", start_together)
    body = {"platform_id": PAYCREST, "credentials": creds("user_good")}
    path = f"/sandbox/link_tokens/{token['id']}/complete"
    answers = at_once(app, 2, posting(path, workspace.secrets["sandbox"], body))
    assert sorted(r.status_code for r in answers) == [200, 400], [r.text for r in answers]
    loser = next(r for r in answers if r.status_code == 400)
    assert loser.json()["error"]["code"] == "LINK_TOKEN_ALREADY_USED"
    assert len(api.get(f"/jobs?link_token_id={token['id']}").get_json()["data"]) == 1
