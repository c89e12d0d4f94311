"""Migrations: upgrading an empty database yields exactly the models' schema."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from console import create_app
from console.db.schema import upgrade_to_head
from console.extensions import db
from tests.conftest import base_config


def test_migrations_match_the_models(tmp_path):
    app = create_app(base_config(f"sqlite:///{tmp_path / 'migrated.db'}"))
    with app.app_context():
        upgrade_to_head()
        with db.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            diff = compare_metadata(context, db.metadata)
        db.engine.dispose()
    assert diff == [], f"models and migrations differ; run `flask db migrate`: {diff}"


def test_upgrade_is_idempotent(tmp_path):
    app = create_app(base_config(f"sqlite:///{tmp_path / 'twice.db'}"))
    with app.app_context():
        upgrade_to_head()
        upgrade_to_head()
        db.engine.dispose()


def test_flask_migrates_own_commands_work_on_the_migrations_app(tmp_path, monkeypatch):
    """Writing a migration uses Flask-Migrate's CLI (`flask --app console.db.schema:migrations_app db ...`):
    the app it names has Flask-Migrate bound, though `create_app` alone no longer binds it."""
    import sqlite3

    from alembic.script import ScriptDirectory
    from flask_migrate.cli import db as flask_db

    from console.db.schema import MIGRATIONS, migrations_app

    database = tmp_path / "cli.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("CONSOLE_INSTANCE_DIR", str(tmp_path))
    app = migrations_app()
    assert "migrate" not in create_app(base_config("sqlite://")).extensions
    result = app.test_cli_runner().invoke(flask_db, ["upgrade"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        db.engine.dispose()
    with sqlite3.connect(database) as connection:
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision == ScriptDirectory(str(MIGRATIONS)).get_current_head()  # written by `flask db upgrade`


def test_training_names_that_read_alike_before_the_unique_name_keep_the_first_joiners(tmp_path):
    """Two members under names that read alike could be written before c8e1f4a2d7b3 (two joins at the same
    moment on SQLite): the upgrade keeps the name's key on the first to join, so the unique constraint can be
    made, and later joins under that name are refused."""
    import uuid
    from datetime import UTC, datetime, timedelta

    from flask_migrate import upgrade
    from sqlalchemy import text

    from console.db.schema import bind_migrations
    from console.training.cohorts import name_key

    app = create_app(base_config(f"sqlite:///{tmp_path / 'names.db'}"))
    with app.app_context():
        upgrade(directory=bind_migrations(app), revision="a7d3e9c1b5f2")
        cohort, first = uuid.uuid4().hex, datetime(2026, 11, 24, 9, tzinfo=UTC)
        with db.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO training_cohorts (id, name, exercises, join_token, trainer_secret_hash, created_at)"
                    " VALUES (:id, 'Class', '[]', 'token', 'hash', :at)"
                ),
                {"id": cohort, "at": first},
            )
            for index, name in enumerate(["Ada", "  ADA ", "Grace"]):
                workspace = uuid.uuid4().hex
                connection.execute(
                    text(
                        "INSERT INTO workspaces (id, name, is_demo, clock_offset_seconds, kept, created_at)"
                        " VALUES (:id, :name, 0, 0, 1, :at)"
                    ),
                    {"id": workspace, "name": name, "at": first},
                )
                connection.execute(
                    text(
                        "INSERT INTO training_members (id, cohort_id, workspace_id, name, joined_at)"
                        " VALUES (:id, :cohort, :workspace, :name, :at)"
                    ),
                    {
                        "id": uuid.uuid4().hex,
                        "cohort": cohort,
                        "workspace": workspace,
                        "name": name,
                        "at": first + timedelta(seconds=index),
                    },
                )
        upgrade_to_head()
        with db.engine.connect() as connection:
            keys = dict(connection.execute(text("SELECT name, name_key FROM training_members")).all())
        db.engine.dispose()
    assert keys == {"Ada": name_key("Ada"), "  ADA ": None, "Grace": name_key("Grace")}


def test_the_training_join_form_migration_downgrades_and_upgrades_again(tmp_path):
    """c8e1f4a2d7b3 adds two unique constraints in SQLite batch mode; its downgrade drops them by name, so a
    name the upgrade did not give them would fail only on the way down."""
    from flask_migrate import downgrade, upgrade
    from sqlalchemy import inspect

    from console.db.schema import bind_migrations

    app = create_app(base_config(f"sqlite:///{tmp_path / 'down.db'}"))
    with app.app_context():
        directory = bind_migrations(app)
        upgrade(directory=directory)
        downgrade(directory=directory, revision="a7d3e9c1b5f2")
        columns = {c["name"] for c in inspect(db.engine).get_columns("training_members")}
        assert not {"join_form_hash", "name_key"} & columns
        upgrade(directory=directory)
        uniques = {u["name"] for u in inspect(db.engine).get_unique_constraints("training_members")}
        db.engine.dispose()
    assert {"uq_training_members_join_form_hash", "uq_training_members_cohort_id"} <= uniques
