"""`console.served`: the one root URL every `console` command prints or calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from console import served


@pytest.fixture
def environment(monkeypatch, tmp_path):
    """A command's environment with none of the server's settings, and an instance folder of its own."""
    for name in ("PUBLIC_URL", "HOST", "PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CONSOLE_INSTANCE_DIR", str(tmp_path))
    return tmp_path


def test_without_a_running_server_it_is_host_and_port(environment, monkeypatch):
    assert served.root() == "http://127.0.0.1:5000"
    monkeypatch.setenv("PORT", "5623")
    assert served.root() == "http://127.0.0.1:5623"
    assert served.running_root() is None  # a client command's --api is not guessed


def test_a_running_server_s_record_wins_over_the_port_default(environment):
    """The case reported: `make run PORT=5001`, then `console keys create` in another shell printed 5000."""
    served.record("http://127.0.0.1:5001")  # this test's process stands for the running server
    assert served.root() == "http://127.0.0.1:5001"
    assert served.running_root() == "http://127.0.0.1:5001"
    config = {"PUBLIC_URL": None, "LISTEN_HOST": "127.0.0.1", "LISTEN_PORT": 5000}
    assert served.root(config) == "http://127.0.0.1:5001"


def test_public_url_wins_over_everything(environment, monkeypatch):
    served.record("http://127.0.0.1:5001")
    monkeypatch.setenv("PUBLIC_URL", "https://demo.example.com/")
    assert served.root() == "https://demo.example.com"


def test_a_stopped_server_s_record_is_ignored(environment):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    served.record("http://127.0.0.1:5001", pid=int(finished.stdout))  # that process has ended
    assert served.recorded_root() is None
    assert served.root() == "http://127.0.0.1:5000"


def test_a_reused_pid_is_not_the_server_that_wrote_the_record(environment):
    path = served.record("http://127.0.0.1:5001")
    noted = json.loads(path.read_text())
    if noted["started"] is None:
        pytest.skip("no /proc: process start times are not known here")
    path.write_text(json.dumps({**noted, "started": noted["started"] - 1}))
    assert served.recorded_root() is None


def test_forget_removes_only_its_own_record(environment):
    served.record("http://127.0.0.1:5001", pid=os.getppid())
    served.forget()  # this process did not write it
    assert served.recorded_root() == "http://127.0.0.1:5001"
    served.forget(pid=os.getppid())
    assert not (environment / served.RECORD_NAME).exists()


@pytest.mark.parametrize("content", ["", "not json", "[]", '{"root": 5, "pid": "x"}'])
def test_an_unreadable_record_is_no_record(environment, content):
    (environment / served.RECORD_NAME).write_text(content)
    assert served.root() == "http://127.0.0.1:5000"
