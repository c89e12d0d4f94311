"""The relay for sandbox webhooks (`console listen`): open a listener, poll for deliveries, report answers.

Every call answers at once: a listener polls about once a second when idle, so a room of them never
holds the serving threads (console/webhooks/relay.py).
"""

from __future__ import annotations

from flask import g, jsonify
from sqlalchemy.orm.exc import StaleDataError

from console.api.conventions import current_key, json_body, sandbox_only
from console.core.bodies import RequestModel, integer, validate
from console.core.errors import NotFound
from console.core.routes import Routes
from console.extensions import db
from console.webhooks import relay

routes = Routes()


class PollRequest(RequestModel):
    """POST /v1/sandbox/listen/{id}/poll."""

    limit: (
        integer(1, relay.MAX_BATCH, description=f"At most this many (default {relay.MAX_BATCH}).") | None
    ) = None


@routes.post("/sandbox/listen")
@sandbox_only
def open_listener():
    webhook, created = relay.open_listener(current_key(), json_body())
    db.session.commit()
    return jsonify({"data": {**relay.describe(webhook), "created": created}})


@routes.post("/sandbox/listen/<webhook_id>/poll")
@sandbox_only
def poll_listener(webhook_id: str):
    request = validate(PollRequest, json_body())
    webhook = relay.get_listener(g.workspace.id, g.api_mode, webhook_id)
    try:
        items = relay.poll(webhook, request.limit or relay.MAX_BATCH)
        db.session.commit()
    except StaleDataError:
        # The webhook went while this poll ran (its workspace deleted, e.g. with a training class): a 404 as
        # for any poll of a webhook that is gone, not a 500 (the listener then opens a new one, or stops).
        db.session.rollback()
        raise NotFound(
            f"Webhook {webhook_id} was deleted; create a listener with POST /v1/sandbox/listen."
        ) from None
    return jsonify(
        {"data": {"requests": items, "webhook": {"id": str(webhook.id), "status": webhook.status}}}
    )


@routes.post("/sandbox/listen/<webhook_id>/deliveries/<attempt_id>/result")
@sandbox_only
def report_listener_result(webhook_id: str, attempt_id: str):
    body = json_body()
    webhook = relay.get_listener(g.workspace.id, g.api_mode, webhook_id)
    recorded = relay.report(webhook, attempt_id, body)
    db.session.commit()
    return jsonify({"data": recorded})
