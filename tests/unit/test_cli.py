"""The `console` command: workspaces, keys and the database, as a newcomer runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_cli(tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "CONSOLE_INSTANCE_DIR": str(tmp_path / "instance"),
        "SECRET_KEY": "cli-test-secret",
    }

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "-m", "console.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        if check:
            assert result.returncode == 0, result.stderr
        return result

    return run


def test_db_upgrade_then_keys_lifecycle(run_cli, tmp_path):
    run_cli("db", "upgrade")
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


def test_keys_create_defaults_to_the_demo_workspace(run_cli):
    run_cli("db", "upgrade")
    first = json.loads(run_cli("keys", "create", "--mode", "sandbox", "--json").stdout)
    second = json.loads(run_cli("keys", "create", "--mode", "development", "--json").stdout)
    assert first["workspace_id"] == second["workspace_id"]


def test_unknown_workspace_is_a_clear_error(run_cli):
    run_cli("db", "upgrade")
    result = run_cli("keys", "create", "--mode", "sandbox", "--workspace", "nope", check=False)
    assert result.returncode != 0
    assert "No workspace" in result.stderr


def test_bad_mode_is_refused(run_cli):
    result = run_cli("keys", "create", "--mode", "staging", check=False)
    assert result.returncode != 0
    assert "staging" in result.stderr
