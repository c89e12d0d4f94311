"""The `console` blueprint, the one htmx rendering helper, and what every console page shares."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flask import Blueprint, current_app, g, render_template, request
from flask_wtf.csrf import CSRFError

from console.api.errors import NOT_FOUND_PAGE_MESSAGE
from console.core.errors import ServiceError, ValidationFailed
from console.core.params import nul_fields
from console.core.timeutil import parse_datetime, utcnow
from console.web.apiclient import api_root
from console.web.exchanges import pretty
from console.web.workspace_session import ensure_workspace, has_workspace, load_workspace

bp = Blueprint("console", __name__)

# Endpoints that neither load nor create a workspace: the inbox is called by the webhook worker.
NO_WORKSPACE_ENDPOINTS = {"console.inbox_receive"}
# Actions that handle a missing workspace themselves (reset would otherwise create one to delete it).
NO_CREATE_ENDPOINTS = {"console.reset_workspace", "console.present_restart"}
# Forms whose view checks its own fields for NUL and names them on the page (query and path still checked here).
FORM_CHECKED_BY_VIEW: set[str] = set()
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


@bp.before_request
def _refuse_nul_parameters() -> None:
    """The shared NUL check over query, path and form parameters (not the inbox: it reads raw bodies)."""
    if request.endpoint in NO_WORKSPACE_ENDPOINTS:
        return
    form = None if request.endpoint in FORM_CHECKED_BY_VIEW else request.form
    errors = nul_fields(request.args, request.view_args, form)
    if errors:
        raise ValidationFailed(errors)


@bp.before_request
def _load_workspace() -> None:
    """Pages read the visitor's workspace (or a blank one); only an action creates it."""
    if request.endpoint in NO_WORKSPACE_ENDPOINTS:
        return
    load_workspace()
    if request.method not in SAFE_METHODS and request.endpoint not in NO_CREATE_ENDPOINTS:
        ensure_workspace()


@bp.after_request
def _announce_new_workspace(response):
    """An htmx action that created the workspace also swaps in the header's workspace bar."""
    created = g.get("console_workspace_created") and is_htmx() and response.status_code == 200
    if created and response.mimetype == "text/html" and not response.direct_passthrough:
        bar = render_template("console/_workspace_bar.html", oob=True)
        response.set_data(response.get_data() + bar.encode())
    return response


@bp.context_processor
def _shared_context() -> dict:
    workspace = g.get("console_workspace") if has_workspace() else None
    # Snippets name the configured root (PUBLIC_URL), never the host this visitor happened to use.
    return {"workspace": workspace, "nav": NAV, "public_root": api_root(), "clock_bar": _clock_bar}


def _clock_bar() -> dict:
    """The header's clock: the workspace clock, and real time when they differ (called by base.html)."""
    workspace = g.get("console_workspace")
    offset = (workspace.clock_offset_seconds or 0.0) if workspace is not None else 0.0
    real = utcnow()
    return {"now": real + timedelta(seconds=offset), "real": real, "offset_seconds": offset}


@bp.errorhandler(404)
def _not_found(error):
    return render_template("console/error.html", title="Not found", message=NOT_FOUND_PAGE_MESSAGE), 404


@bp.errorhandler(ServiceError)
def _refused(error: ServiceError):
    """A bad parameter (a damaged cursor, a NUL) is a message on the page, never a bare 500."""
    message = "; ".join(f"{f.name} {f.message}" for f in error.fields) or error.message
    title = "Not found" if error.status_code == 404 else "Request refused"
    return render_template("console/error.html", title=title, message=message), error.status_code


@bp.errorhandler(413)
def _too_large(error):
    limit = (current_app.config.get("MAX_CONTENT_LENGTH") or 0) // 1024
    message = f"The request is larger than this server accepts ({limit:,} KB)."
    return render_template("console/error.html", title="Request refused", message=message), 413


@bp.errorhandler(CSRFError)
def _csrf_refused(error: CSRFError):
    return render_template("console/error.html", title="Request refused", message=error.description), 400


@bp.app_template_filter("prettyjson")
def _prettyjson(text: str) -> str:
    return pretty(text)


@bp.app_template_filter("clocktime")
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


@bp.app_template_filter("duration")
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
