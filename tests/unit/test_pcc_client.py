"""pcc.py, the training room's single-file client, as a trainee runs it: downloaded from the served app into an
empty folder and run with a bare Python (no checkout on its path), against the app on a real port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import requests

from console.webhooks import signing
from tests.unit import test_listen_cli as listen_cli
from tests.unit.test_listen_cli import delivery_of, listener_id, send_test_event, wait_for

# The served app, the local receiver and the API client of `console listen`'s tests.
served, receiver, service = listen_cli.served, listen_cli.receiver, listen_cli.service


def _run(folder, *args, **kwargs):
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "PYTHONPATH"}
    env["PYTHONUNBUFFERED"] = "1"
    # -I -S: isolated and without site-packages: nothing of this project or its dependencies is importable.
    return [sys.executable, "-I", "-S", str(folder / "pcc.py"), *args], {"cwd": folder, "env": env, **kwargs}


# The app serves on a real port (another thread) and pcc.py runs in a subprocess: its writes must be committed.
@pytest.mark.committing
def test_pcc_listen_relays_a_signed_delivery_and_trigger_runs_a_scenario(
    served, workspace, receiver, service, tmp_path
):
    answer = requests.get(served.root + "/training/pcc.py", timeout=30)
    assert answer.status_code == 200
    (tmp_path / "pcc.py").write_text(answer.text)
    key = workspace.secrets["sandbox"]
    command, options = _run(
        tmp_path, "listen", "--api", served.root, "--key", key, "--forward-to", receiver.url
    )
    listen = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **options)
    try:
        ready = listen.stdout.readline()
        assert ready.startswith("Ready: relaying sandbox webhook"), ready
        event_id = send_test_event(service, listener_id(service))
        assert wait_for(lambda: receiver.requests), "nothing forwarded"
        [received] = receiver.requests
        payload = signing.verify(key, received["headers"], received["body"])  # signed as a direct delivery
        assert payload["event_id"] == event_id
        assert wait_for(lambda: delivery_of(service, event_id)["status"] == "delivered")
    finally:
        listen.send_signal(signal.SIGINT)
        assert listen.wait(timeout=20) == 0
        listen.stdout.close()

    command, options = _run(tmp_path, "trigger", "federal_sent", "--api", served.root, "--key", key)
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, **options)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "federal_sent: Link token "
    )  # the gallery's key, as `console trigger` and "outcome processing" in done.stdout
    command, options = _run(
        tmp_path, "trigger", "user_good", "--api", served.root, "--key", "sk_sandbox_wrong"
    )
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60, **options)
    assert refused.returncode == 1 and "the service refused the key" in refused.stderr


def test_pcc_reads_the_api_root_as_console_listen_does():
    """pcc.py must stay standard-library only, so it keeps its own copy of `sandbox_base`: the two agree."""
    import importlib.util
    from pathlib import Path

    from console import listener

    path = Path(listener.__file__).parent / "training" / "client" / "pcc.py"
    spec = importlib.util.spec_from_file_location("pcc_copy", path)
    pcc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pcc)
    for given in ("http://h:5000", "http://h:5000/", "http://h:5000/sandbox", "http://h:5000/sandbox/v1/"):
        assert pcc.sandbox_base(given) == listener.sandbox_base(given)
    # Another mode's base URL is refused by both, in the same words but the commands' names.
    for given in ("http://h:5000/development", "http://h:5000/development/v1/", "http://h:5000/v1"):
        with pytest.raises(pcc.Problem) as ours:
            pcc.sandbox_base(given)
        with pytest.raises(listener.Fatal) as theirs:
            listener.sandbox_base(given)
        words = str(theirs.value).replace(
            "console listen and console trigger", "pcc.py listen and pcc.py trigger"
        )
        assert str(ours.value) == words


@pytest.mark.parametrize(
    ("api", "key", "said"),
    [
        ("http://127.0.0.1:1/development", "sk_sandbox_abcd", "is the development API's base URL"),
        ("http://127.0.0.1:1/v1", "sk_sandbox_abcd", "is the production API's base URL"),
        ("http://127.0.0.1:1", "sk_dev_abcd", "--key is a development key (sk_dev_…)"),
        ("http://127.0.0.1:1", "sk_live_abcd", "--key is a production key (sk_live_…)"),
    ],
)
def test_pcc_refuses_another_modes_base_url_or_key_by_name_before_any_call(
    monkeypatch, capsys, api, key, said
):
    """`pcc.py trigger --api http://h:5000/development` called `…/development/sandbox/v1/link_tokens`, and the
    service's 404 named a path the trainee never wrote; a development key got the service's WRONG_MODE, which
    says to call the key's own base URL, which these commands cannot."""
    from console.training.client import pcc

    calls = []
    monkeypatch.setattr(pcc, "call", lambda *args, **kwargs: calls.append(args))  # nothing may be sent
    monkeypatch.setattr(pcc, "SCENARIOS", {"user_good": {"aliases": []}})
    for command in (["trigger", "user_good"], ["listen", "--forward-to", "http://127.0.0.1:1/hooks"]):
        assert pcc.main([*command, "--api", api, "--key", key]) == 1
        error = capsys.readouterr().err
        assert said in error and "pcc.py listen and pcc.py trigger use the sandbox" in error, error
        assert key not in error  # the secret is never echoed
    assert calls == []


def test_pcc_verify_refuses_a_signed_body_nested_too_deeply_instead_of_crashing():
    import time

    from console.training.client import pcc

    raw = b"[" * 100_000 + b"]" * 100_000
    stamp = int(time.time())
    headers = {"x-service-signature": signing.sign("whsec_test", stamp, raw), "x-timestamp": str(stamp)}
    with pytest.raises(pcc.WebhookVerificationError, match="nested too deeply"):
        pcc.verify("whsec_test", headers, raw)
