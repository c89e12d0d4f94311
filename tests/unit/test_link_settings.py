"""Link's settings come from the environment, as docs/operations.md says every setting does."""

from __future__ import annotations

from console import config


def test_the_matching_delay_is_read_from_the_environment(monkeypatch):
    """docs/link.md named `LINK_MATCHING_DELAY_MS` as a setting, but only `app.config` was read: exporting it
    changed nothing."""
    monkeypatch.setenv("SECRET_KEY", "test-secret")
    monkeypatch.delenv("LINK_MATCHING_DELAY_MS", raising=False)
    assert config.from_environment()["LINK_MATCHING_DELAY_MS"] == 2500
    monkeypatch.setenv("LINK_MATCHING_DELAY_MS", "500")
    assert config.from_environment()["LINK_MATCHING_DELAY_MS"] == 500
    monkeypatch.setenv("LINK_MATCHING_DELAY_MS", "0")
    assert config.from_environment()["LINK_MATCHING_DELAY_MS"] == 0
