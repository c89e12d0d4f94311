"""Webhooks: the workspace's registrations (through the API), the built-in inbox, the signature debugger,
and each webhook's endpoint conformance check."""

from __future__ import annotations

import contextlib
import uuid

from flask import abort, g, jsonify, redirect, render_template, request, url_for
from sqlalchemy import select

from console.conformance import runs
from console.conformance import services as conformance
from console.conformance.models import ACTIVE
from console.core.errors import NotFound
from console.core.routes import Routes
from console.events.models import EVENT_TYPES
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import secret_of
from console.modes import SANDBOX
from console.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from console.web.requests import queries as requestlog
from console.web.shared import fielderrors
from console.web.shared.apiclient import response_json
from console.web.shared.blueprint import is_htmx, render_htmx
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import api_client, console_key, has_workspace, may_use_secret
from console.web.webhooks import debugger, inbox
from console.web.webhooks import endpoint_stats as endpoint
from console.web.webhooks import queries as webhooklist
from console.web.webhooks.endpoint import debugger_form, step_of
from console.webhooks.models import Webhook
from console.workspaces.models import Workspace

routes = Routes()


def _context(
    verdict=None, debug_form: dict | None = None, own_form: dict | None = None, own_errors=None
) -> dict:
    workspace = g.console_workspace
    row = requestlog.latest(workspace.id, "webhook")
    page = inbox.page(workspace.id, cursor=request.args.get("cursor"))
    key = console_key(workspace)
    return {
        "webhooks": webhooklist.list_webhooks(workspace.id, SANDBOX),
        "conformance_reports": conformance.latest_by_webhook(workspace.id, SANDBOX)
        if has_workspace()
        else {},
        # The console's key first: it owns what the console registers.
        "quotas": endpoint.quotas(workspace.id, SANDBOX, key),
        "console_key_id": key.id if key is not None else None,
        "predates_prime": endpoint.predates_prime,
        "inbox_behaviour": inbox.behaviour(workspace.id),
        "behaviours": inbox.BEHAVIOURS,
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
        "debug": debug_form or {**debugger_form(None), "ignore_age": False},
        # A refused "Register your own URL": what was typed, and the API's errors on their fields.
        "own_form": own_form,
        "own_errors": own_errors or fielderrors.FieldErrors(),
    }


def _webhooks_fragment(**context) -> str:
    """The page's webhooks section for htmx; when this click made the workspace, the inbox section too (out of
    band): the inbox's URL and its "How the inbox answers" form come with the workspace, and the page around
    the click was drawn without them, so they stayed missing until a reload."""
    html = render_template("console/webhooks/_webhooks.html", **context)
    if g.get("console_workspace_created"):
        html += render_template("console/webhooks/_inbox_section.html", oob=True, **context)
    return html


def _after_change():
    if is_htmx():
        return _webhooks_fragment(**_context())
    return redirect(url_for("console.webhooks"))


@routes.get("/webhooks", endpoint="webhooks")
def webhooks_page():
    return render_htmx("console/webhooks/webhooks.html", "console/webhooks/_webhooks.html", **_context())


@routes.post("/webhooks")
def create_webhook():
    """POST /v1/webhooks with the form's fields, sent as typed so the API's own checks show."""
    body = {
        "url": request.form.get("url", "").strip(),
        "status": request.form.get("status", "active"),
        "enabled_events": request.form.getlist("enabled_events"),
        "version": request.form.get("version", ""),
    }
    row = api_client(g.console_workspace).call("POST", "/webhooks", body=body, step="webhook")
    if row.status == 200:
        return _after_change()
    # Refused: the form comes back open, as typed, with the API's field errors beside the fields.
    errors = fielderrors.place(fielderrors.of_response(row), fielderrors.webhook_inputs("wh2"))
    body["refusal"] = fielderrors.message_of(row)
    context = _context(own_form=body, own_errors=errors)
    if is_htmx():
        return _webhooks_fragment(**context)
    return render_template("console/webhooks/webhooks.html", **context)


@routes.post("/webhooks/inbox")
def register_inbox():
    inbox.register(api_client(g.console_workspace), g.console_workspace)
    return _after_change()


def _webhook_id(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        abort(404)


@routes.post("/webhooks/<webhook_id>/delete")
def delete_webhook(webhook_id: str):
    path = f"/webhooks/{_webhook_id(webhook_id)}"
    api_client(g.console_workspace).call("DELETE", path, step="webhook")
    return _after_change()


@routes.post("/webhooks/<webhook_id>/status")
def set_webhook_status(webhook_id: str):
    """Pause or reactivate through PUT /v1/webhooks/{id} (from the list, or from the endpoint page)."""
    status = "paused" if request.form.get("status") == "paused" else "active"
    ident = _webhook_id(webhook_id)
    from_endpoint = request.form.get("back") == "endpoint"
    step = step_of(ident) if from_endpoint else "webhook"
    api_client(g.console_workspace).call("PUT", f"/webhooks/{ident}", body={"status": status}, step=step)
    if from_endpoint:
        return redirect(url_for("console.webhook_endpoint", webhook_id=ident))
    return _after_change()


def _latest_run(webhook: Webhook | None) -> dict | None:
    """The webhook's latest conformance run (as the API shows it), or None before the first."""
    if webhook is None:
        return None
    with contextlib.suppress(NotFound):
        return runs.serialize(runs.get(webhook))
    return None


def _conformance_context(webhook_id: str, exchange_row=None) -> dict:
    """The conformance section: the webhook (None once deleted), its latest run and latest finished report,
    the API call just made."""
    workspace = g.console_workspace
    ident = uuid.UUID(webhook_id)
    webhook = next((w for w in webhooklist.list_webhooks(workspace.id, SANDBOX) if w.id == ident), None)
    report = conformance.latest_by_webhook(workspace.id, SANDBOX).get(ident) if webhook else None
    run = _latest_run(webhook)
    error = None
    if exchange_row is not None and exchange_row.status not in (200, 202):
        body = response_json(exchange_row) or {}
        error = (body.get("error") or {}).get("message") or f"The API answered {exchange_row.status}."
    return {
        "webhook": webhook,
        "webhook_id": webhook_id,
        "report": report,
        "run": run,
        "active": run is not None and run["status"] in ACTIVE,
        "error": error,
        "is_inbox_url": lambda url: inbox.is_inbox_url(workspace, url),
        "exchange": exchange_view(exchange_row, console_key(workspace)) if exchange_row is not None else None,
    }


@routes.get("/webhooks/<webhook_id>/conformance")
def conformance_report(webhook_id: str):
    """The webhook's latest conformance report, with a button to run it (again)."""
    context = _conformance_context(_webhook_id(webhook_id))
    if context["webhook"] is None:
        abort(404)
    return render_htmx("console/webhooks/conformance.html", "console/webhooks/_conformance.html", **context)


@routes.post("/webhooks/<webhook_id>/conformance")
def run_conformance(webhook_id: str):
    """POST /v1/sandbox/webhooks/{id}/conformance through the API (it shows in the request log): the API
    queues a run and answers at once; the section then shows it running and polls until its report is there."""
    webhook_id = _webhook_id(webhook_id)
    path = f"/sandbox/webhooks/{webhook_id}/conformance"
    row = api_client(g.console_workspace).call("POST", path, step="conformance")
    if is_htmx():
        # oob: the webhook's badge in the table above is updated with the same answer.
        return render_template(
            "console/webhooks/_conformance.html", oob=True, **_conformance_context(webhook_id, row)
        )
    return redirect(url_for("console.conformance_report", webhook_id=webhook_id))


@routes.get("/webhooks/<webhook_id>/conformance/poll")
def conformance_poll(webhook_id: str):
    """The section's poll while a run is queued or running: 204 while the latest run is still the one
    (`run`) in the state (`status`) the section was drawn with, the section redrawn once it changed."""
    context = _conformance_context(_webhook_id(webhook_id))
    if context["webhook"] is None:
        abort(404)
    run = context["run"]
    if (
        run is not None
        and run["id"] == request.args.get("run")
        and run["status"] == request.args.get("status")
    ):
        return "", 204
    return render_template("console/webhooks/_conformance.html", oob=True, **context)


@routes.get("/inbox/rows")
def inbox_rows():
    """Messages newer than `after`, for the live poll (204 when there are none)."""
    workspace = g.console_workspace
    after = request.args.get("after")
    messages = inbox.newer(workspace.id, after)
    if not messages:
        return "", 204
    return render_template(
        "console/webhooks/_inbox_poll.html",
        messages=messages,
        inbox_cursor=inbox.live_cursor(messages, after),
        compact=request.args.get("compact") == "1",
    )


def _workspace_key(key_id: str | None) -> ApiKey | None:
    """One of the visitor's own keys by id whose secret this browser may use (`may_use_secret`), else None (a
    forged id finds nothing)."""
    try:
        ident = uuid.UUID(str(key_id))
    except ValueError:
        return None
    key = db.session.get(ApiKey, ident)
    return key if may_use_secret(key) else None


def _signing_key(message) -> ApiKey | None:
    """The key that owns the webhook a delivery names (its secret signed it); else the key that verified it."""
    workspace_id = g.console_workspace.id
    webhook = None
    with contextlib.suppress(ValueError):
        webhook = db.session.get(Webhook, uuid.UUID(message.webhook_id or ""))
    if webhook is not None and webhook.workspace_id == workspace_id:
        return _workspace_key(webhook.api_key_id)
    if message.key_last4:  # a webhook deleted since, or a hand-made delivery that verified
        return db.session.scalars(
            select(ApiKey)
            .where(ApiKey.workspace_id == workspace_id, ApiKey.secret_last4 == message.key_last4)
            .order_by(ApiKey.created_at.desc())
        ).first()
    return None


@routes.get("/inbox/messages/<message_id>/debug")
def debug_message(message_id: str):
    """The debugger, filled in with one inbox message and the key whose secret signs its webhook."""
    message = inbox.get(g.console_workspace.id, message_id)
    if message is None:
        abort(404)
    headers = "\n".join(f"{k}: {v}" for k, v in message.headers.items())
    form = debugger_form(_signing_key(message), headers, message.body)
    return render_htmx(
        "console/webhooks/webhooks.html", "console/webhooks/_debugger.html", **_context(debug_form=form)
    )


@routes.post("/webhooks/debugger")
def run_debugger():
    """Verify with the pasted secret, or (none pasted) with the secret of the attached key."""
    key = _workspace_key(request.form.get("key_id"))
    form = debugger_form(key, request.form.get("headers", ""), request.form.get("body", ""))
    pasted = request.form.get("secret", "")
    form["ignore_age"] = bool(request.form.get("ignore_age"))
    secret = pasted or (secret_of(key) if key is not None else "")
    verdict = debugger.check(secret, form["headers"], form["body"], ignore_age=form["ignore_age"])
    # The pasted secret is never written back into the page (its field comes back empty): the verdict names
    # it by its last four characters only. It was echoed as the field's value, a secret in the HTML.
    form["pasted_last4"] = debugger.last4(pasted) if pasted else None
    return render_htmx(
        "console/webhooks/webhooks.html", "console/webhooks/_debugger.html", **_context(verdict, form)
    )


@routes.post("/inbox/<token>", no_workspace=True)
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
