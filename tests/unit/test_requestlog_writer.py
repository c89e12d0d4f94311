"""The request log's background writer: batches, usage counts, last use, a full queue, shutdown."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from console.core.timeutil import utcnow
from console.extensions import db
from console.keys.models import ApiKey
from console.requestlog.models import KeyUsageDay, RequestLogEntry
from console.requestlog.writer import Writer
from tests.conftest import Api
from tests.waiting import wait_for

pytestmark = pytest.mark.both_backends


def _rows(app, workspace_id) -> list[RequestLogEntry]:
    with app.app_context():
        return list(
            db.session.scalars(
                select(RequestLogEntry).where(RequestLogEntry.workspace_id == uuid.UUID(workspace_id))
            )
        )


def _usage(app, key_id) -> KeyUsageDay | None:
    with app.app_context():
        return db.session.scalars(
            select(KeyUsageDay).where(KeyUsageDay.api_key_id == uuid.UUID(key_id))
        ).first()


def _writer(app, **kwargs) -> Writer:
    writer = Writer(app, interval=kwargs.pop("interval", 0.05), capacity=kwargs.pop("capacity", 100))
    app.extensions["requestlog_writer"] = writer
    return writer


@pytest.mark.committing
def test_the_thread_writes_a_batch_within_the_interval(app, client, workspace):
    writer = _writer(app, interval=0.05)
    api = Api(client, workspace.secrets["sandbox"])
    for _ in range(3):
        assert api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())}).status_code in (
            200,
            400,
            404,
        )
    wait_for(lambda: len(_rows(app, workspace.id)) >= 3, 60)  # a backstop: it writes every 50 ms
    rows = _rows(app, workspace.id)
    assert len(rows) == 3
    assert all(r.step == "" and r.path == "/sandbox/v1/jobs" and r.request_id for r in rows)
    writer.close()


def test_a_clean_shutdown_loses_nothing(app, client, workspace):
    writer = _writer(app, interval=3600)  # the thread would not write for an hour
    api = Api(client, workspace.secrets["sandbox"])
    for _ in range(5):
        api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    assert _rows(app, workspace.id) == []
    writer.close()
    assert len(_rows(app, workspace.id)) == 5
    assert _usage(app, workspace.key_ids["sandbox"]).requests == 5


def test_a_batch_is_written_in_chunks_and_a_bad_row_costs_only_itself(
    app, client, workspace, monkeypatch, caplog
):
    from console.requestlog import writer as writer_module

    monkeypatch.setattr(writer_module, "INSERT_CHUNK", 2)
    writer = _writer(app, interval=3600)
    transactions = []
    real_transaction = writer_module.Writer._transaction

    def counting(self, engine):
        transactions.append(1)
        return real_transaction(self, engine)

    monkeypatch.setattr(writer_module.Writer, "_transaction", counting)
    api = Api(client, workspace.secrets["sandbox"])
    for _ in range(5):
        api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    rows = list(writer._rows)
    rows[2]["workspace_id"] = uuid.uuid4()  # a workspace deleted meanwhile: its row cannot be written
    with caplog.at_level(logging.INFO, logger=writer_module.log.name):
        writer.close()
    # Said in one line, without the database's traceback (every class deletion logged one).
    refused = [r for r in caplog.records if "refused (a workspace deleted meanwhile)" in r.getMessage()]
    assert len(refused) == 1 and refused[0].exc_info is None
    assert len(_rows(app, workspace.id)) == 4
    assert _usage(app, workspace.key_ids["sandbox"]).unlogged == 1
    # 3 chunks (2 + 2 + 1), the failed one again row by row (2), and the usage transaction.
    assert len(transactions) == 3 + 2 + 1


def test_a_chunk_refused_for_another_reason_keeps_its_traceback(app, client, workspace, caplog):
    """Only a row whose workspace is gone (a foreign key) is the expected refusal said in one line: any other
    constraint (a bug writing a NULL) was reported as "a workspace deleted meanwhile" without the database's
    words, and its rows, retried one by one, failed silently, so the cause was logged nowhere."""
    from console.requestlog import writer as writer_module

    writer = _writer(app, interval=3600)
    api = Api(client, workspace.secrets["sandbox"])
    for _ in range(2):
        api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    writer._rows[1]["method"] = None  # NOT NULL: not a deleted workspace
    with caplog.at_level(logging.INFO, logger=writer_module.log.name):
        writer.close()
    assert not [r for r in caplog.records if "workspace deleted meanwhile" in r.getMessage()]
    failed = [r for r in caplog.records if "chunk of 2 failed" in r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info is not None
    assert len(_rows(app, workspace.id)) == 1


@pytest.mark.committing
def test_the_writer_keeps_one_connection_and_hands_the_write_gate_back(app, client, workspace):
    """Flush after flush on the same connection (no open and close each time), never holding the gate."""
    writer = _writer(app, interval=3600)
    api = Api(client, workspace.secrets["sandbox"])
    connections = []
    for _ in range(3):
        api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
        writer.flush()
        connections.append(writer._conn)
        gate = app.extensions.get("sqlite_write_gate")
        if gate is not None:
            assert gate.holders == {}  # a request's write does not wait behind the writer
    assert connections[0] is not None and connections.count(connections[0]) == 3
    assert len(_rows(app, workspace.id)) == 3
    writer.close()
    assert writer._conn is None and connections[0].closed


def test_a_full_queue_counts_what_it_drops(app, client, workspace):
    writer = _writer(app, interval=3600, capacity=2)
    api = Api(client, workspace.secrets["sandbox"])
    for _ in range(5):
        api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    writer.close()
    assert len(_rows(app, workspace.id)) == 2
    usage = _usage(app, workspace.key_ids["sandbox"])
    assert (usage.requests, usage.unlogged) == (5, 3)


def test_usage_of_a_workspace_deleted_meanwhile_costs_only_its_own_counts(app, client, workspace):
    writer = _writer(app, interval=3600)
    api = Api(client, workspace.secrets["sandbox"])
    for _ in range(3):
        api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    gone = next(iter(writer._usage))
    # Counts of a key whose workspace was deleted (a trainee's reset) since its requests were counted.
    writer._usage[(uuid.uuid4(), uuid.uuid4(), "sandbox", gone[3])] = dict(writer._usage[gone])
    writer.close()
    assert _usage(app, workspace.key_ids["sandbox"]).requests == 3  # lost with the other key's, before
    with app.app_context():
        assert len(db.session.scalars(select(KeyUsageDay)).all()) == 1  # the deleted key's: not written
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        assert key.last_used_at is not None


def test_usage_counts_by_status_class_and_bills_production(app, client, workspace, api_for):
    writer = _writer(app, interval=3600)
    sandbox, production = api_for("sandbox"), api_for("production")
    sandbox.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    sandbox.post("/link_tokens", json={})  # 400
    production.post("/link_tokens", json={})  # 400, billed all the same
    production.get("/webhooks")  # 200
    writer.flush()
    sandbox_usage = _usage(app, workspace.key_ids["sandbox"])
    production_usage = _usage(app, workspace.key_ids["production"])
    assert (sandbox_usage.requests, sandbox_usage.status_4xx, sandbox_usage.billable) == (2, 1, 0)
    assert sandbox_usage.status_2xx + sandbox_usage.status_4xx == 2
    assert (production_usage.requests, production_usage.status_2xx, production_usage.status_4xx) == (2, 1, 1)
    assert production_usage.billable == 2
    # A second flush adds to the same day's row (one upsert), it does not replace it.
    production.get("/webhooks")
    writer.flush()
    assert _usage(app, workspace.key_ids["production"]).requests == 3
    writer.close()


def test_last_used_is_written_at_most_once_a_minute(app, client, workspace, monkeypatch):
    writer = _writer(app, interval=3600)
    api = Api(client, workspace.secrets["sandbox"])

    def last_used():
        with app.app_context():
            return db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"])).last_used_at

    assert last_used() is None
    api.get("/webhooks")
    writer.flush()
    first = last_used()
    assert first is not None and utcnow() - first < timedelta(seconds=30)
    api.get("/webhooks")
    assert writer._last_used == {}  # within the minute: nothing pending for that key
    writer.flush()
    assert last_used() == first
    # A minute later (this process's memory of the last write moved back), the next use is written.
    key_id = uuid.UUID(workspace.key_ids["sandbox"])
    writer._last_written[key_id] -= timedelta(minutes=2)
    api.get("/webhooks")
    writer.flush()
    assert last_used() > first
    writer.close()


def test_requests_refused_before_authentication_are_not_logged(app, client, workspace):
    writer = _writer(app, interval=3600)
    Api(client, "sk_sandbox_wrong").get("/webhooks")
    Api(client, None).get("/webhooks")
    assert writer._rows == [] and writer._usage == {}
    writer.close()


@pytest.mark.committing
def test_a_forked_child_starts_with_its_own_empty_writer(app, client, workspace):
    from console.requestlog import writer as writer_module

    writer = _writer(app, interval=3600)
    Api(client, workspace.secrets["sandbox"]).get("/webhooks")
    assert writer._rows and writer._thread is not None
    parent_lock = writer._lock
    writer_module._after_fork()  # what os.register_at_fork runs in the child
    assert writer._rows == [] and writer._usage == {} and writer._thread is None
    assert writer._lock is not parent_lock
    Api(client, workspace.secrets["sandbox"]).get("/webhooks")
    assert len(writer._rows) == 1 and writer._thread is not None  # started lazily again
    writer.close()


@pytest.mark.committing
def test_a_writer_dropped_without_close_closes_its_connection(app, client, workspace):
    """An app thrown away without `close` (tests, a reloaded app) leaves no connection open behind it."""
    import gc

    writer = _writer(app, interval=3600)
    Api(client, workspace.secrets["sandbox"]).get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    writer.flush()
    conn = writer._conn
    assert conn is not None and not conn.closed
    app.extensions["requestlog_writer"] = Writer(app, interval=3600, capacity=10)
    thread, writer._closed = writer._thread, True  # its thread ends, as an idle one does; `close` never runs
    writer._wake.set()
    thread.join(60)
    del writer, thread
    gc.collect()
    assert conn.closed


def test_a_queued_row_is_the_finished_row_of_plain_values(app, client, workspace):
    """The queue holds the shaped, redacted row (made in the request), never the request's werkzeug objects:
    they outlived the request until the flush, and the garbage collector's full collections grew with them
    under load."""
    import gc
    from datetime import datetime

    writer = _writer(app, interval=3600)
    api = Api(client, workspace.secrets["sandbox"])
    answer = api.get("/jobs/caf%C3%A9", query_string={"expand": "a b"}, headers={"X-Trace": "t-1"})
    assert answer.status_code == 400  # `expand` is no parameter of GET /jobs/{id}: refused, and logged
    (queued,) = writer._rows
    plain = (str, int, float, bool, type(None), uuid.UUID, datetime)
    for name, value in queued.items():
        if isinstance(value, dict):  # the header maps: strings only, so the collector never walks them
            assert all(type(v) is str for v in value.values()) and not gc.is_tracked(value), name
        else:
            assert isinstance(value, plain), (name, type(value))
    assert queued["request_headers"]["X-Api-Secret"] == "<API_SECRET>"  # redacted before it is queued
    assert workspace.secrets["sandbox"] not in repr(queued)
    writer.close()
    (row,) = _rows(app, workspace.id)
    assert row.method == "GET"
    assert row.path == "/sandbox/v1/jobs/café"
    assert row.url.endswith("/sandbox/v1/jobs/café?expand=a+b")
    assert row.request_headers["X-Trace"] == "t-1"
    assert row.request_headers["X-Api-Secret"] == "<API_SECRET>"
    assert workspace.secrets["sandbox"] not in str(row.request_headers)
    assert row.status == 400


def test_a_row_that_cannot_be_made_costs_the_caller_nothing_and_is_counted_unlogged(
    app, client, workspace, monkeypatch, caplog
):
    from console.requestlog import capture

    def broken(raw, config):
        raise ValueError(f"not shaped: {raw['request_body']!r}")  # a message that quotes the body

    monkeypatch.setattr(capture, "prepared", broken)
    writer = _writer(app, interval=3600)
    api = Api(client, workspace.secrets["sandbox"])
    answer = api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
    assert answer.status_code == 200
    writer.close()
    assert _rows(app, workspace.id) == []
    usage = _usage(app, workspace.key_ids["sandbox"])
    assert (usage.requests, usage.status_2xx, usage.unlogged) == (1, 1, 1)
    [warning] = [r for r in caplog.records if "not made" in r.getMessage()]
    assert (
        "ValueError" in warning.getMessage() and "not shaped" not in caplog.text
    )  # the type, never the text


def test_a_database_outage_is_a_line_at_its_start_and_its_end_not_a_traceback_a_flush(
    app, client, workspace, monkeypatch, caplog
):
    """A serving process's writer logged a traceback at every flush with rows while the database was away."""
    from sqlalchemy import exc as sa_exc

    from console.requestlog import writer as writer_module

    writer = _writer(app, interval=3600)
    api = Api(client, workspace.secrets["sandbox"])
    real = Writer._transaction

    def refused(self, engine):
        raise sa_exc.OperationalError("INSERT INTO request_log_entries", {}, Exception("Connection refused"))

    monkeypatch.setattr(Writer, "_transaction", refused)
    with caplog.at_level(logging.INFO, logger=writer_module.__name__):
        for _ in range(5):  # five flushes with rows, the database away
            api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
            assert writer.flush()
        monkeypatch.setattr(Writer, "_transaction", real)
        api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())})
        assert writer.flush()
    records = [r for r in caplog.records if r.name == writer_module.__name__]
    assert [r.levelno for r in records] == [logging.WARNING, logging.WARNING], [
        r.getMessage() for r in records
    ]
    assert "cannot be reached" in records[0].getMessage() and "answers again" in records[1].getMessage()
    assert all(r.exc_info is None for r in records)
    assert len(_rows(app, workspace.id)) == 1  # the outage's rows are lost (said so), the next one written
    writer.close()
