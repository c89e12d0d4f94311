"""Webhook endpoints: /v1/webhooks (create, list, get, update, delete), the sandbox test event and
the sandbox endpoint conformance check."""

from __future__ import annotations

from flask import current_app, g, jsonify, request

from console.api.conventions import current_key, current_workspace, json_body, no_content, sandbox_only
from console.api.pagination import paginate
from console.conformance import runs
from console.core.bodies import RequestModel, moment, one_of, validate
from console.core.errors import FieldError
from console.core.routes import Routes
from console.core.timeutil import isoformat
from console.events import queries
from console.events.models import EVENT_TYPES
from console.extensions import db
from console.webhooks import services
from console.webhooks.models import Webhook

routes = Routes()


def _webhook(webhook_id: str) -> Webhook:
    return services.get_webhook(g.workspace.id, g.api_mode, webhook_id)


@routes.post("/webhooks")
def create_webhook():
    webhook = services.create_webhook(current_key(), json_body())
    response = {"data": services.serialize(webhook)}  # before the commit expires (and would reload) it
    db.session.commit()
    return jsonify(response)


@routes.get("/webhooks")
def list_webhooks():
    query = services.list_query(g.workspace.id, g.api_mode)
    return jsonify(paginate(query, order_by=[Webhook.created_at, Webhook.id], serialize=services.serialize))


@routes.get("/webhooks/<webhook_id>")
def get_webhook(webhook_id: str):
    return jsonify({"data": services.serialize(_webhook(webhook_id))})


@routes.put("/webhooks/<webhook_id>")
def update_webhook(webhook_id: str):
    body = json_body()
    webhook = services.update_webhook(_webhook(webhook_id), current_workspace(), body)
    response = {"data": services.serialize(webhook)}  # before the commit expires (and would reload) it
    db.session.commit()
    return jsonify(response)


@routes.delete("/webhooks/<webhook_id>")
def delete_webhook(webhook_id: str):
    services.delete_webhook(_webhook(webhook_id), current_workspace())
    db.session.commit()
    return no_content()


class TestEventRequest(RequestModel):
    """POST /v1/sandbox/webhooks/{id}/test."""

    event: one_of(EVENT_TYPES, description="Defaults to the webhook's first enabled event.") | None = None


def _unknown_event_message(fields: list[FieldError]) -> str | None:
    if any(f.name == "event" for f in fields):
        return f"Unknown event. Valid event names: {', '.join(EVENT_TYPES)}."
    return None


@routes.post("/sandbox/webhooks/<webhook_id>/test")
@sandbox_only
def send_test_event(webhook_id: str):
    request = validate(TestEventRequest, json_body(), message=_unknown_event_message)
    event, delivery = queries.send_test_event(_webhook(webhook_id), current_workspace(), request.event)
    db.session.commit()
    return jsonify({"data": queries.serialize_event(event, [delivery])})


class ConformanceRequest(RequestModel):
    """POST /v1/sandbox/webhooks/{id}/conformance: no fields (the suite is the same for every webhook)."""


@routes.post("/sandbox/webhooks/<webhook_id>/conformance")
@sandbox_only
def run_conformance(webhook_id: str):
    """Queue a conformance run of the webhook (even a paused one); the worker executes it. Answers at once:
    202 with the run (poll GET .../conformance/{run_id}), 409 / 429 with Retry-After past the limits."""
    validate(ConformanceRequest, json_body())
    run = runs.start(current_app._get_current_object(), _webhook(webhook_id))
    response = {"data": runs.serialize(run)}  # before the commit expires (and would reload) it
    db.session.commit()
    # Where to poll, as HTTP says for a 202 (the same URL the docs build from the run's id).
    return jsonify(response), 202, {"Location": f"{request.path}/{run.id}"}


@routes.get("/sandbox/webhooks/<webhook_id>/conformance")
@sandbox_only
def latest_conformance(webhook_id: str):
    """The webhook's latest conformance run, with its report once done (404 before the first run)."""
    return jsonify({"data": runs.serialize(runs.get(_webhook(webhook_id)))})


@routes.get("/sandbox/webhooks/<webhook_id>/conformance/<run_id>")
@sandbox_only
def conformance_run(webhook_id: str, run_id: str):
    """One conformance run of the webhook (404 for an unknown run or another webhook's)."""
    return jsonify({"data": runs.serialize(runs.get(_webhook(webhook_id), run_id))})


class ReplayRequest(RequestModel):
    """POST /v1/webhooks/{id}/replay: resend every failed delivery of events since a moment."""

    since: moment(description="Events at or after this moment (workspace clock; no offset means UTC).")


@routes.post("/webhooks/<webhook_id>/replay")
def replay_failed(webhook_id: str):
    webhook = _webhook(webhook_id)
    since = validate(ReplayRequest, json_body()).since
    replayed = services.replay_failed(webhook, current_workspace(), since)
    db.session.commit()
    return jsonify({"data": {"webhook_id": str(webhook.id), "since": isoformat(since), "replayed": replayed}})
