"""Job timelines (per Link token, per account) and the workspace clock controls."""

from __future__ import annotations

from flask import abort, g, redirect, render_template, request, url_for
from sqlalchemy import select

from console.clock.services import now as clock_now
from console.extensions import db
from console.modes import SANDBOX
from console.scheduler.models import ScheduledTask
from console.web import requestlog, timeline
from console.web.apiclient import response_json
from console.web.blueprint import bp, is_htmx, render_htmx
from console.web.exchanges import view as exchange_view
from console.web.workspace_session import api_client, console_key

# The clock buttons: label -> the body of POST /v1/sandbox/clock/advance.
ADVANCES = {
    "hour": ("+1 hour", {"hours": 1}),
    "business_day": ("+1 business day", {"business_days": 1}),
    "day": ("+24 hours", {"hours": 24}),
    "month": ("+30 days", {"days": 30}),
}


def _timeline_or_404(kind: str, subject_id: str) -> timeline.Timeline:
    finder = timeline.for_link_token if kind == "link_token" else timeline.for_account
    found = finder(g.console_workspace, SANDBOX, subject_id)
    if found is None:
        abort(404)
    return found


def _run_exchanges() -> list:
    """Exchanges named in `?exchanges=id,id` (a scenario run's calls), this workspace's only."""
    workspace = g.console_workspace
    ids = [i for i in request.args.get("exchanges", "").split(",") if i][:5]
    rows = [requestlog.get(workspace.id, i) for i in ids]
    key = console_key(workspace)
    return [exchange_view(row, key) for row in rows if row is not None]


def _timeline_context(found: timeline.Timeline, advance=None) -> dict:
    return {
        "timeline": found,
        "run_exchanges": _run_exchanges() if request.method == "GET" else [],
        "advances": ADVANCES,
        "advance": advance,
        "fired": ((response_json(advance.row) or {}).get("data") or {}).get("fired", []) if advance else [],
    }


@bp.get("/timeline", endpoint="timelines")
def timelines_page():
    rows, next_cursor = timeline.recent_link_tokens(g.console_workspace, SANDBOX, request.args.get("cursor"))
    return render_htmx(
        "console/timelines.html", "console/_timelines.html", rows=rows, next_cursor=next_cursor
    )


@bp.get("/timeline/link-tokens/<link_token_id>")
def link_token_timeline(link_token_id: str):
    found = _timeline_or_404("link_token", link_token_id)
    return render_htmx("console/timeline.html", "console/_timeline.html", **_timeline_context(found))


@bp.get("/timeline/accounts/<account_id>")
def account_timeline(account_id: str):
    found = _timeline_or_404("account", account_id)
    return render_htmx("console/timeline.html", "console/_timeline.html", **_timeline_context(found))


def _clock_context(advance=None) -> dict:
    workspace = g.console_workspace
    pending = db.session.scalars(
        select(ScheduledTask)
        .where(ScheduledTask.workspace_id == workspace.id, ScheduledTask.status == "pending")
        .order_by(ScheduledTask.due_at)
        .limit(20)
    )
    return {
        "now": clock_now(workspace),
        "offset_seconds": workspace.clock_offset_seconds or 0.0,
        "pending_tasks": list(pending),
        "advances": ADVANCES,
        "advance": advance,
        "fired": ((response_json(advance.row) or {}).get("data") or {}).get("fired", []) if advance else [],
    }


@bp.get("/clock", endpoint="clock")
def clock_page():
    return render_htmx("console/clock.html", "console/_clock.html", **_clock_context())


@bp.post("/clock/advance")
def advance_clock():
    """POST /v1/sandbox/clock/advance; then show the timeline (or clock) it was pressed on."""
    choice = ADVANCES.get(request.form.get("by", ""))
    if choice is None:
        abort(400)
    workspace = g.console_workspace
    row = api_client(workspace).call("POST", "/sandbox/clock/advance", body=choice[1], step="clock")
    db.session.refresh(workspace)
    advance = exchange_view(row, console_key(workspace))
    kind, subject = request.form.get("timeline_kind"), request.form.get("timeline_id")
    if kind in ("link_token", "account") and subject:
        found = _timeline_or_404(kind, subject)
        if not is_htmx():
            endpoint = "console.link_token_timeline" if kind == "link_token" else "console.account_timeline"
            args = {"link_token_id": subject} if kind == "link_token" else {"account_id": subject}
            return redirect(url_for(endpoint, **args))
        return render_template("console/_timeline.html", **_timeline_context(found, advance))
    if not is_htmx():
        return redirect(url_for("console.clock"))
    return render_template("console/_clock.html", **_clock_context(advance))
