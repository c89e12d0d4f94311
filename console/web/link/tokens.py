"""The Link token strings the console created, so it can open Link with them later.

The API shows a token string once, in the response that creates it. The console keeps each one
sealed in `console_link_tokens` (never in the session cookie), scoped to the workspace, and step 4
offers the newest by creation time.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from cryptography.fernet import InvalidToken
from sqlalchemy import delete, select

from console.core.timeutil import utcnow
from console.extensions import db
from console.keys.secrets import seal, unseal
from console.web.link.models import ConsoleLinkToken

# Older ones are forgotten: their Link flows are long finished or expired.
MAX_REMEMBERED = 10


class Kept(NamedTuple):
    link_token_id: str
    token: str
    origin: str | None  # "preset:<key>" or "scenario:<key>": what made it, for "Create a new token"


def _uuid(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def remember(workspace_id: uuid.UUID, link_token_id: str, token: str, origin: str | None = None) -> None:
    """Keep a token string the API just returned (in the caller's transaction), newest last."""
    ident = _uuid(link_token_id)
    if ident is None:
        return
    row = db.session.scalars(select(ConsoleLinkToken).where(ConsoleLinkToken.link_token_id == ident)).first()
    if row is None:
        row = ConsoleLinkToken(workspace_id=workspace_id, link_token_id=ident)
        db.session.add(row)
    row.token_ciphertext = seal(token)
    row.origin = origin
    row.created_at = utcnow()
    db.session.flush()
    keep = (
        select(ConsoleLinkToken.id)
        .where(ConsoleLinkToken.workspace_id == workspace_id)
        .order_by(ConsoleLinkToken.created_at.desc())
        .limit(MAX_REMEMBERED)
    )
    db.session.execute(
        delete(ConsoleLinkToken)
        .where(
            ConsoleLinkToken.workspace_id == workspace_id, ConsoleLinkToken.id.not_in(keep.scalar_subquery())
        )
        .execution_options(synchronize_session=False)
    )


def _kept(row: ConsoleLinkToken | None) -> Kept | None:
    if row is None:
        return None
    try:
        token = unseal(row.token_ciphertext)
    except InvalidToken:
        # Sealed under another SECRET_KEY: unusable, as if never kept.
        return None
    return Kept(str(row.link_token_id), token, row.origin)


def kept(workspace_id: uuid.UUID, link_token_id: str | None) -> Kept | None:
    """A token this workspace's console created (None if unknown or another's)."""
    ident = _uuid(link_token_id) if link_token_id else None
    if ident is None:
        return None
    return _kept(
        db.session.scalars(
            select(ConsoleLinkToken).where(
                ConsoleLinkToken.workspace_id == workspace_id, ConsoleLinkToken.link_token_id == ident
            )
        ).first()
    )


def token_for(workspace_id: uuid.UUID, link_token_id: str | None) -> str | None:
    """The string of a token this workspace's console created (None if unknown or another's)."""
    found = kept(workspace_id, link_token_id)
    return found.token if found else None


def newest(workspace_id: uuid.UUID) -> Kept | None:
    """The newest token the console created in the workspace."""
    row = db.session.scalars(
        select(ConsoleLinkToken)
        .where(ConsoleLinkToken.workspace_id == workspace_id)
        .order_by(ConsoleLinkToken.created_at.desc(), ConsoleLinkToken.id.desc())
        .limit(1)
    ).first()
    return _kept(row)
