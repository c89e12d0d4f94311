"""The two busiest calls do only the database work their answer needs: statements and commits per request."""

from __future__ import annotations

import contextlib
import threading
import uuid

import pytest
from sqlalchemy import event

from console.extensions import db
from console.keys.services import authenticate
from tests.factories import LINK_TOKEN, new_switch

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]


@contextlib.contextmanager
def recorded(app):
    """Every SQL statement and commit this thread runs on the app's engine meanwhile ("COMMIT" for a commit).

    This thread only: the request log's writer thread flushes earlier requests' rows on its own schedule, and
    its statements, caught mid-flush, are not the request's.
    """
    with app.app_context():
        engine = db.engine
    seen: list[str] = []
    ours = threading.get_ident()

    def statement(_conn, _cursor, sql, *_args):
        if threading.get_ident() == ours:
            seen.append(" ".join(sql.split()))

    def commit(_conn):
        if threading.get_ident() == ours:
            seen.append("COMMIT")

    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine, "commit", commit)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", statement)
        event.remove(engine, "commit", commit)


def verbs(seen: list[str]) -> list[str]:
    return [s if s == "COMMIT" else " ".join(s.split()[:3]) for s in seen]


def test_authentication_loads_the_key_and_its_workspace_in_one_query(app, workspace):
    with app.app_context(), recorded(app) as seen:
        key = authenticate(workspace.secrets["sandbox"], "sandbox")
        assert len(seen) == 1 and "JOIN workspaces" in seen[0]
        assert key.workspace.id == uuid.UUID(workspace.id)  # already loaded: no second query
        assert len(seen) == 1


def test_creating_a_link_token_is_one_read_two_inserts_and_one_commit(app, api):
    api.post("/link_tokens", json=LINK_TOKEN)  # warm: world rows, caches
    with recorded(app) as seen:
        response = api.post("/link_tokens", json=LINK_TOKEN)
    assert response.status_code == 200, response.get_json()
    assert seen[0].startswith("SELECT") and "JOIN workspaces" in seen[0], seen
    # One flush at the commit, and nothing after it: the answer is built from what the request holds.
    assert verbs(seen[1:]) == ["INSERT INTO link_tokens", "INSERT INTO scheduled_tasks", "COMMIT"], seen


@pytest.mark.parametrize("filter_name", ["link_token_id", "account_id", None])
def test_listing_jobs_is_two_queries_and_no_commit(app, api, workspace, filter_name):
    with app.app_context():
        job = new_switch(workspace.id, "success")
        job_id, value = str(job.id), str(getattr(job, filter_name)) if filter_name else None
        db.session.commit()
    url = f"/jobs?{filter_name}={value}" if filter_name else "/jobs"
    with recorded(app) as seen:
        response = api.get(url)
    assert response.status_code == 200, response.get_json()
    assert [j["id"] for j in response.get_json()["data"]] == [job_id]
    assert len(seen) == 2, seen
    assert "JOIN workspaces" in seen[0]
    assert seen[1].startswith("SELECT jobs.id, jobs.account_id, jobs.link_token_id")
    assert "COMMIT" not in seen


def test_job_list_pages_come_straight_from_an_index(app, workspace):
    """SQLite's plan for every list filter: an index search, with no sort of the matching jobs."""
    from sqlalchemy import text

    from console.api.jobs import ORDER_BY
    from console.api.pagination import _page_statement
    from console.core.timeutil import utcnow
    from console.jobs.services import jobs_query

    with app.app_context():
        if db.engine.dialect.name != "sqlite":
            pytest.skip("SQLite's EXPLAIN QUERY PLAN; PostgreSQL chooses by statistics")
        ws = uuid.UUID(workspace.id)
        for filters, index in (
            ({"link_token_id": str(uuid.uuid4())}, "ix_jobs_scope_link_token"),
            ({"account_id": str(uuid.uuid4())}, "ix_jobs_scope_account"),
            ({}, "ix_jobs_scope_created"),
        ):
            for cursor in (False, True):
                # The statement the API runs (built once, reused), with this request's values.
                query, params = jobs_query(ws, "sandbox", filters)
                page = _page_statement(query, ORDER_BY, True, cursor)
                params["page_limit"] = 26
                if cursor:
                    params.update(after_0=utcnow(), after_1=uuid.uuid4())
                sql = page.params(**params).compile(db.engine, compile_kwargs={"literal_binds": True})
                plan = " ".join(row[3] for row in db.session.execute(text(f"EXPLAIN QUERY PLAN {sql}")))
                assert f"USING INDEX {index} " in plan, (filters, plan)
                assert "TEMP B-TREE" not in plan, (filters, plan)


def test_an_api_call_without_the_console_cookie_builds_no_session_signer(app, client, workspace, monkeypatch):
    from flask.sessions import SecureCookieSessionInterface

    built = []
    real = SecureCookieSessionInterface.get_signing_serializer
    monkeypatch.setattr(
        SecureCookieSessionInterface,
        "get_signing_serializer",
        lambda self, app_: built.append(1) or real(self, app_),
    )
    response = client.get(
        "/sandbox/v1/jobs",
        headers={"x-api-secret": workspace.secrets["sandbox"], "Service-Version": "2023-11-22"},
    )
    assert response.status_code == 200
    assert built == []
    assert "Set-Cookie" not in response.headers
    client.get("/")  # a console page still gets its signed cookie
    assert built


@pytest.mark.parametrize("call", ["POST /link_tokens", "GET /jobs"])
def test_an_api_call_makes_no_orm_object_of_its_key_or_workspace(app, api, call):
    """The key and workspace are snapshots: nothing in the session to track, then expire at the commit."""
    from flask import request_finished

    from console.keys.models import ApiKey
    from console.workspaces.models import Workspace

    held: list[type] = []

    def record(_sender, **_extra):
        held.extend(type(obj) for obj in db.session.identity_map.values())

    method, path = call.split()
    request_finished.connect(record, app)
    try:
        response = api.post(path, json=LINK_TOKEN) if method == "POST" else api.get(path)
    finally:
        request_finished.disconnect(record, app)
    assert response.status_code == 200, response.get_json()
    assert ApiKey not in held and Workspace not in held, held


def test_a_snapshot_reads_like_its_row_refuses_changes_and_gives_its_entity(app, workspace):
    from console.db.rows import entity, session_instance
    from console.workspaces.models import Workspace

    with app.app_context():
        key = authenticate(workspace.secrets["sandbox"], "sandbox")
        assert key.mode == "sandbox" and key.workspace.id == uuid.UUID(workspace.id)
        with pytest.raises(AttributeError, match="read-only"):
            key.workspace.clock_offset_seconds = 60.0
        with pytest.raises(AttributeError, match="no 'webhooks'"):
            _ = key.webhooks  # a relationship: only the entity follows it
        assert session_instance(key.workspace) is None
        orm_key = entity(key)
        assert entity(key) is orm_key and orm_key.workspace is session_instance(key.workspace)
        assert isinstance(orm_key.workspace, Workspace) and orm_key.workspace.id == key.workspace.id
        orm_key.workspace.clock_offset_seconds = 60.0  # a change through the entity is stored
        db.session.commit()
    with app.app_context():
        assert db.session.get(Workspace, uuid.UUID(workspace.id)).clock_offset_seconds == 60.0
