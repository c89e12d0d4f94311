"""Saved demo profiles: the prospect's brand, logo, stories to offer and edited captions, behind a short URL
(`/p/<slug>`).

Anyone with the short link may present a profile; only a holder of its edit secret may change or delete it.
The secret is returned once, by `create`, and only its hash is kept: the console keeps the profile in the
creating browser's signed session and shows the private edit link (`/p/<slug>/edit/<secret>`) that lets
another browser in. The number of profiles is capped (`PRESENTER_MAX_PROFILES`) and a logo is at most
256 KB, so an anonymous visitor (or a bot) cannot fill the database.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Iterable, Mapping

from flask import current_app
from sqlalchemy import func, select

from console.core.errors import FieldError, ServiceError, ValidationFailed
from console.core.params import NUL
from console.core.timeutil import utcnow
from console.extensions import db
from console.presenter import brand as brands
from console.presenter.models import PresenterProfile
from console.presenter.stories import MAX_CAPTION, Story

SLUG_BYTES = 5  # 8 base32 characters: short to type, 2^40 to guess
DEFAULT_MAX_PROFILES = 500
LOGO_MAX_BYTES = 256 * 1024
LOGO_MAX_SIDE = 2048  # pixels, either side: a small file cannot unpack into a huge image
PNG, JPEG = "image/png", "image/jpeg"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE = b"\xff\xd8\xff"
# JPEG start-of-frame markers (the frame header holds the image size); not DHT (C4), JPG (C8) or DAC (CC).
_JPEG_FRAMES = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _new_slug() -> str:
    return base64.b32encode(secrets.token_bytes(SLUG_BYTES)).decode().lower()


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def max_profiles() -> int:
    return int(current_app.config.get("PRESENTER_MAX_PROFILES", DEFAULT_MAX_PROFILES))


def create(mark: brands.Brand, story_keys: Iterable[str]) -> tuple[PresenterProfile, str]:
    """Save a profile and return it with its edit secret (returned only here). The caller commits.

    Refused (409 PROFILE_LIMIT) once the server keeps `PRESENTER_MAX_PROFILES` profiles.
    """
    limit = max_profiles()
    if (db.session.scalar(select(func.count()).select_from(PresenterProfile)) or 0) >= limit:
        raise ServiceError(
            f"This server already keeps {limit:,} demo profiles, its limit. Delete profiles you no longer "
            "need (from their edit page), or ask its operator to raise PRESENTER_MAX_PROFILES.",
            code="PROFILE_LIMIT",
            status_code=409,
        )
    secret = secrets.token_urlsafe(24)
    profile = PresenterProfile(
        slug=_new_slug(),
        name=mark.name,
        initials=mark.initials,
        color=mark.color,
        theme=mark.theme,
        stories=list(dict.fromkeys(story_keys)),
        captions={},
        edit_secret_hash=_hash(secret),
    )
    db.session.add(profile)
    db.session.flush()
    return profile, secret


def get(slug: str) -> PresenterProfile | None:
    if not slug or len(slug) > 16:
        return None
    return db.session.scalars(select(PresenterProfile).where(PresenterProfile.slug == slug.lower())).first()


def secret_matches(profile: PresenterProfile, secret: str) -> bool:
    if not profile.edit_secret_hash:
        return False
    return hmac.compare_digest(profile.edit_secret_hash, _hash(secret or ""))


def brand_of(profile: PresenterProfile) -> brands.Brand:
    return brands.Brand(
        profile.name,
        profile.initials,
        profile.color,
        profile.theme,
        profile=profile.slug,
        logo=profile.logo_digest or "",
    )


def offered(profile: PresenterProfile | None, stories: list[Story]) -> list[Story]:
    """The stories a profile offers, in its order (all of them when it names none)."""
    if profile is None or not profile.stories:
        return stories
    by_key = {s.key: s for s in stories}
    return [by_key[k] for k in profile.stories if k in by_key]


# --- captions ----------------------------------------------------------------------------------------


def caption_field(story_key: str, number: int) -> str:
    """The form field (and field error name) of a step's caption."""
    return f"caption-{story_key}-{number}"


def caption(profile: PresenterProfile | None, story: Story, number: int) -> str:
    """Step `number`'s caption (1-based) as this profile tells it: its edit, else the story's own."""
    default = story.steps[number - 1].caption
    if profile is None:
        return default
    edited = (profile.captions or {}).get(story.key, {}).get(str(number))
    return edited if isinstance(edited, str) and edited else default


def _clean_captions(
    stories: list[Story], given: Mapping[str, str]
) -> tuple[dict[str, dict[str, str]], list[FieldError]]:
    """Edited captions from form fields; a blank one, or one equal to the story's, keeps the story's own."""
    captions: dict[str, dict[str, str]] = {}
    errors: list[FieldError] = []
    for story in stories:
        for number, step in enumerate(story.steps, 1):
            name = caption_field(story.key, number)
            text = given.get(name)
            if text is None:
                continue
            if NUL in text:
                errors.append(FieldError(name, "must not contain NUL (U+0000) characters"))
                continue
            text = " ".join(text.split())
            if len(text) > MAX_CAPTION:
                errors.append(FieldError(name, f"is {len(text)} characters long; at most {MAX_CAPTION}"))
                continue
            if text and text != step.caption:
                captions.setdefault(story.key, {})[str(number)] = text
    return captions, errors


def update(
    profile: PresenterProfile,
    mark: brands.Brand,
    story_keys: Iterable[str],
    captions: Mapping[str, str],
    known: list[Story],
) -> None:
    """Change a profile's brand, stories and edited captions (the caller commits).

    `captions` are form fields (`caption_field` names) for any story of the folder (a story ticked off later
    keeps its edits). Raises ValidationFailed naming each caption that is too long or holds a NUL; nothing
    changes then.
    """
    known_keys = {s.key for s in known}
    keys = [k for k in dict.fromkeys(story_keys) if k in known_keys]
    cleaned, errors = _clean_captions(known, captions)
    if errors:
        raise ValidationFailed(errors, "Some captions could not be saved.")
    profile.name, profile.initials = mark.name, mark.initials
    profile.color, profile.theme = mark.color, mark.theme
    profile.stories = keys
    profile.captions = cleaned
    profile.updated_at = utcnow()


def delete(profile: PresenterProfile) -> None:
    db.session.delete(profile)


# --- the logo ----------------------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The frame size from the first start-of-frame segment, walking the segments after SOI."""
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD9)):  # markers without a length
            i += 2
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if length < 2:
            return None
        if marker in _JPEG_FRAMES:
            if i + 9 > len(data):
                return None
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            width = int.from_bytes(data[i + 7 : i + 9], "big")
            return width, height
        if marker == 0xDA:  # start of scan before any frame header
            return None
        i += 2 + length
    return None


def check_logo(data: bytes) -> str:
    """The content type of an acceptable logo; ValidationFailed (field `logo`) saying what is wrong."""

    def refuse(message: str) -> ValidationFailed:
        return ValidationFailed([FieldError("logo", message)], f"The logo was not saved: {message}")

    if not data:
        raise refuse("choose a PNG or JPEG file.")
    if len(data) > LOGO_MAX_BYTES:
        # The upload is read only up to one byte past the limit, so its full size is not known here.
        raise refuse(f"the file is larger than {LOGO_MAX_BYTES // 1024} KB, the most a logo may be.")
    if data.startswith(_PNG_SIGNATURE):
        kind, size = PNG, _png_size(data)
    elif data.startswith(_JPEG_SIGNATURE):
        kind, size = JPEG, _jpeg_size(data)
    else:
        raise refuse("it must be a PNG or JPEG image (other formats, SVG included, are refused).")
    if size is None or min(size) < 1:
        raise refuse(f"the file starts like a {kind.split('/')[1].upper()} image but cannot be read as one.")
    if max(size) > LOGO_MAX_SIDE:
        raise refuse(
            f"the image is {size[0]} by {size[1]} pixels; at most {LOGO_MAX_SIDE} by {LOGO_MAX_SIDE}."
        )
    return kind


def set_logo(profile: PresenterProfile, data: bytes) -> None:
    """Store an uploaded logo after `check_logo` (the caller commits)."""
    kind = check_logo(data)
    profile.logo, profile.logo_type = data, kind
    profile.logo_digest = hashlib.sha256(data).hexdigest()[:16]
    profile.updated_at = utcnow()


def remove_logo(profile: PresenterProfile) -> None:
    profile.logo = profile.logo_type = profile.logo_digest = None
    profile.updated_at = utcnow()
