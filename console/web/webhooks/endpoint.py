"""A webhook's endpoint page: attempts, success rate, test event, replay since, pause, replacement, debugger.

Every change goes through the API (`api_client`), so the page shows the exchange it made, as the
rest of the console does. The inbox's answer mode is the console's own setting (no API behind it).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flask import abort, flash, g, redirect, render_template, request, url_for

from console.clock.services import now
from console.core.errors import NotFound, ValidationFailed
from console.core.routes import Routes
from console.events.models import EVENT_TYPES
from console.extensions import db
from console.modes import SANDBOX
from console.web.requests import queries as requestlog
from console.web.shared import fielderrors
from console.web.shared.apiclient import response_json
from console.web.shared.blueprint import is_htmx
from console.web.shared.exchanges import masked_secret
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import api_client, console_key, has_workspace
from console.web.webhooks import endpoint_stats as endpoint
from console.web.webhooks import inbox
from console.webhooks import services as webhooks

routes = Routes()


def step_of(webhook_id) -> str:
    """The request log step of one endpoint page's calls, so each page shows its own last call."""
    return f"endpoint:{webhook_id}"


DATETIME_LOCAL = "%Y-%m-%dT%H:%M"


def _webhook(webhook_id: str):
    try:
        return webhooks.get_webhook(g.console_workspace.id, SANDBOX, webhook_id)
    except NotFound:
        abort(404)


def debugger_form(key, headers: str = "", body: str = "") -> dict:
    """The debugger's fields with the signing key attached: its secret is used unless one is pasted."""
    return {
        "pasted_last4": None,  # a pasted secret is named by its last four, never written back
        "headers": headers,
        "body": body,
        "ignore_age": True,
        "key": key,
        "masked": masked_secret(key) if key is not None else None,
    }


def _debug_latest(webhook, key, is_inbox: bool) -> dict:
    """The debugger with the signing key, filled in with the webhook's newest inbox message if any."""
    message = inbox.latest_for_webhook(g.console_workspace.id, webhook.id) if is_inbox else None
    if message is None:
        return debugger_form(key)
    headers = "\n".join(f"{k}: {v}" for k, v in message.headers.items())
    return debugger_form(key, headers, message.body)


def _context(webhook, verdict=None, debug_form: dict | None = None) -> dict:
    workspace = g.console_workspace
    at = now(workspace)
    attempts = endpoint.recent_attempts(webhook.id, endpoint.RECENT_ATTEMPTS)
    key = endpoint.owner_key(webhook)
    row = requestlog.latest(workspace.id, step_of(webhook.id)) if has_workspace() else None
    is_inbox = inbox.is_inbox_url(workspace, webhook.url)
    return {
        "webhook": webhook,
        "now": at,
        "attempts": attempts,
        "attempts_shown_max": endpoint.RECENT_ATTEMPTS,
        "bars": endpoint.chart(attempts),
        "chart_width": endpoint.CHART_WIDTH,
        "chart_height": endpoint.CHART_HEIGHT,
        "rates": endpoint.success_rates(webhook.id, at),
        "failed_count": endpoint.failed_count(webhook.id),
        "replay_since": (at - timedelta(hours=1)).strftime(DATETIME_LOCAL),
        "key": key,
        "quota": endpoint.quota(key) if key is not None else None,
        "predates_prime": endpoint.predates_prime(webhook),
        "latest_version": endpoint.LATEST_VERSION,
        "event_types": EVENT_TYPES,
        "is_inbox": is_inbox,
        "inbox_behaviour": inbox.behaviour(workspace.id),
        "behaviours": inbox.BEHAVIOURS,
        "exchange": exchange_view(row, console_key(workspace)) if row is not None else None,
        "verdict": verdict,
        "debug": debug_form or _debug_latest(webhook, key, is_inbox),
    }


def _back(webhook_id) -> str:
    return url_for("console.webhook_endpoint", webhook_id=webhook_id)


@routes.get("/webhooks/<webhook_id>", endpoint="webhook_endpoint")
def endpoint_page(webhook_id: str):
    return render_template("console/webhooks/endpoint.html", **_context(_webhook(webhook_id)))


@routes.post("/webhooks/<webhook_id>/test")
def send_test(webhook_id: str):
    """POST /v1/sandbox/webhooks/{id}/test: one sample event, to this webhook only."""
    webhook = _webhook(webhook_id)
    chosen = request.form.get("event") or None
    body = {"event": chosen} if chosen else {}
    path = f"/sandbox/webhooks/{webhook.id}/test"
    row = api_client(g.console_workspace).call("POST", path, body=body, step=step_of(webhook.id))
    _say(row, f"Test event {chosen or 'account.added'} sent: its attempt appears under Attempts below.")
    return redirect(_back(webhook.id))


def _say(row, done: str) -> None:
    """What an action's API call came to, at the top of the page it redirects to (the page reloaded at its
    top with nothing changed in view: the call's exchange is at the bottom)."""
    if row.status < 300:
        flash(done)
        return
    flash(f"The API answered {row.status}: {fielderrors.message_of(row)}", "error")


def since_of(value: str) -> str:
    """A `datetime-local` value (workspace clock, no zone) as the API's ISO 8601; other text as typed."""
    try:
        moment = datetime.strptime(value.strip(), DATETIME_LOCAL).replace(tzinfo=UTC)
    except ValueError:
        return value.strip()  # the API names what is wrong with it, on the page
    return moment.isoformat().replace("+00:00", "Z")


@routes.post("/webhooks/<webhook_id>/replay")
def replay(webhook_id: str):
    """POST /v1/webhooks/{id}/replay with the chosen moment."""
    webhook = _webhook(webhook_id)
    body = {"since": since_of(request.form.get("since", ""))}
    path = f"/webhooks/{webhook.id}/replay"
    row = api_client(g.console_workspace).call("POST", path, body=body, step=step_of(webhook.id))
    data = (response_json(row) or {}).get("data")
    replayed = data.get("replayed") if isinstance(data, dict) else None
    _say(
        row,
        f"Replay: {replayed} failed deliveries queued again."
        if replayed
        else "Replay: no failed delivery to replay since then.",
    )
    return redirect(_back(webhook.id))


@routes.post("/webhooks/<webhook_id>/replace")
def replace(webhook_id: str):
    """Create the same webhook on the latest version, then delete this one (only if the creation worked).

    Deleted rather than paused: a paused copy would still take one of the key's 10 places, and the
    event log keeps the old webhook's deliveries either way.
    """
    webhook = _webhook(webhook_id)
    client = api_client(g.console_workspace)
    body = endpoint.replacement_body(webhook)
    created = client.call("POST", "/webhooks", body=body, step=step_of(webhook.id))
    if created.status != 200:  # e.g. the key's 10 are used: the old one stays, the page shows why
        return redirect(_back(webhook.id))
    new_id = response_json(created)["data"]["id"]
    # Logged on the new webhook's page, which the visitor lands on: it shows the old one went.
    client.call("DELETE", f"/webhooks/{webhook.id}", step=step_of(new_id))
    return redirect(_back(new_id))


@routes.post("/inbox/behaviour")
def set_inbox_behaviour():
    """How the built-in inbox answers from now on (500, slow, timeout, or 200 at once)."""
    workspace = g.console_workspace
    try:
        inbox.set_behaviour(workspace.id, request.form.get("behaviour"))
    except ValidationFailed:
        db.session.rollback()
        raise  # a tampered value: the error page names the choices
    db.session.commit()
    webhook_id = request.form.get("webhook_id")
    if is_htmx():
        return render_template(
            "console/webhooks/_inbox_behaviour.html",
            inbox_behaviour=inbox.behaviour(workspace.id),
            behaviours=inbox.BEHAVIOURS,
            webhook_id=webhook_id,
        )
    if webhook_id:
        return redirect(_back(_webhook(webhook_id).id) + "#inbox-behaviour")
    return redirect(url_for("console.webhooks") + "#inbox")
