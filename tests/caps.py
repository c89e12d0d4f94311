"""Helpers for the tests of the per-workspace caps (`console.db.capping.Cap`): a workspace's rows of a table,
and a cap's pass as the worker runs it."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from console.extensions import db


def row_ids(app, model, workspace_id) -> set[uuid.UUID]:
    """The ids of `workspace_id`'s rows in `model`'s table."""
    with app.app_context():
        return set(
            db.session.scalars(select(model.id).where(model.workspace_id == uuid.UUID(str(workspace_id))))
        )


def prune(app, cap, **kwargs) -> int:
    """One pass of `cap` over every workspace (its own session, as in the worker); how many rows went."""
    with app.app_context():
        try:
            return cap.prune(**kwargs)
        finally:
            db.session.remove()
