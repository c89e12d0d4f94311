"""`GET /healthz`: no key, no rate limit, outside `/v1`; 200 while the database answers, else 503."""

from __future__ import annotations

import os

from flask import Blueprint, Flask, current_app, jsonify

from console.health.services import DatabaseProbe

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    database, worker = current_app.extensions["database_probe"].check()
    # The API's limiter (console.api.ratelimit), set up by create_app; read here without importing the API.
    rate_limits = current_app.extensions["ratelimiter"].health()
    if not database["ok"]:
        status = "down"
    elif worker and worker["ok"] and not rate_limits["fallback"]:
        status = "ok"
    else:
        status = "degraded"  # still serving: a stale worker delays scheduled work, a fallback loosens limits
    body = {
        "status": status,
        "pid": os.getpid(),  # the serving process that answered
        "database": database,
        "rate_limits": rate_limits,
        "worker": worker or {"ok": None, "note": "unknown: the database is not usable (see database)"},
    }
    response = jsonify(body)
    response.status_code = 200 if database["ok"] else 503
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    app.extensions["database_probe"] = DatabaseProbe(app)
    app.register_blueprint(bp)
