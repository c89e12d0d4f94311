"""Insert the fixed world into a database, adding only the rows that are missing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from console.world.models import (
    Beneficiary,
    Credential,
    DepositAllocation,
    Employer,
    Employment,
    Person,
    Platform,
)
from console.world.seed_data import WorldData, build_world

_ATTEMPTS = 3


def _tables(world: WorldData) -> list[tuple[str, type[Any], list[dict[str, Any]]]]:
    """(name, model, rows) in foreign key order."""
    return [
        ("platforms", Platform, world.platforms),
        ("employers", Employer, world.employers),
        ("people", Person, world.people),
        ("employments", Employment, world.employments),
        ("credentials", Credential, world.credentials),
        ("allocations", DepositAllocation, world.allocations),
        ("beneficiaries", Beneficiary, world.beneficiaries),
    ]


def _insert_missing(session: Session, world: WorldData) -> dict[str, int]:
    inserted: dict[str, int] = {}
    for name, model, rows in _tables(world):
        existing_ids = select(model.id)
        if model is DepositAllocation:
            # Only baseline rows are seeded; workspace copies have random ids and can be many.
            existing_ids = existing_ids.where(DepositAllocation.workspace_id.is_(None))
        existing = set(session.scalars(existing_ids))
        # Copy the rows: JSON lists would otherwise be shared with the cached world data.
        missing = [{**row} for row in rows if row["id"] not in existing]
        for row in missing:
            for key, value in row.items():
                if isinstance(value, list):
                    row[key] = list(value)
        if missing:
            session.execute(insert(model), missing)
        inserted[name] = len(missing)
    return inserted


def seed_world(session: Session, *, commit: bool = True) -> dict[str, int]:
    """Insert whatever part of the world is missing and return how many rows each table got.

    Safe on every start and from several processes at once: rows already present (by their
    deterministic id) are left untouched, and a concurrent seeder's duplicate insert is retried.
    With `commit=False` the caller owns the transaction and no retry happens.
    """
    world = build_world()
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            inserted = _insert_missing(session, world)
            if commit:
                session.commit()
            else:
                session.flush()
            return inserted
        except IntegrityError:
            if not commit or attempt == _ATTEMPTS:
                raise
            # Another process inserted the same rows first; after rollback they are visible and skipped.
            session.rollback()
    raise AssertionError("unreachable")


def world_counts(session: Session) -> dict[str, int]:
    """How many seeded rows each world table holds (workspace allocation copies excluded)."""
    counts = {}
    for name, model, _rows in _tables(build_world()):
        stmt = select(func.count()).select_from(model)
        if model is DepositAllocation:
            stmt = stmt.where(DepositAllocation.workspace_id.is_(None))
        counts[name] = session.scalar(stmt) or 0
    return counts
