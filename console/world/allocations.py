"""The payroll record a switch changes: each employment's paycheck deposit allocations.

The seeded baseline has no workspace; a development/production switch writes a workspace- and
mode-scoped copy, so workspaces never see each other's changes. Nothing here commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.orm import Session

from console.core.errors import FieldError, ValidationFailed
from console.core.timeutil import utcnow
from console.world.common import session_of, strict_uuid
from console.world.models import AMOUNT, PERCENT, REMAINDER, DepositAllocation

SANDBOX = "sandbox"  # mirrors console.modes.SANDBOX; the world does not import the service layer
_FULL_SWITCH_TYPES = (None, REMAINDER, "total", "full")


def _scope(workspace_id: uuid.UUID | None, mode: str | None) -> list[ColumnElement[bool]]:
    if workspace_id is None:
        return [DepositAllocation.workspace_id.is_(None)]
    mode_clause = DepositAllocation.mode.is_(None) if mode is None else DepositAllocation.mode == mode
    return [DepositAllocation.workspace_id == workspace_id, mode_clause]


def allocation_rows(
    s: Session, workspace_id: uuid.UUID | None, mode: str | None, employment_id: uuid.UUID
) -> list[Any]:
    """The stored rows of one scope (None, None: the seeded baseline), in priority order."""
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
    s = session_of(session)
    employment_id = strict_uuid(employment_id)
    workspace_id = None if workspace_id is None else strict_uuid(workspace_id)
    rows = allocation_rows(s, workspace_id, mode, employment_id) if workspace_id is not None else []
    if not rows:
        rows = allocation_rows(s, None, None, employment_id)
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
    s = session_of(session)
    workspace_id, employment_id = strict_uuid(workspace_id), strict_uuid(employment_id)
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
    stmt = delete(DepositAllocation).where(DepositAllocation.workspace_id == strict_uuid(workspace_id))
    if mode is not None:
        stmt = stmt.where(DepositAllocation.mode == mode)
    result = session_of(session).execute(stmt)
    return int(getattr(result, "rowcount", 0) or 0)
