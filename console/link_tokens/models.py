"""The Link token row: the validated request, kept for the Link flow."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db


class LinkToken(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "link_tokens"
    __table_args__ = (Index("ix_link_tokens_scope_created", "workspace_id", "mode", "created_at"),)

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    api_key_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    # Only a hash of the opaque token is stored; the token itself is returned once.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    org_name: Mapped[str] = mapped_column(String(200))
    end_user_id: Mapped[str | None] = mapped_column(String(255))  # no index: nothing looks tokens up by it
    required_jobs: Mapped[list[Any]]
    targets: Mapped[list[Any]]
    # Personal data for platform matching: kept only until the flow ends, then erased (spec §8).
    platform_matching: Mapped[dict[str, Any] | None]
    account_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("accounts.id", ondelete="SET NULL"))
    platform_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_platforms.id"))
    employer_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_employers.id"))
    skip_intro_screen: Mapped[bool] = mapped_column(default=False)
    # {"type": "amount" | "percent", "value": int}: a pre-configured allocation, or None.
    preconfigured_allocation: Mapped[dict[str, Any] | None]
    disable_direct_deposit_splitting: Mapped[bool] = mapped_column(default=False)
    expires_at: Mapped[datetime]
    # Made by the console's own in-process call, not by a customer's backend (training exercise 1).
    created_by_console: Mapped[bool] = mapped_column(default=False)
