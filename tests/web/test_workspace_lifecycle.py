"""Visitor workspaces: reading pages writes nothing, reset deletes, idle ones are collected, named ones kept."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text, update

from console.conformance.models import ConformanceReport, ConformanceRun
from console.core.timeutil import utcnow
from console.extensions import db
from console.idempotency.models import IdempotencyKey
from console.keys.models import ApiKey
from console.requestlog.writer import writer_for
from console.scheduler.services import schedule
from console.training.models import Cohort, CohortMember
from console.webhooks.models import RelayRoundTrip, WebhookAttempt, WebhookDelivery
from console.workspaces.collection import CollectionLoop, collect_idle
from console.workspaces.models import Workspace
from console.workspaces.services import ACTIVITY_RESOLUTION, create_workspace, demo_workspace
from console.world.models import DepositAllocation, Person, Platform
from tests.web.conftest import Visitor
from tests.web.helpers import deliver_workspace_events, run_headless

# Every table that holds a workspace's rows. A new table with a workspace_id must be added here
# (test_every_scoped_table_is_listed fails until it is), so the collection test covers it.
OWNED = {
    "api_keys": "workspace_id",
    "conformance_runs": "workspace_id",
    "link_tokens": "workspace_id",
    "link_sessions": "workspace_id",
    "accounts": "workspace_id",
    "jobs": "workspace_id",
    "job_transitions": "job_id IN (SELECT id FROM jobs WHERE workspace_id = :ws)",
    "events": "workspace_id",
    "webhooks": "workspace_id",
    "webhook_deliveries": "workspace_id",
    "webhook_attempts": "delivery_id IN (SELECT id FROM webhook_deliveries WHERE workspace_id = :ws)",
    "scheduled_tasks": "workspace_id",
    "request_log_entries": "workspace_id",
    "console_inbox_messages": "workspace_id",
    "console_link_tokens": "workspace_id",
    "console_inbox_settings": "workspace_id",
    "conformance_reports": "workspace_id",
    "idempotency_keys": "api_key_id IN (SELECT id FROM api_keys WHERE workspace_id = :ws)",
    "relay_round_trips": "webhook_id IN (SELECT id FROM webhooks WHERE workspace_id = :ws)",
    "key_usage_days": "workspace_id",
    "world_deposit_allocations": "workspace_id",
    "training_members": "workspace_id",
}


def _ws_param(ws: uuid.UUID):
    # Uuid columns are stored as 32 hex digits on SQLite and as uuid on PostgreSQL.
    return ws.hex if db.engine.dialect.name == "sqlite" else ws


def owned_counts(ws: uuid.UUID) -> dict[str, int]:
    counts = {}
    for table, where in OWNED.items():
        condition = where if " " in where else f"{where} = :ws"
        counts[table] = db.session.scalar(
            text(f"SELECT count(*) FROM {table} WHERE {condition}"), {"ws": _ws_param(ws)}
        )
    return counts


def all_counts() -> dict[str, int]:
    return {
        table.name: db.session.scalar(select(func.count()).select_from(table))
        for table in db.metadata.sorted_tables
    }


def console_get_urls(app) -> list[str]:
    """A URL for every GET route of the console, with real world ids where a route takes one."""
    with app.app_context():
        person = db.session.scalars(select(Person.slug).limit(1)).one()
        platform = db.session.scalars(select(Platform.id).limit(1)).one()
    values = {"person_id": person, "platform_id": str(platform)}
    urls = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("console.") and "GET" in rule.methods:
            args = {name: values.get(name, str(uuid.uuid4())) for name in rule.arguments}
            urls.append(rule.build(args)[1])
    return sorted(urls)


def test_every_scoped_table_is_listed(app):
    scoped = {t.name for t in db.metadata.sorted_tables if "workspace_id" in t.c}
    assert scoped - {"workspaces"} <= set(OWNED)


def test_reading_every_console_page_without_a_cookie_writes_nothing(app):
    urls = console_get_urls(app)
    assert {"/", "/events", "/keys", "/webhooks", "/clock", "/launch", "/world"} <= set(urls)
    with app.app_context():
        before = all_counts()
    for url in urls:
        for htmx in (False, True):
            headers = {"HX-Request": "true"} if htmx else {}
            response = app.test_client().get(url, headers=headers)
            # 410: a trainee's progress poll with no class to show (console.web.training: its page stops polling).
            assert response.status_code in (200, 204, 404, 410), (url, response.status_code)
    with app.app_context():
        assert all_counts() == before


def test_a_page_without_a_workspace_says_the_first_action_creates_it(client):
    page = client.get("/").get_data(as_text=True)
    assert "Create my workspace" in page and "No workspace yet" in page
    assert "Reset workspace" not in page


def test_the_first_htmx_action_creates_the_workspace_and_swaps_in_its_bar(app, client):
    visitor = Visitor(client)
    visitor.get("/")
    html = visitor.post("/walkthrough/webhook/inbox", htmx=True).get_data(as_text=True)
    assert 'id="workspace-bar"' in html and 'hx-swap-oob="true"' in html
    assert str(visitor.workspace_id)[:8] in html
    assert 'id="step-key"' in html  # the key the action created appears in step 1
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Workspace)) == 1


def _make_idle(ws: uuid.UUID, days: float = 31) -> None:
    db.session.execute(
        update(Workspace).where(Workspace.id == ws).values(last_active_at=utcnow() - timedelta(days=days))
    )
    db.session.commit()


def _fill(app, client, visitor) -> None:
    """Give a visitor's workspace a row in every owned table."""
    run_headless(visitor, "user_good")
    visitor.post("/walkthrough/link-token", {"required_jobs": "direct_deposit_switch", "org_name": "Acme"})
    visitor.post("/inbox/behaviour", {"behaviour": "ok"})
    deliver_workspace_events(app, client, visitor.workspace_id)
    writer_for(app).flush()  # the API calls' usage rows (key_usage_days)
    with app.app_context():
        workspace = db.session.get(Workspace, visitor.workspace_id)
        schedule(workspace, "job.retry", utcnow() + timedelta(days=1), {})
        delivery = db.session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.workspace_id == workspace.id)
        ).first()
        db.session.add(
            WebhookAttempt(
                delivery_id=delivery.id,
                webhook_id=delivery.webhook_id,
                event_id=delivery.event_id,
                number=1,
                at=utcnow(),
                sent_timestamp=0,
                outcome="delivered",
                status_code=200,
                latency_ms=1,
            )
        )
        key = db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == workspace.id)).first()
        later = utcnow() + timedelta(days=1)
        db.session.add(
            IdempotencyKey(
                api_key_id=key.id, key="k1", request_hash="0" * 64, locked_at=utcnow(), expires_at=later
            )
        )
        db.session.add(
            ConformanceReport(
                workspace_id=workspace.id,
                mode="sandbox",
                webhook_id=delivery.webhook_id,
                passed=True,
                ran_at=utcnow(),
            )
        )
        db.session.add(
            ConformanceRun(
                workspace_id=workspace.id,
                mode="sandbox",
                webhook_id=delivery.webhook_id,
                status="done",
                created_at=utcnow(),
            )
        )
        db.session.add(
            RelayRoundTrip(
                webhook_id=delivery.webhook_id,
                method="POST",
                body="{}",
                expires_at=later,
                created_at=utcnow(),
            )
        )
        # A switched payroll record: the workspace's copy of a seeded allocation line.
        line = db.session.scalars(
            select(DepositAllocation).where(DepositAllocation.workspace_id.is_(None))
        ).first()
        db.session.add(
            DepositAllocation(
                employment_id=line.employment_id,
                workspace_id=workspace.id,
                mode="sandbox",
                priority=99,
                allocation_type="remainder",
                routing_number=line.routing_number,
                account_number=line.account_number,
                account_type=line.account_type,
            )
        )
        # A training membership (trainees' workspaces are kept, but deleting one must take it along).
        cohort = Cohort(
            name="Class", exercises=["link_token"], join_token=uuid.uuid4().hex, trainer_secret_hash="0" * 64
        )
        db.session.add(cohort)
        db.session.flush()
        db.session.add(
            CohortMember(cohort_id=cohort.id, workspace_id=workspace.id, name="Ada", joined_at=utcnow())
        )
        db.session.commit()


def test_the_collector_deletes_an_idle_visitor_workspace_and_everything_it_owns(app):
    idle, named, active = (Visitor(app.test_client()).start() for _ in range(3))
    for visitor in (idle, named, active):
        _fill(app, visitor.client, visitor)
    assert named.post("/workspace/keep", {"name": "Training room 3"}).status_code == 302
    with app.app_context():
        cli_made = create_workspace("From the CLI").id
        demo = demo_workspace().id
        db.session.commit()
        for ws in (idle.workspace_id, named.workspace_id, cli_made, demo):
            _make_idle(ws)
        before = {ws: owned_counts(ws) for ws in (idle.workspace_id, named.workspace_id, active.workspace_id)}
        empty = [t for t, n in before[idle.workspace_id].items() if n == 0]
        assert not empty, f"the idle workspace should own a row in every table: {empty}"
        baseline = db.session.scalar(
            text("SELECT count(*) FROM world_deposit_allocations WHERE workspace_id IS NULL")
        )

        assert collect_idle() == [idle.workspace_id]

        assert db.session.get(Workspace, idle.workspace_id) is None
        assert set(owned_counts(idle.workspace_id).values()) == {0}
        for ws in (named.workspace_id, active.workspace_id):
            assert owned_counts(ws) == before[ws]
        assert {db.session.get(Workspace, ws) is not None for ws in (cli_made, demo)} == {True}
        assert baseline == db.session.scalar(
            text("SELECT count(*) FROM world_deposit_allocations WHERE workspace_id IS NULL")
        )
        assert collect_idle() == []
    # The collected visitor is simply a new visitor: pages show the blank state, an action starts afresh.
    assert "No workspace yet" in idle.get("/").get_data(as_text=True)


def test_workspace_idle_days_sets_the_threshold_and_zero_turns_collection_off(app):
    visitor = Visitor(app.test_client()).start()
    with app.app_context():
        _make_idle(visitor.workspace_id, days=3)
        assert collect_idle() == []  # 30 days by default
        app.config["WORKSPACE_IDLE_DAYS"] = 0
        _make_idle(visitor.workspace_id, days=365)
        assert collect_idle() == []
        app.config["WORKSPACE_IDLE_DAYS"] = 2
        assert collect_idle() == [visitor.workspace_id]


def test_the_worker_loop_collects(app):
    visitor = Visitor(app.test_client()).start()
    with app.app_context():
        _make_idle(visitor.workspace_id)
    assert CollectionLoop(app).run_once() == 1
    with app.app_context():
        assert db.session.get(Workspace, visitor.workspace_id) is None


def test_activity_is_noted_at_most_hourly_by_pages_and_by_the_api(app, visitor):
    def last_active():
        with app.app_context():
            return db.session.get(Workspace, visitor.workspace_id).last_active_at

    with app.app_context():
        _make_idle(visitor.workspace_id)
    visitor.get("/events")
    first = last_active()
    assert utcnow() - first < timedelta(minutes=1)
    visitor.get("/keys")
    assert last_active() == first  # within the hour: no second write

    with app.app_context():
        _make_idle(visitor.workspace_id)
        assert collect_idle(utcnow() - timedelta(days=2)) == []  # not idle long enough then
    # A call with the workspace's key from the developer's own backend counts as activity too.
    from tests.conftest import Api
    from tests.web.helpers import sandbox_secret

    api = Api(app.test_client(), sandbox_secret(app, visitor.workspace_id))
    assert api.get("/jobs").status_code == 200
    assert utcnow() - last_active() < ACTIVITY_RESOLUTION
    with app.app_context():
        assert collect_idle() == []


def test_reset_deletes_the_old_workspace_with_everything_it_owns(app, client, visitor):
    _fill(app, client, visitor)
    first = visitor.workspace_id
    assert visitor.post("/workspace/reset").status_code == 302
    assert visitor.workspace_id != first
    with app.app_context():
        assert db.session.get(Workspace, first) is None
        assert set(owned_counts(first).values()) == {0}
        assert db.session.scalar(select(func.count()).select_from(Workspace)) == 1


def test_reset_leaves_a_kept_workspace_in_place(app, visitor):
    visitor.post("/workspace/keep", {"name": "Demo for Acme"})
    first = visitor.workspace_id
    visitor.post("/workspace/reset")
    assert visitor.workspace_id != first
    with app.app_context():
        kept = db.session.get(Workspace, first)
        assert kept is not None and kept.kept and kept.name == "Demo for Acme"


def test_keeping_a_workspace_names_it(app, visitor):
    page = visitor.get("/keys").get_data(as_text=True)
    assert "Keep this workspace" in page
    response = visitor.post(
        "/workspace/keep", {"name": "  Sales demo  "}, headers={"Referer": "http://localhost/keys"}
    )
    assert response.status_code == 302 and response.headers["Location"] == "/keys"
    page = visitor.get("/keys").get_data(as_text=True)
    assert (
        "Sales demo" in page
        and "deleted only after 365 days without a visit or API call" in page
        and "Keep this workspace" not in page
    )
    with app.app_context():
        workspace = db.session.get(Workspace, visitor.workspace_id)
        assert (workspace.name, workspace.kept, workspace.named_in_console) == ("Sales demo", True, True)


def test_a_workspace_named_in_the_console_is_collected_after_the_longer_idle_time(app):
    """Naming is free, so a named workspace needs a lifecycle too (a bot names what it creates); the
    operator's workspaces (the CLI's, the demo one) have none."""
    named = Visitor(app.test_client()).start()
    assert named.post("/workspace/keep", {"name": "Acme CI"}).status_code == 302
    with app.app_context():
        cli_made = create_workspace("From the CLI").id
        demo = demo_workspace().id
        db.session.commit()
        for ws in (named.workspace_id, cli_made, demo):
            _make_idle(ws, days=364)
        assert collect_idle() == []  # past the visitor's 30 days, within the named one's 365
        for ws in (named.workspace_id, cli_made, demo):
            _make_idle(ws, days=366)
        app.config["WORKSPACE_NAMED_IDLE_DAYS"] = 0
        assert collect_idle() == []  # 0: named workspaces are kept for good
        app.config["WORKSPACE_NAMED_IDLE_DAYS"] = 365
        assert collect_idle() == [named.workspace_id]
        assert db.session.get(Workspace, named.workspace_id) is None
        assert {db.session.get(Workspace, ws) is not None for ws in (cli_made, demo)} == {True}
        app.config["WORKSPACE_IDLE_DAYS"] = 0  # the visitor's collection off: the named one's still runs
        named_again = create_workspace("Named later")
        named_again.named_in_console = True
        named_again_id = named_again.id
        db.session.commit()
        _make_idle(named_again_id, days=400)
        assert collect_idle() == [named_again_id]


@pytest.mark.parametrize("name", ["", "   ", "x" * 121])
def test_a_bad_name_is_refused_with_a_message(app, visitor, name):
    response = visitor.post("/workspace/keep", {"name": name}, headers={"Referer": "https://evil.example/x"})
    assert response.status_code == 302 and response.headers["Location"] == "/"
    page = visitor.get("/").get_data(as_text=True)
    assert "The workspace was not kept" in page
    with app.app_context():
        assert db.session.get(Workspace, visitor.workspace_id).kept is False


def test_a_name_with_a_nul_is_refused_by_the_consoles_parameter_check(app, visitor):
    response = visitor.post("/workspace/keep", {"name": "bad\x00name"})
    assert response.status_code == 400 and "name" in response.get_data(as_text=True)
    with app.app_context():
        assert db.session.get(Workspace, visitor.workspace_id).kept is False


def test_keeping_says_a_fractional_named_idle_time_as_set(app, visitor):
    """`timedelta.days` would say "0 days" for half a day."""
    app.config["WORKSPACE_NAMED_IDLE_DAYS"] = 0.5
    try:
        visitor.post("/workspace/keep", {"name": "Half a day"})
        page = visitor.get("/keys").get_data(as_text=True)
    finally:
        app.config["WORKSPACE_NAMED_IDLE_DAYS"] = 365
    assert "deleted only after 0.5 days without a visit or API call" in page
