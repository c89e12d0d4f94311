"""The account row: one connection of one person to one platform, per workspace and mode."""

from __future__ import annotations

import uuid

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db


class Account(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "accounts"
    __table_args__ = (Index("ix_accounts_scope_end_user", "workspace_id", "mode", "end_user_id"),)

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    end_user_id: Mapped[str | None] = mapped_column(String(255))
    # The token of the first connection; later tokens for on-demand updates reference the account.
    link_token_id: Mapped[uuid.UUID] = mapped_column(index=True)
    platform_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("world_platforms.id"))
    platform_name: Mapped[str] = mapped_column(String(200))
    employer_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_employers.id"))
    # The world person behind the login (development/production); None for sandbox test credentials.
    person_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_people.id"))
    employment_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_employments.id"))
    # The sandbox test username used, so on-demand updates replay the same scenario.
    sandbox_username: Mapped[str | None] = mapped_column(String(120))
    kind: Mapped[str] = mapped_column(String(16), default="payroll")  # payroll | benefits
    connected: Mapped[bool] = mapped_column(default=True)
    monitoring_status: Mapped[str] = mapped_column(String(32), default="unavailable")
