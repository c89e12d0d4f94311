"""A serving process that cannot read the stored API secrets (another SECRET_KEY) refuses to serve.

`console run` and `console worker` checked at start; Granian's own command line (the scale-out form in
docs/operations.md) builds the app with `serving_app` alone, and served: a trainee's page and a key's Reveal
answered 500, and a replayed Idempotency-Key said its first response was never stored.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from console import serving
from tests.children import ROOT, run_python

# One worker for the module: its keyed database (two CLI processes) is then made once, not on every worker.
pytestmark = pytest.mark.xdist_group("serving_secret_key")

# As under Granian: a master (here a stand-in that notes a SIGTERM) starts the process that builds the app with
# `multiprocessing` (fork); the test process is never the one a refusing serving process asks to stop.
# {pretend} runs in the child first (e.g. what a container shows when Granian is its pid 1).
MASTER = """
import multiprocessing, os, signal, sys
stop_asked = []
signal.signal(signal.SIGTERM, lambda *_: stop_asked.append(True))

def serve():
    {pretend}
    from console.serving import serving_app
    serving_app()
    print('serving', flush=True)
    os._exit(0)

child = multiprocessing.get_context('fork').Process(target=serve)
child.start()
child.join()
print('exit', child.exitcode, 'stop_asked', bool(stop_asked))
"""
UNDER_A_MASTER = MASTER.format(pretend="pass")
# Granian as the container's pid 1: the serving process's parent pid is 1, and it is the master all the same.
UNDER_A_MASTER_AS_PID_1 = MASTER.format(pretend="os.getppid = lambda: 1")
# Started by another program (a shell, a supervisor, `flask run`): that program is no Granian master to stop.
UNDER_ANOTHER_PROGRAM = """
import os, signal
stop_asked = []
signal.signal(signal.SIGTERM, lambda *_: stop_asked.append(True))
child = os.fork()
if child == 0:
    from console.serving import serving_app
    serving_app()
    os._exit(0)
_, status = os.waitpid(child, 0)
print('exit', os.waitstatus_to_exitcode(status), 'stop_asked', bool(stop_asked))
"""


@pytest.fixture(scope="module")
def first_database(tmp_path_factory):
    """A SQLite database holding one API key, encrypted with SECRET_KEY=the-first-key: made once per module
    (two CLI processes, ~7 s), each test then serving a copy of its own."""
    made = tmp_path_factory.mktemp("first-key")
    env = _env(made)
    for args in (["db", "upgrade"], ["keys", "create", "--mode", "sandbox", "--json"]):
        subprocess.run(
            [sys.executable, "-m", "console.cli", *args], cwd=ROOT, env=env, check=True, capture_output=True
        )
    return made / "console.db"


@pytest.fixture
def database(first_database, tmp_path):
    """The environment of a serving process over its own copy of that database."""
    shutil.copyfile(first_database, tmp_path / "console.db")
    return _env(tmp_path)


def _env(folder):
    return {
        **{
            k: v for k, v in os.environ.items() if k not in ("RATELIMIT_STORAGE_URI", "PUBLIC_URL", "THREADS")
        },
        "DATABASE_URL": f"sqlite:///{folder / 'console.db'}",
        "CONSOLE_INSTANCE_DIR": str(folder / "instance"),
        "SECRET_KEY": "the-first-key",
        "RUN_WORKER": "0",
        serving.CPUS_ENV: "",
    }


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


def test_granian_as_a_containers_pid_1_is_still_asked_to_stop(database):
    """`os.getppid() != 1` was the test for "orphaned": with Granian as pid 1 (a container's usual command) the
    refusing process never asked it to stop, and `--respawn-failed-workers` replaced it until Granian's
    crash-loop detection gave up (exit 1), if it did."""
    result = run_python(UNDER_A_MASTER_AS_PID_1, env={**database, "SECRET_KEY": "another-key"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["exit", str(serving.SECRET_KEY_REFUSED), "stop_asked", "True"]


def test_a_program_that_is_no_granian_master_is_not_stopped(database):
    """`serving_app` called by something else (a shell's `python -c`, a supervisor): the process refuses and
    exits, and sends nothing to its parent, which it did not start and must not stop."""
    result = run_python(UNDER_ANOTHER_PROGRAM, env={**database, "SECRET_KEY": "another-key"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["exit", str(serving.SECRET_KEY_REFUSED), "stop_asked", "False"]
    assert "encrypted with a different SECRET_KEY" in result.stderr
