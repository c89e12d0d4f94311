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
