"""The guided walkthrough: key, webhook, Link token, Link, inbox, jobs; each action is a real API call."""

from __future__ import annotations

from flask import g, redirect, render_template, request, url_for

from console.api.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from console.events.services import EVENT_TYPES
from console.extensions import db
from console.modes import SANDBOX, base_url
from console.web import inbox, linkform, linktokens, requestlog, walkthrough, webhooklist
from console.web.apiclient import api_root, response_json
from console.web.blueprint import bp, is_htmx, render_htmx
from console.web.exchanges import masked_secret
from console.web.exchanges import view as exchange_view
from console.web.workspace_session import api_client, console_key, has_workspace

STEP_PARTIALS = {
    "key": "console/_step_key.html",
    "webhook": "console/_step_webhook.html",
    "link_token": "console/_step_link_token.html",
    "link": "console/_step_link.html",
    "inbox": "console/_step_inbox.html",
    "jobs": "console/_step_jobs.html",
}


def _exchange(step: str, key):
    row = requestlog.latest(g.console_workspace.id, step)
    return exchange_view(row, key) if row is not None else None


def context(form_values: dict | None = None, preset: str = "standard", jobs_link_token_id: str = "") -> dict:
    """Everything the walkthrough's steps show, from the database and this session."""
    workspace = g.console_workspace
    steps = walkthrough.checklist(workspace)
    key = console_key(workspace)
    link_token_id, link_token = linktokens.newest(workspace.id) or (None, None)
    jobs_exchange = _exchange(walkthrough.JOBS_STEP, key)
    inbox_page = inbox.page(workspace.id, limit=10)
    if form_values is None:
        body = linkform.preset_body(preset, latest_account_id=walkthrough.latest_account_id(workspace.id))
        form_values = linkform.form_values(body)
    return {
        "has_workspace": has_workspace(),
        "steps": steps,
        "current": walkthrough.current_step(steps),
        "key": key,
        "masked_secret": masked_secret(key),
        "sandbox_base_url": base_url(api_root(), SANDBOX) + "/v1",
        "webhooks": webhooklist.list_webhooks(workspace.id, SANDBOX),
        "inbox_url": inbox.inbox_url(workspace),
        "is_inbox_url": lambda url: inbox.is_inbox_url(workspace, url),
        "inbox_registered": inbox.is_registered(workspace),
        "webhook_exchange": _exchange("webhook", key),
        "event_types": EVENT_TYPES,
        "versions": SUPPORTED_VERSIONS,
        "latest_version": LATEST_VERSION,
        "presets": linkform.PRESETS,
        "preset": preset,
        "form": form_values,
        "job_choices": linkform.JOB_CHOICES,
        "target_types": linkform.TARGET_TYPES,
        "target_slots": range(linkform.TARGET_SLOTS),
        "matching_fields": linkform.MATCHING_FIELDS,
        **walkthrough.form_choices(),
        "link_token_exchange": _exchange("link_token", key),
        "link_token_id": link_token_id,
        "link_token": link_token,
        "inbox_page": inbox_page,
        "inbox_cursor": inbox.live_cursor(inbox_page.rows),
        "jobs_exchange": jobs_exchange,
        "jobs": ((response_json(jobs_exchange.row) or {}).get("data") or []) if jobs_exchange else [],
        "jobs_link_token_id": jobs_link_token_id or link_token_id or "",
    }


def step_response(*steps: str, **ctx_args):
    """The changed steps for htmx (the first swapped in place, the others and the checklist out of band)."""
    if not is_htmx():
        return redirect(url_for("console.walkthrough") + f"#step-{steps[0]}")
    if g.get("console_workspace_created"):
        # This action created the workspace: its key and inbox webhook appeared too.
        steps = (*steps, *(s for s in ("key", "webhook") if s not in steps))
    ctx = context(**ctx_args)
    parts = [render_template(STEP_PARTIALS[s], oob=i > 0, **ctx) for i, s in enumerate(steps)]
    parts.append(render_template("console/_checklist.html", oob=True, **ctx))
    return "".join(parts)


@bp.get("/", endpoint="walkthrough")
def walkthrough_page():
    preset = request.args.get("preset", "standard")
    return render_template("console/walkthrough.html", **context(preset=preset))


@bp.get("/walkthrough/checklist")
def checklist():
    steps = walkthrough.checklist(g.console_workspace)
    current = walkthrough.current_step(steps)
    return render_template("console/_checklist.html", oob=False, steps=steps, current=current)


@bp.post("/walkthrough/webhook/inbox")
def use_inbox():
    inbox.register(api_client(g.console_workspace), g.console_workspace)
    return step_response("webhook", "inbox")


@bp.post("/walkthrough/webhook")
def register_webhook():
    """Register the developer's own URL through POST /v1/webhooks, exactly as typed."""
    body = {
        "url": request.form.get("url", "").strip(),
        "status": "active",
        "enabled_events": request.form.getlist("enabled_events"),
        "version": request.form.get("version", ""),
    }
    api_client(g.console_workspace).call("POST", "/webhooks", body=body, step="webhook")
    return step_response("webhook")


@bp.get("/walkthrough/link-token-form")
def link_token_form():
    preset = request.args.get("preset", "standard")
    if preset not in linkform.PRESET_KEYS:
        preset = "standard"
    return render_htmx(
        "console/walkthrough.html", "console/_step_link_token.html", oob=False, **context(preset=preset)
    )


@bp.post("/walkthrough/link-token")
def create_link_token():
    """POST /v1/link_tokens with the form's body; remember the returned token to open Link with."""
    jobs = request.form.getlist("required_jobs")
    body = linkform.body_from_form(request.form, jobs)
    row = api_client(g.console_workspace).call("POST", "/link_tokens", body=body, step="link_token")
    data = (response_json(row) or {}).get("data") or {}
    if row.status == 200 and data.get("id") and data.get("token"):
        linktokens.remember(g.console_workspace.id, data["id"], data["token"])
        db.session.commit()
    return step_response(
        "link_token",
        "link",
        "jobs",
        form_values=linkform.form_values(body),
        preset=request.form.get("preset", ""),
    )


@bp.post("/walkthrough/jobs")
def query_jobs():
    """GET /v1/jobs?link_token_id=..., the way a backend checks results without webhooks."""
    link_token_id = request.form.get("link_token_id", "").strip()
    api_client(g.console_workspace).call(
        "GET", "/jobs", params={"link_token_id": link_token_id}, step=walkthrough.JOBS_STEP
    )
    return step_response("jobs", jobs_link_token_id=link_token_id)
