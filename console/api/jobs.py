"""GET /v1/jobs (filtered, paginated) and GET /v1/jobs/{id}."""

from __future__ import annotations

from flask import g, jsonify, request

from console.api.conventions import current_workspace, from_console
from console.api.pagination import paginate
from console.core.routes import Routes
from console.extensions import db
from console.jobs import services
from console.jobs.models import Job
from console.jobs.serializers import serialize_job
from console.training import holds as training

routes = Routes()

ORDER_BY = (Job.__table__.c.created_at, Job.__table__.c.id)


@routes.get("/jobs")
def list_jobs():
    filters = {name: request.args[name] for name in services.JOB_FILTERS if name in request.args}
    query, params = services.jobs_query(g.workspace.id, g.api_mode, filters)
    body = paginate(
        query, order_by=ORDER_BY, serialize=serialize_job, columns=True, params=params, uuids_as_text=True
    )
    if training.finds_held_token(g.workspace, filters.get("link_token_id"), by_console=from_console()):
        training.note_held_token_found(current_workspace())
        db.session.commit()
    return jsonify(body)


@routes.get("/jobs/<job_id>")
def get_job(job_id: str):
    job = services.get_job(g.workspace.id, g.api_mode, job_id)
    return jsonify({"data": serialize_job(job)})
