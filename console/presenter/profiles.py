"""Saved demo profiles: the prospect's brand, logo, stories to offer and edited captions, behind a short URL
(`/p/<slug>`).

Anyone with the short link may present a profile; only a holder of its edit secret may change or delete it.
The secret is returned once, by `create`, and only its hash is kept: the console keeps the profile in the
creating browser's signed session and shows the private edit link (`/p/<slug>/edit/<secret>`) that lets
another browser in.

Limits, so an anonymous visitor (or a bot) cannot fill the database, and never a lockout of the next
visitor: a browser may save at most `PRESENTER_PROFILES_PER_BROWSER` profiles (409 PROFILE_LIMIT after
that), and when the server keeps `PRESENTER_MAX_PROFILES` a new profile evicts one instead of being
refused: the one nobody has opened for the longest time (`last_used_at`, written at most once an hour per
profile) among those of the client address holding the most, when it holds more than a tenth of the cap,
else among all. A bot saving from one address (new browsers each time, at the per-address rate) then churns
its own profiles instead of evicting everyone's. A logo is at most 256 KB.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Iterable, Mapping
from datetime import timedelta

from flask import current_app
from sqlalchemy import delete as delete_rows
from sqlalchemy import func, or_, select
from sqlalchemy import update as update_rows
from sqlalchemy.orm.attributes import set_committed_value

from console.core.errors import FieldError, ServiceError, ValidationFailed
from console.core.owners import address_hash, browser_hash
from console.core.params import NUL
from console.core.timeutil import utcnow
from console.db.locking import lock_owner
from console.extensions import db
from console.presenter import brand as brands
from console.presenter.models import PresenterProfile
from console.presenter.stories import MAX_CAPTION, TAG, Story

log = logging.getLogger(__name__)

SLUG_BYTES = 5  # 8 base32 characters: short to type, 2^40 to guess
DEFAULT_MAX_PROFILES = 500
DEFAULT_PROFILES_PER_BROWSER = 20
# At the server-wide cap, an address holding more than this share of it is evicted from first.
ADDRESS_SHARE = 0.1
# last_used_at is written at most this often per profile: a stage view is not a write.
USE_RESOLUTION = timedelta(hours=1)
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


def profiles_per_browser() -> int:
    return int(current_app.config.get("PRESENTER_PROFILES_PER_BROWSER", DEFAULT_PROFILES_PER_BROWSER))


def owned_count(owner: str) -> int:
    """Profiles saved by this browser that still exist."""
    query = select(func.count()).where(PresenterProfile.created_by == browser_hash(owner))
    return db.session.scalar(query) or 0


MAX_CONTACT = 120


def clean_contact(text: str | None) -> str | None:
    """The presenter's contact as printed on the summary: one line, at most 120 characters; None if empty."""
    return " ".join((text or "").split())[:MAX_CONTACT] or None


def create(
    mark: brands.Brand,
    story_keys: Iterable[str],
    *,
    owner: str | None = None,
    address: str | None = None,
    contact: str | None = None,
) -> tuple[PresenterProfile, str]:
    """Save a profile and return it with its edit secret (returned only here). The caller commits.

    `owner`: the creating browser's id; `address`: its client address (as the per-address limits count it). A browser that already saved `PRESENTER_PROFILES_PER_BROWSER`
    profiles (that still exist) is refused (409 PROFILE_LIMIT). The server-wide cap never refuses: at
    `PRESENTER_MAX_PROFILES` the least recently used profiles are evicted to make room (see `evict_for_one`).
    """
    # One lock for every save, held until the caller commits: both counts below (this browser's, the
    # server's) then stay true until this insert is in. Without it, saves at the same moment each counted room
    # for one more: one browser passed its cap, and several browsers together passed the server's (or evicted
    # the same idle profile, each making room for itself only once). Saves are rare: one at a time is cheap.
    lock_owner(PresenterProfile, "server")
    if owner is not None:
        limit = profiles_per_browser()
        if owned_count(owner) >= limit:
            raise ServiceError(
                f"This browser has already saved {limit:,} demo profiles, the most one browser may keep. "
                "Delete one you no longer need (Your profiles, on the presenter page) and save again.",
                code="PROFILE_LIMIT",
                status_code=409,
            )
    evict_for_one()
    secret = secrets.token_urlsafe(24)
    at = utcnow()
    profile = PresenterProfile(
        slug=_new_slug(),
        name=mark.name,
        initials=mark.initials,
        color=mark.color,
        theme=mark.theme,
        contact=clean_contact(contact),
        stories=list(dict.fromkeys(story_keys)),
        captions={},
        edit_secret_hash=_hash(secret),
        created_by=browser_hash(owner) if owner is not None else None,
        created_from=address_hash(address) if address is not None else None,
        created_at=at,
        updated_at=at,
        last_used_at=at,
    )
    db.session.add(profile)
    db.session.flush()
    return profile, secret


def evict_for_one() -> list[str]:
    """Make room for one more profile under `PRESENTER_MAX_PROFILES`: delete the least recently used ones
    (oldest `last_used_at`, i.e. nobody has opened them for the longest time), first among the profiles of
    the address holding the most when it holds more than `ADDRESS_SHARE` of the cap. Returns their slugs.

    The next visitor is never refused: an idle profile goes instead. Run under `create`'s lock, so saves at
    the same moment do not pass the cap together.
    """
    cap = max(max_profiles(), 1)
    total = db.session.scalar(select(func.count()).select_from(PresenterProfile)) or 0
    excess = total - cap + 1
    if excess <= 0:
        return []
    columns = (PresenterProfile.id, PresenterProfile.slug, PresenterProfile.last_used_at)
    oldest_first = (PresenterProfile.last_used_at, PresenterProfile.id)
    victims = []
    heaviest = db.session.execute(
        select(PresenterProfile.created_from, func.count())
        .where(PresenterProfile.created_from.is_not(None))
        .group_by(PresenterProfile.created_from)
        .order_by(func.count().desc())
        .limit(1)
    ).first()
    if heaviest is not None and heaviest[1] > cap * ADDRESS_SHARE:
        victims = db.session.execute(
            select(*columns)
            .where(PresenterProfile.created_from == heaviest[0])
            .order_by(*oldest_first)
            .limit(excess)
        ).all()
    if len(victims) < excess:
        victims += db.session.execute(
            select(*columns)
            .where(PresenterProfile.id.not_in([v.id for v in victims]))
            .order_by(*oldest_first)
            .limit(excess - len(victims))
        ).all()
    db.session.execute(
        delete_rows(PresenterProfile)
        .where(PresenterProfile.id.in_([v.id for v in victims]))
        .execution_options(synchronize_session=False)
    )
    for victim in victims:
        log.info(
            "Presenter profile %s evicted to stay within PRESENTER_MAX_PROFILES (last used %s)",
            victim.slug,
            victim.last_used_at.isoformat() if victim.last_used_at else "never",
        )
    return [v.slug for v in victims]


def note_use(profile: PresenterProfile) -> bool:
    """Move `last_used_at` to now when it is older than USE_RESOLUTION (the caller commits).

    Returns whether a write was needed: a profile shown all day costs one UPDATE an hour, not one per view.
    """
    now = utcnow()
    last = profile.last_used_at
    if last is not None and now - last < USE_RESOLUTION:
        return False
    db.session.execute(
        update_rows(PresenterProfile)
        .where(
            PresenterProfile.id == profile.id,
            or_(
                PresenterProfile.last_used_at.is_(None), PresenterProfile.last_used_at < now - USE_RESOLUTION
            ),
        )
        .values(last_used_at=now)
        .execution_options(synchronize_session=False)
    )
    set_committed_value(profile, "last_used_at", now)  # known now, without a second UPDATE at commit
    return True


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


def printed_caption(profile: PresenterProfile | None, story: Story, number: int) -> str:
    """Step `number`'s caption on the printed summary: the profile's edit, else the story's words for paper
    (its `printed` caption when the stage's words point at the screen), else its caption."""
    edited = caption(profile, story, number)
    step = story.steps[number - 1]
    return step.on_paper if edited == step.caption else edited


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
            tag = TAG.search(text)
            if tag:  # shown as typed on the stage: "<b>" in front of the room
                errors.append(
                    FieldError(name, f"holds HTML ({tag.group(0)[:40]}): write plain text, no tags")
                )
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
    contact: str | None = None,
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
    profile.contact = clean_contact(contact)
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
