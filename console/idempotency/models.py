"""One row per (API key, Idempotency-Key): the request's fingerprint, then the response to replay."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db

# started: reserved, the view has committed nothing yet (a crash here leaves nothing to protect);
# applied: the view's first commit carried this mark, so its changes exist but the response is not stored yet;
# done: the response below is stored and is what every retry gets.
STARTED, APPLIED, DONE = "started", "applied", "done"


class IdempotencyKey(IdMixin, CreatedAtMixin, db.Model):
    """Keyed by API key, which belongs to one workspace and one mode (so no workspace_id/mode of its own)."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (
        UniqueConstraint("api_key_id", "key", name="uq_idempotency_keys_api_key_id_key"),
        Index("ix_idempotency_keys_expires_at", "expires_at"),
    )

    api_key_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    # SHA-256 of method, path, query string and raw body: a retry must send the same request.
    request_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default=STARTED)
    # When the request now holding the key started; a `started` row older than the stale limit was abandoned.
    locked_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    response_status: Mapped[int | None]
    # Content-Type, Service-Version and the first request's id (replayed as Original-Request).
    response_headers: Mapped[dict[str, Any] | None]
    # The response body sealed with SECRET_KEY: it may hold a Link token, so a database dump does not show it.
    response_body: Mapped[bytes | None] = mapped_column(LargeBinary)
