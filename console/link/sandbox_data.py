"""Sandbox test data: the credentials, MFA codes, identities and SSNs that pick each scenario.

Test credentials work on every payroll platform and change nothing in the world. The same table
is served at `GET /v1/sandbox/test_data` and documented in docs/link.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.world.seed_data import PLATFORM_IDS, SANDBOX_MATCH_EXPECTED, SANDBOX_MATCH_IDENTITIES

PASSWORD = "pass_good"
# The one right MFA answer, for every method; any other code is wrong. The simulated platforms of
# development and production send this same code, so a demo never waits for a message.
MFA_CODE = "123456"
WRONG_MFA_CODE_EXAMPLE = "000000"


@dataclass(frozen=True)
class SandboxUser:
    username: str
    scenario: str | None  # job scenario; None when login never succeeds
    description: str
    mfa_method: str | None = None
    locked: bool = False


USERS: dict[str, SandboxUser] = {
    u.username: u
    for u in (
        SandboxUser("user_good", "success", "Logs in; the switch succeeds at once."),
        SandboxUser(
            "user_pending_success",
            "pending_then_success",
            "The switch is pending, then succeeds on the retry 60 seconds later.",
        ),
        SandboxUser(
            "user_pending_error",
            "pending_then_error",
            "The switch is pending, then fails on the retry 60 seconds later.",
        ),
        SandboxUser(
            "user_pending_timeout",
            "pending_until_window_ends",
            "The switch stays pending, retried hourly until the 24-hour window ends, then errors.",
        ),
        SandboxUser("user_error", "error", "Logs in; the switch fails at once (outcome error)."),
        SandboxUser(
            "user_locked", None, "The platform account is locked: Link shows the locked screen.", locked=True
        ),
        SandboxUser("user_mfa_sms", "success", "Asks for a code sent by SMS, then succeeds.", "sms"),
        SandboxUser("user_mfa_email", "success", "Asks for a code sent by email, then succeeds.", "email"),
        SandboxUser("user_mfa_totp", "success", "Asks for an authenticator-app code, then succeeds.", "totp"),
    )
}

# Federal benefits: any legal name with these SSNs; any other 9-digit SSN is "no enrolled beneficiary".
FEDERAL_SSNS: dict[str, tuple[str, str]] = {
    "900000001": ("federal_sent", "Accepted: processing, then sent one business day later."),
    "900000002": ("federal_failure", "Accepted: processing, then failure one business day later."),
    "900000003": ("federal_rejected", "Rejected at submission: outcome error at once."),
}

# Masked destinations shown for sandbox MFA (no real person stands behind test credentials).
SANDBOX_PHONE = "5555550100"
SANDBOX_EMAIL = "user@example.com"


def user(username: str) -> SandboxUser | None:
    """The test user for a username (case-insensitive), or None."""
    return USERS.get((username or "").strip().lower())


def federal_scenario(ssn: str) -> str | None:
    return FEDERAL_SSNS[ssn][0] if ssn in FEDERAL_SSNS else None


def sandbox_test_data() -> dict[str, Any]:
    """Everything a developer needs to drive each sandbox scenario, as JSON."""
    return {
        "password": PASSWORD,
        "mfa_code": MFA_CODE,
        "credentials": [
            {
                "username": u.username,
                "password": PASSWORD,
                "scenario": u.scenario,
                "mfa_method": u.mfa_method,
                "error_code": "ACCOUNT_LOCKED" if u.locked else None,
                "description": u.description,
            }
            for u in USERS.values()
        ]
        + [
            {
                "username": "user_good",
                "password": "any other password",
                "scenario": None,
                "mfa_method": None,
                "error_code": "INVALID_CREDENTIALS",
                "description": "Wrong password (or unknown username): Link shows the error and lets the "
                "person retry.",
            }
        ],
        "mfa": [
            {
                "method": method,
                "username": f"user_mfa_{method}",
                "right_code": MFA_CODE,
                "wrong_code_example": WRONG_MFA_CODE_EXAMPLE,
                "wrong_code_error": "INVALID_MFA_CODE",
            }
            for method in ("sms", "email", "totp")
        ],
        "platform_matching": [
            {
                "case": case,
                "platform_matching": SANDBOX_MATCH_IDENTITIES[case],
                "matched_platform_ids": [str(PLATFORM_IDS[s]) for s in SANDBOX_MATCH_EXPECTED[case]],
                "mfa_code": MFA_CODE,
                "description": {
                    "one": "Matches one platform.",
                    "several": "Matches several platforms; the person picks one.",
                    "none": "Matches nothing; Link falls back to the standard search.",
                }[case],
            }
            for case in ("one", "several", "none")
        ],
        "federal_benefits": [
            {
                "social_security_number": ssn,
                "first_name": "any",
                "last_name": "any",
                "scenario": scenario,
                "description": description,
            }
            for ssn, (scenario, description) in FEDERAL_SSNS.items()
        ],
    }
