"""The `console` blueprint (made by `make_blueprint` from the features' routes), the one htmx rendering
helper, and what every console page shares: hooks, error pages, template filters."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from flask import Blueprint, current_app, g, render_template, request
from flask_wtf.csrf import CSRFError
from markupsafe import Markup, escape

from console.api.errors import NOT_FOUND_PAGE_MESSAGE
from console.core.errors import RateLimited, ServiceError, ValidationFailed
from console.core.params import nul_fields
from console.core.routes import Route, Routes
from console.core.timeutil import parse_datetime, utcnow
from console.training import cohorts
from console.web.shared import throttle
from console.web.shared.apiclient import api_root
from console.web.shared.exchanges import pretty
from console.web.shared.workspace_session import ensure_workspace, has_workspace, load_workspace

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")

NAV = (
    ("console.walkthrough", "Walkthrough"),
    ("console.scenarios", "Scenarios"),
    ("console.present", "Presenter"),
    ("console.events", "Event log"),
    ("console.timelines", "Timeline"),
    ("console.webhooks", "Webhooks"),
    ("console.requests", "Requests"),
    ("console.keys", "API keys"),
    ("console.clock", "Clock"),
    ("console.world", "World"),
    ("console.reference", "API reference"),
    ("console.training", "Training"),
)


def is_htmx() -> bool:
    """An htmx request that wants a fragment (a boosted navigation wants the whole page)."""
    return request.headers.get("HX-Request") == "true" and request.headers.get("HX-Boosted") != "true"


def render_htmx(full: str, partial: str, **context):
    """Render the page, or only its fragment for htmx; the page includes the fragment, so markup exists once."""
    return render_template(partial if is_htmx() else full, **context)


def _refuse_nul_parameters() -> None:
    """The shared NUL check over query, path and form parameters (not the inbox: it reads raw bodies)."""
    route = _route()
    if route is not None and "no_workspace" in route.flags:
        return
    form = None if route is not None and "form_checked_by_view" in route.flags else request.form
    errors = nul_fields(request.args, request.view_args, form)
    if errors:
        raise ValidationFailed(errors)


def _load_workspace() -> None:
    """Pages read the visitor's workspace (or a blank one); only an action creates it.

    A POST that creates something (the workspace, on a visitor's first action; or a route flagged
    `creates`: a profile, a cohort, a join, a fresh workspace) counts against the client address's limit
    first (console.web.shared.throttle)."""
    route = _route()
    if route is not None and "no_workspace" in route.flags:
        return
    load_workspace()
    if request.method in SAFE_METHODS:
        return
    flags = route.flags if route is not None else frozenset()
    makes_workspace = "no_create" not in flags and not has_workspace()
    if makes_workspace or "creates" in flags:
        throttle.check_address()
    if makes_workspace:
        ensure_workspace()


def _announce_new_workspace(response):
    """An htmx action that created the workspace also swaps in the header's workspace bar."""
    created = g.get("console_workspace_created") and is_htmx() and response.status_code == 200
    if created and response.mimetype == "text/html" and not response.direct_passthrough:
        bar = render_template("console/shared/_workspace_bar.html", oob=True)
        response.set_data(response.get_data() + bar.encode())
    return response


def _shared_context() -> dict:
    workspace = g.get("console_workspace") if has_workspace() else None
    # Snippets name the configured root (PUBLIC_URL), never the host this visitor happened to use.
    return {
        "workspace": workspace,
        "nav": NAV,
        "public_root": api_root(),
        "clock_bar": _clock_bar,
        "class_of": _class_of,
    }


def _class_of(workspace) -> str | None:
    """The name of the training class a workspace is a trainee's in (the workspace bar's Reset says it stays).
    Only a kept workspace can be one while its class runs: a visitor's page asks the database nothing more."""
    if not workspace.kept:
        return None
    found = cohorts.membership(workspace.id)
    return found[1].name if found is not None else None


def _clock_bar() -> dict:
    """The header's clock: the workspace clock, and real time when they differ (called by base.html)."""
    workspace = g.get("console_workspace")
    offset = (workspace.clock_offset_seconds or 0.0) if workspace is not None else 0.0
    real = utcnow()
    return {"now": real + timedelta(seconds=offset), "real": real, "offset_seconds": offset}


# A sales engineer who opens a mistyped story or a deleted profile's short link reads this, not "…another
# workspace" (a developer's word) with only the walkthrough to go back to.
PRESENTER_NOT_FOUND_MESSAGE = (
    "No demo here: the story's name or the profile's link is mistyped, or the profile was deleted."
)


def _presenter_address() -> bool:
    return request.path == "/present" or request.path.startswith(("/present/", "/p/"))


def _not_found(error):
    if _presenter_address():
        return render_template(
            "console/shared/error.html",
            title="Not found",
            message=PRESENTER_NOT_FOUND_MESSAGE,
            presenter=True,
        ), 404
    return render_template(
        "console/shared/error.html", title="Not found", message=NOT_FOUND_PAGE_MESSAGE
    ), 404


def _refused(error: ServiceError):
    """A bad parameter (a damaged cursor, a NUL) is a message on the page, never a bare 500."""
    message = "; ".join(f"{f.name} {f.message}" for f in error.fields) or error.message
    title = "Not found" if error.status_code == 404 else "Request refused"
    code = None if error.status_code == 404 else error.code  # the code the README names (PROFILE_LIMIT, …)
    headers = {"Retry-After": str(error.retry_after)} if isinstance(error, RateLimited) else {}
    page = render_template("console/shared/error.html", title=title, message=message, code=code)
    return page, error.status_code, headers


def _with_workspace() -> None:
    """For an error page raised before `_load_workspace` ran (a body refused while the first hook read its
    form): the header names the visitor's workspace, not "No workspace yet"."""
    if "console_workspace" not in g:
        load_workspace()


def _too_large(error):
    _with_workspace()
    limit = current_app.config.get("MAX_CONTENT_LENGTH") or 0
    if request.content_length is not None and (not limit or request.content_length <= limit):
        # werkzeug answers 413 for a form of too many parts too, however small its body.
        message = f"The form has more fields than this server accepts ({request.max_form_parts:,})."
    else:
        message = f"The request is larger than this server accepts ({limit // 1024:,} KB)."
    return render_template("console/shared/error.html", title="Request refused", message=message), 413


def _csrf_refused(error: CSRFError):
    _with_workspace()
    return render_template(
        "console/shared/error.html", title="Request refused", message=error.description
    ), 400


def _prettyjson(text: str) -> str:
    return pretty(text)


def _clocktime(value: datetime | str | None, precision: str = "seconds", real: bool = False) -> str:
    """Every moment on console pages, one format: "Tue 24 Nov 2026 14:02:05" (UTC); ISO strings from API
    responses are accepted too. Moments are on the workspace clock, except bookkeeping stamps taken in real
    time (a request's arrival, an inbox delivery): `real=True` marks those "(real time)" once the clock
    has been moved, since they cannot honestly be converted with today's offset."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        try:
            value = parse_datetime(value)
        except (ValueError, OverflowError):
            return value
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    text = value.strftime("%a %d %b %Y %H:%M" + (":%S" if precision == "seconds" else ""))
    workspace = g.get("console_workspace")
    if real and workspace is not None and (workspace.clock_offset_seconds or 0) >= 1:
        text += " (real time)"
    return text


_BREAK_AFTER = re.compile(r"([._/-])(?=.)")


def _breakable(text: object) -> Markup:
    """The text, escaped, with a line-break opportunity (<wbr>) after each ".", "_", "/" and "-": a long API name
    or path (`direct_deposit_switch.added`, `/sandbox/v1/link_tokens/…/complete`) wraps between its words on a
    phone, never mid-word as `overflow-wrap: anywhere` broke it ("direct_depo / sit_switch")."""
    return Markup(_BREAK_AFTER.sub(r"\1<wbr>", str(escape(text))))


def _duration(seconds: float) -> str:
    """A short human duration: 45 s, 12 min, 3 h 5 min, 2 d 4 h."""
    seconds = int(abs(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"


def _route() -> Route | None:
    """The declared route of this request (None for a URL no feature declares: a 404).

    Its flags: `no_create` (the view handles a missing workspace itself), `no_workspace` (neither loads
    nor creates one, and takes no CSRF token: the inbox, called by the webhook worker), `creates` (a POST
    that creates something: counted by the per-address limit even when the workspace exists),
    `form_checked_by_view` (the view checks its own form fields for NUL and names them on the page)."""
    return current_app.extensions["console_routes"].get(request.endpoint)


def make_blueprint(features: Iterable[Routes]) -> Blueprint:
    """The `console` blueprint with every feature's routes, the shared hooks, error pages and filters."""
    bp = Blueprint("console", __name__)
    declared: dict[str, Route] = {}
    for routes in features:
        routes.add_to(bp)
        declared.update({f"console.{route.endpoint}": route for route in routes.declared})

    @bp.record_once
    def _keep_routes(state) -> None:
        state.app.extensions["console_routes"] = declared

    bp.before_request(_refuse_nul_parameters)
    bp.before_request(_load_workspace)
    bp.after_request(_announce_new_workspace)
    bp.context_processor(_shared_context)
    bp.register_error_handler(404, _not_found)
    bp.register_error_handler(ServiceError, _refused)
    bp.register_error_handler(413, _too_large)
    bp.register_error_handler(CSRFError, _csrf_refused)
    bp.add_app_template_filter(_prettyjson, "prettyjson")
    bp.add_app_template_filter(_clocktime, "clocktime")
    bp.add_app_template_filter(_duration, "duration")
    bp.add_app_template_filter(_breakable, "breakable")
    return bp


def no_workspace_views(app) -> list:
    """The views that take no workspace (and no CSRF token: the inbox checks signatures instead)."""
    return [
        route.view for route in app.extensions["console_routes"].values() if "no_workspace" in route.flags
    ]
