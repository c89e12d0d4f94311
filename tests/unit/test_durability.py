"""A restart loses nothing: scheduled transitions live in the database and still happen, once each."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select

from console import create_app
from console.clock import moves
from console.events.models import Event
from console.extensions import db
from console.jobs.models import Job, JobTransition
from console.scheduler.models import ScheduledTask
from console.worker import start_in_process
from console.workspaces.models import Workspace
from tests.conftest import base_config
from tests.factories import new_switch

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]

SCHEDULER_ONLY = ("console.scheduler.loop.SchedulerLoop",)
FINAL = {
    "pending_then_success": "success",
    "pending_then_error": "error",
    "pending_until_window_ends": "error",
    "federal_sent": "sent",
    "federal_failure": "failure",
}
# One task each, plus 23 hourly retries before the window of pending_until_window_ends ends.
EXPECTED_FIRED = len(FINAL) + 23


def _start_jobs_then_stop(app, workspace_id) -> dict[str, uuid.UUID]:
    """Create pending and processing jobs with a worker running, then stop the worker and the app."""
    worker = start_in_process(app, SCHEDULER_ONLY)
    with app.app_context():
        jobs = {scenario: new_switch(workspace_id, scenario).id for scenario in FINAL}
        assert db.session.scalar(select(func.count(ScheduledTask.id))) == len(FINAL)
    worker.stop()
    with app.app_context():
        db.session.remove()
        db.engine.dispose()
    return jobs


def _check_every_transition_happened_once(jobs: dict[str, uuid.UUID]) -> None:
    for scenario, job_id in jobs.items():
        job = db.session.get(Job, job_id)
        assert job.outcome == FINAL[scenario], scenario
        steps = db.session.scalars(select(JobTransition).where(JobTransition.job_id == job_id)).all()
        events = db.session.scalars(select(Event).where(Event.job_id == job_id)).all()
        assert len(steps) == len(events) == 2, scenario
        assert {s.event_id for s in steps} == {e.id for e in events}
    assert db.session.scalar(select(func.count(ScheduledTask.id)).where(ScheduledTask.status != "done")) == 0


@pytest.mark.parametrize("with_worker", [False, True], ids=["advance-alone", "advance-beside-a-worker"])
def test_scheduled_transitions_survive_a_restart(app, workspace, database_url, with_worker):
    jobs = _start_jobs_then_stop(app, workspace.id)
    restarted = create_app(base_config(database_url))
    worker = start_in_process(restarted, SCHEDULER_ONLY) if with_worker else None
    try:
        with restarted.app_context():
            ws = db.session.get(Workspace, uuid.UUID(workspace.id))
            # Five days cover one business day from any weekday, holidays included, and the 24-hour window.
            fired = moves.advance(ws, seconds=5 * 86400)
            assert len(fired) == EXPECTED_FIRED
            assert len({f["task_id"] for f in fired}) == EXPECTED_FIRED
            _check_every_transition_happened_once(jobs)
            assert moves.advance(ws, seconds=5 * 86400) == []
            _check_every_transition_happened_once(jobs)
    finally:
        if worker is not None:
            worker.stop()
        with restarted.app_context():
            db.session.remove()
            db.engine.dispose()
