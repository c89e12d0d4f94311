"""The `console` command: workspaces, keys and the database, as a newcomer runs them."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

# One worker under xdist (--dist loadgroup): the tests share one session-scoped upgraded database (a real
# `console db upgrade`, ~5 s); spread over four workers, each worker ran the upgrade.
pytestmark = pytest.mark.xdist_group("cli")

ROOT = Path(__file__).resolve().parents[2]


def _subprocess_cli(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The `console` command in a process of its own, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


@dataclasses.dataclass(frozen=True)
class UpgradedDatabase:
    path: Path
    first_output: str  # what `console db upgrade` said on the empty database
    env: dict


@pytest.fixture(scope="session")
def upgraded_database(tmp_path_factory) -> UpgradedDatabase:
    """One SQLite database upgraded by a real `console db upgrade` (the migrations, not create_all), once a
    session: each test that needs a schema gets a copy of it instead of running the migrations again."""
    folder = tmp_path_factory.mktemp("cli-template")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder / 'cli.db'}", "SECRET_KEY": "cli-test-secret"}
    env["CONSOLE_INSTANCE_DIR"] = str(folder / "instance")
    result = _subprocess_cli(env, ROOT, "db", "upgrade")
    assert result.returncode == 0, result.stderr
    return UpgradedDatabase(folder / "cli.db", result.stdout, env)


@pytest.fixture
def upgraded(upgraded_database, tmp_path) -> None:
    """This test's database is an upgraded and seeded one (a copy of the session's)."""
    shutil.copyfile(upgraded_database.path, tmp_path / "cli.db")


@pytest.fixture
def run_cli(tmp_path):
    """The `console` command called in this process (click's runner): the same code from `main` down, without
    a Python start and the imports per call. The apps it builds are disposed of at the end of the test.

    What needs a real process (the command on another working directory, the instance folder) is tested
    below with one."""
    from click.testing import CliRunner

    from console import cli

    base_env = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "CONSOLE_INSTANCE_DIR": str(tmp_path / "instance"),
        "SECRET_KEY": "cli-test-secret",
        "RATELIMIT_STORAGE_URI": "memory://",  # no shared rate-limit file: no command here serves requests
    }
    apps = []
    build = cli._app

    def tracked_app():
        app = build()
        apps.append(app)
        return app

    runner = CliRunner()

    def run(*args: str, check: bool = True, env: dict | None = None, input: str | None = None):
        _drop_handlers_of_closed_streams()  # another test's, or an earlier call's
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cli, "_app", tracked_app)
            result = runner.invoke(
                cli.main, list(args), env={**base_env, **(env or {})}, input=input, catch_exceptions=False
            )
        _drop_handlers_of_closed_streams()
        if check:
            assert result.exit_code == 0, result.stderr
        result.returncode = result.exit_code
        return result

    yield run
    from console.extensions import db

    for app in apps:
        with app.app_context():
            db.session.remove()
            db.engine.dispose()


def _drop_handlers_of_closed_streams() -> None:
    """A command's own logging set-up (alembic's fileConfig during an upgrade, the worker's basicConfig) bound
    its handlers to the runner's stderr, closed once the call ends: a later call in this process logging
    through them printed "--- Logging error ---" with a traceback into that call's stderr (a CI failure of a
    test asserting its stderr has no traceback, depending on which tests ran before it in the process)."""
    import logging

    loggers = [
        logging.getLogger(),
        *(logging.getLogger(name) for name in list(logging.root.manager.loggerDict)),
    ]
    for logger in loggers:
        for handler in list(getattr(logger, "handlers", ())):
            stream = getattr(handler, "stream", None)
            if stream is not None and getattr(stream, "closed", False):
                logger.removeHandler(handler)


def test_db_upgrade_then_keys_lifecycle(upgraded, run_cli, tmp_path):
    workspace = json.loads(run_cli("workspaces", "create", "--name", "Acme", "--json").stdout)
    assert workspace["name"] == "Acme"

    created = json.loads(
        run_cli("keys", "create", "--mode", "production", "--workspace", workspace["id"], "--json").stdout
    )
    assert {"id", "workspace_id", "mode", "secret"} <= set(created)
    assert created["workspace_id"] == workspace["id"]
    assert created["mode"] == "production"

    listed = json.loads(run_cli("keys", "list", "--json").stdout)
    assert [k["id"] for k in listed] == [created["id"]]
    assert created["secret"] not in json.dumps(listed)  # the secret is shown once only

    run_cli("keys", "revoke", created["id"])
    listed = json.loads(run_cli("keys", "list", "--json").stdout)
    assert listed[0]["revoked_at"] is not None


def test_keys_create_defaults_to_the_demo_workspace(upgraded, run_cli):
    first = json.loads(run_cli("keys", "create", "--mode", "sandbox", "--json").stdout)
    second = json.loads(run_cli("keys", "create", "--mode", "development", "--json").stdout)
    assert first["workspace_id"] == second["workspace_id"]


def test_unknown_workspace_is_a_clear_error(upgraded, run_cli):
    result = run_cli("keys", "create", "--mode", "sandbox", "--workspace", "nope", check=False)
    assert result.returncode != 0
    assert "No workspace" in result.stderr


def test_run_on_a_port_in_use_is_a_clear_error_before_anything_starts(run_cli, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("run", "--port", str(port), check=False)
    assert result.returncode == 1
    assert f"Port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "cli.db").exists()  # refused before the database was touched


def test_bad_mode_is_refused(run_cli):
    result = run_cli("keys", "create", "--mode", "staging", check=False)
    assert result.returncode != 0
    assert "staging" in result.stderr


def test_db_upgrade_says_what_it_did(upgraded_database):
    """On the session's database: its first upgrade (made by a real process, on an empty file), then again."""
    first = upgraded_database.first_output
    assert f"Database sqlite:///{upgraded_database.path}" in first
    assert "Created the schema (revision " in first and "seeded the simulated world (" in first
    assert "up to date" not in first
    # In a process of its own too: Alembic's env.py configures logging (fileConfig) in the process it runs in.
    # The session's database is left as it was: this upgrade finds nothing to do.
    result = _subprocess_cli(upgraded_database.env, ROOT, "db", "upgrade")
    assert result.returncode == 0, result.stderr
    again = result.stdout
    assert "The schema was already up to date (revision " in again
    assert "the simulated world was already seeded" in again


def test_a_database_without_a_schema_is_a_clear_error(run_cli, tmp_path):
    for args in (("keys", "list"), ("keys", "create", "--mode", "sandbox"), ("workspaces", "create")):
        result = run_cli(*args, check=False)
        assert result.returncode != 0
        assert "has no tables yet" in result.stderr and "console db upgrade" in result.stderr
        assert "Traceback" not in result.stderr


def test_the_worker_on_a_database_without_a_schema_is_a_clear_error(run_cli, monkeypatch):
    """`console worker` before `console db upgrade`: one line saying what to do, never the loops started (they
    logged a traceback at every poll, thousands of lines a second, and never said to upgrade)."""
    import console.worker

    monkeypatch.setattr(console.worker, "run_forever", lambda app: pytest.fail("the loops started"))
    result = run_cli("worker", check=False)
    assert result.returncode == 1
    assert "has no tables yet" in result.stderr and "console db upgrade" in result.stderr
    assert "Traceback" not in result.stderr


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_database_it_cannot_reach_is_a_clear_error_not_no_tables(run_cli, monkeypatch):
    """A PostgreSQL server that is down (or a wrong port): each command says it cannot connect, to which
    address (password hidden), and what to check; `keys list` used to say "has no tables yet, run `console db
    upgrade`", and `db upgrade`, `run` and `worker` printed a driver traceback of 130 lines."""
    import console.worker

    monkeypatch.setattr(console.worker, "run_forever", lambda app: pytest.fail("the loops started"))
    for name in ("HOST", "PORT", "THREADS"):  # `console run` sets them for its serving processes
        monkeypatch.delenv(name, raising=False)
    url = f"postgresql://someone:hunter2@127.0.0.1:{_closed_port()}/console"
    for args in (
        ("db", "upgrade"),
        ("keys", "list"),
        ("worker",),
        ("run", "--host", "127.0.0.1", "--port", str(_closed_port())),
    ):
        result = run_cli(*args, check=False, env={"DATABASE_URL": url})
        assert result.returncode == 1, args
        assert "Cannot connect to the database postgresql+psycopg://someone:***@127.0.0.1:" in result.stderr
        assert "Check DATABASE_URL" in result.stderr
        assert "has no tables yet" not in result.stderr
        assert "hunter2" not in result.stderr + result.stdout
        assert "Traceback" not in result.stderr


def test_commands_from_any_directory_share_one_instance_folder(tmp_path):
    """No DATABASE_URL, no SECRET_KEY: the instance folder holds both, wherever the command runs."""
    instance = tmp_path / "instance"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY")}
    env["CONSOLE_INSTANCE_DIR"] = str(instance)

    def run(cwd: Path, *args: str) -> str:
        cwd.mkdir(exist_ok=True)
        result = subprocess.run(
            [sys.executable, "-m", "console.cli", *args], cwd=cwd, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    run(ROOT, "db", "upgrade")
    created = json.loads(run(tmp_path / "a", "keys", "create", "--mode", "sandbox", "--json"))
    listed = json.loads(run(tmp_path / "b", "keys", "list", "--json"))
    assert [k["id"] for k in listed] == [created["id"]]
    assert (instance / "console.db").is_file() and (instance / "secret_key").is_file()
    assert not (tmp_path / "a" / "instance").exists() and not (tmp_path / "b" / "instance").exists()


def test_the_default_instance_folder_is_the_checkouts_whatever_the_directory(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CONSOLE_INSTANCE_DIR")}
    code = "from console import config; print(config.INSTANCE_DIR); print(config.database_url())"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    instance, url = result.stdout.splitlines()
    assert instance == str(ROOT / "instance")  # where `make run` keeps it
    assert url == f"sqlite:///{ROOT / 'instance' / 'console.db'}"
    assert list(tmp_path.iterdir()) == []  # nothing created where the command ran


def test_a_relative_instance_folder_is_relative_to_where_the_command_runs(tmp_path):
    env = {**os.environ, "CONSOLE_INSTANCE_DIR": "here"}
    code = "from console import config; print(config.INSTANCE_DIR)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == str(tmp_path / "here")


def test_keys_list_of_an_empty_workspace_suggests_creating_a_key_there(upgraded, run_cli):
    workspace = json.loads(run_cli("workspaces", "create", "--json").stdout)
    out = run_cli("keys", "list", "--workspace", workspace["id"]).stdout
    assert f"console keys create --mode sandbox --workspace {workspace['id']}" in out
    assert run_cli("keys", "list").stdout.strip() == "No keys yet: console keys create --mode sandbox"
    unknown = run_cli("keys", "list", "--workspace", "8e8483e0-5235-5127-93ca-2efa4d35d6dc", check=False)
    assert unknown.returncode != 0 and "No workspace with id 8e8483e0" in unknown.stderr


@pytest.fixture
def cli_app(tmp_path):
    """The app on the CLI's database, to look at what the commands did."""
    from console import create_app

    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'cli.db'}", "SECRET_KEY": "cli-test-secret"}
    )
    yield app
    from console.extensions import db

    with app.app_context():
        db.engine.dispose()


def test_keys_roll_prints_the_new_secret_once_and_moves_the_webhooks(upgraded, run_cli, cli_app):
    import uuid

    from console.core.errors import Unauthorized
    from console.extensions import db
    from console.keys.models import ApiKey
    from console.keys.services import authenticate
    from console.webhooks import services as webhooks
    from console.webhooks.models import Webhook

    old = json.loads(run_cli("keys", "create", "--mode", "sandbox", "--json").stdout)
    body = {"url": "http://127.0.0.1:9/hook", "status": "active", "enabled_events": ["account.added"]}
    with cli_app.app_context():
        key = db.session.get(ApiKey, uuid.UUID(old["id"]))
        hook_ids = [webhooks.create_webhook(key, {**body, "version": "2023-11-22"}).id for _ in range(2)]
        db.session.commit()

    rolled = json.loads(run_cli("keys", "roll", old["id"], "--json").stdout)
    assert rolled["replaces"] == old["id"] and rolled["id"] != old["id"]
    assert rolled["mode"] == "sandbox" and rolled["webhooks_moved"] == 2
    with cli_app.app_context():
        assert authenticate(rolled["secret"], "sandbox").id == uuid.UUID(rolled["id"])
        with pytest.raises(Unauthorized):
            authenticate(old["secret"], "sandbox")
        owners = {db.session.get(Webhook, h).api_key_id for h in hook_ids}
        assert owners == {uuid.UUID(rolled["id"])}  # deliveries are signed with the new secret

    listed = json.loads(run_cli("keys", "list", "--json").stdout)
    assert rolled["secret"] not in json.dumps(listed)
    text = run_cli("keys", "roll", rolled["id"]).stdout
    assert "is revoked now" in text and "2 webhook(s) moved" in text
    assert text.count("sk_sandbox_") == 1 and "shown once" in text


def test_keys_roll_of_an_unknown_key_is_a_clear_error(upgraded, run_cli):
    result = run_cli("keys", "roll", "nope", check=False)
    assert result.returncode != 0 and "No API key with id nope" in result.stderr


def test_keys_roll_with_a_grace_period_keeps_the_old_secret_working(upgraded, run_cli, cli_app):
    from console.keys.services import authenticate

    old = json.loads(run_cli("keys", "create", "--mode", "sandbox", "--json").stdout)
    rolled = json.loads(run_cli("keys", "roll", old["id"], "--grace", "1h", "--json").stdout)
    assert rolled["replaced_key_expires_at"] is not None
    with cli_app.app_context():
        assert str(authenticate(old["secret"], "sandbox").id) == old["id"]  # inside the hour
    listed = {k["id"]: k for k in json.loads(run_cli("keys", "list", "--json").stdout)}
    assert listed[old["id"]]["expires_at"] == rolled["replaced_key_expires_at"]
    text = run_cli("keys", "roll", rolled["id"], "--grace", "7d").stdout
    assert "works until" in text
    assert run_cli("keys", "roll", rolled["id"], "--grace", "2h", check=False).returncode != 0


def test_run_with_another_secret_key_than_the_database_was_used_with_says_which_to_set(
    upgraded, run_cli, monkeypatch, tmp_path
):
    """The shared-server step "set SECRET_KEY" after a first `make run` (its key generated into the instance
    folder), or a database restored elsewhere: `console run` stopped on a `cryptography.fernet.InvalidToken`
    traceback. It says what is wrong and which SECRET_KEY to set, and serves nothing."""
    import console.serving

    monkeypatch.setattr(console.serving, "serve", lambda **kwargs: pytest.fail("it served"))
    for name in ("HOST", "PORT", "THREADS"):  # `console run` sets them for its serving processes
        monkeypatch.delenv(name, raising=False)
    run_cli("keys", "create", "--mode", "sandbox")  # the demo workspace's key, sealed with the first key
    import console.config

    instance = tmp_path / "generated-instance"  # where `make run` would have generated a key: none yet
    instance.mkdir()
    monkeypatch.setattr(console.config, "INSTANCE_DIR", instance)

    def run_with_another_key():
        return run_cli(
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            str(_closed_port()),
            check=False,
            env={"SECRET_KEY": "another"},
        )

    result = run_with_another_key()
    assert result.returncode == 1
    assert "encrypted with a different SECRET_KEY" in result.stderr
    assert "Traceback" not in result.stderr and "InvalidToken" not in result.stderr
    # SECRET_KEY was set, so no key was generated: no file is named (it sent an operator looking for one).
    assert "$(cat " not in result.stderr
    # A key `make run` generated is named with the command that reads it.
    (instance / "secret_key").write_text("the-first-key")
    result = run_with_another_key()
    assert result.returncode == 1
    assert f"SECRET_KEY=$(cat {instance / 'secret_key'})" in result.stderr


def test_a_worker_with_another_secret_key_than_the_database_refuses_to_start(upgraded, run_cli, monkeypatch):
    """A `console worker` started without the servers' SECRET_KEY ran: every delivery stayed pending (its secret
    could not be read to sign it), a traceback at every poll, while its heartbeat kept /healthz "ok"."""
    import console.worker

    monkeypatch.setattr(console.worker, "run_forever", lambda app: pytest.fail("the loops started"))
    run_cli("keys", "create", "--mode", "sandbox")
    result = run_cli("worker", check=False, env={"SECRET_KEY": "another"})
    assert result.returncode == 1
    assert "encrypted with a different SECRET_KEY" in result.stderr
    assert "Traceback" not in result.stderr
    monkeypatch.setattr(console.worker, "run_forever", lambda app: 0)
    assert run_cli("worker").returncode == 0  # with the database's key it starts


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("RUN_CONCURRENCY", "two", "RUN_CONCURRENCY must be a whole number, not 'two'"),
        ("DB_POOL_TIMEOUT", "3s", "DB_POOL_TIMEOUT must be a number, not '3s'"),
        ("WEBHOOK_THREADS", "many", "WEBHOOK_THREADS must be a whole number, not 'many'"),
        ("PORT", "abc", "PORT must be a whole number, not 'abc'"),
    ],
)
def test_a_setting_that_is_not_a_number_is_named(run_cli, monkeypatch, name, value, says):
    """It was a traceback ending in `ValueError: invalid literal for int() with base 10: 'two'`, naming no
    setting (a shared server's operator sets dozens)."""
    for name_ in ("HOST", "THREADS"):  # `console run` sets them for its serving processes
        monkeypatch.delenv(name_, raising=False)
    run = ("run",) if name == "PORT" else ("run", "--host", "127.0.0.1", "--port", str(_closed_port()))
    for args in (("keys", "list"), ("worker",), run):
        result = run_cli(*args, check=False, env={name: value})
        assert result.returncode == 1, args
        assert says in result.stderr
        assert "Traceback" not in result.stderr


def test_a_database_a_migration_has_not_reached_is_a_clear_error(upgraded, run_cli, tmp_path, monkeypatch):
    """A schema one migration behind the code (upgraded by an older release, `console db upgrade` not run
    after deploying): the worker started and failed at every poll of a table or column it did not find, the
    commands later, on whatever they touched. They say which revision it is at and what to run."""
    import sqlite3

    import console.worker
    from console.bootstrap import head_revisions

    monkeypatch.setattr(console.worker, "run_forever", lambda app: pytest.fail("the loops started"))
    (head,) = head_revisions()
    with sqlite3.connect(tmp_path / "cli.db") as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]
        connection.execute("UPDATE alembic_version SET version_num = '9c31f0e2a7d4'")  # an older revision
    for args in (("worker",), ("keys", "list")):
        result = run_cli(*args, check=False)
        assert result.returncode == 1, args
        assert f"at schema revision 9c31f0e2a7d4, older than this code's ({head})" in result.stderr
        assert "console db upgrade" in result.stderr
    # A revision this code does not know (a newer release upgraded it) is left to run.
    with sqlite3.connect(tmp_path / "cli.db") as connection:
        connection.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
    assert run_cli("keys", "list").returncode == 0


def test_the_head_read_from_the_migration_files_is_alembics():
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from console.bootstrap import head_revisions
    from console.db.schema import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert head_revisions() == set(ScriptDirectory.from_config(config).get_heads())


def test_stories_check_names_each_mistake_before_the_demo_and_fails_the_command(run_cli, tmp_path):
    """A sales engineer checks a story file the night before, from the shell: each broken file with what is
    wrong and where, exit status 1; the built-in folder reads clean."""
    folder = tmp_path / "stories"
    folder.mkdir()
    good = {"title": "Ours", "summary": "S", "steps": [
        {"caption": "A token", "action": "create_link_token", "preset": "standard"}]}  # fmt: skip
    (folder / "60-ours.json").write_text(json.dumps(good))
    typo = {
        **good,
        "steps": [*good["steps"], {"caption": "Done", "action": "complete_link", "scenario": "user_goood"}],
    }
    (folder / "70-typo.json").write_text(json.dumps(typo))
    (folder / "80-yaml.yaml").write_text("title: x\n")
    checked = run_cli("stories", "check", *sorted(str(p) for p in folder.iterdir()), check=False)
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert lines[0] == "ok      60-ours.json: Ours (1 step)"
    assert lines[1].startswith("broken  70-typo.json: step 2 (complete_link)") and "'user_good'" in lines[1]
    assert (
        lines[2]
        == "broken  80-yaml.yaml: a story is a .json file (.yaml is not read): save it as 80-yaml.json"
    )
    # The configured folder, read as the stage reads it.
    folder_check = run_cli("stories", "check", check=False, env={"PRESENTER_STORIES_DIR": str(folder)})
    assert folder_check.returncode == 1 and "broken  70-typo.json" in folder_check.stdout
    assert "broken  80-yaml.yaml" in folder_check.stdout
    built_in = run_cli("stories", "check")
    assert "broken" not in built_in.stdout and "ok      10-standard-switch.json" in built_in.stdout


def test_keys_print_the_base_url_of_the_running_server_not_port_5000(upgraded, run_cli, tmp_path):
    """`make run PORT=5001`, then `console keys create --json` in another shell (no PORT there): it printed
    http://127.0.0.1:5000/sandbox. `console run` records where it serves in the instance folder."""
    from console import served

    served.record("http://127.0.0.1:5001", folder=tmp_path / "instance")  # this process is "the server"
    no_server_env = {"PORT": None, "HOST": None, "PUBLIC_URL": None}
    created = json.loads(run_cli("keys", "create", "--mode", "sandbox", "--json", env=no_server_env).stdout)
    assert created["base_url"] == "http://127.0.0.1:5001/sandbox"
    rolled = json.loads(run_cli("keys", "roll", created["id"], "--json", env=no_server_env).stdout)
    assert rolled["base_url"] == "http://127.0.0.1:5001/sandbox"
    with_public = {**no_server_env, "PUBLIC_URL": "https://demo.example.com"}
    created = json.loads(run_cli("keys", "create", "--mode", "production", "--json", env=with_public).stdout)
    assert created["base_url"] == "https://demo.example.com"


def test_workspaces_list_puts_the_largest_first_and_delete_removes_one_with_its_rows(
    upgraded, run_cli, cli_app
):
    """An operator finding and removing the tenant that grew the database (Link tokens, accounts and jobs have
    no per-workspace cap: docs/operations.md)."""
    import uuid

    from console.extensions import db
    from console.link_tokens.models import LinkToken
    from console.workspaces.models import Workspace
    from tests.conftest import Api
    from tests.factories import LINK_TOKEN

    quiet = json.loads(run_cli("workspaces", "create", "--name", "Quiet", "--json").stdout)
    noisy = json.loads(run_cli("workspaces", "create", "--name", "Noisy", "--json").stdout)
    for workspace, tokens in ((quiet, 1), (noisy, 4)):
        secret = json.loads(
            run_cli("keys", "create", "--mode", "sandbox", "--workspace", workspace["id"], "--json").stdout
        )["secret"]
        api = Api(cli_app.test_client(), secret)
        for _ in range(tokens):
            assert api.post("/link_tokens", json=LINK_TOKEN).status_code == 200

    listed = [json.loads(line) for line in run_cli("workspaces", "list", "--json").stdout.splitlines()]
    assert [w["id"] for w in listed[:2]] == [noisy["id"], quiet["id"]]
    assert listed[0]["rows"]["link_tokens"] == 4 and listed[0]["kind"] == "kept"
    assert "Noisy" in run_cli("workspaces", "list", "--limit", "1").stdout

    refused = run_cli("workspaces", "delete", noisy["id"], check=False, input="n\n")
    assert refused.returncode != 0 and "Aborted" in refused.output
    assert "Deleted workspace" in run_cli("workspaces", "delete", noisy["id"], "--yes").stdout
    with cli_app.app_context():
        assert db.session.get(Workspace, uuid.UUID(noisy["id"])) is None
        assert db.session.query(LinkToken).count() == 1  # the quiet workspace's token stays
    missing = run_cli("workspaces", "delete", noisy["id"], "--yes", check=False)
    assert missing.returncode != 0 and "No workspace" in missing.stderr


def test_a_file_that_is_not_a_database_is_one_line_naming_it_not_a_traceback(run_cli, tmp_path, monkeypatch):
    """A damaged or foreign `console.db` (a disk error, a half copy, a wrong file put in place): every command,
    `console run` included, stopped with a driver traceback ending in `file is not a database`."""
    for name in ("HOST", "PORT", "THREADS"):  # `console run` sets them for its serving processes
        monkeypatch.delenv(name, raising=False)
    database = tmp_path / "cli.db"
    database.write_bytes(b"this is not a database, " * 4096)
    for args in (("keys", "list"), ("db", "upgrade"), ("run", "--port", str(_closed_port()))):
        result = run_cli(*args, check=False)
        assert result.returncode == 1, args
        assert f"The database file {database} cannot be used (file is not a database)" in result.stderr
        assert "Restore it from a backup" in result.stderr
        assert "Traceback" not in result.stderr + result.stdout


def test_a_second_console_run_on_the_same_instance_folder_is_refused_naming_the_first(run_cli, tmp_path):
    """Two `console run` on one instance folder (another port) both served: the second's record of where it
    serves replaced the first's and went with it at its stop, so `listen`, `trigger` and `keys create` then
    named a port nobody served. The first holds the folder; the second says so and starts nothing."""
    from console import served

    instance = tmp_path / "instance"
    first = served.hold_instance(instance)  # as a running `console run` does (a lock per open file)
    try:
        served.record("http://127.0.0.1:5999", folder=instance)
        result = run_cli("run", "--port", str(_closed_port()), check=False)
    finally:
        os.close(first)
    assert result.returncode == 1
    assert (
        f"Another `console run` already serves this instance folder ({instance}, pid {os.getpid()} at "
        "http://127.0.0.1:5999): stop it first" in result.stderr
    )
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "cli.db").exists()  # refused before the database was touched
    assert served.recorded_root(folder=instance) == "http://127.0.0.1:5999"  # the first's record stays
    # Once the first has gone (however it ended: the kernel drops the lock), the folder is free again.
    again = served.hold_instance(instance)
    os.close(again)


def test_an_instance_folder_that_cannot_be_written_or_is_full_is_one_line(run_cli, tmp_path, monkeypatch):
    """A read-only or full instance folder stopped `console run` with a traceback from the rate-limit file's
    `os.open`; a folder that cannot be made (here: under a file) is the same case as a read-only one."""
    from console import served

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run_cli(
        "run", "--port", str(_closed_port()), check=False, env={"CONSOLE_INSTANCE_DIR": str(blocker / "i")}
    )
    assert result.returncode == 1
    assert f"Cannot write to the instance folder {blocker / 'i'} (" in result.stderr
    assert "set CONSOLE_INSTANCE_DIR to a folder that is" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout

    real = os.statvfs

    def full(path):
        found = real(path)
        return os.statvfs_result((*found[:4], 3, *found[5:]))  # f_bavail: 3 blocks left

    monkeypatch.setattr(served.os, "statvfs", full)
    result = run_cli("run", "--port", str(_closed_port()), check=False)
    assert result.returncode == 1
    assert f"The disk holding the instance folder {tmp_path / 'instance'} is full" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "cli.db").exists()
