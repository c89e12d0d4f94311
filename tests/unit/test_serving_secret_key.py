"""A serving process that cannot read the stored API secrets (another SECRET_KEY) refuses to serve.

`console run` and `console worker` checked at start; Granian's own command line (the scale-out form in
docs/operations.md) builds the app with `serving_app` alone, and served: a trainee's page and a key's Reveal
answered 500, and a replayed Idempotency-Key said its first response was never stored.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from console import serving
from tests.children import ROOT, run_python

# As under Granian: a master (here a stand-in that notes a SIGTERM) forks the process that builds the app; the
# test process is never the one a refusing serving process asks to stop.
UNDER_A_MASTER = """
import os, signal, sys
stop_asked = []
signal.signal(signal.SIGTERM, lambda *_: stop_asked.append(True))
child = os.fork()
if child == 0:
    from console.serving import serving_app
    serving_app()
    print('serving', flush=True)
    os._exit(0)
_, status = os.waitpid(child, 0)
print('exit', os.waitstatus_to_exitcode(status), 'stop_asked', bool(stop_asked))
"""


@pytest.fixture
def database(tmp_path):
    """A SQLite database holding one API key, encrypted with SECRET_KEY=the-first-key."""
    env = {
        **{
            k: v for k, v in os.environ.items() if k not in ("RATELIMIT_STORAGE_URI", "PUBLIC_URL", "THREADS")
        },
        "DATABASE_URL": f"sqlite:///{tmp_path / 'console.db'}",
        "CONSOLE_INSTANCE_DIR": str(tmp_path / "instance"),
        "SECRET_KEY": "the-first-key",
        "RUN_WORKER": "0",
        serving.CPUS_ENV: "",
    }
    for args in (["db", "upgrade"], ["keys", "create", "--mode", "sandbox", "--json"]):
        subprocess.run(
            [sys.executable, "-m", "console.cli", *args], cwd=ROOT, env=env, check=True, capture_output=True
        )
    return env


def test_a_serving_process_with_another_secret_key_exits_saying_which_to_set(database):
    result = run_python(UNDER_A_MASTER, env={**database, "SECRET_KEY": "another-key"})
    assert result.returncode == 0, result.stderr
    # It exits before serving, and asks its master to stop (else Granian replaced it for good).
    assert result.stdout.split() == [
        "exit",
        str(serving.SECRET_KEY_REFUSED),
        "stop_asked",
        "True",
    ]
    assert "encrypted with a different SECRET_KEY" in result.stderr
    assert "another-key" not in result.stderr and "the-first-key" not in result.stderr  # no key in a log


def test_the_key_the_database_was_used_with_serves(database):
    result = run_python(UNDER_A_MASTER, env=database)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["serving", "exit", "0", "stop_asked", "False"]


def test_a_database_not_ready_is_left_to_the_health_check(database, tmp_path):
    """No schema yet (or PostgreSQL down): the process serves, /healthz says why, as documented."""
    empty = {**database, "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}", "SECRET_KEY": "another-key"}
    result = run_python(UNDER_A_MASTER, env=empty)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:3] == ["serving", "exit", "0"]
