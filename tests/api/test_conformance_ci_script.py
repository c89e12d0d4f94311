"""docs/webhooks.md's `conformance.sh`, run as CI runs it: bash, curl and jq against the app served on a
socket, with the worker's run loop executing the runs. Its exit code must fail the build exactly when the
check failed, and say why."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from bench.webhooks import Receiver
from console.api.ratelimit import RateLimiter
from console.conformance import runs
from tests.api.test_conformance import Endpoint, create_webhook

pytestmark = [
    pytest.mark.committing,
    pytest.mark.skipif(
        not (shutil.which("bash") and shutil.which("curl") and shutil.which("jq")),
        reason="the documented script needs bash, curl and jq",
    ),
]

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def documented_script() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.S)
    (script,) = [b for b in blocks if "# conformance.sh" in b]
    return script


@pytest.fixture
def served(app):
    """The app on a real socket, and the worker's run loop beside it; yields the sandbox base URL."""
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    stop = threading.Event()

    def worker():
        while not stop.is_set():
            if not runs.run_due(app):
                stop.wait(0.05)

    threads = [threading.Thread(target=server.serve_forever, daemon=True), threading.Thread(target=worker)]
    for thread in threads:
        thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/sandbox"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        for thread in threads:
            thread.join(30)


def run_script(tmp_path, base, secret, webhook_id) -> subprocess.CompletedProcess:
    script = tmp_path / "conformance.sh"
    script.write_text(documented_script())
    env = {"PATH": os.environ["PATH"], "BASE": base, "SECRET": secret, "WEBHOOK_ID": webhook_id}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120)


def test_a_conforming_receiver_passes_the_build(served, api, workspace, tmp_path):
    secret = workspace.secrets["sandbox"]
    with Receiver(Endpoint(secret)) as rx:
        hook = create_webhook(api, rx.url)
        done = run_script(tmp_path, served, secret, hook["id"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "conformance check passed"
    assert "FAILED" not in done.stdout


def test_a_receiver_that_skips_signatures_fails_the_build_naming_the_checks(served, api, workspace, tmp_path):
    secret = workspace.secrets["sandbox"]
    with Receiver(Endpoint(secret, check_signature=False)) as rx:
        hook = create_webhook(api, rx.url)
        done = run_script(tmp_path, served, secret, hook["id"])
    assert done.returncode != 0
    failed = [line.split(":")[0] for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    assert failed == ["FAILED forged_signature", "FAILED altered_body"]
    assert "conformance check failed" in done.stderr


def test_a_refused_start_stops_the_script_with_the_services_message(served, workspace, tmp_path):
    done = run_script(tmp_path, served, workspace.secrets["sandbox"], "9b1f0000-0000-4000-8000-000000000000")
    assert done.returncode != 0
    assert "No webhook with id 9b1f0000-0000-4000-8000-000000000000" in done.stderr
