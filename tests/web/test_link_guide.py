"""What the console says beside Link: each preset's token state and instructions, the on-demand account,
and a refused request shown on the fields it names."""

from __future__ import annotations

import html as htmllib
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from console.link import sandbox_data
from console.versions import LATEST_VERSION
from console.web.link import form as linkform
from console.web.scenarios import gallery as scenarios
from console.world.seed_data import SANDBOX_MATCH_IDENTITIES
from tests.web.helpers import run_headless, sandbox_secret
from tests.web.test_walkthrough import link_token_form


def text(response) -> str:
    return htmllib.unescape(re.sub(r"\s+", " ", response.get_data(as_text=True)))


def step_4(visitor) -> str:
    page = text(visitor.get("/"))
    return page[page.index('id="step-link"') : page.index('id="step-inbox"')]


def offered(html: str) -> str | None:
    match = re.search(r'data-link-open [^>]*data-link-token-id="([0-9a-f-]+)"', html)
    return match.group(1) if match else None


def create(visitor, preset: str, **overrides) -> str:
    form = {**link_token_form(preset), "preset": preset, **overrides}
    html = text(visitor.post("/walkthrough/link-token", form, htmx=True))
    assert 'status-2xx">200' in html, html[:2000]
    return offered(html)


def api(visitor, path: str, body: dict):
    """Call the sandbox API with the visitor workspace's key, as a backend would."""
    secret = sandbox_secret(visitor.client.application, visitor.workspace_id)
    return visitor.client.post(
        f"/sandbox/v1{path}", json=body, headers={"x-api-secret": secret, "Service-Version": LATEST_VERSION}
    )


def open_in_link(visitor, link_token_id: str) -> None:
    launch = visitor.get(f"/launch?link_token_id={link_token_id}").get_data(as_text=True)
    token = re.search(r'data-link-token="([^"]+)"', launch).group(1)
    assert (
        visitor.client.get(f"/sandbox/link?token={token}").status_code == 200
    )  # Link opened: the flow starts


def form_for_page(visitor, preset: str) -> dict:
    """The form exactly as the page fills it for a preset in this workspace."""
    html = visitor.get(f"/walkthrough/link-token-form?preset={preset}", htmx=True).get_data(as_text=True)
    form: dict = {"preset": preset, "required_jobs": []}
    for name, value in re.findall(r'<input id="[^"]+" name="([a-z_0-9]+)" value="([^"]*)"', html):
        if value:
            form[name] = htmllib.unescape(value)
    form["required_jobs"] = re.findall(r'name="required_jobs" value="([a-z_]+)" checked', html)
    for name, value in re.findall(
        r'<select id="[^"]+" name="([a-z_0-9]+)"[^>]*>.*?<option value="([^"]*)" selected', html, re.S
    ):
        if value:
            form[name] = value
    if re.search(r'name="pm_enabled" value="1" checked', html):
        form["pm_enabled"] = "1"
    return form


# --- step 4 says exactly what to enter, from the sandbox test data ---------------------------------------


def test_standard_preset_gives_the_test_credentials(visitor):
    create(visitor, "standard")
    html = step_4(visitor)
    assert "Link opens at its intro: press Continue." in html
    assert f"Username user_good, password {sandbox_data.PASSWORD}" in html
    assert "Unused: ready to open" in html


def test_federal_preset_routes_to_a_program_and_says_which_ssn_to_enter(visitor):
    body = linkform.preset_body("federal")
    assert body["required_jobs"] == ["direct_deposit_switch"]
    assert body["platform_id"] == str(linkform.PLATFORM_IDS["ssa-retirement"])
    page = text(visitor.get("/walkthrough/link-token-form?preset=federal", htmx=True))
    assert re.search(
        r'<option value="[0-9a-f-]+" selected>Social Security Retirement \(benefits\)</option>', page
    )
    create(visitor, "federal")
    html = step_4(visitor)
    for ssn in sandbox_data.FEDERAL_SSNS:
        assert f"{ssn} (" in html
    # One sentence, each SSN's outcome in parentheses: never "later.; 900000002: …" (descriptions joined).
    assert (
        "SSN 900000001 (accepted: processing, then sent one business day later), 900000002 (accepted: "
        "processing, then failure one business day later) or 900000003 (rejected at submission: outcome error "
        "at once). Any other 9-digit SSN finds no beneficiary." in html
    )
    assert ".;" not in html
    assert "user_good" not in html and "pass_good" not in html
    assert "Social Security Retirement: verify the identity" in html


def test_prime_presets_name_the_identity_outcome(visitor):
    create(visitor, "prime_several")
    html = step_4(visitor)
    assert (
        "Link finds Ledgerline Payroll, Summit Staffing Payroll (Partnership), WorkNest: choose one" in html
    )
    assert f"code {sandbox_data.MFA_CODE}" in html
    create(visitor, "prime_none")
    assert "Nothing matches: Link falls back to the search" in step_4(visitor)


def test_skip_intro_screen_changes_what_link_shows_first(visitor):
    create(visitor, "direct", skip_intro_screen="true")
    assert "Link opens at Paycrest (skip_intro_screen is set)." in step_4(visitor)
    create(visitor, "standard", skip_intro_screen="true")
    assert "Link opens at the search (skip_intro_screen is set)." in step_4(visitor)


# --- the token's state, and a new one offered --------------------------------------------------------------


def test_a_finished_token_is_never_called_ready_and_a_new_one_is_offered(visitor):
    first = create(visitor, "federal")
    federal = {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000001"}
    done = api(visitor, f"/sandbox/link_tokens/{first}/complete", {"federal": federal})
    assert done.status_code == 200, done.get_data(as_text=True)
    html = step_4(visitor)
    assert "Finished: the flow completed." in html
    assert "ready" not in html and offered(html) is None  # no "Open Link" for a used token
    assert 'name="preset" value="federal"' in html and "Create a new token" in html

    again = text(visitor.post("/walkthrough/link-token/again", {"preset": "federal"}, htmx=True))
    newest = offered(again)
    assert newest and newest != first
    assert "Unused: ready to open" in again and "900000001" in again
    # The state fragment Link's closing asks for says the same.
    state = text(visitor.get(f"/walkthrough/link-state?link_token_id={first}&walkthrough=1", htmx=True))
    assert "Finished" in state and 'hx-post="/walkthrough/link-token/again"' in state


def test_a_finished_token_whose_switch_still_waits_says_so_and_how_to_get_there(visitor):
    # Federal SSN 900000001: the flow completes, the switch is processing until the agency review a business
    # day later on the workspace clock. "The flow completed" alone read as done.
    first = create(visitor, "federal")
    federal = {"first_name": "Ada", "last_name": "Lovelace", "social_security_number": "900000001"}
    assert api(visitor, f"/sandbox/link_tokens/{first}/complete", {"federal": federal}).status_code == 200
    html = step_4(visitor)
    assert (
        "Its direct_deposit_switch job is processing: it is reviewed by the agency on the workspace clock;"
        " its timeline says when, and moving the clock gets there now." in html
    )
    # Once it has moved on (sent), the state says nothing more than that the flow completed.
    assert api(visitor, "/sandbox/clock/advance", {"business_days": 1}).status_code == 200
    html = step_4(visitor)
    assert "Finished: the flow completed." in html and " job is " not in html


def test_a_finished_pending_switch_says_it_is_retried(visitor):
    create(visitor, "standard")
    link_token_id = offered(step_4(visitor))
    credentials = {"username": "user_pending_success", "password": sandbox_data.PASSWORD}
    platform = "8e8483e0-5235-5127-93ca-2efa4d35d6dc"  # Paycrest
    done = api(
        visitor,
        f"/sandbox/link_tokens/{link_token_id}/complete",
        {"platform_id": platform, "credentials": credentials},
    )
    assert done.status_code == 200, done.get_data(as_text=True)
    assert "Its direct_deposit_switch job is pending: it is retried on the workspace clock" in step_4(visitor)


def test_an_expired_token_says_so(visitor):
    create(visitor, "standard")
    assert api(visitor, "/sandbox/clock/advance", {"hours": 2}).status_code == 200
    html = step_4(visitor)
    assert "Expired: Link would only say so." in html and offered(html) is None
    assert "Create a new token" in html


def test_an_open_token_says_where_link_resumes(visitor):
    open_in_link(visitor, create(visitor, "standard"))
    assert "Open: Link resumes at its intro screen." in step_4(visitor)


# --- the on-demand update preset always makes a valid request ---------------------------------------------


def test_on_demand_after_a_prime_demo_sends_the_partner_platforms_matching_data(visitor):
    run_headless(visitor, "prime_one")  # the newest account is on Harbor Pay, a partner platform
    page = text(visitor.get("/walkthrough/link-token-form?preset=on_demand", htmx=True))
    assert "Harbor Pay (Partnership), a partner platform" in page
    assert "end_user.platform_matching again (Jordan Avery's)" in page
    form = form_for_page(visitor, "on_demand")
    assert form["pm_social_security_number"] == SANDBOX_MATCH_IDENTITIES["one"]["social_security_number"]
    html = text(visitor.post("/walkthrough/link-token", form, htmx=True))
    assert 'status-2xx">200' in html
    assert "No login: Link goes straight to Harbor Pay (Partnership)" in html
    assert f"code {sandbox_data.MFA_CODE}" in html


def test_on_demand_uses_a_plain_account_when_it_is_the_newest(visitor):
    run_headless(visitor, "user_good")
    form = form_for_page(visitor, "on_demand")
    assert form["account_id"] and "pm_enabled" not in form
    assert 'status-2xx">200' in text(visitor.post("/walkthrough/link-token", form, htmx=True))


def test_on_demand_skips_a_partner_account_it_cannot_fill(visitor):
    run_headless(visitor, "user_good")  # Paycrest
    # A test-credentials login on a partner platform: no world person, so no matching data to send again.
    token = create(visitor, "standard")
    harbor = str(linkform.PLATFORM_IDS["harbor-pay"])
    completed = api(
        visitor,
        f"/sandbox/link_tokens/{token}/complete",
        {"platform_id": harbor, "credentials": {"username": "user_good", "password": "pass_good"},
         "allocation": {"type": "full"}},
    )  # fmt: skip
    assert completed.status_code == 200, completed.get_data(as_text=True)
    page = text(visitor.get("/walkthrough/link-token-form?preset=on_demand", htmx=True))
    assert "Your newest account is on Harbor Pay (Partnership)" in page and "on Paycrest" in page
    form = form_for_page(visitor, "on_demand")
    assert 'status-2xx">200' in text(visitor.post("/walkthrough/link-token", form, htmx=True))


# --- a refused request is shown where the mistake is ---------------------------------------------------------


def test_a_400_is_shown_on_the_fields_it_names(visitor):
    form = link_token_form()
    form.update({"routing_number_0": "12", "pm_enabled": "1", "pm_email": "nope", "amount": "x"})
    html = visitor.post("/walkthrough/link-token", form, htmx=True).get_data(as_text=True)
    assert re.search(r'id="lt-routing-0"[^>]*aria-invalid="true"', html)
    assert 'id="lt-routing-0-error">allocation.targets[0].routing_number must be exactly 9 digits' in html
    assert 'id="lt-pm-email-error">end_user.platform_matching.email must be a valid email' in html
    assert 'id="lt-amount-error">amount must be an integer' in html
    assert 'value="nope"' in html  # what was typed stays
    assert 'status-4xx">400' in html  # and the raw exchange is still below


@pytest.mark.parametrize(
    ("name", "input_id"),
    [
        ("org_name", "lt-org_name"),
        ("required_jobs[1]", "lt-jobs"),
        ("allocation.targets[1].account_number", "lt-account-1"),
        ("allocation.targets[0]", "lt-routing-0"),
        ("allocation.value", "lt-allocation_value"),
        ("end_user.platform_matching", "lt-pm_enabled"),
        ("end_user.platform_matching.date_of_birth", "lt-pm-date_of_birth"),
        ("allocation.targets[7].routing_number", None),
        ("preconfigured_allocation", None),
    ],
)
def test_field_paths_map_to_form_inputs(name, input_id):
    assert linkform.field_input(name) == input_id


def test_a_failed_webhook_registration_keeps_what_was_typed(visitor):
    form = {"url": "ftp://example.invalid/hook", "enabled_events": ["account.added"], "version": "2023-11-22"}
    html = visitor.post("/walkthrough/webhook", form, htmx=True).get_data(as_text=True)
    assert 'value="ftp://example.invalid/hook"' in html
    assert re.search(r'id="wh-url"[^>]*aria-invalid="true"', html, re.S)
    assert re.search(r'<option value="2023-11-22" selected>', html)
    checked = re.findall(r'name="enabled_events" value="([a-z_.]+)" checked', html)
    assert checked == ["account.added"]
    assert '<details class="own-url" open>' in html


# --- scenarios: the launcher says what Link shows first, and something true without a token ----------------


def test_scenario_hints_say_link_opens_at_the_intro(visitor):
    for scenario in scenarios.all_scenarios():
        assert scenario.steps[0].startswith("Link opens at its intro"), scenario.key
    federal = scenarios.get("federal_sent")
    assert "SSN 900000001" in federal.steps


def test_run_in_link_then_a_reload_shows_the_state_not_a_second_open(visitor):
    response = visitor.post("/scenarios/user_mfa_sms/run", {"via": "browser"})
    location = response.headers["Location"]
    page = text(visitor.get(location))
    assert "data-autoopen" in page and "data-link-guide" in page and "SMS code 123456" in page
    link_token_id = parse_qs(urlsplit(location).query)["link_token_id"][0]
    open_in_link(visitor, link_token_id)
    again = text(visitor.get(location))
    assert "data-autoopen" not in again and "Open: Link resumes" in again
    assert link_token_id in again


def test_launch_without_a_token_says_what_is_true_there(visitor):
    page = text(visitor.get("/launch"))
    assert "step 3" not in page.split("walkthrough's step 3")[0]  # no "step 3" of this page is promised
    assert "none was named" in page and 'href="/scenarios"' in page and 'href="/#step-link_token"' in page
    page = text(visitor.get("/launch?link_token_id=00000000-0000-0000-0000-000000000001"))
    assert "is not one this console created" in page
