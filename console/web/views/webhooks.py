"""Webhooks: the workspace's registrations (through the API), the built-in inbox, the signature debugger."""

from __future__ import annotations

import uuid

from flask import abort, g, jsonify, redirect, render_template, request, url_for

from console.api.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from console.events.services import EVENT_TYPES
from console.extensions import db
from console.modes import SANDBOX
from console.web import debugger, inbox, requestlog, webhooklist
from console.web.blueprint import bp, is_htmx, render_htmx
from console.web.exchanges import view as exchange_view
from console.web.workspace_session import api_client, console_key, has_workspace
from console.workspaces.models import Workspace


def _context(verdict=None, debug_form: dict | None = None) -> dict:
    workspace = g.console_workspace
    row = requestlog.latest(workspace.id, "webhook")
    page = inbox.page(workspace.id, cursor=request.args.get("cursor"))
    return {
        "webhooks": webhooklist.list_webhooks(workspace.id, SANDBOX),
        # A blank workspace (no action yet) has no inbox: its URL is made with the workspace.
        "inbox_url": inbox.inbox_url(workspace) if has_workspace() else None,
        "is_inbox_url": lambda url: inbox.is_inbox_url(workspace, url),
        "inbox_registered": inbox.is_registered(workspace),
        "inbox_page": page,
        "inbox_cursor": inbox.live_cursor(page.rows),
        "event_types": EVENT_TYPES,
        "versions": SUPPORTED_VERSIONS,
        "latest_version": LATEST_VERSION,
        "exchange": exchange_view(row, console_key(workspace)) if row is not None else None,
        "verdict": verdict,
        "debug": debug_form or {"secret": "", "headers": "", "body": "", "ignore_age": False},
    }


def _after_change():
    if is_htmx():
        return render_template("console/_webhooks.html", **_context())
    return redirect(url_for("console.webhooks"))


@bp.get("/webhooks", endpoint="webhooks")
def webhooks_page():
    return render_htmx("console/webhooks.html", "console/_webhooks.html", **_context())


@bp.post("/webhooks")
def create_webhook():
    """POST /v1/webhooks with the form's fields, sent as typed so the API's own checks show."""
    body = {
        "url": request.form.get("url", "").strip(),
        "status": request.form.get("status", "active"),
        "enabled_events": request.form.getlist("enabled_events"),
        "version": request.form.get("version", ""),
    }
    api_client(g.console_workspace).call("POST", "/webhooks", body=body, step="webhook")
    return _after_change()


@bp.post("/webhooks/inbox")
def register_inbox():
    inbox.register(api_client(g.console_workspace), g.console_workspace)
    return _after_change()


def _webhook_id(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        abort(404)


@bp.post("/webhooks/<webhook_id>/delete")
def delete_webhook(webhook_id: str):
    path = f"/webhooks/{_webhook_id(webhook_id)}"
    api_client(g.console_workspace).call("DELETE", path, step="webhook")
    return _after_change()


@bp.post("/webhooks/<webhook_id>/status")
def set_webhook_status(webhook_id: str):
    """Pause or reactivate through PUT /v1/webhooks/{id}."""
    status = "paused" if request.form.get("status") == "paused" else "active"
    path = f"/webhooks/{_webhook_id(webhook_id)}"
    api_client(g.console_workspace).call("PUT", path, body={"status": status}, step="webhook")
    return _after_change()


@bp.get("/inbox/rows")
def inbox_rows():
    """Messages newer than `after`, for the live poll (204 when there are none)."""
    workspace = g.console_workspace
    after = request.args.get("after")
    messages = inbox.newer(workspace.id, after)
    if not messages:
        return "", 204
    return render_template(
        "console/_inbox_poll.html",
        messages=messages,
        inbox_cursor=inbox.live_cursor(messages, after),
        compact=request.args.get("compact") == "1",
    )


@bp.get("/inbox/messages/<message_id>/debug")
def debug_message(message_id: str):
    """The debugger, filled in with one inbox message (the secret is left for the person to paste)."""
    message = inbox.get(g.console_workspace.id, message_id)
    if message is None:
        abort(404)
    headers = "\n".join(f"{k}: {v}" for k, v in message.headers.items())
    form = {"secret": "", "headers": headers, "body": message.body, "ignore_age": True}
    return render_htmx("console/webhooks.html", "console/_debugger.html", **_context(debug_form=form))


@bp.post("/webhooks/debugger")
def run_debugger():
    form = {
        "secret": request.form.get("secret", ""),
        "headers": request.form.get("headers", ""),
        "body": request.form.get("body", ""),
        "ignore_age": bool(request.form.get("ignore_age")),
    }
    verdict = debugger.check(form["secret"], form["headers"], form["body"], ignore_age=form["ignore_age"])
    return render_htmx("console/webhooks.html", "console/_debugger.html", **_context(verdict, form))


@bp.post("/inbox/<token>")
def inbox_receive(token: str):
    """The built-in receiver. CSRF-exempt: the webhook worker calls it, and it authenticates by signature."""
    workspace_id = inbox.workspace_id_of(token)
    workspace = db.session.get(Workspace, workspace_id) if workspace_id else None
    if workspace is None:
        return jsonify({"error": "unknown inbox"}), 404
    message = inbox.receive(workspace, request.headers, request.get_data(cache=False))
    db.session.commit()
    status, body, headers = inbox.answer(message)
    return jsonify(body), status, headers
