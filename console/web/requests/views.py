"""The request log: every API call of the workspace, live, with each exchange as curl and Python."""

from __future__ import annotations

from flask import abort, g, render_template, request

from console.core.routes import Routes
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import list_keys, secret_of
from console.web.requests import queries as requestlog
from console.web.shared.blueprint import render_htmx
from console.web.shared.exchanges import masked_secret
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import may_use_secret

routes = Routes()


def _own_request(request_id: str):
    row = requestlog.get(g.console_workspace.id, request_id)
    if row is None:
        abort(404)
    return row


def _key_of(row) -> ApiKey | None:
    return db.session.get(ApiKey, row.api_key_id) if row.api_key_id else None


@routes.get("/requests", endpoint="requests")
def requests_page():
    workspace_id = g.console_workspace.id
    filters = requestlog.Filters.from_args(request.args)
    found = requestlog.page(workspace_id, cursor=request.args.get("cursor"), filters=filters)
    hidden_listener = requestlog.hidden_listener_requests(workspace_id, filters)
    keys = list_keys(workspace_id)
    return render_htmx(
        "console/requests/requests.html",
        "console/requests/_request_rows.html",
        rows=found.rows,
        next_cursor=found.next_cursor,
        filters=filters,
        status_classes=requestlog.STATUS_CLASSES,
        keys=keys,
        key_names={k.id: masked_secret(k) for k in keys},
        unlogged=requestlog.unlogged(workspace_id),
        live_cursor=requestlog.live_cursor(found.rows),
        hidden_listener=hidden_listener,
    )


@routes.get("/requests/live")
def request_rows_live():
    """Exchanges newer than `after`, for the live poll, and the count of hidden listener requests when it is no
    longer the `hidden` the page shows (204 when neither changed)."""
    after = request.args.get("after")
    filters = requestlog.Filters.from_args(request.args)
    rows = requestlog.newer(g.console_workspace.id, after, filters)
    hidden_listener = requestlog.hidden_listener_requests(g.console_workspace.id, filters)
    if not rows and str(hidden_listener) == request.args.get("hidden", "0"):
        return "", 204
    return render_template(
        "console/requests/_request_poll.html",
        rows=rows,
        live_cursor=requestlog.live_cursor(rows, after),
        filters=filters,
        hidden_listener=hidden_listener,
    )


@routes.get("/requests/<request_id>")
def request_detail(request_id: str):
    row = _own_request(request_id)
    return render_htmx(
        "console/requests/request.html",
        "console/shared/_exchange.html",
        exchange=exchange_view(row, _key_of(row)),
    )


@routes.post("/requests/<request_id>/reveal")
def reveal_request(request_id: str):
    """The exchange with the real secret in headers, curl and Python: only on an explicit POST."""
    row = _own_request(request_id)
    key = _key_of(row)
    if key is not None and not may_use_secret(key):
        abort(404)  # another key's call, in a workspace this browser opened with a secret
    secret = secret_of(key) if key is not None else None
    return render_template("console/shared/_exchange.html", exchange=exchange_view(row, key, secret))


@routes.post("/requests/<request_id>/hide")
def hide_request(request_id: str):
    row = _own_request(request_id)
    return render_template("console/shared/_exchange.html", exchange=exchange_view(row, _key_of(row)))
