"""Demo profiles: a prospect's brand and chosen stories, saved for a short URL (`/p/<slug>`).

A profile belongs to no workspace: restarting a story replaces the stage's workspace, and a sales engineer
prepares the profile in one session and presents from another.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from console.core.base import IdMixin
from console.core.timeutil import utcnow
from console.extensions import db


class PresenterProfile(IdMixin, db.Model):
    __tablename__ = "presenter_profiles"

    slug: Mapped[str] = mapped_column(String(16), unique=True)
    name: Mapped[str] = mapped_column(String(40))
    initials: Mapped[str] = mapped_column(String(3))
    color: Mapped[str] = mapped_column(String(7))
    theme: Mapped[str] = mapped_column(String(8))
    # Story keys to offer, in order; empty offers every story.
    stories: Mapped[list[Any]] = mapped_column(default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
