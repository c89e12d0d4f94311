"""The guided walkthrough: key, webhook, Link token, Link, inbox, jobs; each action is a real API call."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from flask import g, make_response, redirect, render_template, request, url_for

from console.core.routes import Routes
from console.events.models import EVENT_TYPES
from console.extensions import db
from console.modes import SANDBOX, base_url
from console.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from console.web.link import form as linkform
from console.web.link import guide as linkguide
from console.web.link import tokens as linktokens
from console.web.requests import queries as requestlog
from console.web.scenarios import gallery as scenarios
from console.web.shared import fielderrors
from console.web.shared.apiclient import api_root, response_json
from console.web.shared.blueprint import is_htmx, render_htmx
from console.web.shared.exchanges import masked_secret
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import api_client, console_key, has_workspace
from console.web.walkthrough import checklist as walkthrough
from console.web.webhooks import inbox
from console.web.webhooks import queries as webhooklist

routes = Routes()

STEP_PARTIALS = {
    "key": "console/walkthrough/_step_key.html",
    "webhook": "console/walkthrough/_step_webhook.html",
    "link_token": "console/walkthrough/_step_link_token.html",
    "link": "console/walkthrough/_step_link.html",
    "inbox": "console/walkthrough/_step_inbox.html",
    "jobs": "console/walkthrough/_step_jobs.html",
}


def _exchange(step: str, key):
    row = requestlog.latest(g.console_workspace.id, step)
    return exchange_view(row, key) if row is not None else None


def preset_body(preset: str, account_id: str | None = None) -> tuple[dict, walkthrough.OnDemandChoice | None]:
    """A preset's request body for this workspace, and for the on-demand update the account it chose (with the
    note saying which and why, and the accounts to choose from); `account_id` is the person's own choice."""
    if preset != "on_demand":
        return linkform.preset_body(preset), None
    choice = walkthrough.on_demand_choice(g.console_workspace.id, account_id=account_id)
    if choice is None:
        return linkform.preset_body(preset), None
    body = linkform.preset_body(
        preset, account_id=choice.account_id, platform_matching=choice.platform_matching
    )
    return body, choice


def newest_link(workspace) -> linkguide.TokenView | None:
    kept = linktokens.newest(workspace.id)
    return linkguide.view(workspace, kept.link_token_id, kept.token, kept.origin) if kept else None


def context(
    form_values: dict | None = None,
    preset: str = "standard",
    jobs_link_token_id: str | None = None,
    field_errors: fielderrors.FieldErrors | None = None,
    webhook_form: dict | None = None,
    webhook_errors: fielderrors.FieldErrors | None = None,
) -> dict:
    """Everything the walkthrough's steps show, from the database and this session."""
    workspace = g.console_workspace
    steps = walkthrough.checklist(workspace)
    key = console_key(workspace)
    link = newest_link(workspace)
    link_token_id = link.link_token_id if link else None
    jobs_exchange = _exchange(walkthrough.JOBS_STEP, key)
    inbox_page = inbox.page(workspace.id, limit=10)
    body, on_demand = (
        preset_body(preset, request.args.get("account"))
        if form_values is None or preset == "on_demand"
        else ({}, None)
    )
    if form_values is None:
        form_values = linkform.form_values(body)
    return {
        "has_workspace": has_workspace(),
        "steps": steps,
        "current": walkthrough.current_step(steps),
        "key": key,
        "masked_secret": masked_secret(key),
        "sandbox_base_url": base_url(api_root(), SANDBOX),  # as the README names it: paths add /v1
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
        "on_demand_note": on_demand.note if on_demand else None,
        "on_demand_options": on_demand.options if on_demand else (),
        "field_errors": field_errors or fielderrors.FieldErrors(),
        "webhook_form": webhook_form,
        "webhook_errors": webhook_errors or fielderrors.FieldErrors(),
        "job_choices": linkform.JOB_CHOICES,
        "target_types": linkform.TARGET_TYPES,
        "target_slots": range(linkform.TARGET_SLOTS),
        "matching_fields": linkform.MATCHING_FIELDS,
        **walkthrough.form_choices(),
        "link_token_exchange": _exchange("link_token", key),
        "link": link,
        "inbox_page": inbox_page,
        "inbox_behaviour": inbox.behaviour(workspace.id) if has_workspace() else inbox.OK,
        "behaviours": inbox.BEHAVIOURS,
        "inbox_cursor": inbox.live_cursor(inbox_page.rows),
        "jobs_exchange": jobs_exchange,
        "jobs": ((response_json(jobs_exchange.row) or {}).get("data") or []) if jobs_exchange else [],
        # What was just queried, even nothing (an emptied field); else the newest token, ready to query.
        "jobs_link_token_id": jobs_link_token_id if jobs_link_token_id is not None else (link_token_id or ""),
        "jobs_queried_token": _queried_token(jobs_exchange.row) if jobs_exchange else "",
        "jobs_errors": fielderrors.place(
            fielderrors.of_response(jobs_exchange.row if jobs_exchange else None),
            lambda name: "jobs-link-token-id" if name == "link_token_id" else None,
        ),
    }


def _queried_token(row) -> str:
    """The link_token_id the logged GET /v1/jobs asked for ("" when it asked for every job of the workspace):
    what the step's answer is about, whatever the field holds now."""
    return (parse_qs(urlsplit(row.url).query).get("link_token_id") or [""])[0]


def step_response(*steps: str, **ctx_args):
    """The changed steps for htmx (the first swapped in place, the others and the checklist out of band)."""
    if not is_htmx():
        return redirect(url_for("console.walkthrough") + f"#step-{steps[0]}")
    if g.get("console_workspace_created"):
        # This action created the workspace: its key and inbox webhook appeared too.
        steps = (*steps, *(s for s in ("key", "webhook") if s not in steps))
    ctx = context(**ctx_args)
    parts = [render_template(STEP_PARTIALS[s], oob=i > 0, **ctx) for i, s in enumerate(steps)]
    parts.append(render_template("console/walkthrough/_checklist.html", oob=True, **ctx))
    return "".join(parts)


@routes.get("/", endpoint="walkthrough")
def walkthrough_page():
    preset = request.args.get("preset", "standard")
    return render_template("console/walkthrough/walkthrough.html", **context(preset=preset))


@routes.get("/walkthrough/checklist")
def checklist():
    steps = walkthrough.checklist(g.console_workspace)
    current = walkthrough.current_step(steps)
    return render_template("console/walkthrough/_checklist.html", oob=False, steps=steps, current=current)


@routes.post("/walkthrough/webhook/inbox")
def use_inbox():
    inbox.register(api_client(g.console_workspace), g.console_workspace)
    return step_response("webhook", "inbox")


@routes.post("/walkthrough/webhook")
def register_webhook():
    """Register the developer's own URL through POST /v1/webhooks, exactly as typed."""
    body = {
        "url": request.form.get("url", "").strip(),
        "status": "active",
        "enabled_events": request.form.getlist("enabled_events"),
        "version": request.form.get("version", ""),
    }
    row = api_client(g.console_workspace).call("POST", "/webhooks", body=body, step="webhook")
    if row.status == 200:
        return step_response("webhook")
    # Refused: the form comes back as typed, with the API's field errors beside the fields.
    errors = fielderrors.place(fielderrors.of_response(row), fielderrors.webhook_inputs("wh", status=False))
    body["refusal"] = fielderrors.message_of(row)
    return step_response("webhook", webhook_form=body, webhook_errors=errors)


@routes.get("/walkthrough/link-token-form")
def link_token_form():
    preset = request.args.get("preset", "standard")
    if preset not in linkform.PRESET_KEYS:
        preset = "standard"
    return render_htmx(
        "console/walkthrough/walkthrough.html",
        "console/walkthrough/_step_link_token.html",
        oob=False,
        **context(preset=preset),
    )


def _create_link_token(body: dict, preset: str):
    """POST /v1/link_tokens with a body; remember the returned token (and its preset) to open Link with."""
    row = api_client(g.console_workspace).call("POST", "/link_tokens", body=body, step="link_token")
    data = (response_json(row) or {}).get("data") or {}
    created = row.status == 200 and data.get("id") and data.get("token")
    if created:
        origin = f"preset:{preset}" if preset in linkform.PRESET_KEYS else None
        linktokens.remember(g.console_workspace.id, data["id"], data["token"], origin)
        db.session.commit()
    return data.get("id") if created else None, row


@routes.post("/walkthrough/link-token")
def create_link_token():
    """POST /v1/link_tokens with the form's body, exactly as typed."""
    jobs = request.form.getlist("required_jobs")
    body = linkform.body_from_form(request.form, jobs)
    preset = request.form.get("preset", "")
    link_token_id, row = _create_link_token(body, preset)
    response = step_response(
        "link_token",
        "link",
        "jobs",
        form_values=linkform.form_values(body),
        preset=preset,
        field_errors=fielderrors.place(fielderrors.of_response(row), linkform.field_input),
    )
    return _focus_new_token(response, link_token_id)


def _focus_new_token(response, link_token_id):
    """After a token was created, console.js moves focus to step 4 (where it is opened) and announces it."""
    if not link_token_id or not is_htmx():
        return response
    response = make_response(response)
    response.headers["HX-Trigger-After-Settle"] = "link-token-created"
    return response


@routes.post("/walkthrough/link-token/again")
def create_link_token_again():
    """ "Create a new token" for a used or expired one: the same preset's body, made afresh."""
    preset = request.form.get("preset", "")
    if preset not in linkform.PRESET_KEYS:
        preset = "standard"
    body, _note = preset_body(preset)
    link_token_id, _row = _create_link_token(body, preset)
    if not is_htmx() and link_token_id:
        return redirect(url_for("console.launch", link_token_id=link_token_id))
    response = step_response(
        "link", "link_token", "jobs", form_values=linkform.form_values(body), preset=preset
    )
    return _focus_new_token(response, link_token_id)


@routes.get("/walkthrough/link-state")
def link_state():
    """The state of one token this console created, refreshed when Link closes."""
    kept = linktokens.kept(g.console_workspace.id, request.args.get("link_token_id", ""))
    link = linkguide.view(g.console_workspace, kept.link_token_id, kept.token, kept.origin) if kept else None
    if link is None:
        return "", 204
    scenario = scenarios.get(request.args.get("scenario", ""))
    return render_template(
        "console/link/_link_state.html",
        link=link,
        scenario=scenario,
        is_walkthrough=request.args.get("walkthrough") == "1",
    )


@routes.post("/walkthrough/jobs")
def query_jobs():
    """GET /v1/jobs?link_token_id=..., the way a backend checks results without webhooks."""
    link_token_id = request.form.get("link_token_id", "").strip()
    api_client(g.console_workspace).call(
        "GET", "/jobs", params={"link_token_id": link_token_id}, step=walkthrough.JOBS_STEP
    )
    return step_response("jobs", jobs_link_token_id=link_token_id)
