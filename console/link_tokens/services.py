"""Creating and looking up Link tokens."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from console.accounts.models import Account
from console.clock.services import now
from console.core.errors import FieldError, NotFound, ValidationFailed
from console.core.timeutil import isoformat
from console.db.lookup import get_scoped
from console.db.rows import insert_now, new
from console.extensions import db
from console.keys.models import ApiKey
from console.link_tokens.models import LinkToken
from console.link_tokens.validation import LinkTokenRequest, validate_request
from console.scheduler.services import new_task
from console.world.models import Employer, Platform

TOKEN_LIFETIME = timedelta(hours=1)
# Scheduled at creation: ends an abandoned or never-opened flow and erases its matching data on time.
EXPIRE_TASK_KIND = "link_token.expire"


@dataclass(frozen=True)
class CreatedLinkToken:
    """What creating a Link token answers: its row's values (not the ORM object, which `insert_now` leaves
    outside the session; load it with `get_link_token` to change it) and the token, shown once."""

    id: uuid.UUID
    mode: str
    expires_at: datetime
    token: str


def has_expired(token: LinkToken, at: datetime) -> bool:
    """Whether Link no longer opens with the token at `at` (workspace clock): from its `expires_at` on."""
    return at >= token.expires_at


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _check_references(key: ApiKey, request: LinkTokenRequest) -> tuple[list[FieldError], Account | None]:
    errors: list[FieldError] = []
    account = None
    if request.account_id:
        account = db.session.get(Account, uuid.UUID(request.account_id))
        if account is None or account.workspace_id != key.workspace_id or account.mode != key.mode:
            errors.append(FieldError("account_id", "does not name an account of this workspace and mode"))
            account = None
    if request.platform_id and db.session.get(Platform, uuid.UUID(request.platform_id)) is None:
        errors.append(FieldError("platform_id", "does not name a known platform"))
    if request.employer_id and db.session.get(Employer, uuid.UUID(request.employer_id)) is None:
        errors.append(FieldError("employer_id", "does not name a known employer"))
    if account is not None and request.end_user_id and account.end_user_id not in (None, request.end_user_id):
        # Spec §8: the end user persists from the first connection. Another one made this token's events carry
        # a user the account does not belong to (its account.end_user_id still the first), so a backend tying
        # events to users by end_user_id filed the switch under the wrong person.
        errors.append(
            FieldError(
                "end_user_id",
                f"differs from the end_user_id of account {account.id} ({account.end_user_id}), which an "
                "on-demand update keeps: leave end_user_id out, or send that one",
            )
        )
    if account is not None:
        platform = db.session.get(Platform, account.platform_id)
        if platform is not None and platform.is_partner and request.platform_matching is None:
            # Spec §8: a partner platform's matching data is deleted after each flow, so it must come again.
            errors.append(
                FieldError(
                    "end_user.platform_matching",
                    "is required for an on-demand update of an account on a partner platform "
                    f"({platform.name}): the user's matching data is deleted after each flow",
                )
            )
    return errors, account


def create_link_token(key: ApiKey, body: Any, *, by_console: bool = False) -> CreatedLinkToken:
    """Validate a request and store the token; every bad field is reported at once.

    `by_console`: the console's own call, not a customer's backend (kept for training exercise 1).
    """
    request = validate_request(body)
    errors, account = _check_references(key, request)
    if errors:
        raise ValidationFailed(errors)
    end_user_id = request.end_user_id
    if account is not None and end_user_id is None:
        end_user_id = account.end_user_id  # spec §8: persists from the first connection
    token = secrets.token_urlsafe(32)
    created = now(key.workspace)
    link_token = new(
        LinkToken,
        id=uuid.uuid4(),  # known now, so nothing needs a flush before the request's one commit
        workspace_id=key.workspace_id,
        mode=key.mode,
        api_key_id=key.id,
        token_hash=hash_token(token),
        org_name=request.org_name,
        end_user_id=end_user_id,
        required_jobs=list(dict.fromkeys(request.required_jobs)),  # repeats collapse, order kept
        targets=[target.model_dump() for target in request.allocation.targets],
        platform_matching=request.platform_matching,
        account_id=account.id if account else None,
        platform_id=uuid.UUID(request.platform_id) if request.platform_id else None,
        employer_id=uuid.UUID(request.employer_id) if request.employer_id else None,
        skip_intro_screen=request.skip_intro_screen,
        preconfigured_allocation=request.preconfigured_allocation,
        disable_direct_deposit_splitting=request.disable_direct_deposit_splitting,
        created_at=created,
        expires_at=created + TOKEN_LIFETIME,
        created_by_console=by_console,
    )
    expiry = new_task(
        key.workspace, EXPIRE_TASK_KIND, link_token.expires_at, {"link_token_id": str(link_token.id)}
    )
    # Every Link token is one API call; written at once, back to back (see insert_now).
    insert_now(link_token, expiry)
    return CreatedLinkToken(link_token.id, link_token.mode, link_token.expires_at, token)


def find_by_token(token: str) -> LinkToken | None:
    if not token:
        return None
    return db.session.scalars(select(LinkToken).where(LinkToken.token_hash == hash_token(token))).first()


def get_link_token(workspace_id: uuid.UUID, mode: str, link_token_id: uuid.UUID | str) -> LinkToken:
    try:
        uuid.UUID(str(link_token_id))
    except ValueError:
        # Usually the token's `token` sent where its `id` goes; not repeated back (it opens Link).
        raise NotFound(
            "No Link token has that id: a Link token's id is a UUID (`data.id` of POST /v1/link_tokens); "
            "its `token` opens Link and is not an id."
        ) from None
    return get_scoped(LinkToken, workspace_id, mode, link_token_id, "Link token")


def serialize(created: CreatedLinkToken) -> dict:
    return {
        "id": str(created.id),
        "expires": isoformat(created.expires_at),
        "mode": created.mode,
        "token": created.token,
    }
