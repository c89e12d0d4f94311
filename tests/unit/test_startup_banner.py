"""What `console run` / `make run` print: the URLs people should use."""

from __future__ import annotations

from console.setup import startup_banner


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
