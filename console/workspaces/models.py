"""The workspace row."""

from __future__ import annotations

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from console.core.base import CreatedAtMixin, IdMixin
from console.extensions import db


class Workspace(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "workspaces"

    name: Mapped[str] = mapped_column(String(120))
    # The demo workspace is the one `make run` prints a key for and the CLI uses by default.
    is_demo: Mapped[bool] = mapped_column(default=False, index=True)
    # The workspace clock runs at real time plus this offset (see console.clock).
    clock_offset_seconds: Mapped[float] = mapped_column(default=0.0)
