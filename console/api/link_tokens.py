"""POST /v1/link_tokens."""

from __future__ import annotations

from flask import g, jsonify

from console.api.conventions import from_console, json_body
from console.core.routes import Routes
from console.extensions import db
from console.link_tokens import services

routes = Routes()


@routes.post("/link_tokens")
def create_link_token():
    created = services.create_link_token(g.api_key, json_body(), by_console=from_console())
    db.session.commit()
    return jsonify({"data": services.serialize(created)})
