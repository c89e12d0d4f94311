"""Credential-less platform matching: which payroll platforms hold an eligible active account for an identity.

Rule: a world person matches when all of these hold:
- SSN: all 9 digits equal `social_security_number`, or, when only `social_security_last_four` is given, the
  last four digits equal it (a full number, when present, is what is compared);
- last name and first name equal, ignoring case and surrounding spaces;
- date of birth equal (`YYYY-MM-DD`).

Phone, zip and email do not take part. They are validated at Link token creation only: they are contact
details that change and are typed in many forms, so matching on them would turn away real account holders
while adding nothing the SSN, names and date of birth do not already pin down.

Result: one `Match` per distinct payroll platform where a matched person has an ACTIVE employment, the
platform supports every job in `required_jobs`, and, when amounts are pre-configured in the token, the
platform supports amounts. Ordered by platform name, then id. Benefits programs never match here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from console.world.models import ACTIVE, PAYROLL, Credential, Employer, Employment, Person, Platform


@dataclass(frozen=True)
class Match:
    """A matched platform and the employment (and login, if the person has one there) it came from."""

    platform: Platform
    employment: Employment
    credential: Credential | None


def _digits(value: Any) -> str:
    return re.sub(r"\D", "", str(value or ""))


def _name(value: Any) -> str:
    return str(value or "").strip().lower()


def _date(value: Any) -> date | None:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value or "").strip())
    except ValueError:
        return None


def find_people(session: Session, identity: Mapping[str, Any]) -> list[Person]:
    """The world people an identity (a `platform_matching` object) designates; usually zero or one."""
    first, last = _name(identity.get("first_name")), _name(identity.get("last_name"))
    dob = _date(identity.get("date_of_birth"))
    full = _digits(identity.get("social_security_number"))
    last_four = _digits(identity.get("social_security_last_four"))
    if not first or not last or dob is None:
        return []
    if (full and len(full) != 9) or (not full and len(last_four) != 4):
        return []

    def ssn_ok(ssn: str) -> bool:
        return ssn == full if full else ssn[-4:] == last_four

    candidates = session.scalars(
        select(Person).where(func.lower(Person.last_name) == last, Person.date_of_birth == dob)
    )
    return [p for p in candidates if _name(p.first_name) == first and ssn_ok(p.ssn)]


def match_platforms(
    session: Session,
    identity: Mapping[str, Any],
    *,
    required_jobs: Iterable[str],
    amounts_configured: bool,
) -> list[Match]:
    """The payroll platforms to offer in Link for this identity (see the module docstring for the rule)."""
    people = find_people(session, identity)
    if not people:
        return []
    jobs = list(required_jobs)
    stmt = (
        select(Employment)
        .join(Employer, Employment.employer_id == Employer.id)
        .join(Platform, Employer.platform_id == Platform.id)
        .where(
            Employment.person_id.in_([p.id for p in people]),
            Employment.status == ACTIVE,
            Platform.type == PAYROLL,
        )
        .options(selectinload(Employment.employer).selectinload(Employer.platform))
        # Most recent job first, so a platform reached through several jobs reports the latest one.
        .order_by(Employment.start_date.desc(), Employment.id)
    )
    by_platform: dict[Any, Match] = {}
    for employment in session.scalars(stmt):
        platform = employment.employer.platform
        if platform.id in by_platform or not platform.supports_jobs(jobs):
            continue
        if amounts_configured and not platform.supports_amounts:
            continue
        credential = session.scalar(
            select(Credential).where(
                Credential.person_id == employment.person_id, Credential.platform_id == platform.id
            )
        )
        by_platform[platform.id] = Match(platform, employment, credential)
    return sorted(by_platform.values(), key=lambda m: (m.platform.name, m.platform.id))
