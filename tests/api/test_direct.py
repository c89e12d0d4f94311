"""`Direct` gives what `Connection.execute` gives (values, defaults, errors, listeners), on every backend."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Uuid, bindparam, event, exc, insert, inspect, select
from sqlalchemy.dialects import postgresql, sqlite

from console.core.timeutil import utcnow
from console.db.base import UTCDateTime
from console.db.direct import Direct, _quicker_bind, _quicker_processor, _uuid_text_processor
from console.db.rows import insert_now
from console.extensions import db
from console.jobs.models import Job
from console.jobs.serializers import JOB_COLUMNS
from console.keys import secrets as key_secrets
from console.keys.models import ApiKey
from console.keys.services import _key_by_hash
from console.scheduler.models import ScheduledTask
from console.scheduler.services import new_task
from console.workspaces.models import Workspace
from tests.factories import new_switch

pytestmark = pytest.mark.both_backends

_SOME_UUID = uuid.UUID("6f1c2a3b-4d5e-4f60-8a9b-0c1d2e3f4a5b")


def test_rows_match_connection_execute_for_every_column_type(app, workspace):
    """UUIDs, datetimes, strings, booleans, floats and NULLs come back converted exactly alike."""
    statement = _key_by_hash()
    digest = key_secrets.hash_secret(workspace.secrets["sandbox"])
    with app.app_context():
        connection = db.session.connection()
        expected = connection.execute(statement, {"digest": digest}).all()
        got = Direct(statement).rows(connection, {"digest": digest})
        assert len(expected) == 1
        assert [tuple(row) for row in got] == [tuple(row) for row in expected]
        assert [type(v) for v in got[0]] == [type(v) for v in expected[0]]
        assert Direct(statement).first(connection, {"digest": "no-such-hash"}) is None


def test_rows_offer_attribute_access_and_json_values(app, workspace):
    with app.app_context():
        job = new_switch(uuid.UUID(workspace.id), "success", params={"allocation": {"type": "amount"}})
        db.session.commit()
        statement = select(*JOB_COLUMNS).where(Job.__table__.c.id == bindparam("job_id"))
        connection = db.session.connection()
        (row,) = Direct(statement).rows(connection, {"job_id": job.id})
        (expected,) = connection.execute(statement, {"job_id": job.id}).all()
        assert row.id == expected.id == job.id
        assert row.timestamp == expected.timestamp
        assert row.params == expected.params and isinstance(row.params, dict)


def test_uuids_as_text_give_each_uuid_column_as_its_canonical_text(app, workspace):
    """Where a caller only writes UUIDs out (the job list), they come back as `str()` of the UUID, None kept."""
    with app.app_context():
        job = new_switch(uuid.UUID(workspace.id), "success")
        db.session.commit()
        table = Job.__table__
        statement = select(table.c.id, table.c.account_id, table.c.name, table.c.timestamp).where(
            table.c.id == bindparam("job_id")
        )
        connection = db.session.connection()
        (as_uuids,) = Direct(statement).rows(connection, {"job_id": job.id})
        (as_text,) = Direct(statement, uuids_as_text=True).rows(connection, {"job_id": job.id})
        assert as_text.id == str(as_uuids.id) == str(job.id) and type(as_text.id) is str
        assert as_text.account_id == (None if as_uuids.account_id is None else str(as_uuids.account_id))
        assert (as_text.name, as_text.timestamp) == (
            as_uuids.name,
            as_uuids.timestamp,
        )  # other types untouched


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.dialect()], ids=["sqlite", "postgresql"])
def test_the_uuid_text_processor_reads_every_form_as_uuid_does(dialect):
    standard = Uuid()._cached_result_processor(dialect, None)
    text_of = _uuid_text_processor(dialect, standard)
    forms = [_SOME_UUID.hex, _SOME_UUID.hex.upper(), str(_SOME_UUID), "{" + str(_SOME_UUID) + "}", "0" * 32]
    if dialect.name != "sqlite":
        forms = [_SOME_UUID, uuid.UUID(int=0)]  # the driver hands over UUID objects
    for form in [None, *forms]:
        expected = None if form is None else str(form if isinstance(form, uuid.UUID) else uuid.UUID(form))
        assert text_of(form) == expected, form
    if dialect.name == "sqlite":
        for bad in ("g" * 32, "-" + "0" * 31, "not-a-uuid-at-all"):
            with pytest.raises(ValueError):
                text_of(bad)


def test_values_written_into_the_statement_are_bound_too(app, workspace):
    """A literal in a reused statement (not a parameter at call time) still reaches the database."""
    keys = ApiKey.__table__
    statement = select(keys.c.id).where(keys.c.mode == "sandbox", keys.c.workspace_id == bindparam("ws"))
    with app.app_context():
        rows = Direct(statement).rows(db.session.connection(), {"ws": uuid.UUID(workspace.id)})
        assert [str(r.id) for r in rows] == [workspace.key_ids["sandbox"]]


def test_insert_fills_python_defaults_as_sqlalchemy_would(app, workspace):
    table = ScheduledTask.__table__
    task_id = uuid.uuid4()
    values = {
        "id": task_id,
        "workspace_id": uuid.UUID(workspace.id),
        "kind": "test.kind",
        "due_at": utcnow() + timedelta(hours=1),
        "run_after": utcnow() + timedelta(hours=1),
    }
    with app.app_context():
        before = utcnow()
        filled = Direct(insert(table), column_keys=list(values)).write(db.session.connection(), values)
        db.session.commit()
        assert filled["status"] == "pending" and filled["attempts"] == 0 and filled["payload"] == {}
        assert before <= filled["created_at"] <= utcnow()
        stored = db.session.get(ScheduledTask, task_id)
        assert (stored.status, stored.attempts, stored.payload) == ("pending", 0, {})
        assert stored.created_at == filled["created_at"]


def test_a_database_error_is_sqlalchemys_exception(app, workspace):
    keys = ApiKey.__table__
    values = {"id": uuid.UUID(workspace.key_ids["sandbox"]), "workspace_id": uuid.UUID(workspace.id)}
    with app.app_context():
        with pytest.raises(exc.IntegrityError):  # same primary key as an existing key
            Direct(insert(keys), column_keys=list(values)).write(db.session.connection(), values)
        db.session.rollback()


@pytest.mark.committing
def test_the_engines_cursor_listeners_run(app, workspace):
    """The SQLite write gate and the tests' query counters hang on these events."""
    seen = []
    with app.app_context():
        engine = db.engine

        def before(_conn, cursor, sql, params, _context, _many):
            seen.append(("before", cursor, sql))

        def after(_conn, cursor, sql, params, _context, _many):
            seen.append(("after", cursor is not None, sql))

        event.listen(engine, "before_cursor_execute", before)
        event.listen(engine, "after_cursor_execute", after)
        try:
            statement = select(ApiKey.__table__.c.id).where(ApiKey.__table__.c.label == bindparam("label"))
            Direct(statement).rows(db.session.connection(), {"label": "test"})
        finally:
            event.remove(engine, "before_cursor_execute", before)
            event.remove(engine, "after_cursor_execute", after)
    assert [entry[0] for entry in seen] == ["before", "after"]
    assert seen[1][1] is True and "api_keys" in seen[0][2]


def test_statements_with_expanding_parameters_are_refused(app):
    keys = ApiKey.__table__
    statement = select(keys.c.id).where(keys.c.id.in_(bindparam("ids", expanding=True)))
    with app.app_context(), pytest.raises(ValueError, match="expanding"):
        Direct(statement).rows(db.session.connection(), {"ids": [uuid.uuid4()]})


def test_write_many_inserts_every_row_as_given(app, workspace):
    table = ScheduledTask.__table__
    due = utcnow() + timedelta(hours=1)
    rows = [
        {
            "id": uuid.uuid4(),
            "workspace_id": uuid.UUID(workspace.id),
            "kind": f"test.kind.{n}",
            "payload": {"n": n, "nested": [n, {"x": None}]},
            "due_at": due,
            "run_after": due,
            "status": "pending",
            "attempts": n,
            "created_at": due - timedelta(minutes=n),
        }
        for n in range(3)
    ]
    with app.app_context():
        Direct(insert(table), column_keys=list(rows[0])).write_many(db.session.connection(), rows)
        db.session.commit()
        for row in rows:
            stored = db.session.get(ScheduledTask, row["id"])
            assert (stored.kind, stored.payload, stored.attempts) == (
                row["kind"],
                row["payload"],
                row["attempts"],
            )
            assert (stored.due_at, stored.created_at) == (row["due_at"], row["created_at"])


def test_a_parameter_missing_at_call_time_is_an_error_not_a_null(app):
    statement = select(ApiKey.__table__.c.id).where(ApiKey.__table__.c.label == bindparam("label"))
    with app.app_context(), pytest.raises(KeyError, match="label"):
        Direct(statement).rows(db.session.connection(), {})


def _new_tasks(workspace_id: str, count: int) -> list[ScheduledTask]:
    owner = db.session.get(Workspace, uuid.UUID(workspace_id))
    return [new_task(owner, "test.kind", utcnow() + timedelta(hours=1), {"n": n}) for n in range(count)]


def test_insert_now_writes_the_objects_and_leaves_them_detached(app, workspace):
    """On SQLite the first INSERT takes the write gate until the commit, and every other writer waits for
    it: nothing of the ORM runs from the first INSERT on, and the session is left with nothing to expire."""
    with app.app_context():
        tasks = _new_tasks(workspace.id, 2)
        states_at_first_insert = []

        def before(_conn, _cursor, sql, _params, _context, _many):
            if sql.lstrip().upper().startswith("INSERT") and not states_at_first_insert:
                states_at_first_insert.append([inspect(task).detached for task in tasks])

        event.listen(db.engine, "before_cursor_execute", before)
        try:
            insert_now(*tasks)
        finally:
            event.remove(db.engine, "before_cursor_execute", before)
        assert states_at_first_insert == [[True, True]]
        assert all(inspect(task).detached for task in tasks)
        assert not any(task in db.session for task in tasks)
        assert not db.session.new and not db.session.dirty  # nothing left for a flush
        assert tasks[0].status == "pending" and tasks[0].attempts == 0  # defaults set on the objects
        ids = [task.id for task in tasks]
        db.session.commit()
        db.session.expunge_all()
        stored = [db.session.get(ScheduledTask, task_id) for task_id in ids]
        assert [task.payload for task in stored] == [{"n": 0}, {"n": 1}]


def test_a_written_object_added_to_the_session_is_persistent_and_not_inserted_again(app, workspace):
    with app.app_context():
        (task,) = _new_tasks(workspace.id, 1)
        insert_now(task)
        db.session.add(task)
        assert inspect(task).persistent
        task.attempts = 3
        task_id = task.id
        db.session.commit()  # an UPDATE: a second INSERT of the same id would raise IntegrityError
        db.session.expunge_all()
        assert db.session.get(ScheduledTask, task_id).attempts == 3


def test_insert_now_leaves_the_objects_transient_when_an_insert_fails(app, workspace):
    with app.app_context():
        (first,) = _new_tasks(workspace.id, 1)
        first_id = first.id
        insert_now(first)
        db.session.commit()
        db.session.expunge_all()
        fresh, clash = _new_tasks(workspace.id, 2)
        clash.id = first_id  # the database refuses it: same primary key
        with pytest.raises(exc.IntegrityError):
            insert_now(fresh, clash)
        assert inspect(fresh).transient and inspect(clash).transient  # never written: no identity
        assert fresh not in db.session and clash not in db.session
        db.session.rollback()
        assert db.session.get(ScheduledTask, fresh.id) is None
        assert db.session.get(ScheduledTask, first_id).payload == {"n": 0}


@pytest.mark.parametrize(
    "type_, texts",
    [
        (Uuid(), [None, _SOME_UUID.hex, str(_SOME_UUID), "{" + str(_SOME_UUID) + "}", "0" * 32, "f" * 32]),
        (
            UTCDateTime(),
            [
                None,
                "2026-11-26 13:40:00.123456",
                "2026-11-26 13:40:00.000000",
                "2026-11-26 13:40:00",
                "2026-11-26",
                "1999-12-31 23:59:59.999999",
            ],
        ),
    ],
    ids=["uuid", "utc-datetime"],
)
def test_quicker_sqlite_processors_read_text_exactly_as_sqlalchemy_does(type_, texts):
    dialect = sqlite.dialect()
    standard = type_._cached_result_processor(dialect, None)
    quicker = _quicker_processor(type_, dialect, standard)
    assert quicker is not standard  # the quicker path is the one under test
    for text in texts:
        expected, got = standard(text), quicker(text)
        assert got == expected and type(got) is type(expected), text
        if isinstance(expected, uuid.UUID):
            assert (got.int, got.is_safe, str(got)) == (expected.int, expected.is_safe, str(expected))
        if expected is not None and not isinstance(expected, uuid.UUID):
            assert got.tzinfo == expected.tzinfo == UTC, text
    for bad in ("not-a-uuid-at-all", "2026-13-45 99:99:99"):
        with pytest.raises(ValueError):
            standard(bad)
        with pytest.raises(ValueError):
            quicker(bad)


def test_other_databases_keep_sqlalchemys_processors():
    dialect = postgresql.dialect()
    for type_ in (Uuid(), UTCDateTime()):
        standard = type_._cached_result_processor(dialect, None)
        assert _quicker_processor(type_, dialect, standard) is standard
        standard_bind = type_._cached_bind_processor(dialect)
        assert _quicker_bind(type_, dialect, standard_bind) is standard_bind


def test_the_quicker_sqlite_datetime_bind_stores_the_text_sqlalchemy_would():
    dialect = sqlite.dialect()
    standard = UTCDateTime()._cached_bind_processor(dialect)
    quicker = _quicker_bind(UTCDateTime(), dialect, standard)
    assert quicker is not standard  # the quicker path is the one under test
    values = [
        None,
        datetime(2026, 11, 26, 13, 40, 0, 123456, tzinfo=UTC),
        datetime(2026, 11, 26, 13, 40, tzinfo=UTC),  # isoformat leaves zero microseconds out
        datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 11, 26, 15, 40, tzinfo=timezone(timedelta(hours=2))),  # another zone: stored in UTC
        utcnow(),
    ]
    for value in values:
        assert quicker(value) == standard(value), value
    assert quicker(values[5]) == "2026-11-26 13:40:00.000000"
    with pytest.raises(ValueError):
        quicker(datetime(2026, 11, 26, 13, 40))  # naive: refused, as UTCDateTime refuses it


def test_new_objects_are_flushed_like_constructed_ones_and_refuse_unknown_names(app, workspace):
    """`rows.new` sets no attribute events; a flush (the scheduler's `schedule` path) still writes every value."""
    from console.db.rows import new
    from console.scheduler.services import schedule

    with app.app_context():
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        task = schedule(ws, "test.kind", utcnow() + timedelta(hours=1), {"n": 7})
        assert task in db.session.new
        task.attempts = 2  # a change after it was made is kept too
        task_id = task.id
        db.session.commit()
        db.session.expunge_all()
        stored = db.session.get(ScheduledTask, task_id)
        assert (stored.kind, stored.payload, stored.status, stored.attempts) == (
            "test.kind",
            {"n": 7},
            "pending",
            2,
        )
        with pytest.raises(TypeError, match="'colour' is an invalid keyword argument for ScheduledTask"):
            new(ScheduledTask, kind="x", colour="red")
