"""Event log endpoints: GET /v1/events (filtered, newest first, with delivery status) and resend."""

from __future__ import annotations

from flask import g, jsonify, request

from console.api.conventions import current_workspace, json_body
from console.api.pagination import paginate
from console.core.bodies import RequestModel, text, validate
from console.core.routes import Routes
from console.db.snapshot import read_snapshot
from console.events import queries
from console.events.models import Event
from console.extensions import db

routes = Routes()


@routes.get("/events")
def list_events():
    read_snapshot(db.session)  # the page and its deliveries, one moment
    filters = {name: request.args[name] for name in queries.FILTERS if name in request.args}
    query = queries.list_query(g.workspace.id, g.api_mode, filters)
    page = paginate(query, order_by=[Event.created_at, Event.id], serialize=lambda event: event)
    deliveries = queries.deliveries_by_event([event.id for event in page["data"]])
    page["data"] = [queries.serialize_event(event, deliveries[event.id]) for event in page["data"]]
    return jsonify(page)


class ResendRequest(RequestModel):
    """POST /v1/events/{id}/resend: one webhook, or (no body) every active subscribed one."""

    webhook_id: (
        text(100, description="The webhook to deliver to; by default all that are subscribed.") | None
    ) = None


@routes.post("/events/<event_id>/resend")
def resend_event(event_id: str):
    event = queries.get_event(g.workspace.id, g.api_mode, event_id)
    queries.resend(event, current_workspace(), validate(ResendRequest, json_body()).webhook_id)
    db.session.commit()
    read_snapshot(db.session)  # the answer: the event's deliveries as they are now, one moment
    deliveries = queries.deliveries_by_event([event.id])[event.id]
    return jsonify({"data": queries.serialize_event(event, deliveries)})


@routes.get("/events/<event_id>")
def get_event(event_id: str):
    """One event with every delivery attempt (status, latency, response excerpt, error).

    Read in one snapshot: a delivery's counters and its attempts are separate statements, and a delivery
    committed between them showed attempts its counters denied."""
    read_snapshot(db.session)
    event = queries.get_event(g.workspace.id, g.api_mode, event_id)
    deliveries = queries.deliveries_by_event([event.id])[event.id]
    return jsonify({"data": queries.serialize_event(event, deliveries, with_attempts=True)})
