"""The scenario gallery (one click per sandbox test-data row) and the Link launcher page."""

from __future__ import annotations

from itertools import groupby

from flask import abort, g, redirect, render_template, request, url_for

from console.core.routes import Routes
from console.extensions import db
from console.web.link import guide as linkguide
from console.web.link import tokens as linktokens
from console.web.scenarios import gallery as scenarios
from console.web.shared.apiclient import response_json
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import api_client

routes = Routes()


@routes.get("/scenarios", endpoint="scenarios")
def scenarios_page():
    rows = scenarios.all_scenarios()
    groups = [(name, list(items)) for name, items in groupby(rows, key=lambda s: s.group)]
    return render_template("console/scenarios/scenarios.html", groups=groups)


@routes.post("/scenarios/<key>/run")
def run_scenario(key: str):
    """Create the row's Link token through the API, then open Link or complete it headlessly."""
    scenario = scenarios.get(key)
    if scenario is None:
        abort(404)
    workspace = g.console_workspace
    client = api_client(workspace)
    created = client.call("POST", "/link_tokens", body=scenario.token_body(), step="scenario")
    data = (response_json(created) or {}).get("data") or {}
    if created.status != 200 or not data.get("id"):
        return render_template(
            "console/scenarios/scenario_failed.html",
            scenario=scenario,
            exchanges=[exchange_view(created, client.key)],
        ), 502
    linktokens.remember(workspace.id, data["id"], data["token"], f"scenario:{key}")
    db.session.commit()
    if request.form.get("via") == "browser":
        return redirect(url_for("console.launch", link_token_id=data["id"], scenario=key))
    completed = client.call(
        "POST", f"/sandbox/link_tokens/{data['id']}/complete", body=scenario.completion, step="scenario"
    )
    return redirect(
        url_for(
            "console.link_token_timeline",
            link_token_id=data["id"],
            exchanges=f"{created.id},{completed.id}",
            scenario=key,
        )
    )


@routes.get("/launch", endpoint="launch")
def launch_page():
    """Open Link with a token this session created, with what to enter and the SDK's client events beside it."""
    link_token_id = request.args.get("link_token_id", "")
    kept = linktokens.kept(g.console_workspace.id, link_token_id)
    link = linkguide.view(g.console_workspace, kept.link_token_id, kept.token, kept.origin) if kept else None
    scenario = scenarios.get(request.args.get("scenario", ""))
    if scenario is None and link is not None and (link.origin or "").startswith("scenario:"):
        scenario = scenarios.get(link.origin.removeprefix("scenario:"))
    return render_template(
        "console/scenarios/launch.html",
        link=link,
        asked_for=link_token_id,
        scenario=scenario,
        # Only straight after "Run in Link": a reload shows the token's state instead of reopening it.
        autoopen=bool(link and link.state.kind == linkguide.UNUSED and request.args.get("scenario")),
    )
