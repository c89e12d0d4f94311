"""Demo profiles: a prospect's brand and chosen stories, saved for a short URL (`/p/<slug>`).

A profile belongs to no workspace: restarting a story replaces the stage's workspace, and a sales engineer
prepares the profile in one session and presents from another. Who may change it is decided by its edit
secret (only its hash is kept): the creating browser holds the profile in its signed session, and the
private edit link (`/p/<slug>/edit/<secret>`) lets another browser in (see console.presenter.profiles).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import LargeBinary, String
from sqlalchemy.orm import Mapped, deferred, mapped_column

from console.core.timeutil import utcnow
from console.db.base import IdMixin
from console.extensions import db


class PresenterProfile(IdMixin, db.Model):
    __tablename__ = "presenter_profiles"

    slug: Mapped[str] = mapped_column(String(16), unique=True)
    name: Mapped[str] = mapped_column(String(40))
    initials: Mapped[str] = mapped_column(String(3))
    color: Mapped[str] = mapped_column(String(7))
    theme: Mapped[str] = mapped_column(String(8))
    # The presenter's name and email or phone, printed on the run's summary (None: not given).
    contact: Mapped[str | None] = mapped_column(String(120))
    # Story keys to offer, in order; empty offers every story.
    stories: Mapped[list[Any]] = mapped_column(default=list)
    # Edited captions: {story key: {step number (text): caption}}; a step not named keeps the story's own.
    captions: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # sha256 of the edit secret; None for profiles saved before editing existed (nobody can edit those).
    edit_secret_hash: Mapped[str | None] = mapped_column(String(64))
    # The uploaded logo (PNG or JPEG, checked on upload), loaded only when served.
    logo: Mapped[bytes | None] = deferred(mapped_column(LargeBinary))
    logo_type: Mapped[str | None] = mapped_column(String(16))
    logo_digest: Mapped[str | None] = mapped_column(String(16))  # names the logo's version in its URL
    # sha256 of the creating browser's id (console.web.shared.workspace_session.browser_id): the
    # per-browser cap counts these. None for profiles saved before the cap (and by the CLI or tests).
    created_by: Mapped[str | None] = mapped_column(String(64), index=True)
    # sha256 of the creating client address (an IPv6 one by its /64): at the server-wide cap, the address
    # holding more than its share is evicted from first (`profiles.evict_for_one`). None before it existed.
    created_from: Mapped[str | None] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Real time the profile was last saved or opened (short link, start page, stage, edit page), at hour
    # resolution: at the server-wide cap the least recently used profile makes room for a new one.
    last_used_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
