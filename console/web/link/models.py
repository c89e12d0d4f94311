"""The Link token strings the console created, sealed, so it can open Link with them later."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from console.core.timeutil import utcnow
from console.db.base import IdMixin
from console.extensions import db


class ConsoleLinkToken(IdMixin, db.Model):
    """A Link token string the console created, sealed: the API returns each one only once.

    Kept here (not in the session cookie, which is signed but readable) so "Open Link" can use it
    after a reload or from another page; step 4 offers the newest by `created_at`.
    """

    __tablename__ = "console_link_tokens"
    __table_args__ = (Index("ix_console_link_tokens_scope_created", "workspace_id", "created_at"),)

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    link_token_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("link_tokens.id", ondelete="CASCADE"), unique=True
    )
    # `console.keys.secrets.seal` of the token string (Fernet, keyed from SECRET_KEY).
    token_ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    # What made it ("preset:<key>" or "scenario:<key>"), so "Create a new token" can repeat it.
    origin: Mapped[str | None] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
