"""The simulated world: payroll platforms, employers, people and benefit programs, read-only."""

from __future__ import annotations

from flask import abort, g, render_template, request
from sqlalchemy import select

from console.core.routes import Routes
from console.extensions import db
from console.modes import MODES
from console.web.shared.blueprint import render_htmx
from console.world import services as world
from console.world.models import Beneficiary

routes = Routes()
WORLD_TABS = ("platforms", "employers", "people", "benefits")


@routes.get("/world", endpoint="world")
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
    return render_htmx("console/world/world.html", "console/world/_world_rows.html", **ctx)


@routes.get("/world/people/<person_id>")
def world_person(person_id: str):
    """A person with their credentials and, per mode, the deposit split this workspace sees."""
    mode = request.args.get("mode", "development")
    if mode not in MODES:
        mode = "development"
    try:
        person = world.person_summary(person_id, workspace_id=g.console_workspace.id, mode=mode)
    except (LookupError, ValueError):
        abort(404)
    return render_template("console/world/person.html", person=person, mode=mode, modes=MODES)


@routes.get("/world/platforms/<platform_id>")
def world_platform(platform_id: str):
    platform = world.get_platform(platform_id)
    if platform is None:
        abort(404)
    employers = list(db.session.scalars(world.list_employers(platform_id=platform.id)))
    return render_template("console/world/platform.html", platform=platform, employers=employers)
