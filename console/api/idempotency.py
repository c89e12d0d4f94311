"""The `Idempotency-Key` header on `/v1` POSTs: request hooks around `console.idempotency.services`.

Installed once by `conventions.install`, after authentication, version and rate limit: a request refused
by those never reserves its key. A request without the header costs one header lookup here, no query.
"""

from __future__ import annotations

import logging

from flask import Response, current_app, g, has_request_context, request
from sqlalchemy import event
from sqlalchemy.orm import Session

from console.core.errors import Conflict
from console.extensions import db
from console.idempotency import services
from console.idempotency.services import HEADER

log = logging.getLogger(__name__)

REPLAYED_HEADER = "Idempotent-Replayed"
ORIGINAL_REQUEST_HEADER = "Original-Request"
_RESERVATION = "idempotency_reservation"


def reserve_key() -> Response | None:
    """Before the view: reserve the key, or answer a retry with the stored response (the view does not run)."""
    if request.method != "POST":
        return None
    key = request.headers.get(HEADER)
    if key is None:
        return None
    key = services.check_key(key)
    request_hash = services.fingerprint(
        request.method, request.path, request.query_string, request.get_data(cache=True)
    )
    try:
        outcome = services.begin(g.api_key.id, key, request_hash)
    except Conflict:
        db.session.rollback()  # ends the short transaction: no write lock held while answering
        raise
    # Committed before the view runs: a concurrent request with the key now finds it in use.
    _commit_keeping_loaded_rows()
    if isinstance(outcome, services.StoredResponse):
        return _replay(outcome)
    setattr(g, _RESERVATION, outcome)
    return None


def _commit_keeping_loaded_rows() -> None:
    """Commit without expiring what the request already loaded (its API key and workspace stay usable)."""
    session = db.session()
    previous, session.expire_on_commit = session.expire_on_commit, False
    try:
        session.commit()
    finally:
        session.expire_on_commit = previous


def _replay(stored: services.StoredResponse) -> Response:
    response = current_app.response_class(
        stored.body, status=stored.status, content_type=stored.headers.get("Content-Type")
    )
    response.headers[REPLAYED_HEADER] = "true"
    if stored.headers.get("Original-Request"):
        response.headers[ORIGINAL_REQUEST_HEADER] = stored.headers["Original-Request"]
    if stored.headers.get("Location"):
        response.headers["Location"] = stored.headers["Location"]
    if stored.headers.get("Service-Version"):
        # The stored body is in the first request's version; the response header says so.
        g.api_version = stored.headers["Service-Version"]
    return response


def store_response(response: Response) -> Response:
    """After the view: keep its response for retries (or release the key; see services.finish)."""
    reservation = g.pop(_RESERVATION, None)
    if reservation is None:
        return response
    headers = {
        "Content-Type": response.content_type,
        "Service-Version": g.get("api_version"),
        "Original-Request": g.get("request_id"),
    }
    if response.headers.get("Location"):  # a 202's run to poll
        headers["Location"] = response.headers["Location"]
    try:
        # Whatever the view left uncommitted (an error path) is not part of its answer and goes, as at teardown.
        db.session.rollback()
        services.finish(
            reservation,
            response.status_code,
            headers,
            response.get_data(as_text=True),
            retry_later="Retry-After" in response.headers,
        )
        db.session.commit()
    except Exception:
        # The caller still gets the real answer; a retry then finds the key in use, then lost (never re-run
        # after the view's changes committed).
        db.session.rollback()
        log.exception("Could not store the response of idempotent request %s", g.get("request_id"))
    return response


def _reservation() -> services.Reservation | None:
    return g.get(_RESERVATION) if has_request_context() else None


def _mark_applied(session: Session) -> None:
    reservation = _reservation()
    if reservation is not None and not reservation.applied:
        services.mark_applied(session, reservation)


def _applied(_session: Session) -> None:
    reservation = _reservation()
    if reservation is not None:
        reservation.applied = True


def install_session_hooks() -> None:
    """Mark the reservation `applied` in the same transaction as the view's first commit.

    The hooks listen on the process-wide session, so every app built in a process shares them: each
    `create_app` calls this, and it installs them once."""
    for name, hook in (("before_commit", _mark_applied), ("after_commit", _applied)):
        if not event.contains(db.session, name, hook):
            event.listen(db.session, name, hook)
