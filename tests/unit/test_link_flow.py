"""The Link flow state machine: routes, steps from the right state only, one switch per token, expiry."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm.exc import StaleDataError

from console.accounts.models import Account
from console.events.models import Event
from console.extensions import db
from console.jobs.models import Job
from console.keys.models import ApiKey
from console.link import flow as link_flow
from console.link import models as m
from console.link.flow import StaleStep
from console.link.models import LinkSession
from console.link_tokens.models import LinkToken
from console.link_tokens.services import create_link_token
from console.workspaces.models import Workspace
from console.world import allocations
from console.world.seed_data import (
    DEMO_BENEFICIARIES,
    DEMO_PEOPLE,
    EMPLOYER_IDS,
    PLATFORM_IDS,
    SANDBOX_MATCH_IDENTITIES,
)

TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "12345678"}
SAVINGS = {"type": "savings", "routing_number": "011000015", "account_number": "87654321"}
PAYCREST, LEDGERLINE = str(PLATFORM_IDS["paycrest"]), str(PLATFORM_IDS["ledgerline"])
SSA = str(PLATFORM_IDS["ssa-retirement"])


@pytest.fixture
def ctx(app, workspace):
    with app.app_context():
        yield workspace


def token(workspace, mode: str = "sandbox", **body) -> LinkToken:
    key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids[mode]))
    request = {
        "org_name": "Acme",
        "end_user_id": "user-1",
        "required_jobs": ["direct_deposit_switch"],
        "allocation": {"targets": [TARGET]},
    }
    request.update(body)
    created = create_link_token(key, request)
    db.session.commit()
    return db.session.get(LinkToken, created.id)


def step(link_token: LinkToken, name: str, *args) -> link_flow.Flow:
    """Load the flow, run one step, commit: what one request does."""
    flow = link_flow.load(link_token)
    getattr(flow, name)(*args)
    db.session.commit()
    return flow


def names(flow: link_flow.Flow) -> list[str]:
    return [e["name"] for e in flow.events]


def count(model, **where) -> int:
    stmt = select(func.count()).select_from(model)
    for key, value in where.items():
        stmt = stmt.where(getattr(model, key) == value)
    return db.session.scalar(stmt)


def to_login(link_token: LinkToken, platform_id: str = PAYCREST) -> None:
    step(link_token, "accept_terms")
    step(link_token, "select", "platform", platform_id)


def finish(link_token: LinkToken, username: str = "user_good") -> link_flow.Flow:
    step(link_token, "login", username, "pass_good")
    step(link_token, "choose_allocation", "full", None, 0)
    return step(link_token, "confirm")


def test_standard_flow_creates_one_account_and_one_job(ctx):
    t = token(ctx)
    first = link_flow.load(t)
    db.session.commit()
    assert first.state == m.INTRO
    assert first.events == [{"name": "screen_transition", "payload": {"from": None, "to": "intro"}}]
    to_login(t)
    login = step(t, "login", "user_good", "pass_good")
    assert names(login) == ["login_attempt", "login", "screen_transition"]
    account_id = login.events[1]["payload"]["account_id"]
    allocation = step(t, "choose_allocation", "amount", 5000, 0)
    assert allocation.events[0] == {
        "name": "input_allocation",
        "payload": {
            "action": "partial_switch",
            "allocation": {"type": "amount", "value": 5000, "target": {"account_type": "checking"}},
        },
    }
    done = step(t, "confirm")
    assert done.state == m.DONE and names(done) == ["screen_transition", "success"]
    job = db.session.get(Job, done.row.job_id)
    assert str(job.account_id) == account_id and job.outcome == "success"
    assert job.params["allocation"] == {
        "type": "amount",
        "value": 5000,
        "target": {"account_type": "checking"},
    }
    types = [e.type for e in db.session.scalars(select(Event).order_by(Event.created_at))]
    assert types.count("account.added") == 1 and types.count("direct_deposit_switch.added") == 1


def test_refresh_shows_the_same_screen_without_events(ctx):
    t = token(ctx)
    to_login(t)
    again = link_flow.load(t)
    assert again.state == m.LOGIN and again.events == []


def test_skip_intro_starts_at_search(ctx):
    flow = link_flow.load(token(ctx, skip_intro_screen=True))
    assert flow.state == m.SEARCH
    assert flow.events == [{"name": "screen_transition", "payload": {"from": None, "to": "search"}}]


def test_a_step_from_another_screen_changes_nothing(ctx):
    t = token(ctx)
    with pytest.raises(StaleStep):
        step(t, "login", "user_good", "pass_good")  # still on intro
    to_login(t)
    step(t, "login", "user_good", "pass_good")
    with pytest.raises(StaleStep):
        step(t, "login", "user_good", "pass_good")  # double submit of the login form
    assert count(Account) == 1


def test_double_confirm_and_reuse_create_one_job(ctx):
    t = token(ctx)
    to_login(t)
    finish(t)
    with pytest.raises(StaleStep):
        step(t, "confirm")
    for name, args in (
        ("accept_terms", ()),
        ("select", ("platform", PAYCREST)),
        ("choose_allocation", ("full", None, 0)),
    ):
        with pytest.raises(StaleStep):
            step(t, name, *args)
    assert count(Job, link_token_id=t.id) == 1


def test_concurrent_submit_loses_the_optimistic_lock(ctx):
    t = token(ctx)
    to_login(t)
    flow = link_flow.load(t)
    # Another request commits a step of the same flow in between.
    bump = (
        update(LinkSession).where(LinkSession.link_token_id == t.id).values(version=LinkSession.version + 1)
    )
    db.session.execute(bump.execution_options(synchronize_session=False))
    with pytest.raises(StaleDataError):
        flow.login("user_good", "pass_good")
    db.session.rollback()
    assert count(Account) == 0


def test_expired_token_stops_mid_flow(ctx):
    t = token(ctx)
    to_login(t)
    db.session.get(Workspace, t.workspace_id).clock_offset_seconds = 3601
    db.session.commit()
    flow = link_flow.load(t)
    assert flow.state == m.EXPIRED and flow.row.error_code == "LINK_TOKEN_EXPIRED"
    assert flow.events[-1]["payload"]["recoverable"] is False
    db.session.commit()
    with pytest.raises(StaleStep):
        step(t, "login", "user_good", "pass_good")
    assert count(Account) == 0 and count(Job) == 0


def test_wrong_password_then_success(ctx):
    t = token(ctx)
    to_login(t)
    wrong = step(t, "login", "user_good", "nope")
    assert wrong.state == m.LOGIN and wrong.row.error_code == "INVALID_CREDENTIALS"
    assert names(wrong) == ["login_attempt", "error"] and wrong.events[1]["payload"]["recoverable"]
    done = finish(t)
    assert done.state == m.DONE and done.row.login_attempts == 2


def test_locked_account_ends_the_flow(ctx):
    t = token(ctx)
    to_login(t)
    flow = step(t, "login", "user_locked", "pass_good")
    assert flow.state == m.FAILED and flow.row.error_code == "ACCOUNT_LOCKED"
    assert count(Account) == 0


@pytest.mark.parametrize("method", ["sms", "email", "totp"])
def test_mfa_each_method_wrong_then_right(ctx, method):
    t = token(ctx)
    to_login(t)
    flow = step(t, "login", f"user_mfa_{method}", "pass_good")
    assert flow.state == m.MFA and flow.row.mfa_method == method and count(Account) == 0
    wrong = step(t, "submit_mfa", "000000")
    assert wrong.row.error_code == "INVALID_MFA_CODE" and wrong.state == m.MFA
    right = step(t, "submit_mfa", "123456")
    assert right.state == m.ALLOCATION and names(right)[0] == "login"


def test_too_many_wrong_codes_end_the_flow(ctx):
    t = token(ctx)
    to_login(t)
    step(t, "login", "user_mfa_sms", "pass_good")
    for _ in range(link_flow.MAX_MFA_ATTEMPTS):
        flow = step(t, "submit_mfa", "999999")
    assert flow.state == m.FAILED and flow.row.error_code == "MFA_ATTEMPTS_EXCEEDED"


def test_unsupported_platform_from_search_is_recoverable(ctx):
    t = token(ctx)
    step(t, "accept_terms")
    flow = step(t, "select", "platform", str(PLATFORM_IDS["clockwise-hr"]))  # no direct deposit switch
    assert flow.state == m.SEARCH and flow.row.error_code == "PLATFORM_NOT_SUPPORTED"
    assert step(t, "select", "platform", PAYCREST).state == m.LOGIN


def test_unsupported_platform_from_token_is_terminal(ctx):
    flow = step(token(ctx, platform_id=str(PLATFORM_IDS["keystone-wages"])), "accept_terms")
    assert flow.state == m.FAILED and flow.row.error_code == "PLATFORM_NOT_SUPPORTED"


def test_preconfigured_amount_overrides_the_choice_and_needs_an_amount_platform(ctx):
    t = token(ctx, amount=2500)
    step(t, "accept_terms")
    refused = step(t, "select", "platform", LEDGERLINE)  # does not support amounts
    assert refused.row.error_code == "PLATFORM_NOT_SUPPORTED"
    step(t, "select", "platform", PAYCREST)
    step(t, "login", "user_good", "pass_good")
    assert step(t, "choose_allocation", "full", None, 0).row.allocation["value"] == 2500


def test_disabled_splitting_forces_a_full_switch(ctx):
    t = token(ctx, disable_direct_deposit_splitting=True, allocation={"targets": [TARGET, SAVINGS]})
    to_login(t)
    step(t, "login", "user_good", "pass_good")
    flow = step(t, "choose_allocation", "percent", 20, 1)
    assert flow.row.allocation == {"type": "full", "value": None, "target_index": 1}
    assert flow.events[0]["payload"]["allocation"]["target"] == {"account_type": "savings"}


def test_employer_routing_goes_straight_to_login(ctx):
    t = token(ctx, employer_id=str(EMPLOYER_IDS["copper-kettle"]))
    flow = step(t, "accept_terms")
    assert flow.state == m.LOGIN and str(flow.row.platform_id) == LEDGERLINE
    assert names(flow) == ["screen_transition", "select_employer", "select_platform", "screen_transition"]
    away = step(t, "to_search")
    assert away.state == m.SEARCH and names(away)[0] == "incorrect_platform_given"


def test_back_never_undoes_a_login(ctx):
    t = token(ctx)
    to_login(t)
    assert step(t, "back", m.LOGIN).state == m.SEARCH
    step(t, "select", "platform", PAYCREST)
    step(t, "login", "user_good", "pass_good")
    with pytest.raises(StaleStep):
        step(t, "back", m.ALLOCATION)
    step(t, "choose_allocation", "full", None, 0)
    assert step(t, "back", m.CONFIRM).state == m.ALLOCATION


def prime_token(ctx, case: str, **body) -> LinkToken:
    return token(ctx, end_user={"platform_matching": SANDBOX_MATCH_IDENTITIES[case]}, **body)


def test_platform_matching_several_then_mfa_and_erasure(ctx):
    t = prime_token(ctx, "several")
    assert link_flow.load(t).state == m.INTRO
    db.session.commit()
    assert step(t, "accept_terms").state == m.MATCHING_WAIT
    matched = step(t, "finish_matching")
    assert matched.state == m.MATCHES and len(matched.row.matched_platforms) == 3
    chosen = step(t, "choose_match", str(PLATFORM_IDS["summit-staffing"]))
    assert chosen.state == m.MFA_METHOD and chosen.mfa_options() == ["sms", "totp"]
    assert step(t, "choose_mfa_method", "sms").state == m.MFA
    step(t, "submit_mfa", "123456")
    step(t, "choose_allocation", "full", None, 0)
    assert t.platform_matching is not None  # kept only while the flow runs
    done = step(t, "confirm")
    job = db.session.get(Job, done.row.job_id)
    assert job.via_platform_matching and "action" not in job.params  # a partner platform
    db.session.expire_all()
    assert db.session.get(LinkToken, t.id).platform_matching is None
    kept = db.session.get(LinkSession, done.row.id).matched_platforms[0]
    assert set(kept) == {"platform_id", "platform_name"}


def test_platform_matching_without_match_falls_back_to_search(ctx):
    t = prime_token(ctx, "none")
    step(t, "accept_terms")
    flow = step(t, "finish_matching")
    assert flow.state == m.SEARCH and flow.row.matched_platforms == []
    step(t, "select", "platform", PAYCREST)
    done = finish(t)
    assert not db.session.get(Job, done.row.job_id).via_platform_matching


@pytest.mark.parametrize("ending", ["exit", "expire", "lock"])
def test_matching_data_is_erased_when_the_flow_ends_early(ctx, ending):
    t = prime_token(ctx, "none")
    step(t, "accept_terms")
    step(t, "finish_matching")
    if ending == "exit":
        step(t, "exit")
    elif ending == "lock":
        step(t, "select", "platform", PAYCREST)
        step(t, "login", "user_locked", "pass_good")
    else:
        db.session.get(Workspace, t.workspace_id).clock_offset_seconds = 4000
        link_flow.load(t)
        db.session.commit()
    db.session.expire_all()
    assert db.session.get(LinkToken, t.id).platform_matching is None


def test_exit_ends_an_unfinished_flow_and_reports_completion(ctx):
    t = token(ctx)
    to_login(t)
    exited = step(t, "exit")
    assert exited.state == m.EXITED and exited.events[-1] == {
        "name": "exit",
        "payload": {"screen": "login", "completed": False},
    }
    done_token = token(ctx)
    to_login(done_token)
    finish(done_token)
    after = step(done_token, "exit")
    assert after.state == m.DONE and after.events == [
        {"name": "exit", "payload": {"screen": "success", "completed": True}}
    ]


def sandbox_account(ctx, username: str) -> Account:
    t = token(ctx)
    to_login(t)
    step(t, "login", username, "pass_good")
    if username.startswith("user_mfa"):
        step(t, "submit_mfa", "123456")
    return db.session.get(Account, link_flow.load(t).row.account_id)


def test_on_demand_update_skips_login_and_replays_the_scenario(ctx):
    account = sandbox_account(ctx, "user_pending_success")
    t = token(ctx, account_id=str(account.id), end_user_id=None)
    flow = step(t, "accept_terms")
    assert flow.state == m.ALLOCATION
    assert names(flow) == ["screen_transition", "select_platform", "login", "screen_transition"]
    step(t, "choose_allocation", "full", None, 0)
    done = step(t, "confirm")
    job = db.session.get(Job, done.row.job_id)
    assert job.account_id == account.id and job.outcome == "pending" and job.end_user_id == "user-1"
    assert count(Account) == 1


def test_on_demand_update_with_mfa_asks_for_the_code(ctx):
    account = sandbox_account(ctx, "user_mfa_totp")
    flow = step(token(ctx, account_id=str(account.id), skip_intro_screen=True), "submit_mfa", "123456")
    assert flow.state == m.ALLOCATION


def login_development(ctx, demo: str, **body) -> tuple[LinkToken, link_flow.Flow]:
    person = DEMO_PEOPLE[demo]
    t = token(ctx, "development", platform_id=str(person["platform_id"]), skip_intro_screen=True, **body)
    return t, step(t, "login", person["username"], person["password"])


def test_development_switch_changes_the_world(ctx):
    t, flow = login_development(ctx, "no_mfa")
    assert flow.state == m.ALLOCATION
    step(t, "choose_allocation", "full", None, 0)
    done = step(t, "confirm")
    assert done.row.allocations_before != done.row.allocations_after
    now = allocations.current_allocations(t.workspace_id, "development", done.row.employment_id)
    assert now == done.row.allocations_after and now[0]["account_number"] == TARGET["account_number"]


def test_development_wrong_password_and_mfa(ctx):
    person = DEMO_PEOPLE["sms"]
    t = token(ctx, "development", platform_id=str(person["platform_id"]), skip_intro_screen=True)
    assert step(t, "login", person["username"], "wrong").row.error_code == "INVALID_CREDENTIALS"
    flow = step(t, "login", person["username"], person["password"])
    assert flow.state == m.MFA and flow.row.mfa_method == "sms"


def test_development_update_needs_mfa_only_where_enabled(ctx):
    t, _ = login_development(ctx, "sms")
    step(t, "submit_mfa", "123456")
    account_id = link_flow.load(t).row.account_id
    update_flow = step(token(ctx, "development", account_id=str(account_id)), "accept_terms")
    assert update_flow.state == m.MFA


def federal(ctx, mode: str = "sandbox", **body) -> LinkToken:
    t = token(ctx, mode, platform_id=SSA, skip_intro_screen=True, **body)
    assert link_flow.load(t).state == m.FEDERAL
    db.session.commit()
    return t


@pytest.mark.parametrize(
    ("ssn", "outcome", "state"),
    [
        ("900000001", "processing", m.DONE),
        ("900-00-0002", "processing", m.DONE),
        ("900000003", "error", m.FAILED),
    ],
)
def test_federal_sandbox_ssns(ctx, ssn, outcome, state):
    t = federal(ctx, allocation={"targets": [TARGET, SAVINGS]})
    flow = step(t, "submit_federal", "Any", "Person", ssn)
    assert flow.state == m.CONFIRM and flow.row.federal_ssn_last_four == ssn[-4:]
    assert names(flow) == ["login_attempt", "login", "input_allocation", "screen_transition"]
    done = step(t, "confirm")
    job = db.session.get(Job, done.row.job_id)
    assert done.state == state and job.outcome == outcome
    assert job.params == {
        "action": "full_switch",
        "allocation": {"type": "remainder", "target": {"account_type": "checking"}},
    }
    account = db.session.get(Account, job.account_id)
    assert (account.kind, account.connected, account.monitoring_status) == ("benefits", False, "unavailable")
    added = db.session.scalar(select(Event).where(Event.type == "account.added"))
    assert added.payload["platform_name"] == "Social Security Retirement"
    assert added.payload["monitoring_status"] == "unavailable"


def test_federal_rejects_bad_identity_and_unknown_ssn(ctx):
    t = federal(ctx, amount=5000)  # a preset amount is explained, not refused
    assert step(t, "submit_federal", "", "Person", "900000001").row.error_code == "INVALID_IDENTITY"
    assert step(t, "submit_federal", "Any", "Person", "12345").row.error_code == "INVALID_IDENTITY"
    assert step(t, "submit_federal", "Any", "Person", "900000099").row.error_code == "BENEFICIARY_NOT_FOUND"
    assert step(t, "submit_federal", "Any", "Person", "900000001").state == m.CONFIRM
    assert link_flow.load(t).row.allocation["type"] == "full"


def test_federal_development_needs_an_enrolled_beneficiary(ctx):
    enrolled, not_enrolled = DEMO_BENEFICIARIES["enrolled"], DEMO_BENEFICIARIES["not_enrolled"]
    t = token(ctx, "development", platform_id=str(not_enrolled["program_id"]), skip_intro_screen=True)
    flow = step(
        t, "submit_federal", not_enrolled["first_name"], not_enrolled["last_name"], not_enrolled["ssn"]
    )
    assert flow.row.error_code == "BENEFICIARY_NOT_FOUND"
    t = token(ctx, "development", platform_id=str(enrolled["program_id"]), skip_intro_screen=True)
    step(t, "submit_federal", enrolled["first_name"], enrolled["last_name"], enrolled["ssn"])
    done = step(t, "confirm")
    assert db.session.get(Job, done.row.job_id).outcome == "processing"


def test_expiry_task_erases_matching_data_of_an_unopened_token(ctx):
    from types import SimpleNamespace

    from console.link.expiry import expire_link_token

    t = prime_token(ctx, "one")
    workspace = db.session.get(Workspace, t.workspace_id)
    workspace.clock_offset_seconds = 3600
    db.session.commit()
    expire_link_token(SimpleNamespace(payload={"link_token_id": str(t.id)}), workspace)
    db.session.commit()
    db.session.expire_all()
    assert db.session.get(LinkToken, t.id).platform_matching is None
    assert link_flow.load(t).state == m.EXPIRED


# -- the screens over HTTP ----------------------------------------------------------------------


def link_token_string(client, workspace, mode: str = "sandbox", **body) -> str:
    from tests.conftest import Api

    request = {
        "org_name": "Acme",
        "required_jobs": ["direct_deposit_switch"],
        "allocation": {"targets": [TARGET]},
    }
    request.update(body)
    return (
        Api(client, workspace.secrets[mode], mode)
        .post("/link_tokens", json=request)
        .get_json()["data"]["token"]
    )


def test_link_page_headers_and_token_errors(client, workspace):
    t = link_token_string(client, workspace)
    page = client.get(f"/sandbox/link?token={t}&origin=https://shop.example")
    assert page.status_code == 200
    csp = page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://shop.example" in csp and "script-src 'self'" in csp
    assert page.headers["Referrer-Policy"] == "no-referrer" and page.headers["Cache-Control"] == "no-store"
    # A bad origin is refused with a screen saying so (it ran the flow silently, talking to no parent).
    refused = client.get(f"/sandbox/link?token={t}&origin=javascript:alert(1)")
    assert refused.status_code == 400 and b"INVALID_ORIGIN" in refused.data
    invalid = client.get("/sandbox/link?token=nope")
    assert invalid.status_code == 401 and b"INVALID_LINK_TOKEN" in invalid.data
    moved = client.get(f"/link?token={t}")
    assert moved.status_code == 307 and moved.headers["Location"].startswith("/sandbox/link?token=")


def post_step(client, t: str, action: str, htmx: bool = True, **form):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post("/sandbox/link/step", data={"token": t, "action": action, **form}, headers=headers)


def test_steps_over_http_render_partials_and_resist_double_submit(client, workspace):
    t = link_token_string(client, workspace, platform_id=PAYCREST, skip_intro_screen=True)
    client.get(f"/sandbox/link?token={t}")
    wrong = post_step(client, t, "login", username="user_good", password="secret-typed-by-user")
    body = wrong.get_data(as_text=True)
    assert body.lstrip().startswith("<section") and 'data-error-code="INVALID_CREDENTIALS"' in body
    assert "secret-typed-by-user" not in body  # never echoed back
    first = post_step(client, t, "login", htmx=False, username="user_good", password="pass_good")
    assert first.get_data(as_text=True).startswith(
        "<!doctype html>"
    ) and 'data-screen="allocation"' in first.get_data(as_text=True)
    again = post_step(client, t, "login", username="user_good", password="pass_good")
    assert 'data-screen="allocation"' in again.get_data(
        as_text=True
    ) and 'data-events="[]"' in again.get_data(as_text=True)
    post_step(client, t, "allocation", type="amount", amount="12.34")
    for _ in range(2):
        assert 'data-screen="success"' in post_step(client, t, "confirm").get_data(as_text=True)
    with client.application.app_context():
        jobs = db.session.scalars(select(Job)).all()
        assert len(jobs) == 1 and jobs[0].params["allocation"]["value"] == 1234
    assert "You have left Link" in post_step(client, t, "exit").get_data(as_text=True)
    assert post_step(client, t, "nonsense").status_code == 400
