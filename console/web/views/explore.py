"""Read-only pages: the request log, the simulated world, and the API reference."""

from __future__ import annotations

from flask import abort, g, render_template, request
from sqlalchemy import select

from console.core import jsontext
from console.core.errors import FieldError, ValidationFailed
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import list_keys, secret_of
from console.modes import MODES, SANDBOX
from console.web import reference, requestlog
from console.web.apiclient import ApiClient
from console.web.blueprint import bp, render_htmx
from console.web.exchanges import masked_secret
from console.web.exchanges import view as exchange_view
from console.web.workspace_session import console_key, ensure_workspace
from console.world import services as world
from console.world.models import Beneficiary

WORLD_TABS = ("platforms", "employers", "people", "benefits")


def _own_request(request_id: str):
    row = requestlog.get(g.console_workspace.id, request_id)
    if row is None:
        abort(404)
    return row


def _key_of(row) -> ApiKey | None:
    return db.session.get(ApiKey, row.api_key_id) if row.api_key_id else None


@bp.get("/requests", endpoint="requests")
def requests_page():
    workspace_id = g.console_workspace.id
    filters = requestlog.Filters.from_args(request.args)
    found = requestlog.page(workspace_id, cursor=request.args.get("cursor"), filters=filters)
    keys = list_keys(workspace_id)
    return render_htmx(
        "console/requests.html",
        "console/_request_rows.html",
        rows=found.rows,
        next_cursor=found.next_cursor,
        filters=filters,
        status_classes=requestlog.STATUS_CLASSES,
        keys=keys,
        key_names={k.id: masked_secret(k) for k in keys},
        unlogged=requestlog.unlogged(workspace_id),
        live_cursor=requestlog.live_cursor(found.rows),
    )


@bp.get("/requests/live")
def request_rows_live():
    """Exchanges newer than `after`, for the live poll (204 when there are none)."""
    after = request.args.get("after")
    filters = requestlog.Filters.from_args(request.args)
    rows = requestlog.newer(g.console_workspace.id, after, filters)
    if not rows:
        return "", 204
    return render_template(
        "console/_request_poll.html",
        rows=rows,
        live_cursor=requestlog.live_cursor(rows, after),
        filters=filters,
    )


@bp.get("/requests/<request_id>")
def request_detail(request_id: str):
    row = _own_request(request_id)
    return render_htmx(
        "console/request.html", "console/_exchange.html", exchange=exchange_view(row, _key_of(row))
    )


@bp.post("/requests/<request_id>/reveal")
def reveal_request(request_id: str):
    """The exchange with the real secret in headers, curl and Python: only on an explicit POST."""
    row = _own_request(request_id)
    key = _key_of(row)
    secret = secret_of(key) if key is not None else None
    return render_template("console/_exchange.html", exchange=exchange_view(row, key, secret))


@bp.post("/requests/<request_id>/hide")
def hide_request(request_id: str):
    row = _own_request(request_id)
    return render_template("console/_exchange.html", exchange=exchange_view(row, _key_of(row)))


@bp.get("/world", endpoint="world")
def world_page():
    tab = request.args.get("tab", "platforms")
    if tab not in WORLD_TABS:
        tab = "platforms"
    q = request.args.get("q", "").strip()
    ctx: dict = {"tab": tab, "tabs": WORLD_TABS, "q": q, "rows": []}
    if tab == "platforms":
        ctx["rows"] = list(db.session.scalars(world.list_platforms(q or None, type="payroll")))
    elif tab == "employers":
        ctx["rows"] = list(db.session.scalars(world.list_employers(q or None)))
    elif tab == "people":
        ctx["rows"] = list(db.session.scalars(world.list_people(q or None).limit(100)))
    else:
        programs = list(db.session.scalars(world.list_platforms(q or None, type="benefits")))
        ids = [p.id for p in programs]
        beneficiaries = db.session.scalars(
            select(Beneficiary).where(Beneficiary.platform_id.in_(ids)).order_by(Beneficiary.last_name)
        )
        by_program: dict = {p.id: [] for p in programs}
        for b in beneficiaries:
            by_program[b.platform_id].append(b)
        ctx["rows"] = [(p, by_program[p.id]) for p in programs]
    return render_htmx("console/world.html", "console/_world_rows.html", **ctx)


@bp.get("/world/people/<person_id>")
def world_person(person_id: str):
    """A person with their credentials and, per mode, the deposit split this workspace sees."""
    mode = request.args.get("mode", "development")
    if mode not in MODES:
        mode = "development"
    try:
        person = world.person_summary(person_id, workspace_id=g.console_workspace.id, mode=mode)
    except (LookupError, ValueError):
        abort(404)
    return render_template("console/person.html", person=person, mode=mode, modes=MODES)


@bp.get("/world/platforms/<platform_id>")
def world_platform(platform_id: str):
    platform = world.get_platform(platform_id)
    if platform is None:
        abort(404)
    employers = list(db.session.scalars(world.list_employers(platform_id=platform.id)))
    return render_template("console/platform.html", platform=platform, employers=employers)


@bp.get("/reference", endpoint="reference")
def reference_page():
    doc = reference.document()
    groups = reference.operations_by_tag(doc) if doc else []
    return render_template(
        "console/reference.html",
        doc=doc,
        groups=groups,
        openapi_url=reference.OPENAPI_PATH,
        modes=MODES,
    )


@bp.post("/reference/try")
def reference_try():
    """Call one documented operation with the workspace's key, through the console's ApiClient (so it
    is in the request log); the answer is the exchange, its secret masked."""
    doc = reference.document() or {}
    op = reference.find_operation(doc, request.form.get("method", ""), request.form.get("path", ""))
    if op is None:
        abort(404)
    mode = request.form.get("mode", SANDBOX)
    if mode not in MODES:  # the form offers only these: a tampered request gets the error page, saying why
        raise ValidationFailed([FieldError("mode", f"must be one of {', '.join(MODES)}")])
    path = reference.fill_path(op, {n: request.form.get(f"path.{n}", "") for n in op.path_params})
    if path is None:
        return render_template("console/_try_result.html", message="Fill in every path parameter.")
    params = {n: request.form.get(f"query.{n}", "").strip() for n in op.query_params}
    body = None
    raw = request.form.get("body", "").strip()
    if op.has_body and raw:
        try:
            body = jsontext.loads(raw)
        except ValueError:
            return render_template("console/_try_result.html", message="The body is not valid JSON.")
    workspace = ensure_workspace()
    key = console_key(workspace, mode)
    if key is None:  # sent anyway, it would only show a 401 without saying why
        return render_template(
            "console/_try_result.html",
            message=f"This workspace has no active {mode} key, so the API would refuse the call (401).",
            missing_key=True,
        )
    row = ApiClient(workspace.id, mode, key).call(op.method, path, body=body, params=params, step="reference")
    return render_template("console/_try_result.html", message=None, exchange=exchange_view(row, key))
