"""The README's Flask receiver runs: it verifies, refuses forgeries and dedupes; and as documented."""

from __future__ import annotations

import re
import sys
import time
import types
from pathlib import Path

from console.webhooks import sign
from console.webhooks.shaping import body_bytes

DOC = Path(__file__).resolve().parents[2] / "README.md"


def receiver_source() -> str:
    text = DOC.read_text()
    section = text[text.index("### A receiver in ") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_title_counts_the_lines_shown():
    promised = int(re.search(r"### A receiver in (\d+) lines", DOC.read_text()).group(1))
    assert len(receiver_source().splitlines()) == promised  # blank lines included, as a reader counts


def test_the_documented_receiver(monkeypatch, capsys):
    source = receiver_source()
    monkeypatch.setenv("API_SECRET", "sk_sandbox_example")
    module = types.ModuleType("receiver_example")
    module.__file__ = str(DOC)  # Flask finds its root path from the module's file
    monkeypatch.setitem(sys.modules, "receiver_example", module)
    exec(compile(source, str(DOC), "exec"), module.__dict__)
    client = module.app.test_client()
    body = body_bytes("account.added", "evt-1", {"account_id": "a1"})
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "x-timestamp": str(timestamp),
        "x-service-signature": sign("sk_sandbox_example", timestamp, body),
    }
    assert client.post("/hooks", data=body, headers=headers).status_code == 200
    assert client.post("/hooks", data=body, headers=headers).status_code == 200  # a redelivery
    forged = {**headers, "x-service-signature": sign("someone-else", timestamp, body)}
    assert client.post("/hooks", data=body, headers=forged).status_code == 400
    assert capsys.readouterr().out.count("account.added") == 1


def test_the_receiver_runs_as_the_readme_says(tmp_path):
    """Saved as receiver.py, this virtualenv's `flask --app receiver` loads it: it imports this package."""
    import os
    import subprocess

    (tmp_path / "receiver.py").write_text(receiver_source())
    flask = Path(sys.executable).with_name("flask")
    env = {**os.environ, "API_SECRET": "sk_sandbox_example"}
    routes = subprocess.run(
        [str(flask), "--app", "receiver", "routes"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert routes.returncode == 0, routes.stderr
    assert "/hooks" in routes.stdout and "POST" in routes.stdout


def test_saved_in_the_checkout_it_passes_make_tests_lint():
    """Saved as the README says (receiver.py in the checkout), `make test`'s ruff check and format check pass:
    ruff reads it as that file, under this project's configuration."""
    import subprocess

    ruff = Path(sys.executable).with_name("ruff")
    root = DOC.parent
    for args in (
        ["check", "--stdin-filename", "receiver.py", "-"],
        ["format", "--check", "--stdin-filename", "receiver.py", "-"],
    ):
        run = subprocess.run(
            [str(ruff), *args], cwd=root, input=receiver_source(), capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, run.stdout + run.stderr
