"""Settings of the database pool and timeouts, and the root URL the console shows."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import event, text

from console import config, create_app
from console.db.schema import upgrade_to_head
from console.extensions import db
from tests.conftest import base_config


@pytest.fixture
def environment(monkeypatch):
    for name in ("THREADS", "DB_POOL_SIZE", "DB_POOL_TIMEOUT", "HOST", "PORT", "PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SECRET_KEY", "test-secret")
    return monkeypatch


def test_the_pool_follows_the_serving_threads(environment):
    assert config.from_environment()["DB_POOL_SIZE"] == config.DEFAULT_THREADS + config.POOL_HEADROOM
    environment.setenv("THREADS", "12")
    assert config.from_environment()["DB_POOL_SIZE"] == 12 + config.POOL_HEADROOM
    environment.setenv("DB_POOL_SIZE", "7")
    environment.setenv("DB_POOL_TIMEOUT", "1.5")
    settings = config.from_environment()
    assert (settings["DB_POOL_SIZE"], settings["DB_POOL_TIMEOUT"]) == (7, 1.5)


@pytest.mark.parametrize("url", ["postgresql://", "postgres://127.0.0.1:5432/", "postgresql://u@h"])
def test_a_postgres_url_without_a_database_name_is_refused_by_name(environment, url):
    """libpq picks a database itself (one named after the OS user): `console db upgrade` made the schema there."""
    environment.setenv("DATABASE_URL", url)
    with pytest.raises(config.SettingError, match="DATABASE_URL names no database"):
        config.database_url()
    environment.setenv("DATABASE_URL", "postgresql://u@h:5432/console")
    assert config.database_url() == "postgresql+psycopg://u@h:5432/console"


def test_the_engine_gets_the_pool_settings(tmp_path):
    app = create_app({**base_config(f"sqlite:///{tmp_path / 'pool.db'}"), "DB_POOL_SIZE": 7})
    with app.app_context():
        pool = db.engine.pool
        assert (pool.size(), pool._max_overflow, pool._timeout) == (7, 0, 3.0)
        db.engine.dispose()


def test_postgres_connections_get_both_timeouts():
    options = config.engine_options(
        {
            **config.DEFAULTS,
            "SQLALCHEMY_DATABASE_URI": "postgresql+psycopg://u@127.0.0.1/x",
            "SQLALCHEMY_ENGINE_OPTIONS": {"connect_args": {"options": "-c search_path=s"}},
        }
    )
    assert options["connect_args"] == {
        "connect_timeout": 3,
        "options": "-c search_path=s -c statement_timeout=5000",
    }


def test_listen_address_and_public_url(environment):
    environment.setenv("HOST", "0.0.0.0")
    environment.setenv("PORT", "8080")
    settings = config.from_environment()
    assert (settings["LISTEN_HOST"], settings["LISTEN_PORT"]) == ("0.0.0.0", 8080)
    assert config.public_root(settings) == "http://127.0.0.1:8080"
    assert config.public_root({**settings, "LISTEN_HOST": "::"}) == "http://[::1]:8080"
    assert config.public_root({**settings, "LISTEN_HOST": "192.168.1.4"}) == "http://192.168.1.4:8080"
    environment.setenv("PUBLIC_URL", "https://console.example.com/")
    assert config.public_root(config.from_environment()) == "https://console.example.com"


@pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="PostgreSQL only (TEST_DATABASE_URL)")
def test_migrations_are_not_cut_short_by_the_statement_timeout():
    """A schema change on a big table may take longer than a request may: migrations lift the timeout."""
    from tests.conftest import _postgres_url

    schema = f"migrations_{uuid.uuid4().hex[:12]}"
    settings = {
        **base_config(_postgres_url()),
        "DB_STATEMENT_TIMEOUT": 1000,
        "SQLALCHEMY_ENGINE_OPTIONS": {"connect_args": {"options": f"-c search_path={schema}"}},
    }
    app = create_app(settings)
    seen: list[str] = []
    with app.app_context():
        with db.engine.begin() as connection:
            connection.execute(text(f"CREATE SCHEMA {schema}"))
            assert connection.execute(text("SHOW statement_timeout")).scalar() == "1s"

        @event.listens_for(db.engine, "before_cursor_execute")
        def _timeout_during_ddl(connection, cursor, statement, *args):
            if statement.lstrip().upper().startswith("CREATE TABLE") and not seen:
                cursor.execute("SHOW statement_timeout")
                seen.append(cursor.fetchone()[0])

        try:
            upgrade_to_head()
        finally:
            event.remove(db.engine, "before_cursor_execute", _timeout_during_ddl)
            with db.engine.begin() as connection:
                connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
                # The pooled connection is back to the configured timeout.
                assert connection.execute(text("SHOW statement_timeout")).scalar() == "1s"
            db.engine.dispose()
    assert seen == ["0"]


def test_conformance_and_fair_delivery_limits_come_from_the_environment(environment, tmp_path):
    """`console run` and `console worker` build their app from the environment: these limits must reach it."""
    from console.conformance import runs
    from console.webhooks.fairness import DEFAULT_PER_HOST, Caps

    names = ("CONFORMANCE_RUNS_PER_WORKSPACE", "CONFORMANCE_WORKER_RUNS", "CONFORMANCE_LEASE_SECONDS",
             "WEBHOOK_TIMEOUT_SECONDS", "WEBHOOK_MAX_IN_FLIGHT_PER_HOST", "WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE")  # fmt: skip
    for name in names:
        environment.delenv(name, raising=False)
    settings = config.from_environment()
    assert (settings["CONFORMANCE_RUNS_PER_WORKSPACE"], settings["CONFORMANCE_WORKER_RUNS"]) == (2, 4)
    assert "WEBHOOK_MAX_IN_FLIGHT_PER_HOST" not in settings  # unset: the module's default applies
    assert Caps.from_config(settings).per_host == DEFAULT_PER_HOST
    for name, value in {
        "CONFORMANCE_RUNS_PER_WORKSPACE": "5",
        "CONFORMANCE_WORKER_RUNS": "8",
        "CONFORMANCE_LEASE_SECONDS": "90",
        "WEBHOOK_TIMEOUT_SECONDS": "7.5",
        "WEBHOOK_MAX_IN_FLIGHT_PER_HOST": "6",
        "WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE": "9",
    }.items():
        environment.setenv(name, value)
    app = create_app(
        {**config.from_environment(), "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'c.db'}"}
    )
    assert runs._limits(app) == {"per_workspace": 5, "worker_runs": 8, "lease": 90.0, "timeout": 7.5}
    caps = Caps.from_config(app.config)
    assert (caps.per_host, caps.per_workspace) == (6, 9)
    environment.delenv("CONFORMANCE_LEASE_SECONDS")
    app = create_app(
        {**config.from_environment(), "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'c.db'}"}
    )
    assert runs._limits(app)["lease"] == 2 * 7.5 + 30  # unset: outlasts a run


@pytest.mark.parametrize(
    ("value", "runs"),
    [("0", False), ("False", False), ("off", False), ("NO", False), ("1", True), ("", True), ("yes", True)],
)
def test_run_worker_off_in_any_spelling(environment, value, runs):
    """`RUN_WORKER=False` (or `off`) beside separate `console worker` processes still ran one more."""
    environment.setenv("RUN_WORKER", value)
    assert config.from_environment()["RUN_WORKER"] is runs


def test_a_yes_no_setting_that_is_neither_is_refused_by_name(environment):
    environment.setenv("SANDBOX_ALLOW_LOOPBACK_WEBHOOKS", "On ")
    assert config.from_environment()["SANDBOX_ALLOW_LOOPBACK_WEBHOOKS"] is True
    environment.setenv("RUN_WORKER", "maybe")
    with pytest.raises(config.SettingError, match="RUN_WORKER must be one of 1, true, yes, on or 0, false"):
        config.from_environment()
