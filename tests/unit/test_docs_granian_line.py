"""docs/operations.md's `granian` line (the scale-out form's serving processes), run as written.

`console run` tells Granian to replace a serving process that dies; Granian's own default is to stop the whole
server when one does. The documented line lacked that option, so one serving process killed by the OOM killer
(or a crash) took every process down with it, and the service stayed down.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.unit.test_serving import ROOT, _free_port
from tests.waiting import wait_for

pytestmark = pytest.mark.slow
DOC = ROOT / "docs" / "operations.md"


def granian_line() -> str:
    """The documented command, its continuation lines joined, from `Beyond one machine`'s block."""
    section = DOC.read_text().split("## Beyond one machine", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    match = re.search(r"^(THREADS=\S+ \.venv/bin/granian .*?)(?<!\\)$", block.replace("\\\n", " "), re.M)
    assert match, block
    return match.group(1)


def test_the_line_names_every_granian_option_console_run_relies_on():
    line = granian_line()
    assert "--respawn-failed-workers" in line
    assert re.search(r"--workers-kill-timeout 30\b", line)  # console.serving.SERVING_STOP_SECONDS


def test_a_serving_process_killed_under_the_documented_line_is_replaced(tmp_path):
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("RATELIMIT_STORAGE_URI", "PUBLIC_URL")},
        "DATABASE_URL": f"sqlite:///{tmp_path / 'console.db'}",
        "SECRET_KEY": "granian-line-test-secret",
        "CONSOLE_INSTANCE_DIR": str(tmp_path / "instance"),
        "RUN_WORKER": "0",
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    subprocess.run(
        [sys.executable, "-m", "console.cli", "db", "upgrade"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    # As written, but one process (not four) on this shared machine, and this virtualenv's granian.
    words = shlex.split(granian_line().replace("--workers 4", "--workers 1"))
    settings = dict(word.split("=", 1) for word in words if re.match(r"^[A-Z_]+=", word))
    command = [
        re.sub(r"\$(HOST|PORT)\b", lambda m: env[m.group(1)], w)
        for w in words
        if w not in {f"{k}={v}" for k, v in settings.items()}
    ]
    command[0] = str(Path(sys.executable).parent / "granian")
    log = (tmp_path / "granian.log").open("w")
    server = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**env, **settings},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    session = requests.Session()
    session.trust_env = False

    def serving_pid(other_than: int | None = None) -> int | None:
        assert server.poll() is None, (tmp_path / "granian.log").read_text()
        try:
            pid = session.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["pid"]
        except requests.RequestException:
            return None
        return pid if pid != other_than else None

    try:
        first = wait_for(serving_pid, 60, 0.25)
        assert first, (tmp_path / "granian.log").read_text()
        os.kill(first, signal.SIGKILL)
        replaced = wait_for(lambda: serving_pid(other_than=first), 60, 0.25)
        assert replaced, (tmp_path / "granian.log").read_text()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        assert server.wait(60) is not None
        log.close()
