"""Saved demo profiles: the prospect's brand and the stories to offer, behind a short URL (`/p/<slug>`)."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable

from sqlalchemy import select

from console.extensions import db
from console.presenter import brand as brands
from console.presenter.models import PresenterProfile

SLUG_BYTES = 5  # 8 base32 characters: short to type, 2^40 to guess


def _new_slug() -> str:
    return base64.b32encode(secrets.token_bytes(SLUG_BYTES)).decode().lower()


def create(mark: brands.Brand, story_keys: Iterable[str]) -> PresenterProfile:
    """Save a profile (the caller commits); story keys are kept in the order given, each once."""
    profile = PresenterProfile(
        slug=_new_slug(),
        name=mark.name,
        initials=mark.initials,
        color=mark.color,
        theme=mark.theme,
        stories=list(dict.fromkeys(story_keys)),
    )
    db.session.add(profile)
    db.session.flush()
    return profile


def get(slug: str) -> PresenterProfile | None:
    if not slug or len(slug) > 16:
        return None
    return db.session.scalars(select(PresenterProfile).where(PresenterProfile.slug == slug.lower())).first()


def brand_of(profile: PresenterProfile) -> brands.Brand:
    return brands.Brand(profile.name, profile.initials, profile.color, profile.theme, profile=profile.slug)
