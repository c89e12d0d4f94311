"""Queries and the one write over the simulated world: search, lookups, logins, deposit allocations, benefits.

Every function takes an optional `session`; without one it uses the Flask-SQLAlchemy session of the current
app context. Nothing here commits: the caller owns the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, delete, func, select
from sqlalchemy.orm import Session, selectinload

from console.core.errors import FieldError, ValidationFailed
from console.core.timeutil import isodate, utcnow
from console.extensions import db
from console.world.models import (
    ACTIVE,
    AMOUNT,
    PAYROLL,
    PERCENT,
    REMAINDER,
    Beneficiary,
    Credential,
    DepositAllocation,
    Employer,
    Employment,
    Person,
    Platform,
)

SANDBOX = "sandbox"  # mirrors console.modes.SANDBOX; the world does not import the service layer

LOGIN_OK = "ok"
LOGIN_UNKNOWN_USER = "unknown_user"
LOGIN_WRONG_PASSWORD = "wrong_password"
LOGIN_LOCKED = "locked"

_FULL_SWITCH_TYPES = (None, REMAINDER, "total", "full")


def _session(session: Session | None) -> Session:
    return session if session is not None else db.session


def _uuid(value: uuid.UUID | str | None) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _strict_uuid(value: uuid.UUID | str) -> uuid.UUID:
    """Parse an id a caller must get right (workspace, employment); a bad one is a ValueError."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


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
        platforms = _session(session).scalars(select(Platform))
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
    return _session(session).get(model, parsed) if parsed else None


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
    return _session(session).scalar(select(Person).where(Person.slug == str(person_id)))


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
    limit: int = 20,
    required_jobs: Iterable[str] | None = None,
    types: Iterable[str] | None = None,
    session: Session | None = None,
) -> list[SearchHit]:
    """Employers and platforms whose name contains `q`, prefix matches first; without `q`, platforms first.

    `required_jobs` hides platforms (and their employers) lacking any of the jobs; `types` limits platform
    types (`payroll`, `benefits`); employers count as `payroll`.
    """
    s = _session(session)
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
    rows = list(_session(session).scalars(stmt))
    return sorted(rows, key=lambda e: (e.status != ACTIVE, -e.start_date.toordinal(), e.id))


def find_person_by_credentials(
    platform_id: uuid.UUID | str, username: str, password: str, *, session: Session | None = None
) -> LoginResult:
    """Check a login; usernames are case-insensitive, passwords exact, and a locked account stays locked."""
    s = _session(session)
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


def _scope(workspace_id: uuid.UUID | None, mode: str | None) -> list[ColumnElement[bool]]:
    if workspace_id is None:
        return [DepositAllocation.workspace_id.is_(None)]
    mode_clause = DepositAllocation.mode.is_(None) if mode is None else DepositAllocation.mode == mode
    return [DepositAllocation.workspace_id == workspace_id, mode_clause]


def _rows(
    s: Session, workspace_id: uuid.UUID | None, mode: str | None, employment_id: uuid.UUID
) -> list[Any]:
    stmt = (
        select(DepositAllocation)
        .where(DepositAllocation.employment_id == employment_id, *_scope(workspace_id, mode))
        .order_by(DepositAllocation.priority)
    )
    return list(s.scalars(stmt))


def current_allocations(
    workspace_id: uuid.UUID | str | None,
    mode: str | None,
    employment_id: uuid.UUID | str,
    *,
    session: Session | None = None,
) -> list[dict[str, Any]]:
    """The deposit split a workspace sees for an employment: its switched copy, else the seeded baseline."""
    s = _session(session)
    employment_id = _strict_uuid(employment_id)
    workspace_id = None if workspace_id is None else _strict_uuid(workspace_id)
    rows = _rows(s, workspace_id, mode, employment_id) if workspace_id is not None else []
    if not rows:
        rows = _rows(s, None, None, employment_id)
    return [row.as_dict() for row in rows]


def _target_line(target: Mapping[str, Any]) -> dict[str, Any]:
    account_type = target.get("account_type") or target.get("type") or "checking"
    routing, account = str(target.get("routing_number") or ""), str(target.get("account_number") or "")
    if not routing or not account:
        raise ValidationFailed(
            [FieldError("target", "a switch target needs routing_number and account_number")]
        )
    return {"account_type": account_type, "routing_number": routing, "account_number": account}


def _parse_allocation(allocation: Mapping[str, Any] | None) -> tuple[str, int | None]:
    kind = (allocation or {}).get("type")
    if kind in _FULL_SWITCH_TYPES:
        return REMAINDER, None
    value = (allocation or {}).get("value")
    if kind not in (AMOUNT, PERCENT):
        raise ValidationFailed([FieldError("allocation.type", f"unknown allocation type {kind!r}")])
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value <= 0
        or (kind == PERCENT and value > 100)
    ):
        raise ValidationFailed([FieldError("allocation.value", f"invalid {kind} allocation value {value!r}")])
    return kind, value


def _same_account(line: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    return (line["routing_number"], line["account_number"]) == (
        target["routing_number"],
        target["account_number"],
    )


def switched_allocations(
    before: Sequence[Mapping[str, Any]], target: Mapping[str, Any], allocation: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The split after a switch, as pure data (see `apply_switch`)."""
    line = _target_line(target)
    kind, value = _parse_allocation(allocation)
    if kind == REMAINDER:
        return [{"priority": 1, "allocation_type": REMAINDER, "value": None, **line}]
    # A partial switch replaces any fixed line to the same account; the remainder line always stays last.
    kept = [dict(r) for r in before if not (_same_account(r, line) and r["allocation_type"] != REMAINDER)]
    if not any(_same_account(r, line) for r in kept):
        # The new fixed amount is paid first, ahead of the existing lines.
        kept.insert(0, {"priority": 0, "allocation_type": kind, "value": value, **line})
    # If the target already receives the remainder it gets everything left over anyway; nothing to add.
    kept.sort(key=lambda r: (r["allocation_type"] == REMAINDER, r["priority"]))
    return [{**r, "priority": i} for i, r in enumerate(kept, start=1)]


def apply_switch(
    workspace_id: uuid.UUID | str,
    mode: str,
    employment_id: uuid.UUID | str,
    target: Mapping[str, Any],
    allocation: Mapping[str, Any] | None = None,
    *,
    now: datetime | None = None,
    session: Session | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Switch an employment's deposits for one workspace and mode; return (before, after) splits.

    `target` holds `routing_number`, `account_number` and `account_type` (or `type`, as in Link tokens).
    `allocation` None or of type remainder/total/full is a full switch: one remainder line to the target.
    `{"type": "amount", "value": cents}` or `{"type": "percent", "value": 1..100}` is a partial switch: that
    line goes first, existing lines keep their order after it. The baseline is never modified; the
    workspace's copy is replaced. Raises ValidationFailed for a bad target or allocation, ValueError for a
    missing workspace or the sandbox mode (sandbox changes no payroll record).
    """
    if workspace_id is None:
        raise ValueError("the seeded baseline is never switched; pass a workspace id")
    if mode == SANDBOX:
        raise ValueError("sandbox switches change no payroll record")
    s = _session(session)
    workspace_id, employment_id = _strict_uuid(workspace_id), _strict_uuid(employment_id)
    before = current_allocations(workspace_id, mode, employment_id, session=s)
    after = switched_allocations(before, target, allocation)
    # Delete first with an immediate statement: the unit of work would otherwise insert before deleting
    # and trip the (employment, workspace, mode, priority) unique constraint.
    s.execute(
        delete(DepositAllocation).where(
            DepositAllocation.employment_id == employment_id, *_scope(workspace_id, mode)
        )
    )
    stamp = now or utcnow()
    s.add_all(
        DepositAllocation(
            employment_id=employment_id, workspace_id=workspace_id, mode=mode, updated_at=stamp, **r
        )
        for r in after
    )
    s.flush()
    return before, after


def reset_allocations(
    workspace_id: uuid.UUID | str, mode: str | None = None, *, session: Session | None = None
) -> int:
    """Drop a workspace's switched copies (all modes unless `mode`); returns the number of rows removed."""
    stmt = delete(DepositAllocation).where(DepositAllocation.workspace_id == _strict_uuid(workspace_id))
    if mode is not None:
        stmt = stmt.where(DepositAllocation.mode == mode)
    result = _session(session).execute(stmt)
    return int(getattr(result, "rowcount", 0) or 0)


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
    for row in _session(session).scalars(stmt):
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
    s = _session(session)
    person = get_person(person_id, session=s)
    if person is None:
        raise LookupError(f"no world person {person_id!r}")
    workspace_id = None if workspace_id is None else _strict_uuid(workspace_id)
    employments = []
    for job in person.employments:
        rows = _rows(s, workspace_id, mode, job.id) if workspace_id is not None else []
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
                "allocations": [r.as_dict() for r in rows or _rows(s, None, None, job.id)],
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
