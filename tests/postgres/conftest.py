"""The PostgreSQL tests' app: skipped on the suite's SQLite run, and left with fresh connections for the next
test whatever this one did to its own (killed them, held locks)."""

from __future__ import annotations

import pytest

from console.extensions import db


@pytest.fixture
def pg_app(app, database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only (runs when TEST_DATABASE_URL is set)")
    yield app
    with app.app_context():
        db.engine.dispose()
