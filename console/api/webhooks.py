"""Webhook endpoints: /v1/webhooks (create, list, get, update, delete) and the sandbox test event."""

from __future__ import annotations

from flask import g, jsonify

from console.api import api
from console.api.conventions import json_body, sandbox_only
from console.api.pagination import paginate
from console.events import queries
from console.extensions import db
from console.webhooks import services
from console.webhooks.models import Webhook


def _webhook(webhook_id: str) -> Webhook:
    return services.get_webhook(g.workspace.id, g.api_mode, webhook_id)


@api.post("/webhooks")
def create_webhook():
    webhook = services.create_webhook(g.api_key, json_body())
    response = {"data": services.serialize(webhook)}  # before the commit expires (and would reload) it
    db.session.commit()
    return jsonify(response)


@api.get("/webhooks")
def list_webhooks():
    query = services.list_query(g.workspace.id, g.api_mode)
    return jsonify(paginate(query, order_by=[Webhook.created_at, Webhook.id], serialize=services.serialize))


@api.get("/webhooks/<webhook_id>")
def get_webhook(webhook_id: str):
    return jsonify({"data": services.serialize(_webhook(webhook_id))})


@api.put("/webhooks/<webhook_id>")
def update_webhook(webhook_id: str):
    body = json_body()
    webhook = services.update_webhook(_webhook(webhook_id), g.workspace, body)
    response = {"data": services.serialize(webhook)}  # before the commit expires (and would reload) it
    db.session.commit()
    return jsonify(response)


@api.delete("/webhooks/<webhook_id>")
def delete_webhook(webhook_id: str):
    services.delete_webhook(_webhook(webhook_id), g.workspace)
    db.session.commit()
    return "", 204


@api.post("/sandbox/webhooks/<webhook_id>/test")
@sandbox_only
def send_test_event(webhook_id: str):
    body = json_body()
    event, delivery = queries.send_test_event(_webhook(webhook_id), g.workspace, body.get("event"))
    db.session.commit()
    return jsonify({"data": queries.serialize_event(event, [delivery])})
