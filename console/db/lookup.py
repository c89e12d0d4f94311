"""Finding one customer record by id within its workspace and mode."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from console.core.errors import NotFound, shown
from console.extensions import db

T = TypeVar("T")


def get_scoped(model: type[T], workspace_id: uuid.UUID, mode: str, record_id: Any, noun: str) -> T:
    """The `model` row with this id in this workspace and mode, else `NotFound`.

    A record of another workspace or mode answers exactly like a missing one, so ids
    reveal nothing across workspaces; a malformed id is simply not found.
    """
    try:
        ident = uuid.UUID(str(record_id))
    except ValueError as exc:
        raise NotFound(f"No {noun} with id {shown(record_id)}.") from exc
    row = db.session.get(model, ident)
    if row is None or row.workspace_id != workspace_id or row.mode != mode:
        raise NotFound(f"No {noun} with id {shown(record_id)}.")
    return row
