"""The live event log: newest first, filters, expandable rows with every delivery attempt, resend."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from flask import abort, g, make_response, redirect, render_template, request, url_for

from console.clock.services import now as clock_now
from console.core.routes import Routes
from console.events.models import EVENT_TYPES
from console.modes import SANDBOX
from console.web.events import deliveries
from console.web.events import queries as eventlog
from console.web.shared.blueprint import is_htmx, render_htmx
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import api_client, console_key

routes = Routes()


def _list_context() -> dict:
    workspace = g.console_workspace
    filters = eventlog.parse_filters(request.args)
    found = eventlog.page(workspace.id, SANDBOX, filters, cursor=request.args.get("cursor"))
    return {
        "filters": filters,
        "event_types": EVENT_TYPES,
        "events": found.rows,
        "statuses": eventlog.statuses(found.rows),
        "next_cursor": found.next_cursor,
        "live_cursor": eventlog.live_cursor(found.rows, None),
        # Live updates only make sense at the top of the log.
        "live": not request.args.get("cursor"),
    }


def _address_without_empty_parameters() -> str | None:
    """The log's address without the parameters the filter form sent empty (`?type=&account_id=…` names only
    the account), or None when it has none: a browser sends every field of a GET form, typed or not."""
    sent = list(request.args.items(multi=True))
    kept = [(name, value) for name, value in sent if value.strip()]
    if len(kept) == len(sent):
        return None
    return url_for("console.events") + (f"?{urlencode(kept)}" if kept else "")


@routes.get("/events", endpoint="events")
def events_page():
    clean = _address_without_empty_parameters()
    if clean is not None and not is_htmx():
        return redirect(clean)
    response = make_response(
        render_htmx("console/events/events.html", "console/events/_events.html", **_list_context())
    )
    if clean is not None:
        response.headers["HX-Push-Url"] = clean  # the address bar and history get the clean one too
    return response


@routes.get("/events/rows")
def event_rows():
    """New rows since `after` for the live poll (204 when none), else the page older than `cursor`."""
    workspace = g.console_workspace
    filters = eventlog.parse_filters(request.args)
    if "after" in request.args:
        fresh = eventlog.newer(workspace.id, SANDBOX, filters, request.args["after"])
        changed = eventlog.changed_badges(workspace.id, request.args.getlist("shown"))
        if not fresh and not changed:
            return "", 204
        return render_template(
            "console/events/_event_poll.html",
            events=fresh,
            statuses=eventlog.statuses(fresh),
            filters=filters,
            live_cursor=eventlog.live_cursor(fresh, request.args["after"]),
            changed=changed,
        )
    found = eventlog.page(workspace.id, SANDBOX, filters, cursor=request.args.get("cursor"))
    return render_template(
        "console/events/_event_rows.html",
        events=found.rows,
        statuses=eventlog.statuses(found.rows),
        filters=filters,
        next_cursor=found.next_cursor,
    )


def _detail_context(event, exchange=None) -> dict:
    views = deliveries.for_event(event)
    return {
        "event": event,
        "payload": json.dumps(event.payload, indent=2, ensure_ascii=False),
        "deliveries": views,
        "sending_now": deliveries.any_sending_now(views),
        "exchange": exchange,
        "now": clock_now(g.console_workspace),
    }


@routes.get("/events/<event_id>")
def event_detail(event_id: str):
    event = eventlog.get(g.console_workspace.id, event_id)
    if event is None:
        abort(404)
    return render_htmx(
        "console/events/event.html", "console/events/_event_detail.html", **_detail_context(event)
    )


@routes.post("/events/<event_id>/resend")
def resend_event(event_id: str):
    """POST /v1/events/{id}/resend, then show the event again with the new delivery."""
    workspace = g.console_workspace
    event = eventlog.get(workspace.id, event_id)
    if event is None:
        abort(404)
    row = api_client(workspace).call("POST", f"/events/{event.id}/resend", step="resend")
    exchange = exchange_view(row, console_key(workspace))
    return render_htmx(
        "console/events/event.html", "console/events/_event_detail.html", **_detail_context(event, exchange)
    )
