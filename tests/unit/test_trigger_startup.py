"""`console trigger` and `console listen` are clients: they start without building the app.

Each `console trigger` took 5-7 s in a training room: the command imported the scenario gallery, which
imported the Link flow and with it Flask, SQLAlchemy and Alembic (every import compiled again where
bytecode is not kept). The client commands now import click, requests and the sandbox test data only.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("flask", "sqlalchemy", "alembic", "jinja2", "werkzeug")


def test_the_client_commands_import_no_server_framework():
    code = (
        "import sys\n"
        "from console import cli, trigger\n"
        "trigger.resolve('pending_then_success'); trigger.resolve('federal_sent'); trigger.listing()\n"
        f"print(','.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert found.stdout.strip() == "", f"the client commands imported {found.stdout.strip()}"


def test_the_headless_scenarios_match_the_galleries():
    """The trigger's rows (no browser steps) carry the same token bodies and completions as the gallery's."""
    from console.web.scenarios import gallery

    def rows(scenarios):  # end_user_id is a fresh random id each time a body is made
        return {s.key: ({**s.token_body(), "end_user_id": "-"}, s.completion) for s in scenarios}

    full, light = rows(gallery.all_scenarios()), rows(gallery.all_scenarios(with_steps=False))
    assert light == full
    assert all(s.steps for s in gallery.all_scenarios())
