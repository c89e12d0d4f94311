"""The job outcome state machine and every sandbox scenario, end to end through the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from console.clock import moves
from console.clock import services as clock
from console.core.timeutil import utcnow
from console.events.models import Event
from console.extensions import db
from console.jobs import plans
from console.jobs.models import Job, JobTransition
from console.jobs.plans import OUTCOMES
from console.jobs.services import TRANSITIONS, IllegalTransition, job_payload, start_switch, transition
from console.scheduler.models import ScheduledTask
from console.workspaces.models import Workspace
from tests.factories import PARAMS, make_parties, new_switch, set_clock

pytestmark = pytest.mark.both_backends

LEGAL = [(f, t) for f, targets in TRANSITIONS.items() for t in sorted(targets)]
ILLEGAL = [(f, t) for f in (None, *OUTCOMES) for t in OUTCOMES if (f, t) not in LEGAL]


def events_of(job: Job) -> list[Event]:
    return list(db.session.scalars(select(Event).where(Event.job_id == job.id).order_by(Event.created_at)))


def _bare_job(workspace_id) -> Job:
    token, account = make_parties(workspace_id)
    at = utcnow()
    return Job(
        workspace_id=token.workspace_id,
        mode="sandbox",
        account_id=account.id,
        link_token_id=token.id,
        end_user_id="user-1",
        params=PARAMS,
        scenario="success",
        timestamp=at,
        first_attempt_at=at,
    )


def _path_to(outcome: str | None) -> list[str]:
    """Legal outcomes leading to `outcome` from creation (sent is only reachable via processing)."""
    return {None: [], "sent": ["processing", "sent"]}.get(outcome, [outcome])


def _job_in(workspace_id, outcome: str | None) -> Job:
    job = _bare_job(workspace_id)
    for step in _path_to(outcome):
        transition(job, step, at=utcnow())
    return job


@pytest.mark.parametrize(("from_outcome", "to_outcome"), LEGAL)
def test_every_legal_transition_is_recorded_with_one_event(app, workspace, from_outcome, to_outcome):
    with app.app_context():
        job = _job_in(workspace.id, from_outcome)
        at = utcnow() + timedelta(minutes=5)
        step = transition(job, to_outcome, at=at, reason="because")
        db.session.commit()
        assert (job.outcome, job.timestamp) == (to_outcome, at)
        assert (step.from_outcome, step.to_outcome, step.reason, step.at) == (
            from_outcome,
            to_outcome,
            "because",
            at,
        )
        assert step.sequence == len(job.transitions)
        event = db.session.get(Event, step.event_id)
        assert event.type == "direct_deposit_switch.added"
        assert event.payload == job_payload(job) and event.payload["outcome"] == to_outcome
        assert event.created_at == at and event.job_id == job.id and event.end_user_id == "user-1"
        assert len(events_of(job)) == len(job.transitions)


@pytest.mark.parametrize(("from_outcome", "to_outcome"), ILLEGAL)
def test_every_other_transition_raises_and_writes_nothing(app, workspace, from_outcome, to_outcome):
    with app.app_context():
        job = _job_in(workspace.id, from_outcome)
        db.session.flush()
        events_before = db.session.scalar(select(func.count(Event.id)))
        with pytest.raises(IllegalTransition):
            transition(job, to_outcome, at=utcnow())
        assert job.outcome == from_outcome
        assert db.session.scalar(select(func.count(Event.id))) == events_before
        assert len(job.transitions) == len(_path_to(from_outcome))


def test_terminal_outcomes_allow_nothing():
    for outcome in ("success", "error", "sent", "failure"):
        assert outcome not in TRANSITIONS


def test_payload_has_the_job_fields_and_end_user_id(app, workspace):
    with app.app_context():
        job = new_switch(workspace.id, "success")
        assert set(job_payload(job)) == {
            "id",
            "account_id",
            "end_user_id",
            "link_token_id",
            "name",
            "timestamp",
            "outcome",
            "params",
        }
        assert job_payload(job)["name"] == "direct_deposit_switch"


def test_allocation_type_and_value_are_dropped_without_action(app, workspace):
    params = {"allocation": {"type": "amount", "value": 5, "target": {"account_type": "checking"}}}
    with app.app_context():
        job = new_switch(workspace.id, "success", params=params)
        assert job.params == {"allocation": {"target": {"account_type": "checking"}}}
        assert events_of(job)[0].payload["params"] == job.params


def test_end_user_id_comes_from_the_account_when_the_token_has_none(app, workspace):
    with app.app_context():
        token, account = make_parties(workspace.id, end_user_id=None)
        account.end_user_id = "first-connection-user"
        job = start_switch(link_token=token, account=account, params={}, scenario="success")
        assert job.end_user_id == "first-connection-user"


def test_unknown_and_sandbox_only_scenarios_are_refused(app, workspace):
    with app.app_context():
        token, account = make_parties(workspace.id)
        with pytest.raises(ValueError, match="unknown"):
            start_switch(link_token=token, account=account, params={}, scenario="nope")
        live_token, live_account = make_parties(workspace.id, mode="production")
        with pytest.raises(ValueError, match="only in the sandbox"):
            start_switch(
                link_token=live_token, account=live_account, params={}, scenario="pending_then_success"
            )
        job = start_switch(link_token=live_token, account=live_account, params={}, scenario="federal_sent")
        assert (job.mode, job.outcome, job.scenario) == ("production", "processing", "federal_sent")


@pytest.mark.parametrize("scenario", ["success", "error", "federal_rejected"])
def test_immediate_scenarios_write_one_event_and_schedule_nothing(app, workspace, scenario):
    with app.app_context():
        job = new_switch(workspace.id, scenario)
        assert job.outcome == plans.PLANS[scenario].first_outcome
        assert [e.payload["outcome"] for e in events_of(job)] == [job.outcome]
        assert db.session.scalar(select(func.count(ScheduledTask.id))) == 0


@pytest.mark.parametrize(
    ("scenario", "final"), [("pending_then_success", "success"), ("pending_then_error", "error")]
)
def test_pending_resolves_on_the_retry_sixty_seconds_later(app, workspace, scenario, final):
    with app.app_context():
        job = new_switch(workspace.id, scenario)
        ws = db.session.get(Workspace, job.workspace_id)
        assert job.outcome == "pending"
        assert moves.advance(ws, seconds=45) == []
        fired = moves.advance(ws, seconds=15)
        assert [f["kind"] for f in fired] == ["job.retry"]
        db.session.refresh(job)
        assert job.outcome == final
        assert job.timestamp == job.first_attempt_at + timedelta(seconds=60)
        assert [e.payload["outcome"] for e in events_of(job)] == ["pending", final]
        assert [t.reason for t in job.transitions][1] == plans.RETRY_REASONS[final]


def test_pending_until_window_ends_retries_hourly_then_errors(app, workspace):
    with app.app_context():
        job = new_switch(workspace.id, "pending_until_window_ends")
        ws = db.session.get(Workspace, job.workspace_id)
        fired = moves.advance(ws, seconds=23 * 3600)
        assert len(fired) == 23 and {f["kind"] for f in fired} == {"job.retry"}
        db.session.refresh(job)
        assert job.outcome == "pending" and len(events_of(job)) == 1
        attempts = db.session.scalars(
            select(ScheduledTask).where(ScheduledTask.status == "done").order_by(ScheduledTask.due_at)
        ).all()
        assert [t.result["attempt"] for t in attempts] == list(range(1, 24))
        assert [t.due_at - job.first_attempt_at for t in attempts] == [
            timedelta(hours=h) for h in range(1, 24)
        ]
        fired = moves.advance(ws, seconds=3600)
        assert len(fired) == 1
        db.session.refresh(job)
        assert job.outcome == "error"
        assert job.timestamp == job.first_attempt_at + plans.RETRY_WINDOW
        assert job.transitions[-1].reason == "retry window ended"
        assert [e.payload["outcome"] for e in events_of(job)] == ["pending", "error"]


@pytest.mark.parametrize(("scenario", "final"), [("federal_sent", "sent"), ("federal_failure", "failure")])
def test_federal_processing_resolves_after_one_business_day(app, workspace, scenario, final):
    with app.app_context():
        set_clock(workspace.id, datetime(2024, 8, 30, 15, 0, tzinfo=UTC))  # Friday before Labor Day
        job = new_switch(
            workspace.id, scenario, params={"allocation": {"target": {"account_type": "checking"}}}
        )
        ws = db.session.get(Workspace, job.workspace_id)
        assert job.outcome == "processing"
        assert moves.advance(ws, seconds=3 * 86400) == []  # Saturday, Sunday, Labor Day Monday
        fired = moves.advance_business_days(ws, 1)
        assert [f["kind"] for f in fired] == ["job.federal_review"]
        db.session.refresh(job)
        assert job.outcome == final
        assert job.timestamp.date() == datetime(2024, 9, 3).date()
        events = events_of(job)
        assert [e.payload["outcome"] for e in events] == ["processing", final]
        if final == "sent":
            assert events[1].payload["params"]["action"] == "full_switch"
            assert "action" not in events[0].payload["params"]


def test_a_retry_of_a_job_no_longer_pending_changes_nothing(app, workspace):
    with app.app_context():
        job = new_switch(workspace.id, "pending_then_success")
        transition(job, "error", at=clock.now(db.session.get(Workspace, job.workspace_id)), reason="manual")
        db.session.commit()
        fired = moves.advance(db.session.get(Workspace, job.workspace_id), seconds=120)
        assert "skipped" in fired[0]["summary"]
        db.session.refresh(job)
        assert job.outcome == "error" and len(events_of(job)) == 2


def test_transitions_are_numbered_in_order(app, workspace):
    with app.app_context():
        job = new_switch(workspace.id, "pending_then_success")
        moves.advance(db.session.get(Workspace, job.workspace_id), seconds=60)
        rows = db.session.scalars(
            select(JobTransition).where(JobTransition.job_id == job.id).order_by(JobTransition.sequence)
        ).all()
        assert [(r.sequence, r.from_outcome, r.to_outcome) for r in rows] == [
            (1, None, "pending"),
            (2, "pending", "success"),
        ]
