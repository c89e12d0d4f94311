"""Queries over the simulated world: search, lookups, logins, benefits, person summaries.

Deposit allocations (the payroll record a switch changes) are in `console.world.allocations`.

Every function takes an optional `session`; without one it uses the Flask-SQLAlchemy session of the current
app context. Nothing here commits: the caller owns the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session, selectinload

from console.core.timeutil import isodate
from console.world.allocations import allocation_rows
from console.world.common import session_of, strict_uuid
from console.world.models import (
    ACTIVE,
    PAYROLL,
    Beneficiary,
    Credential,
    Employer,
    Employment,
    Person,
    Platform,
)

LOGIN_OK = "ok"
LOGIN_UNKNOWN_USER = "unknown_user"
LOGIN_WRONG_PASSWORD = "wrong_password"
LOGIN_LOCKED = "locked"


def _uuid(value: uuid.UUID | str | None) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _name_contains(column: Any, q: str) -> ColumnElement[bool]:
    return func.lower(column).contains(q.strip().lower(), autoescape=True)


def list_platforms(
    q: str | None = None,
    type: str | None = None,
    supported_jobs: Iterable[str] | None = None,
    amount_supported: bool | None = None,
    *,
    session: Session | None = None,
) -> Select[tuple[Platform]]:
    """A pageable select of platforms, ordered by name then id."""
    stmt = select(Platform)
    if q and q.strip():
        stmt = stmt.where(_name_contains(Platform.name, q))
    if type:
        stmt = stmt.where(Platform.type == type)
    if amount_supported is not None:
        stmt = stmt.where(Platform.supports_amounts.is_(amount_supported))
    jobs = list(supported_jobs or ())
    if jobs:
        # JSON containment differs between SQLite and PostgreSQL; the platform table is tiny: filter ids here.
        platforms = session_of(session).scalars(select(Platform))
        stmt = stmt.where(Platform.id.in_([p.id for p in platforms if p.supports_jobs(jobs)]))
    return stmt.order_by(Platform.name, Platform.id)


def list_employers(q: str | None = None, *, platform_id: uuid.UUID | None = None) -> Select[tuple[Employer]]:
    """A pageable select of employers, ordered by name then id."""
    stmt = select(Employer).options(selectinload(Employer.platform))
    if q and q.strip():
        stmt = stmt.where(_name_contains(Employer.name, q))
    if platform_id is not None:
        stmt = stmt.where(Employer.platform_id == platform_id)
    return stmt.order_by(Employer.name, Employer.id)


def list_people(q: str | None = None) -> Select[tuple[Person]]:
    """A pageable select of people (for the world explorer), ordered by last name, first name, id."""
    stmt = select(Person)
    if q and q.strip():
        full_name = Person.first_name + " " + Person.last_name
        stmt = stmt.where(_name_contains(full_name, q) | (Person.slug == q.strip().lower()))
    return stmt.order_by(Person.last_name, Person.first_name, Person.id)


def _get(model: type[Any], key: uuid.UUID | str, session: Session | None) -> Any:
    parsed = _uuid(key)
    return session_of(session).get(model, parsed) if parsed else None


def get_platform(platform_id: uuid.UUID | str, *, session: Session | None = None) -> Platform | None:
    return _get(Platform, platform_id, session)


def get_employer(employer_id: uuid.UUID | str, *, session: Session | None = None) -> Employer | None:
    return _get(Employer, employer_id, session)


def get_employment(employment_id: uuid.UUID | str, *, session: Session | None = None) -> Employment | None:
    return _get(Employment, employment_id, session)


def get_person(person_id: uuid.UUID | str, *, session: Session | None = None) -> Person | None:
    """A person by id or by slug (e.g. "jordan-avery")."""
    if _uuid(person_id) is not None:
        return _get(Person, person_id, session)
    return session_of(session).scalar(select(Person).where(Person.slug == str(person_id)))


@dataclass(frozen=True)
class SearchHit:
    """One search result; choosing an employer leads to its payroll platform."""

    kind: str  # "employer" | "platform"
    id: uuid.UUID
    name: str
    platform: Platform
    employer: Employer | None = None


def search(
    q: str | None,
    *,
    limit: int | None = 20,
    required_jobs: Iterable[str] | None = None,
    types: Iterable[str] | None = None,
    session: Session | None = None,
) -> list[SearchHit]:
    """Employers and platforms whose name contains `q`, prefix matches first; without `q`, platforms first.

    `required_jobs` hides platforms (and their employers) lacking any of the jobs; `types` limits platform
    types (`payroll`, `benefits`); employers count as `payroll`.
    """
    s = session_of(session)
    jobs, kinds = list(required_jobs or ()), set(types or (PAYROLL, "benefits"))
    text = (q or "").strip().lower()
    platforms = [p for p in s.scalars(select(Platform)) if p.type in kinds and p.supports_jobs(jobs)]
    by_id = {p.id: p for p in platforms}
    hits = [SearchHit("platform", p.id, p.name, p) for p in platforms]
    if PAYROLL in kinds:
        employers = s.scalars(select(Employer).where(Employer.platform_id.in_(list(by_id))))
        hits += [SearchHit("employer", e.id, e.name, by_id[e.platform_id], e) for e in employers]
    if not text:
        # No query: payroll platforms, then benefits programs, then employers, each alphabetical.
        order = {"payroll": 0, "benefits": 1}
        hits.sort(key=lambda h: (h.kind == "employer", order.get(h.platform.type, 2), h.name.lower(), h.id))
        return hits[:limit]
    matched = [h for h in hits if text in h.name.lower()]

    def rank(hit: SearchHit) -> tuple[int, str, str, uuid.UUID]:
        name = hit.name.lower()
        prefix = 0 if name.startswith(text) else 1 if any(w.startswith(text) for w in name.split()) else 2
        return prefix, name, hit.kind, hit.id

    return sorted(matched, key=rank)[:limit]


class NotInSearch(ValueError):
    """A page was asked for after a hit this search does not hold (a cursor of another search)."""


def search_page(
    q: str | None,
    *,
    limit: int,
    after: tuple[str, uuid.UUID] | None = None,
    required_jobs: Iterable[str] | None = None,
) -> tuple[list[SearchHit], bool]:
    """One page of `search`: up to `limit` hits after the hit `after` (its kind and id), and whether more
    follow. The world is seeded and read-only, so the same search ranks the same hits the same way."""
    hits = search(q, limit=None, required_jobs=required_jobs)
    start = 0
    if after is not None:
        position = next((i for i, hit in enumerate(hits) if (hit.kind, hit.id) == after), None)
        if position is None:
            raise NotInSearch(f"{after[0]} {after[1]} is not a hit of this search")
        start = position + 1
    return hits[start : start + limit], len(hits) > start + limit


@dataclass(frozen=True)
class LoginResult:
    """The outcome of a platform login; `employments` are the person's jobs on that platform, active first."""

    status: str  # LOGIN_OK | LOGIN_UNKNOWN_USER | LOGIN_WRONG_PASSWORD | LOGIN_LOCKED
    person: Person | None = None
    credential: Credential | None = None
    employments: tuple[Employment, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.status == LOGIN_OK


def employments_on_platform(
    person_id: uuid.UUID, platform_id: uuid.UUID, *, session: Session | None = None
) -> list[Employment]:
    """The person's employments at employers on the platform: active first, then the most recent."""
    stmt = (
        select(Employment)
        .join(Employer, Employment.employer_id == Employer.id)
        .where(Employment.person_id == person_id, Employer.platform_id == platform_id)
        .options(selectinload(Employment.employer))
    )
    rows = list(session_of(session).scalars(stmt))
    return sorted(rows, key=lambda e: (e.status != ACTIVE, -e.start_date.toordinal(), e.id))


def find_person_by_credentials(
    platform_id: uuid.UUID | str, username: str, password: str, *, session: Session | None = None
) -> LoginResult:
    """Check a login; usernames are case-insensitive, passwords exact, and a locked account stays locked."""
    s = session_of(session)
    key = _uuid(platform_id)
    name = (username or "").strip().lower()
    if key is None or not name:
        return LoginResult(LOGIN_UNKNOWN_USER)
    credential = s.scalar(
        select(Credential).where(Credential.platform_id == key, func.lower(Credential.username) == name)
    )
    if credential is None:
        return LoginResult(LOGIN_UNKNOWN_USER)
    person = credential.person
    # Locked wins over the password check, as on real platforms: the account says so whatever is typed.
    if credential.locked:
        return LoginResult(LOGIN_LOCKED, person, credential)
    if credential.password != password:
        return LoginResult(LOGIN_WRONG_PASSWORD, person, credential)
    employments = employments_on_platform(person.id, key, session=s)
    return LoginResult(LOGIN_OK, person, credential, tuple(employments))


def find_beneficiary(
    program_id: uuid.UUID | str, first_name: str, last_name: str, ssn: str, *, session: Session | None = None
) -> Beneficiary | None:
    """The beneficiary with this SSN and legal name (case-insensitive) in the program, enrolled or not.

    The caller decides what an unenrolled match means (the spec: switches are for enrolled beneficiaries).
    """
    key = _uuid(program_id)
    digits = "".join(ch for ch in (ssn or "") if ch.isdigit())
    if key is None or len(digits) != 9:
        return None
    stmt = select(Beneficiary).where(Beneficiary.platform_id == key, Beneficiary.ssn == digits)
    first, last = (first_name or "").strip().lower(), (last_name or "").strip().lower()
    for row in session_of(session).scalars(stmt):
        if row.first_name.lower() == first and row.last_name.lower() == last:
            return row
    return None


def person_summary(
    person_id: uuid.UUID | str,
    workspace_id: uuid.UUID | str | None = None,
    mode: str | None = None,
    *,
    session: Session | None = None,
) -> dict[str, Any]:
    """Everything the world knows about a person (by id or slug), as plain data.

    Passwords are included on purpose: the people are fictional and the world explorer and
    `console world person` show them so a developer can log in as them in development mode.
    Allocations are those `workspace_id`/`mode` see (the baseline when no workspace is given).
    Raises LookupError for an unknown person and ValueError for a malformed workspace id.
    """
    s = session_of(session)
    person = get_person(person_id, session=s)
    if person is None:
        raise LookupError(f"no world person {person_id!r}")
    workspace_id = None if workspace_id is None else strict_uuid(workspace_id)
    employments = []
    for job in person.employments:
        rows = allocation_rows(s, workspace_id, mode, job.id) if workspace_id is not None else []
        employments.append(
            {
                "id": str(job.id),
                "employer_id": str(job.employer_id),
                "employer_name": job.employer.name,
                "platform_id": str(job.employer.platform_id),
                "platform_name": job.employer.platform.name,
                "status": job.status,
                "start_date": isodate(job.start_date),
                "end_date": isodate(job.end_date),
                "job_title": job.job_title,
                "annual_income_cents": job.annual_income_cents,
                "pay_frequency": job.pay_frequency,
                "allocations_source": "workspace" if rows else "baseline",
                "allocations": [r.as_dict() for r in rows or allocation_rows(s, None, None, job.id)],
            }
        )
    credentials = [
        {
            "id": str(c.id),
            "platform_id": str(c.platform_id),
            "platform_name": c.platform.name,
            "username": c.username,
            "password": c.password,
            "mfa_enabled": c.mfa_enabled,
            "mfa_method": c.mfa_method,
            "locked": c.locked,
        }
        for c in sorted(person.credentials, key=lambda c: c.platform.name)
    ]
    benefits = s.scalars(select(Beneficiary).where(Beneficiary.ssn == person.ssn))
    return {
        "id": str(person.id),
        "slug": person.slug,
        "first_name": person.first_name,
        "last_name": person.last_name,
        "date_of_birth": isodate(person.date_of_birth),
        "ssn": person.ssn,
        "phone": person.phone,
        "zip": person.zip,
        "email": person.email,
        "employments": employments,
        "credentials": credentials,
        "benefits": [
            {"program_id": str(b.platform_id), "program_name": b.platform.name, "enrolled": b.enrolled}
            for b in benefits
            if b.last_name.lower() == person.last_name.lower()
        ],
    }
