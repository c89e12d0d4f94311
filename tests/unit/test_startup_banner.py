"""What `console run` / `make run` print: the URLs people should use."""

from __future__ import annotations

import re

import pytest

from console.bootstrap import demo_sandbox_secret, startup_banner


def test_the_banner_uses_the_listen_address_without_public_url(app):
    with app.app_context():
        banner = startup_banner("http://127.0.0.1:5000")
    assert "Console:          http://127.0.0.1:5000/" in banner
    assert "sandbox API:      http://127.0.0.1:5000/sandbox/v1" in banner
    assert "curl -s http://127.0.0.1:5000/sandbox/v1/link_tokens" in banner
    assert "Listening on" not in banner


def test_the_banner_honours_public_url(app):
    app.config["PUBLIC_URL"] = "https://demo.example.com/"
    with app.app_context():
        banner = startup_banner("http://0.0.0.0:8000")
    assert "Console:          https://demo.example.com/" in banner
    for line in (
        "sandbox API:      https://demo.example.com/sandbox/v1",
        "production API:   https://demo.example.com/v1",
    ):
        assert line in banner
    assert "curl -s https://demo.example.com/sandbox/v1/link_tokens" in banner
    assert "Listening on:     http://0.0.0.0:8000/" in banner
    assert banner.count("0.0.0.0") == 1  # only where it listens, never as a URL to use


def test_the_banner_shows_the_demo_secret_in_full_for_a_terminal(app):
    with app.app_context():
        secret = demo_sandbox_secret()
        banner = startup_banner("http://127.0.0.1:5000", show_secret=True)
    assert f"Sandbox secret:   {secret}   (demo workspace)" in banner
    assert secret.startswith("sk_sandbox_")


def test_the_banner_masks_the_demo_secret_when_the_output_may_be_kept(app):
    with app.app_context():
        secret = demo_sandbox_secret()
        banner = startup_banner("http://127.0.0.1:5000", show_secret=False)
    assert secret not in banner
    assert secret[len("sk_sandbox_") : -4] not in banner  # no part of it beyond the last four
    assert f"Sandbox secret:   sk_sandbox_****{secret[-4:]}   (demo workspace)" in banner
    assert "`console keys create --mode sandbox` prints a new sandbox secret of the demo workspace" in banner


@pytest.mark.committing
def test_the_command_the_masked_banner_names_prints_a_new_sandbox_secret(app, monkeypatch):
    """Run as printed: `console keys create` without `--mode` stopped at "Missing option '--mode'"."""
    from click.testing import CliRunner

    from console import cli

    with app.app_context():
        banner = startup_banner("http://127.0.0.1:5000", show_secret=False)
    command = re.search(r"`console ([^`]+)` prints a new sandbox secret", banner).group(1).split()
    monkeypatch.setattr(cli, "_app", lambda: app)
    result = CliRunner().invoke(cli.main, command)
    assert result.exit_code == 0, result.output
    assert re.search(r"Secret \(shown once, store it now\): sk_sandbox_\S+", result.output)


def test_console_run_masks_the_secret_when_its_output_is_not_a_terminal(app, monkeypatch):
    """What `console run` itself prints under a service manager (stdout a pipe): never the whole secret."""
    from click.testing import CliRunner

    from console import cli

    for name in ("HOST", "PORT", "THREADS"):  # `run` sets them for its serving processes
        monkeypatch.setenv(name, "")
    monkeypatch.setattr(cli, "_app", lambda: app)
    monkeypatch.setattr(cli, "_check_free", lambda host, port: None)
    monkeypatch.setattr("console.bootstrap.prepare_database", lambda: None)  # the test database is ready
    monkeypatch.setattr("console.serving.serve", lambda **kwargs: None)  # the banner, not the server
    result = CliRunner().invoke(cli.main, ["run", "--port", "5999"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        secret = demo_sandbox_secret()
    assert "Sandbox secret:   sk_sandbox_****" in result.output
    assert secret not in result.output
