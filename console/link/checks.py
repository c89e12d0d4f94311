"""The questions the Link flow asks the world: can this platform be used, who is logging in, who matches.

Pure lookups with no state changes: the flow decides what each answer means for the screens.
Sandbox answers come from the test data table; development and production from the world.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from console.accounts.models import Account
from console.extensions import db
from console.link import sandbox_data
from console.link_tokens.models import LinkToken
from console.world import services as world
from console.world.matching import match_platforms
from console.world.models import BENEFITS, Credential, Employer, Platform

INVALID_CREDENTIALS, ACCOUNT_LOCKED, BENEFICIARY_NOT_FOUND = (
    "INVALID_CREDENTIALS",
    "ACCOUNT_LOCKED",
    "BENEFICIARY_NOT_FOUND",
)


@dataclass(frozen=True)
class Login:
    """Who a login (or an on-demand update) stands for; `error` set when it does not succeed."""

    error: str | None = None
    scenario: str | None = None
    mfa_method: str | None = None
    choose_mfa_method: bool = False  # platform-matching accounts verify with the person's own contacts
    person_id: uuid.UUID | None = None
    employment_id: uuid.UUID | None = None
    employer_id: uuid.UUID | None = None
    sandbox_username: str | None = None


def platform_payload(platform: Platform, via: str) -> dict[str, Any]:
    """The `select_platform` client event payload."""
    return {
        "platform_id": str(platform.id),
        "platform_name": platform.name,
        "type": platform.type,
        "via": via,
    }


def employer_payload(employer: Employer) -> dict[str, Any]:
    """The `select_employer` client event payload."""
    return {
        "employer_id": str(employer.id),
        "employer_name": employer.name,
        "platform_id": str(employer.platform_id),
    }


def clean_identity(first_name: str, last_name: str, ssn: str) -> tuple[str, str, str]:
    """A federal identity as (first, last, 9 digits); ValueError names what to fix."""
    first, last = (first_name or "").strip(), (last_name or "").strip()
    digits = "".join(ch for ch in (ssn or "") if ch not in " -")  # 123-45-6789 is how people type it
    if not first or not last or len(first) > 64 or len(last) > 64:
        raise ValueError("Enter your legal first and last name.")
    if len(digits) != 9 or not digits.isascii() or not digits.isdigit():
        raise ValueError("Enter your 9-digit Social Security number.")
    return first, last, digits


def unsupported_reason(token: LinkToken, platform: Platform) -> str | None:
    """Why this platform cannot serve the token (missing jobs, or no pre-configured amounts), or None."""
    missing = [job for job in token.required_jobs if job not in platform.supported_jobs]
    if missing:
        return f"{platform.name} cannot do what {token.org_name} needs ({', '.join(missing)})."
    # Federal benefits take a preset too: they are switched in full and the screen explains it.
    if token.preconfigured_allocation and platform.type != BENEFITS and not platform.supports_amounts:
        return f"{platform.name} does not support the fixed deposit amount {token.org_name} set up."
    return None


def check_login(
    mode: str, platform: Platform, username: str, password: str, employer_id: uuid.UUID | None
) -> Login:
    """Check credentials: sandbox test users anywhere, else a world person's own login."""
    if mode == "sandbox":
        user = sandbox_data.user(username)
        if user is not None and user.locked:
            return Login(error=ACCOUNT_LOCKED)  # locked wins whatever the password, as on real platforms
        if user is None or password != sandbox_data.PASSWORD:
            return Login(error=INVALID_CREDENTIALS)
        return Login(scenario=user.scenario, mfa_method=user.mfa_method, sandbox_username=user.username)
    result = world.find_person_by_credentials(platform.id, username, password)
    if result.status == world.LOGIN_LOCKED:
        return Login(error=ACCOUNT_LOCKED)
    if not result.ok or not result.employments or result.person is None:
        return Login(error=INVALID_CREDENTIALS)
    jobs = list(result.employments)
    # The employment at the employer the person picked, else their current one on this platform.
    employment = next((j for j in jobs if j.employer_id == employer_id), jobs[0])
    credential = result.credential
    return Login(
        scenario="success",
        mfa_method=credential.mfa_method if credential is not None and credential.mfa_enabled else None,
        person_id=result.person.id,
        employment_id=employment.id,
        employer_id=employment.employer_id,
    )


def check_update(mode: str, account: Account) -> Login:
    """Re-entering an existing account: login is skipped, MFA is asked where the person has it."""
    base = {
        "person_id": account.person_id,
        "employment_id": account.employment_id,
        "employer_id": account.employer_id,
    }
    if mode == "sandbox" and account.sandbox_username:
        # Replay the test user's scenario, MFA included.
        user = sandbox_data.user(account.sandbox_username)
        return Login(
            scenario=user.scenario if user else "success",
            mfa_method=user.mfa_method if user else None,
            sandbox_username=account.sandbox_username,
            **base,
        )
    if account.person_id is None:
        return Login(scenario="success", **base)
    credential = db.session.scalar(
        select(Credential).where(
            Credential.person_id == account.person_id, Credential.platform_id == account.platform_id
        )
    )
    if credential is None:
        return Login(scenario="success", choose_mfa_method=True, **base)
    if credential.locked:
        return Login(error=ACCOUNT_LOCKED, **base)
    method = credential.mfa_method if credential.mfa_enabled else None
    return Login(scenario="success", mfa_method=method, **base)


def check_beneficiary(mode: str, platform: Platform, first: str, last: str, ssn: str) -> str | None:
    """The federal scenario for a legal name and SSN, or None when no enrolled beneficiary matches."""
    if mode == "sandbox":
        return sandbox_data.federal_scenario(ssn)
    found = world.find_beneficiary(platform.id, first, last, ssn)
    # Switches are for beneficiaries already enrolled, not first registrations (spec section 7).
    return "federal_sent" if found is not None and found.enrolled else None


def matches(token: LinkToken) -> list[dict[str, Any]]:
    """Platform matching for the token's identity, as the rows the matches screen lists."""
    found = match_platforms(
        db.session,
        token.platform_matching or {},
        required_jobs=token.required_jobs,
        amounts_configured=bool(token.preconfigured_allocation),
    )
    return [
        {
            "platform_id": str(match.platform.id),
            "platform_name": match.platform.name,
            "employer_id": str(match.employment.employer_id),
            "employer_name": match.employment.employer.name,
            "employment_id": str(match.employment.id),
            "person_id": str(match.employment.person_id),
        }
        for match in found
    ]
