"""Small helpers every world module shares."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from console.extensions import db


def session_of(session: Session | None) -> Session:
    """The given session, else the Flask-SQLAlchemy session of the current app context."""
    return session if session is not None else db.session


def strict_uuid(value: uuid.UUID | str) -> uuid.UUID:
    """Parse an id a caller must get right (workspace, employment); a bad one is a ValueError."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
