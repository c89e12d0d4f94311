"""Reserve an Idempotency-Key for one request, store its response, replay it to retries.

The life of a key (docs/api.md, "Safe retries"):

1. `begin` inserts the row as `started` (the request hook commits it before the view runs), so two
   requests with one key cannot both run: the second finds the row and gets 409 `IDEMPOTENCY_KEY_IN_USE`.
2. `mark_applied` runs inside the view's first commit (a session hook), so the row says `applied` exactly
   when the view's changes exist. A crash before that leaves `started`, which a retry may take over once
   it is stale; a crash after it leaves `applied`, which is never run again.
3. `finish` stores the response (`done`), or releases the key when the view failed with a 5xx, or asked
   for a retry later (Retry-After), having committed nothing, so the retry can run.

Like every service these never commit; the request hooks (`console.api.idempotency`) and the sweep loop
own the transactions.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography.fernet import InvalidToken
from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from console.core.errors import Conflict, FieldError, ValidationFailed
from console.core.timeutil import utcnow
from console.extensions import db
from console.idempotency.models import APPLIED, DONE, STARTED, IdempotencyKey
from console.keys.secrets import seal, unseal

log = logging.getLogger(__name__)
# Core statements on the table for the per-request writes: no ORM bookkeeping on the request path.
TABLE = IdempotencyKey.__table__

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
# How long a stored response is replayed (real time, not the workspace clock).
TTL = timedelta(hours=24)
# A `started` reservation older than this belongs to a request that died before committing anything.
# Longer than any request runs (a clock advance of thousands of tasks included).
STALE_AFTER = timedelta(minutes=5)
RETRY_AFTER_SECONDS = 1
SWEEP_BATCH = 1000


class KeyReused(Conflict):
    code = "IDEMPOTENCY_KEY_REUSED"


class KeyInUse(Conflict):
    code = "IDEMPOTENCY_KEY_IN_USE"
    retry_after = RETRY_AFTER_SECONDS


class ResponseLost(Conflict):
    code = "IDEMPOTENCY_RESPONSE_LOST"


@dataclass
class Reservation:
    """The key this request holds while its view runs."""

    id: uuid.UUID
    applied: bool = False


@dataclass(frozen=True)
class StoredResponse:
    status: int
    headers: dict[str, Any]
    body: str


def check_key(value: str) -> str:
    """The header's value if it is 1-255 printable ASCII characters, else a 400 naming the header."""
    if not value:
        # Granian hands the app an empty value for a header sent with non-ASCII bytes: say what a key is.
        problem = "must not be empty: 1-255 printable ASCII characters (a UUID is a good key)"
    elif len(value) > MAX_KEY_LENGTH:
        problem = f"must be at most {MAX_KEY_LENGTH} characters"
    elif not all(" " <= ch <= "~" for ch in value):
        problem = "must be printable ASCII (no control characters); a UUID is a good key"
    else:
        return value
    raise ValidationFailed(
        [FieldError(HEADER, problem)],
        f"The {HEADER} header {problem}.",
        code="INVALID_IDEMPOTENCY_KEY",
    )


def fingerprint(method: str, path: str, query: bytes, body: bytes) -> str:
    """What makes two requests "the same": method, path, query string and the body byte for byte."""
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), query, body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _insert_reservation(
    api_key_id: uuid.UUID, key: str, request_hash: str, now: datetime
) -> uuid.UUID | None:
    """Insert the row unless the key exists (no error, no aborted transaction); its id, or None."""
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    return db.session.scalar(
        dialect.insert(TABLE)
        .values(
            id=uuid.uuid4(),
            api_key_id=api_key_id,
            key=key,
            request_hash=request_hash,
            status=STARTED,
            locked_at=now,
            expires_at=now + TTL,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=["api_key_id", "key"])
        .returning(TABLE.c.id)
    )


def begin(api_key_id: uuid.UUID, key: str, request_hash: str) -> Reservation | StoredResponse:
    """Reserve `key` for this request, or the stored response to replay; a 409 when neither.

    The caller commits the reservation before the view runs.
    """
    # A few rounds: the row found may expire or be released between the insert and the read.
    for _ in range(3):
        now = utcnow()
        row_id = _insert_reservation(api_key_id, key, request_hash, now)
        if row_id is not None:
            return Reservation(row_id)
        row = db.session.scalar(
            select(IdempotencyKey)
            .where(IdempotencyKey.api_key_id == api_key_id, IdempotencyKey.key == key)
            .execution_options(populate_existing=True)
        )
        if row is None:
            continue
        if row.expires_at <= now:
            # Swept lazily: an expired key is free again, whatever it held.
            db.session.execute(
                delete(IdempotencyKey).where(IdempotencyKey.id == row.id, IdempotencyKey.expires_at <= now)
            )
            continue
        if row.request_hash != request_hash:
            raise KeyReused(
                f"This {HEADER} was already used with a different request (method, path or body) in the "
                "last 24 hours. Send a new key for a new request."
            )
        if row.status == DONE:
            return _stored(row)
        if row.locked_at > now - STALE_AFTER:
            raise KeyInUse(
                f"A request with this {HEADER} is still running. Retry after {RETRY_AFTER_SECONDS} s to get "
                "its response."
            )
        if row.status == APPLIED:
            raise _lost()
        # `started` and stale: its request died before committing anything, so this one may run it.
        taken = db.session.execute(
            update(IdempotencyKey)
            .where(
                IdempotencyKey.id == row.id,
                IdempotencyKey.status == STARTED,
                IdempotencyKey.locked_at == row.locked_at,
            )
            .values(locked_at=now)
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount == 1:
            return Reservation(row.id)
    raise KeyInUse(f"Another request is using this {HEADER}. Retry after {RETRY_AFTER_SECONDS} s.")


def _lost() -> ResponseLost:
    return ResponseLost(
        f"The first request with this {HEADER} made its changes, but its response was not kept (the server "
        "stopped before storing it). It is not run again: look the result up with a GET, or send a new key."
    )


def _stored(row: IdempotencyKey) -> StoredResponse:
    try:
        body = unseal(row.response_body or b"")
    except InvalidToken:
        # SECRET_KEY changed since it was stored: the response cannot be read back, and running again could
        # repeat the change.
        log.warning("Stored idempotent response %s cannot be unsealed with the current SECRET_KEY", row.id)
        raise _lost() from None
    return StoredResponse(row.response_status or 200, dict(row.response_headers or {}), body)


def mark_applied(session: Session, reservation: Reservation) -> None:
    """Add the `applied` mark to the transaction the view is committing (called from before_commit)."""
    session.execute(
        update(TABLE).where(TABLE.c.id == reservation.id, TABLE.c.status == STARTED).values(status=APPLIED)
    )


def finish(
    reservation: Reservation, status: int, headers: dict[str, Any], body: str, *, retry_later: bool = False
) -> None:
    """Store the view's response for replay, or release the key after a 5xx, or an answer that asks for a
    retry (`retry_later`: it carries Retry-After), that changed nothing.

    A stored "try again in N seconds" (the conformance check's 409 and 429) would be replayed to that very
    retry for 24 hours, so a client doing what it was told could never get past it with its key."""
    if status >= 500 or retry_later:
        # The row's status is the truth about whether the view committed anything.
        released = db.session.execute(
            delete(IdempotencyKey).where(
                IdempotencyKey.id == reservation.id, IdempotencyKey.status == STARTED
            )
        )
        if released.rowcount == 1:
            return
    db.session.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.id == reservation.id)
        .values(status=DONE, response_status=status, response_headers=headers, response_body=seal(body))
        .execution_options(synchronize_session=False)
    )


def delete_expired(limit: int = SWEEP_BATCH) -> int:
    """Delete up to `limit` expired records; how many went."""
    expired = select(IdempotencyKey.id).where(IdempotencyKey.expires_at <= utcnow()).limit(limit)
    return db.session.execute(
        delete(IdempotencyKey)
        .where(IdempotencyKey.id.in_(expired))
        .execution_options(synchronize_session=False)
    ).rowcount
