"""Fixtures shared by every test: the app on SQLite (and PostgreSQL), a workspace with keys, an API client."""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import os
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from flask import Flask
from jinja2 import StrictUndefined
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

from console import create_app
from console.api import ratelimit
from console.db import pinning
from console.extensions import db
from console.health.services import DatabaseProbe
from console.modes import MODES, URL_PREFIXES
from console.requestlog import writer as requestlog_writer
from console.requestlog.writer import writer_for
from console.web.shared import throttle
from tests import loopback

VERSION = "2023-11-22"


def _xdist_worker_index() -> int | None:
    """This process's index under pytest-xdist (`gw0` -> 0), or None when pytest runs without it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else None


def _worker_database_url(url: str, index: int) -> str:
    """`.../<db>` -> `.../<db>_gw<index>`, created (from the server's `postgres` database) if missing."""
    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'test'}_gw{index}"
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))  # plain libpq URL
    with psycopg.connect(admin, autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # created meanwhile elsewhere
                connection.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path=f"/{name}"))


def _worker_redis_url(url: str, index: int) -> str:
    """`redis://host:port/<n>` -> db number `n - index` (kept in Redis's 0-15)."""
    parts = urlsplit(url)
    number = int(parts.path.lstrip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(number - index) % 16}"))


def _per_worker_services() -> None:
    """Under pytest-xdist each worker gets a PostgreSQL database and a Redis db number of its own.

    Rewritten in the environment, so every reader sees the worker's own: the fixtures below, tests that
    read TEST_DATABASE_URL / TEST_REDIS_URL themselves, and the `console run` / worker subprocesses that
    inherit the environment. Without xdist (plain `pytest`) nothing changes.
    """
    index = _xdist_worker_index()
    if index is None:
        return
    if os.environ.get("TEST_DATABASE_URL"):
        os.environ["TEST_DATABASE_URL"] = _worker_database_url(os.environ["TEST_DATABASE_URL"], index)
    if os.environ.get("TEST_REDIS_URL"):
        os.environ["TEST_REDIS_URL"] = _worker_redis_url(os.environ["TEST_REDIS_URL"], index)


_per_worker_services()  # before anything below (or any test module) reads the two variables


BACKENDS = ["sqlite"] + (["postgres"] if os.environ.get("TEST_DATABASE_URL") else [])
# World tables are seeded once per session and never written by tests (switches write workspace rows).
WORLD_PREFIX = "world_"


def _postgres_url() -> str:
    url = os.environ["TEST_DATABASE_URL"]
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def base_config(database_url: str) -> dict:
    return {
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": database_url,
        "SECRET_KEY": "test-secret-key-not-for-production",
        "RATELIMIT_STORAGE_URI": "memory://",
        "RUN_WORKER": False,
        "SERVER_NAME": None,
    }


def pytest_generate_tests(metafunc):
    """The backends a test runs on: SQLite, both (`both_backends`), or PostgreSQL only (`postgres`).

    Without TEST_DATABASE_URL a `postgres` test gets SQLite and skips itself, with the reason.
    """
    if "database_url" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("postgres"):
        backends = BACKENDS[-1:]
    elif metafunc.definition.get_closest_marker("both_backends"):
        backends = BACKENDS
    else:
        backends = ["sqlite"]
    metafunc.parametrize("database_url", backends, indirect=True, scope="session")


@pytest.fixture(scope="session")
def database_url(request, tmp_path_factory):
    """A schema created once per backend, with the world seeded.

    pytest sets a session fixture up again each time its parameter changes, and a worker's tests alternate
    between the backends: the schema and world are kept per process and made only the first time.
    """
    if request.param in _prepared_databases:
        return _prepared_databases[request.param]
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    else:
        url = _postgres_url()
    app = create_app(base_config(url))
    with app.app_context():
        from console.world.seed import seed_world

        db.drop_all()
        db.create_all()
        seed_world(db.session)
        db.session.commit()
        db.engine.dispose()
    _prepared_databases[request.param] = url
    return url


_prepared_databases: dict[str, str] = {}


@functools.cache
def _clearing_statements() -> tuple:
    tables = [t for t in reversed(db.metadata.sorted_tables) if not t.name.startswith(WORLD_PREFIX)]
    return tuple(text(f'DELETE FROM "{table.name}"') for table in tables)


def _clear_customer_tables() -> None:
    for statement in _clearing_statements():
        db.session.execute(statement)
    # Workspace-scoped payroll changes live in a world table but belong to a workspace.
    db.session.execute(text("DELETE FROM world_deposit_allocations WHERE workspace_id IS NOT NULL"))
    db.session.commit()


class SessionApp:
    """The one app of a backend in this process, and its settings as built (each test starts from them)."""

    def __init__(self, database_url: str) -> None:
        self.app = make_app(database_url)
        self.config = copy.deepcopy(dict(self.app.config))

    def fresh(self) -> Flask:
        """The app as a new one would be: its settings back, and new per-app state (rate-limit counters,
        the console's throttle, the request log's writer, the health probe, the webhook senders' ledger)."""
        app = self.app
        app.config.clear()
        app.config.update(copy.deepcopy(self.config))
        ratelimit.init_app(app)
        throttle.init_app(app)
        requestlog_writer.init_app(app)
        app.extensions["database_probe"] = DatabaseProbe(app)
        app.extensions.pop("webhook_senders", None)
        return app


_session_apps: dict[str, SessionApp] = {}


# Every engine that connected during the session (the session apps' and those of the tests that build an app
# of their own), and every database connection a pool opened, so that pytest_sessionfinish can close them.
_engines: weakref.WeakSet[Engine] = weakref.WeakSet()
_dbapi_connections: weakref.WeakSet = weakref.WeakSet()


def _remember_engine(connection) -> None:
    _engines.add(connection.engine)


def _remember_dbapi_connection(dbapi_connection, _record) -> None:
    with contextlib.suppress(TypeError):  # a driver's connection that takes no weak reference
        _dbapi_connections.add(dbapi_connection)


def pytest_configure(config):
    loopback.install()
    event.listen(Engine, "engine_connect", _remember_engine)
    event.listen(Pool, "connect", _remember_dbapi_connection)


# CPython 3.11's `ast` keeps its recursion depth in state the interpreter's threads share, and this SystemError
# is reported from threaded programs (gh-106905 and the reports linked there; seen here on 3.11.7); werkzeug
# builds its URL rules with `ast.parse` in `create_app`. Seen once in a dozen full runs, at the set-up of an app while another thread of
# the worker was busy. A test that fails with exactly this message is run once more, and listed as a rerun
# (`-r R`); any other failure fails at once. Browser tests have their own rerun (tests/browser/conftest.py).
INTERPRETER_BUG = "AST constructor recursion depth mismatch"


@pytest.hookimpl(
    trylast=True
)  # after tests/browser/conftest.py's, which adds marks (`xdist_group` among them)
def pytest_collection_modifyitems(config, items):
    _xdist_groups_in_node_ids(config, items)
    if hasattr(config, "workerinput"):
        # Under xdist, the tests marked `slow` (processes started: `console run`, workers, the fuzzer) are handed
        # out right after the browser's long walks, not in file order: `tests/unit/test_serving.py`'s 10-40 s
        # `console run` tests came last and one worker ran them alone while the others had finished.
        # (Without xdist a module's tests stay together, its fixtures made once.)
        items.sort(
            key=lambda item: (
                item.get_closest_marker("long") is None,
                item.get_closest_marker("slow") is None,
            )
        )
    for item in items:
        if item.get_closest_marker("flaky") is None and "tests/browser/" not in str(item.fspath).replace(
            os.sep, "/"
        ):
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=[INTERPRETER_BUG]))


def _xdist_groups_in_node_ids(config, items) -> None:
    """What pytest-xdist's `--dist loadgroup` does on each worker, done so that pytest 9.2 keeps it.

    xdist (3.8) appends "@<group>" to each grouped test's id, and its scheduler sends the tests of one group to
    one worker by that suffix; it writes `item._nodeid`, which pytest 9.2 no longer reads (a test's id is
    `item._id`, structured). So no group held: the CLI's and the serving edges' one-per-worker set-ups
    (`console db upgrade`, `console run`; 12-22 s each on a loaded machine) and each browser module's live
    server were made on all four workers. On a pytest whose ids are still `_nodeid`, xdist's own hook does it.
    """
    if not getattr(config.option, "loadgroup", False) or not items or not hasattr(items[0], "_id"):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                         for mark in item.iter_markers("xdist_group")})  # fmt: skip
        if groups and "@" not in item.nodeid:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


@pytest.hookimpl(trylast=True)  # after pytest's own, which tears the session's fixtures down
def pytest_sessionfinish(session):
    """Database connections are closed here, not left to the garbage collector after the run, where psycopg
    printed a "Connection deleted while still open" ResourceWarning (as an "Exception ignored" traceback) after
    the summary of a green run in about half of the runs: pools are disposed, then any connection still open
    (checked out by a session a test's app or thread left behind, which a dispose does not close) is closed."""
    for engine in list(_engines):
        engine.dispose()
    for dbapi_connection in list(_dbapi_connections):
        with contextlib.suppress(Exception):  # already broken: nothing left to close
            dbapi_connection.close()


def make_app(database_url: str, **config) -> Flask:
    """A new app on the test database, with `config` on top of the tests' settings (a few tests need their
    own; most share the session's app through the `app` fixture)."""
    app = create_app({**base_config(database_url), **config})
    app.jinja_env.undefined = StrictUndefined
    return app


@contextlib.contextmanager
def _rolled_back(app: Flask) -> Iterator[None]:
    """Everything the test does to the database happens on one connection, in a transaction rolled back
    afterwards (console/db/pinning.py); the app's commits release SAVEPOINTs inside it."""
    with app.app_context():
        engine = db.engine
    connection = engine.connect()
    dbapi_connection = connection.connection.dbapi_connection
    sqlite = engine.dialect.name == "sqlite"
    if sqlite:
        # pysqlite begins and commits on its own and breaks SAVEPOINTs; SQLAlchemy's documented workaround:
        # the driver does nothing, and BEGIN is sent here.
        isolation_level = dbapi_connection.isolation_level
        dbapi_connection.isolation_level = None
    outer = connection.begin()
    if sqlite:
        connection.exec_driver_sql("BEGIN")
    held = pinning.pin(app, connection)
    try:
        yield
    finally:
        writer_for(app).close()
        pinning.unpin(app)
        outer.rollback()
        if sqlite:
            dbapi_connection.isolation_level = isolation_level
        connection.close()
    if held.violations:
        pytest.fail(held.violations[0], pytrace=False)
    # Writes made around the pinned connection (an app of the test's own on this database) were committed
    # and would reach the next tests: emptied here, and the test told what it needs.
    with app.app_context():
        leaked = db.session.scalar(text("SELECT count(*) FROM workspaces"))
        if leaked:
            _clear_customer_tables()
        db.session.remove()
    if leaked:
        pytest.fail(
            f"{leaked} workspace(s) committed outside the test's rolled-back transaction: mark it `committing`",
            pytrace=False,
        )


@pytest.fixture
def app(request, database_url):
    """The backend's session app, fresh for this test.

    Unless the test is marked `committing`, it runs in a transaction rolled back afterwards. A `committing`
    test commits for real (its writes are for other threads, processes or connections to see), and the
    customer tables are emptied before and after it.
    """
    session_app = _session_apps.get(database_url)
    if session_app is None:
        session_app = _session_apps[database_url] = SessionApp(database_url)
    app = session_app.fresh()
    if request.node.get_closest_marker("committing") is None:
        with _rolled_back(app):
            yield app
        return
    with app.app_context():
        _clear_customer_tables()
    yield app
    # The request log's writer thread writes what it holds before the tables are emptied.
    writer_for(app).close()
    with app.app_context():
        db.session.remove()
        _clear_customer_tables()
        # The pool's connections may be in any state after such a test (their server side terminated by the
        # round-trip tests, held by a thread): the next test starts with new ones.
        db.engine.dispose()


@pytest.fixture(autouse=True)
def _own_apps_leave_no_rows(request):
    """A test taking `database_url` for an app of its own (not `app`) commits for real: emptied after it.

    Only a test that names `database_url` itself: a module's fixture over it (the fuzzer's app) keeps its rows
    for the module's tests and empties them itself."""
    yield
    own = "database_url" in inspect.signature(request.function).parameters
    if own and "app" not in request.fixturenames:
        url = request.getfixturevalue("database_url")
        session_app = _session_apps.get(url)
        if session_app is None:
            session_app = _session_apps[url] = SessionApp(url)
        with session_app.app.app_context():
            _clear_customer_tables()
            db.session.remove()


@pytest.fixture
def client(app):
    return app.test_client()


@dataclass
class Workspace:
    id: str
    secrets: dict[str, str]
    key_ids: dict[str, str]


@pytest.fixture
def workspace(app) -> Workspace:
    """A workspace with one API key per mode."""
    from console.keys.services import create_key
    from console.workspaces.services import create_workspace

    with app.app_context():
        ws = create_workspace("Test workspace")
        created = {mode: create_key(ws.id, mode, "test") for mode in MODES}
        db.session.commit()
        return Workspace(
            str(ws.id),
            {mode: c.secret for mode, c in created.items()},
            {mode: str(c.key.id) for mode, c in created.items()},
        )


class Api:
    """A thin client that sends the headers every API call needs, for one mode."""

    def __init__(self, client, secret: str | None, mode: str = "sandbox") -> None:
        self.client = client
        self.secret = secret
        self.mode = mode

    def url(self, path: str) -> str:
        return f"{URL_PREFIXES[self.mode]}/v1{path}"

    def headers(self, extra: dict | None = None) -> dict:
        headers = {"Service-Version": VERSION}
        if self.secret is not None:
            headers["x-api-secret"] = self.secret
        headers.update(extra or {})
        return {k: v for k, v in headers.items() if v is not None}

    def request(self, method: str, path: str, *, json=None, headers=None, **kwargs):
        return self.client.open(
            self.url(path), method=method, json=json, headers=self.headers(headers), **kwargs
        )

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, json=None, **kw):
        return self.request("POST", path, json=json, **kw)

    def put(self, path, json=None, **kw):
        return self.request("PUT", path, json=json, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


@pytest.fixture
def api(client, workspace) -> Api:
    """The sandbox API with the workspace's sandbox key."""
    return Api(client, workspace.secrets["sandbox"], "sandbox")


@pytest.fixture
def api_for(client, workspace):
    """`api_for(mode)`: the API of another mode with that mode's key."""
    return lambda mode: Api(client, workspace.secrets[mode], mode)


def assert_error(response, status: int, type_: str, code: str | None = None) -> dict:
    """Check the one error shape and return its `error` object."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"type", "code", "message", "status_code", "fields"}
    assert error["type"] == type_
    assert error["status_code"] == status
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code
    for field in error["fields"]:
        assert set(field) == {"name", "message"}
    return error


@pytest.fixture
def short_busy_timeout(monkeypatch):
    """New SQLite connections wait 200 ms for another program's write lock (5 s in production): for tests of
    the answer a held lock gets, not of the wait."""
    from console.db import sqlite as sqlite_db

    monkeypatch.setattr(
        sqlite_db,
        "PRAGMAS",
        (*(p for p in sqlite_db.PRAGMAS if "busy_timeout" not in p), "PRAGMA busy_timeout=200"),
    )
