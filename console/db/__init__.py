"""The database layer, under the Flask-SQLAlchemy session (`console.extensions.db`).

What the rest of the app uses of it:
- `base`: the model base (`Base`, `IdMixin`, `CreatedAtMixin`, `UTCDateTime`) and its naming convention;
- `direct`, `rows`: statements compiled once and run straight on the driver (`Direct`), plain inserts
  and value snapshots without the ORM's bookkeeping (`insert_now`, `new`, `Snapshot`, `entity`);
- `lookup`: one customer record by id within its workspace and mode (`get_scoped`);
- `pinning`: the session class, and the one connection a test pins in a rolled-back transaction (tests only);
- `sqlite`, `postgres`: each backend's connection settings, set up by `configure(app)` below (SQLite's
  pragmas and its write gate; PostgreSQL's deferred BEGIN and idle-only ping).
"""

from __future__ import annotations

from flask import Flask


def configure(app: Flask) -> None:
    """Tune the app's engine for its backend; `create_app` calls this once the extensions are bound."""
    from console.db import postgres, sqlite
    from console.extensions import db

    url = app.config["SQLALCHEMY_DATABASE_URI"]
    if url.startswith("sqlite"):
        with app.app_context():
            app.extensions["sqlite_write_gate"] = sqlite.configure(db.engine)
    elif url.startswith("postgresql"):
        with app.app_context():
            if db.engine.dialect.driver == "psycopg":
                postgres.configure(db.engine)
