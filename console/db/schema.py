"""The schema's migrations (Alembic, through Flask-Migrate): loaded only by what runs them.

Why not bound in `create_app` like the other extensions: importing Flask-Migrate imports Alembic, ~0.3 s
of CPU at every start, and only `console db upgrade` and `console run`'s master migrate. The worker process,
the serving processes and the client commands never do.
"""

from __future__ import annotations

from flask import Flask, current_app

from console.config import ROOT

MIGRATIONS = ROOT / "console" / "migrations"


def bind_migrations(app: Flask) -> str:
    """Register Flask-Migrate on `app` (once; `console/migrations/env.py` reads it); the migrations' folder."""
    from flask_migrate import Migrate

    from console.extensions import db

    if "migrate" not in app.extensions:
        Migrate(app, db, directory=str(MIGRATIONS))
    return str(MIGRATIONS)


def upgrade_to_head() -> None:
    """Upgrade the current app's database to the newest migration (nothing to do when it is there)."""
    from flask_migrate import upgrade

    upgrade(directory=bind_migrations(current_app))


def migrations_app() -> Flask:
    """The app with Flask-Migrate bound, for Flask-Migrate's own commands when writing a migration:
    `flask --app console.db.schema:migrations_app db migrate -m "what changed"` (docs/ARCHITECTURE.md)."""
    from console import create_app

    app = create_app()
    bind_migrations(app)
    return app
