"""Job timelines (per Link token, per account), redrawn live while anything in the workspace changes."""

from __future__ import annotations

from flask import abort, g, render_template, request, url_for

from console.core.routes import Routes
from console.modes import SANDBOX
from console.web.clock import moves as clockmoves
from console.web.requests import queries as requestlog
from console.web.shared import live
from console.web.shared.blueprint import render_htmx
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import console_key
from console.web.timeline import queries as timeline

routes = Routes()


def timeline_or_404(kind: str, subject_id: str) -> timeline.Timeline:
    finder = timeline.for_link_token if kind == "link_token" else timeline.for_account
    found = finder(g.console_workspace, SANDBOX, subject_id)
    if found is None:
        abort(404)
    return found


def timeline_url(kind: str, subject_id: str) -> str:
    if kind == "link_token":
        return url_for("console.link_token_timeline", link_token_id=subject_id)
    return url_for("console.account_timeline", account_id=subject_id)


def _run_exchanges() -> list:
    """Exchanges named in `?exchanges=id,id` (a scenario run's calls), this workspace's only."""
    workspace = g.console_workspace
    ids = [i for i in request.args.get("exchanges", "").split(",") if i][:5]
    rows = [requestlog.get(workspace.id, i) for i in ids]
    key = console_key(workspace)
    return [exchange_view(row, key) for row in rows if row is not None]


def scope_of(found: timeline.Timeline) -> clockmoves.Scope:
    """What this timeline owns, for its clock controls: its Link token, its jobs and their events."""
    events = [e.id for e in found.account_events] + [
        entry.event.id for jt in found.jobs for entry in jt.entries if entry.event is not None
    ]
    return clockmoves.Scope(
        "this Link token" if found.kind == "link_token" else "this account",
        frozenset({str(found.link_token.id)} if found.link_token else set()),
        frozenset(str(jt.job.id) for jt in found.jobs),
        frozenset(str(e) for e in events),
    )


def timeline_context(found: timeline.Timeline, **move) -> dict:
    return {
        "timeline": found,
        "run_exchanges": _run_exchanges() if request.method == "GET" else [],
        "pulse": live.pulse(g.console_workspace),
        **clockmoves.move_context(scope=scope_of(found), **move),
    }


@routes.get("/timeline", endpoint="timelines")
def timelines_page():
    if "pulse" in request.args and live.unchanged(g.console_workspace, request.args["pulse"]):
        return "", 204
    rows, next_cursor = timeline.recent_link_tokens(g.console_workspace, SANDBOX, request.args.get("cursor"))
    # Only the first page is live: older pages do not change by new tokens arriving.
    live_pulse = None if request.args.get("cursor") else live.pulse(g.console_workspace)
    return render_htmx(
        "console/timeline/timelines.html",
        "console/timeline/_timelines.html",
        rows=rows,
        next_cursor=next_cursor,
        pulse=live_pulse,
    )


@routes.get("/timeline/link-tokens/<link_token_id>")
def link_token_timeline(link_token_id: str):
    found = timeline_or_404("link_token", link_token_id)
    return render_htmx(
        "console/timeline/timeline.html", "console/timeline/_timeline.html", **timeline_context(found)
    )


@routes.get("/timeline/accounts/<account_id>")
def account_timeline(account_id: str):
    found = timeline_or_404("account", account_id)
    return render_htmx(
        "console/timeline/timeline.html", "console/timeline/_timeline.html", **timeline_context(found)
    )


@routes.get("/timeline/<kind>/<subject_id>/body")
def timeline_body(kind: str, subject_id: str):
    """The live poll of a timeline's jobs: 204 while nothing in the workspace changed."""
    kinds = {"link-tokens": "link_token", "accounts": "account"}
    if kind not in kinds:
        abort(404)
    # The cheap check first: a 204 shows nothing, so it needs no lookup of the subject.
    if live.unchanged(g.console_workspace, request.args.get("pulse")):
        return "", 204
    found = timeline_or_404(kinds[kind], subject_id)
    return render_template(
        "console/timeline/_timeline_body.html", timeline=found, pulse=live.pulse(g.console_workspace)
    )
