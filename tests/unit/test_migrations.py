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
