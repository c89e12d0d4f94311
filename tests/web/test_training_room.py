"""The training room (issue 32): the join link and every snippet from the class's root, the warning when
trainees cannot reach it, hints filled with the trainee's own key (on their page only), the single-file
client the room downloads, and the projector grid (names, states, last activity, stuck, progress, QR).
"""

from __future__ import annotations

import re
import sys
import time
import types
from datetime import timedelta
from html import unescape

import pytest
from sqlalchemy import select

from console.core import timeutil
from console.extensions import db
from console.requestlog.models import RequestLogEntry
from console.requestlog.writer import writer_for
from console.training import cohorts, exercises, room
from console.training.models import CohortMember
from console.webhooks.signing import sign
from tests.web.conftest import Visitor
from tests.web.helpers import sandbox_secret
from tests.web.test_training import backend, create_cohort, join, new_token, register

LAN = "http://192.168.1.10:5000"


@pytest.fixture
def on_the_lan(app, monkeypatch):
    """`PUBLIC_URL=http://192.168.1.10:5000 make run HOST=0.0.0.0`: what docs/training.md tells a trainer."""
    monkeypatch.setitem(app.config, "PUBLIC_URL", LAN)
    monkeypatch.setitem(app.config, "LISTEN_HOST", "0.0.0.0")


@pytest.fixture
def trainer(app) -> Visitor:
    return Visitor(app.test_client())


def page_of(response) -> str:
    assert response.status_code == 200, response.status_code
    return unescape(response.get_data(as_text=True))


# The class's root ---------------------------------------------------------------------------------


def test_the_join_link_and_snippets_use_public_url(app, on_the_lan, trainer):
    cohort = create_cohort(trainer)
    assert cohort["join"].startswith(f"{LAN}/training/join/")
    assert cohort["trainer"].startswith(f"{LAN}/training/")
    grid = page_of(trainer.get(f"/training/{cohort['id']}"))
    assert f"{LAN}/training/join/" in grid and 'id="loopback-warning"' not in grid
    ada = join(app, cohort, "Ada")
    me = page_of(ada.get("/training/me"))
    assert f'<script src="{LAN}/static/link.js">' in me  # exercise 2's page and its reference solution
    assert f"{LAN}/sandbox/v1" in me
    assert f"curl -O {LAN}/training/pcc.py" in me
    assert "127.0.0.1:5000" not in me and "localhost" not in me.replace("http://localhost:8000", "").replace(
        "http://localhost:8080", ""
    )


def test_without_public_url_the_root_is_the_address_the_page_was_opened_at(app, monkeypatch, trainer):
    monkeypatch.setitem(app.config, "PUBLIC_URL", "")
    monkeypatch.setitem(app.config, "LISTEN_HOST", "0.0.0.0")
    there = {"base_url": "http://10.0.0.7:5000"}
    trainer.get("/training", **there)
    created = page_of(
        trainer.post(
            "/training/cohorts",
            {"name": "LAN class", "exercises": ["link_token"]},
            follow_redirects=True,
            **there,
        )
    )
    assert re.search(r'id="join-link">http://10\.0\.0\.7:5000/training/join/', created)
    assert 'id="loopback-warning"' not in created


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"PUBLIC_URL": "", "LISTEN_HOST": "127.0.0.1"}, "This server listens on 127.0.0.1 only"),
        ({"PUBLIC_URL": "", "LISTEN_HOST": "0.0.0.0"}, "You opened this page at localhost"),
        (
            {"PUBLIC_URL": "http://127.0.0.1:5000", "LISTEN_HOST": "0.0.0.0"},
            "PUBLIC_URL is http://127.0.0.1:5000",
        ),
    ],
)
def test_a_root_only_this_machine_reaches_is_a_warning_with_the_fix(
    app, monkeypatch, trainer, settings, said
):
    for name, value in settings.items():
        monkeypatch.setitem(app.config, name, value)
    response = trainer.post(
        "/training/cohorts",
        {"name": "Loopback class", "exercises": list(exercises.KEYS)},
        follow_redirects=True,
    )
    created = page_of(response)
    cohort_id = re.search(r"/training/([0-9a-f-]{36})/trainer/", created).group(1)
    for html in (created, page_of(trainer.get(f"/training/{cohort_id}"))):
        warning = re.search(r'id="loopback-warning"[^>]*>(.*?)</div>', html, re.S).group(1)
        assert "Trainees cannot reach this join link" in warning and said in warning
        assert re.search(r"PUBLIC_URL=http://\S+:5000 make run HOST=0\.0\.0\.0", warning), warning


def test_the_fix_names_this_machines_address_when_it_has_one(monkeypatch):
    monkeypatch.setattr(room, "lan_address", lambda: "192.168.4.2")
    found = room.class_root({"LISTEN_HOST": "127.0.0.1", "LISTEN_PORT": 8080}, "http://127.0.0.1:8080/")
    assert found.url == "http://127.0.0.1:8080"
    # make run serves on 5000 unless told: the fix names the port PUBLIC_URL promises
    assert found.problem.endswith("PUBLIC_URL=http://192.168.4.2:8080 make run HOST=0.0.0.0 PORT=8080")
    assert room.class_root(
        {"PUBLIC_URL": "https://class.example/", "LISTEN_HOST": "127.0.0.1"}, "x"
    ) == room.Root("https://class.example", None)


# Hints and snippets ------------------------------------------------------------------------------


def test_hints_are_right_and_the_snippets_carry_the_trainees_own_key_and_ids(
    app, on_the_lan, trainer, monkeypatch
):
    cohort = create_cohort(trainer)
    ada, grace = join(app, cohort, "Ada"), join(app, cohort, "Grace")
    secret = sandbox_secret(app, ada.workspace_id)
    monkeypatch.setitem(app.config, "SANDBOX_WEBHOOK_NETWORKS", "192.168.1.0/24")  # the room's LAN
    hook = register(backend(app, ada), "http://192.168.1.20:8000/hooks")
    ada.post("/training/me/miss-webhook")
    with app.app_context():
        held = str(db.session.get(cohorts.Workspace, ada.workspace_id).held_link_token_id)

    response = ada.get("/training/me")
    assert response.headers["Cache-Control"] == "no-store"
    me = page_of(response)
    assert "console's header" not in me
    assert "API keys page (Reveal)" in me
    snippet = {
        key: unescape(" ".join(re.findall(r'<code id="snippet-' + key + r'-\d+">(.*?)</code>', me, re.S)))
        for key in exercises.KEYS
    }
    # Exercise 1: curl, Python and Node, each with the key and the sandbox base.
    assert snippet["link_token"].count(secret) == 3 and snippet["link_token"].count(f"{LAN}/sandbox/v1") == 3
    assert "fetch(`${API}/link_tokens`" in snippet["link_token"] and "requests.post" in snippet["link_token"]
    # Exercise 3: how to get the listener, and `listen` with every argument it needs.
    assert f"curl -O {LAN}/training/pcc.py" in snippet["own_endpoint"]
    assert f"python3 pcc.py listen --api {LAN} --key '{secret}'" in snippet["own_endpoint"]
    assert "--forward-to http://localhost:8000/hooks" in snippet["own_endpoint"]
    # Exercises 4 and 5 name Ada's own webhook and held token; 6 the triggers and the clock.
    assert f"/sandbox/webhooks/{hook['id']}/conformance" in snippet["conformance"]
    assert f"/jobs?link_token_id={held}" in snippet["missed_webhook"]
    assert "pcc.py trigger pending_then_success" in snippet["switch_outcomes"]
    assert '"business_days": 1' in snippet["switch_outcomes"]
    # Ada's key is on Ada's page only: not on Grace's, the grid, Ada's row for the trainer, or pcc.py.
    assert secret not in grace.get("/training/me").get_data(as_text=True)
    assert secret not in trainer.get(f"/training/{cohort['id']}").get_data(as_text=True)
    with app.app_context():
        member = db.session.scalars(select(CohortMember).where(CohortMember.name == "Ada")).one()
    assert secret not in trainer.get(f"/training/{cohort['id']}/trainees/{member.id}").get_data(as_text=True)
    assert secret not in ada.get("/training/pcc.py").get_data(as_text=True)


def test_the_reference_solutions_name_the_class_root(app, on_the_lan):
    for exercise in exercises.CURRICULUM:
        text = exercises.solution(exercise, LAN)
        assert "127.0.0.1:5000" not in text and "{ROOT}" not in text
    assert f'"{LAN}/sandbox/v1"' in exercises.solution(exercises.BY_KEY["link_token"], LAN)
    assert "from pcc import" in exercises.solution(exercises.BY_KEY["conformance"], LAN)


def run_curl(client, command: str):
    """A pasted `curl -s URL -H … -d '…'` snippet, sent through the test client as curl would send it."""
    url = re.search(r"curl -s (\S+)", command).group(1)
    headers = dict(h.split(": ", 1) for h in re.findall(r'-H "([^"]+)"', command))
    body = re.search(r"-d '(.*?)'", command, re.S).group(1).replace("<your laptop>", "192.168.1.20")
    return client.post("/" + url.split("://", 1)[1].split("/", 1)[1], data=body, headers=headers)


def test_every_snippet_and_solution_that_registers_a_webhook_works_as_pasted(
    app, on_the_lan, trainer, client, monkeypatch
):
    """POST /v1/webhooks requires url, status, enabled_events and version: a snippet missing one is a 400."""
    monkeypatch.setitem(app.config, "SANDBOX_WEBHOOK_NETWORKS", "192.168.1.0/24")  # the room's LAN
    ada = join(app, create_cohort(trainer), "Ada")
    secret = sandbox_secret(app, ada.workspace_id)
    me = page_of(ada.get("/training/me"))
    snippets = [unescape(s) for s in re.findall(r'<code id="snippet-[a-z_]+-\d+">(.*?)</code>', me, re.S)]
    registering = [s for s in snippets if re.search(r"curl -s \S+/webhooks ", s)]
    assert registering  # exercise 3's "register a URL the server reaches itself"
    for command in registering:
        response = run_curl(client, command)
        assert response.status_code == 200, (command, response.get_json())

    class Requests:  # the solution's `requests`, answered by this app
        @staticmethod
        def post(url, headers, json, timeout):
            response = client.post(url.removeprefix(LAN), json=json, headers=headers)

            def raise_for_status():
                assert response.status_code == 200, (url, response.get_json())

            response.raise_for_status = raise_for_status
            return response

    monkeypatch.setitem(sys.modules, "requests", Requests)
    monkeypatch.setenv("API_SECRET", secret)
    solutions = [exercises.solution(e, LAN) for e in exercises.CURRICULUM]
    solutions = [text for text in solutions if '{API}/webhooks"' in text]
    assert solutions
    for text in solutions:
        exec(compile(text.replace("<your laptop's address>", "192.168.1.20"), "solution.py", "exec"), {})
    with app.app_context():
        assert exercises.check_own_endpoint(db.session.get(cohorts.Workspace, ada.workspace_id)).done


# The single-file client ---------------------------------------------------------------------------


def served_client(app, visitor) -> types.ModuleType:
    response = visitor.get("/training/pcc.py")
    assert response.status_code == 200 and response.mimetype == "text/x-python"
    module = types.ModuleType("pcc")
    exec(compile(response.get_data(as_text=True), "pcc.py", "exec"), module.__dict__)
    return module


def test_pcc_is_served_with_this_servers_root_and_the_scenarios(app, on_the_lan, trainer):
    pcc = served_client(app, trainer)
    assert pcc.DEFAULT_API == LAN
    assert {"user_pending_success", "federal_sent", "user_good"} <= set(pcc.SCENARIOS)
    assert (pcc.scenario_key("pending_then_success"), pcc.scenario_key("success")) == (
        "user_pending_success",
        "user_good",
    )
    assert pcc.scenario_key("no_such_scenario") is None
    imported = set(re.findall(r"^(?:import|from) (\w+)", (room.__file__ and pcc_source(app, trainer)), re.M))
    assert imported <= {"__future__", "argparse", "hashlib", "hmac", "json", "os", "signal", "sys", "time", "urllib",
                        "uuid", "datetime"}  # fmt: skip


def test_pcc_and_console_trigger_list_the_same_scenarios_in_the_same_order(app, trainer, capsys):
    """One table (console.trigger.table, in the gallery's order) and one formatter (pcc.listing): a trainee's
    `pcc.py trigger --list` and a developer's `console trigger --list` print the same lines."""
    from click.testing import CliRunner

    from console.cli import main as console_cli

    pcc = served_client(app, trainer)
    assert pcc.main(["trigger", "--list"]) == 0
    theirs = capsys.readouterr().out.splitlines()
    ours = CliRunner().invoke(console_cli, ["trigger", "--list"])
    assert ours.exit_code == 0, ours.output
    assert theirs == ours.output.splitlines()
    # Grouped as the sandbox test data table is, each scenario once, its aliases beside it.
    assert theirs[0] == "Credentials:" and "Federal benefits:" in theirs
    keys = [line.split()[0] for line in theirs if line.startswith("  ")]
    assert keys == list(pcc.SCENARIOS) and len(keys) == len(set(keys))
    assert keys.index("user_good") < keys.index("prime_one") < keys.index("federal_sent")
    assert any(line.startswith("  user_good ") and "(also: success)" in line for line in theirs)


def pcc_source(app, visitor) -> str:
    return visitor.get("/training/pcc.py").get_data(as_text=True)


def test_pcc_verify_agrees_with_the_services_signature(app, trainer):
    pcc = served_client(app, trainer)
    body, now = b'{"event_id": "e1", "event": "account.added", "payload": {}}', int(time.time())
    headers = {"X-Service-Signature": sign("sk_sandbox_x", now, body), "X-Timestamp": str(now)}
    assert pcc.verify("sk_sandbox_x", headers, body)["event_id"] == "e1"
    for secret, raw, stamp in (("sk_other", body, now), ("sk_sandbox_x", body + b" ", now),
                               ("sk_sandbox_x", body, now - 600)):  # fmt: skip
        with pytest.raises(pcc.WebhookVerificationError):
            pcc.verify(secret, {**headers, "X-Timestamp": str(stamp)}, raw)


def test_pcc_trigger_runs_a_scenario_that_ticks_the_trainees_exercises(app, trainer, client):
    cohort = create_cohort(trainer)
    ada = join(app, cohort, "Ada")
    secret = sandbox_secret(app, ada.workspace_id)
    pcc = served_client(app, ada)

    def call(base, key, path, body=None):  # the client's HTTP, through the test client
        prefix = base.split("://", 1)[1].split("/", 1)[1]
        headers = {"x-api-secret": key, "Service-Version": pcc.VERSION}
        answer = client.post(f"/{prefix}{path}", json=body, headers=headers)
        return answer.status_code, answer.get_json()

    pcc.call = call
    said = pcc.trigger("http://localhost", secret, "pending_then_success")
    assert re.match(r"user_pending_success: Link token \S+, job \S+, outcome pending", said), said
    with app.app_context():
        workspace = db.session.get(cohorts.Workspace, ada.workspace_id)
        assert exercises.check_link_token(workspace).done


# The grid -----------------------------------------------------------------------------------------


def test_the_grid_names_exercises_colours_states_and_sums_up_the_class(app, on_the_lan, trainer):
    cohort = create_cohort(trainer)
    ada, grace = join(app, cohort, "Ada"), join(app, cohort, "Grace")
    new_token(backend(app, ada))
    writer_for(app).flush()  # Ada's call in the request log, where "Last API call" reads it
    html = page_of(trainer.get(f"/training/{cohort['id']}"))
    assert "No workspace yet" not in html and 'id="workspace-bar"' not in html
    heads = re.findall(
        r'<th scope="col" class="exercise-head"[^>]*>\s*<span class="exercise-name">([^<]+)</span>', html
    )
    assert heads == [e.short for e in exercises.CURRICULUM]
    assert '<ol class="muted">' not in html  # no legend apart
    ada_row = re.search(r'<tr data-trainee="Ada".*?</tr>', html, re.S).group(0)
    assert re.search(r'data-exercise="link_token" data-done="yes"[^>]*class="cell-done"', ada_row)
    assert re.search(r'data-exercise="link_sdk" data-done="no"[^>]*class="cell-pending"', ada_row)
    assert 'class="quiet-link"' in ada_row
    assert re.search(r'<td class="last-activity"><time datetime="[^"]+">just now</time>', ada_row)
    progress = re.search(r'id="class-progress"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert "2 trainees · 0 finished · 1 of 12 exercises done (8%)" in progress
    assert re.search(r'<span class="exercise-count">1/2</span>', html)
    # The join link, large with a copy button, and its QR code inline.
    assert 'data-copy="#join-link"' in html
    assert re.search(r"<svg[^>]*><title>QR code of the join link of Tuesday class</title>", html)
    assert grace  # joined, nothing done
    grace_row = re.search(r'<tr data-trainee="Grace".*?</tr>', html, re.S).group(0)
    # Under "Last API call", a trainee who has made none says so: joined, not called
    assert re.search(r'<td class="last-activity"><time datetime="[^"]+">joined just now</time>', grace_row)


def test_a_long_name_cut_on_the_grid_is_read_whole_in_its_title(app, trainer):
    cohort = create_cohort(trainer)
    names = ["Jean-Baptiste Lemaire-Fontaine", "Jean-Baptiste Lemaire-Fontenay"]  # alike up to the cut
    for name in names:
        join(app, cohort, name)
    for html in (
        page_of(trainer.get(f"/training/{cohort['id']}")),
        page_of(trainer.get(f"/training/{cohort['id']}/grid")),  # the poll's redraw
    ):
        for name in names:
            row = re.search(
                r'<tr data-trainee="' + name + r'".*?<th scope="row"[^>]*>(.*?)</th>', html, re.S
            ).group(1)
            assert f'title="{name}"' in row, row


def test_a_trainee_quiet_for_ten_minutes_is_highlighted(app, trainer, monkeypatch):
    cohort = create_cohort(trainer)
    join(app, cohort, "Ada")
    grace = join(app, cohort, "Grace")
    start = timeutil.utcnow()
    with app.app_context():
        member = db.session.scalars(select(CohortMember).where(CohortMember.name == "Grace")).one()
        db.session.add(
            RequestLogEntry(
                workspace_id=member.workspace_id,
                mode="sandbox",
                method="GET",
                url="/",
                path="/",
                status=200,
                created_at=start + timedelta(minutes=8),
            )
        )
        db.session.commit()
    assert grace

    def grid_at(minutes: float) -> str:
        monkeypatch.setattr(timeutil, "utcnow", lambda: start + timedelta(minutes=minutes))
        return page_of(trainer.get(f"/training/{cohort['id']}"))

    html = grid_at(5)
    assert 'data-stuck="yes"' not in html and 'data-stuck="0"' in html
    html = grid_at(11)
    ada = re.search(r'<tr data-trainee="Ada"[^>]*>', html).group(0)
    assert 'data-stuck="yes"' in ada and 'class="stuck"' in ada
    assert 'data-stuck="no"' in re.search(r'<tr data-trainee="Grace"[^>]*>', html).group(0)  # a call at 8 min
    assert "(quiet for 10 minutes or more)" in html and "1 quiet for 10+ min" in html
    html = grid_at(19)
    assert html.count('class="stuck"') == 2 and "2 quiet for 10+ min" in html


def test_the_grids_poll_redraws_when_the_minute_changes(app, trainer, monkeypatch):
    cohort = create_cohort(trainer)
    join(app, cohort, "Ada")
    start = timeutil.utcnow().replace(second=5)
    monkeypatch.setattr(timeutil, "utcnow", lambda: start)
    with app.app_context():
        pulse = cohorts.cohort_pulse(cohorts.get_cohort(cohort["id"]))
    assert trainer.get(f"/training/{cohort['id']}/grid?pulse={pulse}").status_code == 204
    monkeypatch.setattr(timeutil, "utcnow", lambda: start + timedelta(minutes=1))
    assert trainer.get(f"/training/{cohort['id']}/grid?pulse={pulse}").status_code == 200
