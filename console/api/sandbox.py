"""Sandbox tools: the test data table and headless Link completion (sandbox only)."""

from __future__ import annotations

from typing import Any

from flask import g, jsonify
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm.exc import StaleDataError

from console.api.conventions import json_body, sandbox_only
from console.core.errors import Conflict
from console.core.routes import Routes
from console.core.timeutil import isoformat
from console.extensions import db
from console.jobs.models import Job
from console.link import headless
from console.link.flow import Flow, LinkError
from console.link.sandbox_data import sandbox_test_data
from console.link_tokens.models import LinkToken
from console.link_tokens.services import get_link_token

routes = Routes()


@routes.get("/sandbox/test_data")
@sandbox_only
def sandbox_test_data_view():
    """The credentials, MFA codes, identities and SSNs that drive each sandbox scenario."""
    return jsonify({"data": sandbox_test_data()})


# Completions of one token racing one another (a CI's retry of a call that timed out, sent without an
# Idempotency-Key, or parallel jobs sharing a token): each loser runs again on what the winner committed.
RACE_ATTEMPTS = 3


def _complete(link_token: LinkToken, body: Any) -> tuple[Flow, list[dict[str, Any]]]:
    """`headless.complete`, run again when another request completing the same token changed its flow first:
    both started it (the session row's unique token id) or stepped it (its version). The rerun sees where
    the flow now stands, as Link's own pages do (console.link.views), so the loser gets the answer a later
    call would (LINK_TOKEN_ALREADY_USED once the winner finished), not a 500."""
    for _ in range(RACE_ATTEMPTS - 1):
        try:
            return headless.complete(link_token, body)
        except (IntegrityError, StaleDataError):
            db.session.rollback()
    try:
        return headless.complete(link_token, body)
    except (IntegrityError, StaleDataError):
        db.session.rollback()
        raise Conflict(
            "Another request is completing this Link token right now; retry in a moment."
        ) from None


@routes.post("/sandbox/link_tokens/<link_token_id>/complete")
@sandbox_only
def complete_link_token(link_token_id: str):
    """Run the token's Link flow without a browser: same steps, same account, job and events."""
    link_token = get_link_token(g.workspace.id, g.api_mode, link_token_id)
    body = json_body()
    try:
        flow, events = _complete(link_token, body)
    except LinkError:
        # Keep what Link would have kept (attempts, a terminal state, erased matching data).
        db.session.commit()
        raise
    db.session.commit()
    row = flow.row
    job = db.session.get(Job, row.job_id) if row.job_id else None
    return jsonify(
        {
            "data": {
                "link_token_id": str(link_token.id),
                "account_id": str(row.account_id) if row.account_id else None,
                "job_id": str(row.job_id) if row.job_id else None,
                "outcome": job.outcome if job else None,
                "platform_id": str(row.platform_id) if row.platform_id else None,
                "state": row.state,
                "via_platform_matching": row.via_platform_matching,
                "completed_at": isoformat(row.completed_at),
                "client_events": events,
            }
        }
    )
