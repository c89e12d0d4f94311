"""The scenario gallery: every sandbox test-data row runs in one click, headless or in Link."""

from __future__ import annotations

import re

import pytest

from console.web.scenarios import gallery as scenarios
from tests.web.helpers import run_headless

# What each headless run leaves on its timeline (None: Link's error, no job).
EXPECTED = {
    "user_good": "success",
    "user_pending_success": "pending",
    "user_pending_error": "pending",
    "user_pending_timeout": "pending",
    "user_error": "error",
    "user_locked": None,
    "user_mfa_sms": "success",
    "user_mfa_email": "success",
    "user_mfa_totp": "success",
    "wrong_password": None,
    "wrong_mfa_sms": None,
    "wrong_mfa_email": None,
    "wrong_mfa_totp": None,
    "prime_one": "success",
    "prime_several": "success",
    "prime_none": "success",
    "federal_sent": "processing",
    "federal_failure": "processing",
    "federal_rejected": "error",
}


def test_every_test_data_row_is_in_the_gallery(visitor):
    keys = [s.key for s in scenarios.all_scenarios()]
    assert sorted(keys) == sorted(EXPECTED)
    html = visitor.get("/scenarios").get_data(as_text=True)
    for key in keys:
        assert f'id="scenario-{key}"' in html


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_each_scenario_runs_headless_to_its_timeline_twice_in_a_row(visitor, key):
    """Twice, as a demo does: the second run is a new token with the same outcome, nothing left over from the
    first. (The browser test runs one scenario of each kind of outcome the same way: the buttons are one.)"""
    seen = []
    for _run in range(2):
        link_token_id = run_headless(visitor, key)
        assert link_token_id not in seen
        seen.append(link_token_id)
        html = visitor.get(f"/timeline/link-tokens/{link_token_id}").get_data(as_text=True)
        outcomes = re.findall(r'→ <span class="badge badge-[a-z]+">([a-z]+)</span>', html)
        expected = EXPECTED[key]
        assert outcomes == ([expected] if expected else [])
        requests = visitor.get("/requests").get_data(as_text=True)
        assert f"/sandbox/v1/sandbox/link_tokens/{link_token_id}/complete" in requests


def test_run_in_link_opens_the_launcher_with_the_rows_hints(visitor):
    response = visitor.post("/scenarios/user_mfa_sms/run", {"via": "browser"})
    assert response.status_code == 302 and "/launch?" in response.headers["Location"]
    html = visitor.get(response.headers["Location"]).get_data(as_text=True)
    assert "data-autoopen" in html and "user_mfa_sms" in html and "SMS code 123456" in html


def test_an_unknown_scenario_is_404(visitor):
    assert visitor.post("/scenarios/nope/run", {"via": "headless"}).status_code == 404


def test_a_federal_row_is_named_as_the_test_data_names_it_and_its_former_key_still_works():
    """The federal rows were keyed "federal_" + a name that already starts with it (federal_federal_sent), and
    `console trigger --list` showed both spellings. A story file or CI script written with the former key runs."""
    from console import trigger

    assert scenarios.get("federal_federal_sent").key == "federal_sent"
    assert trigger.resolve("federal_federal_failure").key == "federal_failure"
    assert trigger.resolve("federal_rejected").key == "federal_rejected"
    assert not [line for line in trigger.listing() if "federal_federal" in line]
    with pytest.raises(ValueError, match="unknown scenario"):
        trigger.resolve("federal_federal_nothing")
