"""The README's quickstart and the curl snippets of docs/, run as a reader pastes them: bash and curl against the
app served on a socket, the README's receiver on a socket of its own, and `console trigger` as a subprocess.

The only changes made to a snippet are the ones a reader makes: the secret for `sk_sandbox_…`, this server for
`http://127.0.0.1:5000`, the receiver's port for 8000, and this virtualenv for `.venv/bin/`. Each must appear where
the test expects it, so a snippet that changes shape fails here instead of reaching some other server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from console.api.ratelimit import RateLimiter
from console.extensions import db
from console.webhooks.delivery_loop import deliver_due
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.committing,
    pytest.mark.skipif(
        not (shutil.which("bash") and shutil.which("curl") and shutil.which("jq") and shutil.which("date")),
        reason="the documented snippets need bash, curl, jq and date",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent


def fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def quickstart() -> list[str]:
    """The README's shell blocks from "A first API call" to the next top-level section, in reading order."""
    section = README.split("## A first API call", 1)[1].split("\n## ", 1)[0]
    return fenced(section, "sh")


def readme_receiver_source() -> str:
    section = README[README.index("### A receiver in ") :]
    return fenced(section, "python")[0]


def as_pasted(block: str, root: str, secret: str, hook_port: int | None = None) -> str:
    for placeholder, value in (
        ("sk_sandbox_…", secret),
        ("http://127.0.0.1:5000", root),
        ("127.0.0.1:8000", f"127.0.0.1:{hook_port}"),
        ("localhost:8000", f"localhost:{hook_port}"),
        (".venv/bin/", f"{BIN}/"),
    ):
        block = block.replace(placeholder, value)
    assert ":5000" not in block and ":8000" not in block, block  # never someone else's server
    return block


def run(script: str, cwd: Path, **env: str) -> str:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout


def json_values(output: str) -> tuple[list, str]:
    """The JSON documents at the start of `output` (curl -s prints no newline after each), and the rest."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(output) and output[at].isspace():
            at += 1
        if at >= len(output) or output[at] != "{":
            return values, output[at:]
        value, at = decoder.raw_decode(output, at)
        values.append(value)


def serve(wsgi_app) -> tuple[str, callable]:
    server = make_server("127.0.0.1", 0, wsgi_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()
        thread.join(30)

    return f"http://127.0.0.1:{server.server_port}", stop


@pytest.fixture
def root(app):
    """The app on a real socket (what `make run` serves), with a rate limit no snippet meets."""
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )
    url, stop = serve(app)
    yield url
    stop()


@pytest.fixture
def readme_receiver(monkeypatch, workspace):
    """The README's receiver.py, run with `API_SECRET` set as the README says; yields its port."""
    monkeypatch.setenv("API_SECRET", workspace.secrets["sandbox"])
    module = types.ModuleType("receiver")
    module.__file__ = str(ROOT / "receiver.py")  # where the README says to save it
    monkeypatch.setitem(sys.modules, "receiver", module)
    exec(compile(readme_receiver_source(), "receiver.py", "exec"), module.__dict__)
    url, stop = serve(module.app)
    yield int(url.rsplit(":", 1)[1])
    stop()


def test_the_quickstart_from_a_link_token_to_a_verified_webhook(
    app, root, workspace, readme_receiver, capsys, tmp_path
):
    secret = workspace.secrets["sandbox"]
    create, complete, receive = quickstart()
    assert create.startswith("export SECRET=sk_sandbox_…  BASE=http://127.0.0.1:5000/sandbox\n")
    env = {"SECRET": secret, "BASE": f"{root}/sandbox"}

    # 1. A Link token; the reader copies its id into LINK_TOKEN_ID.
    (answer,), rest = json_values(run(as_pasted(create, root, secret), tmp_path))
    assert rest == ""
    assert set(answer["data"]) == {"id", "expires", "mode", "token"} and answer["data"]["mode"] == "sandbox"
    link_token_id = answer["data"]["id"]

    # 2. Completed headlessly, then the job asked for by Link token id.
    (completion, jobs), rest = json_values(
        run(as_pasted(complete, root, secret), tmp_path, LINK_TOKEN_ID=link_token_id, **env)
    )
    assert rest == ""
    assert completion["data"]["outcome"] == "success", completion
    assert completion["data"]["link_token_id"] == link_token_id
    assert jobs["meta"]["count"] == 1
    [job] = jobs["data"]
    assert (job["id"], job["outcome"], job["link_token_id"]) == (
        completion["data"]["job_id"],
        "success",
        link_token_id,
    )

    # 3. The receiver registered, a switch run again with `console trigger`; its events arrive, verified.
    (webhook,), said = json_values(run(as_pasted(receive, root, secret, readme_receiver), tmp_path, **env))
    assert webhook["data"]["url"] == f"http://127.0.0.1:{readme_receiver}/hooks"
    assert webhook["data"]["status"] == "active"
    assert re.fullmatch(r"user_good: Link token \S+, job \S+, outcome success \(flow success\)\n", said), said
    capsys.readouterr()
    with app.app_context():
        assert deliver_due(app) == 2  # what the worker of `make run` does within a second
        db.session.remove()
    printed = capsys.readouterr().out
    assert printed.count("account.added ") == 1 and printed.count("direct_deposit_switch.added ") == 1, (
        printed
    )


def doc_block(page: str, lang: str, marker: str) -> str:
    (block,) = [b for b in fenced((ROOT / "docs" / page).read_text(), lang) if marker in b]
    return block


def test_the_webhook_registration_of_webhooks_md(root, workspace, tmp_path):
    secret = workspace.secrets["sandbox"]
    block = doc_block("webhooks.md", "sh", "/v1/webhooks")
    (answer,), rest = json_values(
        run(as_pasted(block, root, secret, 8001), tmp_path, SECRET=secret, BASE=f"{root}/sandbox")
    )
    assert rest == ""
    assert answer["data"]["url"] == "http://127.0.0.1:8001/hooks"
    assert answer["data"]["relayed"] is False  # as the page's webhook object shows


def test_the_idempotent_retry_of_api_md(root, workspace, tmp_path):
    secret = workspace.secrets["sandbox"]
    block = as_pasted(doc_block("api.md", "sh", "Idempotency-Key"), root, secret)
    again = block[block.index("curl ") :]  # "Run the `curl` line again": the heredoc and KEY= ran once
    output = run(block + again, tmp_path, SECRET=secret, BASE=f"{root}/sandbox")
    heads = [part for part in re.split(r"(?=HTTP/1\.[01] )", output) if part]
    assert [h.splitlines()[0].split()[1] for h in heads] == ["200", "200"]
    assert "idempotent-replayed: true" not in heads[0].lower()
    assert "idempotent-replayed: true" in heads[1].lower()
    bodies = [json.loads(h.split("\n\n", 1)[1]) for h in heads]  # text mode reads CRLF as newlines
    assert bodies[0]["data"]["id"] == bodies[1]["data"]["id"]


def test_the_clock_moves_of_jobs_md_work_after_the_clock_has_moved(root, workspace, tmp_path):
    """The jump snippet picks a moment from the workspace clock, so it works after the advance above it (or any
    other move a reader made first), not only on a fresh workspace."""
    secret = workspace.secrets["sandbox"]
    env = {"SECRET": secret, "BASE": f"{root}/sandbox"}
    advance = as_pasted(doc_block("jobs.md", "bash", '/clock/advance"'), root, secret)
    jump = as_pasted(doc_block("jobs.md", "bash", "/clock/jump"), root, secret)
    for _ in range(3):  # three days ahead: the old snippet's fixed "+2 days" was then in the past
        (moved,), _rest = json_values(run(advance, tmp_path, **env))
        assert moved["data"]["offset_seconds"] > 0
    (jumped,), _rest = json_values(run(jump, tmp_path, **env))
    assert "error" not in jumped, jumped
    assert jumped["data"]["now"][11:16] == "14:00"


def test_console_listen_of_webhooks_md_relays_to_the_readme_receiver(
    root, workspace, readme_receiver, capsys, tmp_path
):
    """The listener as webhooks.md starts it, with the README's receiver behind it: no worker needed, the
    listener fetches the deliveries itself."""
    secret = workspace.secrets["sandbox"]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SECRET": secret, "BASE": f"{root}/sandbox"}
    block = as_pasted(doc_block("webhooks.md", "sh", "console listen"), root, secret, readme_receiver)
    assert f"localhost:{readme_receiver}/hooks" in block
    said = tmp_path / "listen.out"
    with (
        said.open("w") as out,
        subprocess.Popen(
            ["bash", "-c", f"exec {block.strip()}"], cwd=tmp_path, env=env, stdout=out
        ) as listener,
    ):
        try:
            # Its relayed webhook exists once it says so; a switch before that has no delivery for it to fetch.
            assert wait_for(lambda: "Ready: relaying" in said.read_text(), seconds=20), said.read_text()
            run(f"{BIN}/console trigger success --api $BASE --key $SECRET", tmp_path, **env)
            arrived = wait_for(lambda: "direct_deposit_switch.added " in capsys.readouterr().out, seconds=20)
            assert arrived, "the relayed delivery never reached the receiver"
        finally:
            listener.terminate()
