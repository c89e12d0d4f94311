"""The API key row."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from console.core.timeutil import utcnow
from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db
from console.workspaces.models import Workspace


class ApiKey(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "api_keys"

    workspace_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    mode: Mapped[str] = mapped_column(String(16))
    label: Mapped[str] = mapped_column(String(120), default="")
    # SHA-256 of the secret: requests are authenticated by looking this up.
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The secret itself, encrypted with the app's key: webhooks are signed with it (PRODUCT.md, Webhooks).
    secret_ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    secret_last4: Mapped[str] = mapped_column(String(4))
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)
    # Set when the key was rolled with a grace period: its secret works until then (real time).
    expires_at: Mapped[datetime | None] = mapped_column(default=None)
    # Real time of the latest request with this key, written at most once a minute (console.requestlog).
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)

    workspace: Mapped[Workspace] = relationship()

    @property
    def is_active(self) -> bool:
        """Not revoked and not past a roll's grace period (real time)."""
        return self.revoked_at is None and (self.expires_at is None or utcnow() < self.expires_at)
