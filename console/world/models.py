"""The world tables: platforms, employers, people, employments, credentials, allocations, beneficiaries."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from console.core.timeutil import utcnow
from console.db.base import IdMixin
from console.extensions import db

PAYROLL = "payroll"
BENEFITS = "benefits"
ACTIVE = "active"
INACTIVE = "inactive"
REMAINDER = "remainder"
AMOUNT = "amount"
PERCENT = "percent"


class Platform(IdMixin, db.Model):
    __tablename__ = "world_platforms"
    __table_args__ = (CheckConstraint("type IN ('payroll', 'benefits')", name="type"),)

    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    type: Mapped[str] = mapped_column(String(16))
    # Partner platforms carry " (Partnership)" in `name` and do not report the switch action.
    is_partner: Mapped[bool] = mapped_column(default=False)
    supported_jobs: Mapped[list[Any]] = mapped_column(default=list)
    supports_amounts: Mapped[bool] = mapped_column(default=False)
    mfa_methods: Mapped[list[Any]] = mapped_column(default=list)
    login_hint: Mapped[str] = mapped_column(String(64))
    brand_color: Mapped[str] = mapped_column(String(7))

    def supports_jobs(self, jobs: Iterable[str] | None) -> bool:
        """Whether this platform supports every job in `jobs`."""
        return set(jobs or ()) <= set(self.supported_jobs)


class Employer(IdMixin, db.Model):
    __tablename__ = "world_employers"

    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    platform_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_platforms.id"), index=True)
    industry: Mapped[str] = mapped_column(String(64))
    city: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(2))

    platform: Mapped[Platform] = relationship()


class Person(IdMixin, db.Model):
    __tablename__ = "world_people"

    # A readable handle (e.g. "jordan-avery") for docs and the CLI.
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    first_name: Mapped[str] = mapped_column(String(64))
    last_name: Mapped[str] = mapped_column(String(64), index=True)
    date_of_birth: Mapped[date]
    ssn: Mapped[str] = mapped_column(String(9), index=True)
    phone: Mapped[str] = mapped_column(String(10))
    zip: Mapped[str] = mapped_column(String(5))
    email: Mapped[str] = mapped_column(String(200))

    employments: Mapped[list[Employment]] = relationship(
        back_populates="person", order_by="Employment.start_date.desc()"
    )
    credentials: Mapped[list[Credential]] = relationship(back_populates="person")

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}"


class Employment(IdMixin, db.Model):
    __tablename__ = "world_employments"
    __table_args__ = (CheckConstraint("status IN ('active', 'inactive')", name="status"),)

    person_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_people.id"), index=True)
    employer_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_employers.id"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    start_date: Mapped[date]
    end_date: Mapped[date | None]
    job_title: Mapped[str] = mapped_column(String(100))
    annual_income_cents: Mapped[int]
    pay_frequency: Mapped[str] = mapped_column(String(16))

    person: Mapped[Person] = relationship(back_populates="employments")
    employer: Mapped[Employer] = relationship()


class Credential(IdMixin, db.Model):
    __tablename__ = "world_credentials"
    __table_args__ = (UniqueConstraint("platform_id", "username"),)

    person_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_people.id"), index=True)
    platform_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_platforms.id"))
    username: Mapped[str] = mapped_column(String(120))
    # Stored in clear on purpose: the people are fictional and the world explorer shows their logins.
    password: Mapped[str] = mapped_column(String(120))
    mfa_enabled: Mapped[bool] = mapped_column(default=False)
    mfa_method: Mapped[str | None] = mapped_column(String(16))
    locked: Mapped[bool] = mapped_column(default=False)

    person: Mapped[Person] = relationship(back_populates="credentials")
    platform: Mapped[Platform] = relationship()


class DepositAllocation(IdMixin, db.Model):
    """One line of a paycheck's deposit split; lower priority numbers are paid first, the remainder last."""

    __tablename__ = "world_deposit_allocations"
    __table_args__ = (
        # Workspace copies are replaced as a whole; this stops two concurrent switches interleaving rows.
        UniqueConstraint("employment_id", "workspace_id", "mode", "priority"),
        Index("ix_world_deposit_allocations_scope", "workspace_id", "mode", "employment_id"),
        CheckConstraint("allocation_type IN ('remainder', 'amount', 'percent')", name="allocation_type"),
    )

    employment_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_employments.id"), index=True)
    # NULL is the seeded baseline; a workspace's switched copy carries its id (no FK: the world stays
    # independent of the workspace tables and a workspace delete can sweep its rows explicitly).
    workspace_id: Mapped[uuid.UUID | None]
    mode: Mapped[str | None] = mapped_column(String(16))
    priority: Mapped[int]
    allocation_type: Mapped[str] = mapped_column(String(16))
    # Cents for `amount`, whole percent for `percent`, NULL for `remainder`.
    value: Mapped[int | None]
    routing_number: Mapped[str] = mapped_column(String(9))
    account_number: Mapped[str] = mapped_column(String(17))
    account_type: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    def as_dict(self) -> dict[str, Any]:
        return {
            "priority": self.priority,
            "allocation_type": self.allocation_type,
            "value": self.value,
            "account_type": self.account_type,
            "routing_number": self.routing_number,
            "account_number": self.account_number,
        }


class Beneficiary(IdMixin, db.Model):
    __tablename__ = "world_beneficiaries"

    platform_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_platforms.id"), index=True)
    first_name: Mapped[str] = mapped_column(String(64))
    last_name: Mapped[str] = mapped_column(String(64))
    ssn: Mapped[str] = mapped_column(String(9), index=True)
    routing_number: Mapped[str] = mapped_column(String(9))
    account_number: Mapped[str] = mapped_column(String(17))
    # Switches are for enrolled beneficiaries only; an unenrolled row lets docs show the rejection.
    enrolled: Mapped[bool] = mapped_column(default=True)

    platform: Mapped[Platform] = relationship()


# In foreign key order; tests and tools create just these tables without the rest of the app.
WORLD_MODELS = (Platform, Employer, Person, Employment, Credential, DepositAllocation, Beneficiary)
