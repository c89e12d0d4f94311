"""The workspace clock page and the clock moves (from that page and from a timeline)."""

from __future__ import annotations

from flask import g, redirect, render_template, request, url_for

from console.clock.services import now as clock_now
from console.core.routes import Routes
from console.extensions import db
from console.link.expiry import open_tokens_expiring_by
from console.scheduler import agenda
from console.web.clock import moves as clockmoves
from console.web.shared import live
from console.web.shared.blueprint import is_htmx, render_htmx
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import api_client, console_key
from console.web.timeline import views as timeline_views

routes = Routes()


def scheduled_context() -> dict:
    """What is scheduled, soonest first, with how long until each on the workspace clock."""
    workspace = g.console_workspace
    current = clock_now(workspace)
    items = agenda.upcoming(workspace, limit=20) if workspace.id else []
    return {
        "now": current,
        "scheduled": [(item, (item.due_at - current).total_seconds()) for item in items],
        "pulse": live.pulse(workspace),
    }


def _clock_context(**move) -> dict:
    workspace = g.console_workspace
    return {
        **scheduled_context(),
        **clockmoves.move_context(**move),
        "offset_seconds": workspace.clock_offset_seconds or 0.0,
    }


@routes.get("/clock", endpoint="clock")
def clock_page():
    return render_htmx("console/clock/clock.html", "console/clock/_clock.html", **_clock_context())


@routes.get("/clock/scheduled")
def clock_scheduled():
    """The live poll of the scheduled list: 204 while nothing changed."""
    if live.unchanged(g.console_workspace, request.args.get("pulse")):
        return "", 204
    return render_template("console/clock/_clock_scheduled.html", **scheduled_context())


@routes.post("/clock/advance")
def advance_clock():
    """Move the clock through the API (asking first when open Link tokens would expire), then show the
    timeline (or clock page) the move was made from."""
    workspace = g.console_workspace
    form = {name: request.form.get(name, "") for name in clockmoves.FIELDS}
    move_kwargs: dict = {"form": form}
    kind, subject = request.form.get("timeline_kind"), request.form.get("timeline_id")
    on_timeline = kind in ("link_token", "account") and subject
    # A move from a timeline knows what that timeline owns (its "next" is its own next item).
    scope = timeline_views.scope_of(timeline_views.timeline_or_404(kind, subject)) if on_timeline else None
    try:
        move = clockmoves.parse(workspace, request.form, scope)
    except clockmoves.FormError as exc:
        if exc.field in ("by", "unit"):  # no form offers these: a tampered request gets the error page
            message = str(exc) if exc.field == "by" else f"Unit {exc}"
            return render_template(
                "console/shared/error.html", title="Unknown clock move", message=message
            ), 400
        move_kwargs["form_error"] = exc
    else:
        expiring = open_tokens_expiring_by(workspace, move.target) if move.target else []
        if expiring and request.form.get("confirmed") != "1":
            move_kwargs["confirm"] = {"tokens": expiring, "form": move.form}
        else:
            row = api_client(workspace).call("POST", move.path, body=move.body, step="clock")
            db.session.refresh(workspace)
            move_kwargs["advance"] = exchange_view(row, console_key(workspace))
    # A plain form post (no htmx) after a move goes back to the page (a reload must not move the clock
    # again); one that moved nothing (a confirmation to give, a field to correct, the API's refusal) shows
    # the whole page with it, as it was silently redirected away before.
    moved = "advance" in move_kwargs and move_kwargs["advance"].row.status == 200
    if on_timeline:
        found = timeline_views.timeline_or_404(kind, subject)
        if not is_htmx() and moved:
            return redirect(timeline_views.timeline_url(kind, subject))
        return render_htmx(
            "console/timeline/timeline.html",
            "console/timeline/_timeline.html",
            **timeline_views.timeline_context(found, **move_kwargs),
        )
    if not is_htmx() and moved:
        return redirect(url_for("console.clock"))
    return render_htmx(
        "console/clock/clock.html", "console/clock/_clock.html", **_clock_context(**move_kwargs)
    )
