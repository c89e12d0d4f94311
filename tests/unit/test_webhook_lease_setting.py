"""WEBHOOK_LEASE_SECONDS from the environment: how soon another worker sends what a killed one had claimed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from console import config
from console.webhooks import delivery, delivery_loop


@pytest.fixture
def environment(monkeypatch):
    for name in ("WEBHOOK_LEASE_SECONDS", "WEBHOOK_TIMEOUT_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SECRET_KEY", "test-secret")
    return monkeypatch


def test_console_worker_takes_the_lease_from_the_environment(environment):
    environment.setenv("WEBHOOK_LEASE_SECONDS", "25")
    settings = delivery_loop.settings(SimpleNamespace(config=config.from_environment()))
    assert settings["lease"] == 25.0  # was the 60 s default whatever the operator set


def test_unset_the_lease_stays_twice_the_timeout_plus_30(environment):
    assert "WEBHOOK_LEASE_SECONDS" not in config.from_environment()
    environment.setenv("WEBHOOK_TIMEOUT_SECONDS", "5")
    assert delivery_loop.settings(SimpleNamespace(config=config.from_environment()))["lease"] == 40.0
    assert config._DEFAULT_WEBHOOK_TIMEOUT_SECONDS == delivery.DEFAULT_TIMEOUT_SECONDS


@pytest.mark.parametrize(
    ("lease", "timeout", "said"), [("10", None, "15 s"), ("5", "5", "5 s"), ("inf", None, "15 s")]
)
def test_a_lease_that_does_not_outlast_an_attempt_stops_the_start_naming_both(
    environment, lease, timeout, said
):
    environment.setenv("WEBHOOK_LEASE_SECONDS", lease)
    if timeout:
        environment.setenv("WEBHOOK_TIMEOUT_SECONDS", timeout)
    with pytest.raises(
        config.SettingError, match=rf"WEBHOOK_LEASE_SECONDS .*WEBHOOK_TIMEOUT_SECONDS, {said}"
    ):
        config.from_environment()


def test_a_lease_that_is_not_a_number_is_named(environment):
    environment.setenv("WEBHOOK_LEASE_SECONDS", "a minute")
    with pytest.raises(config.SettingError, match="WEBHOOK_LEASE_SECONDS must be a number"):
        config.from_environment()
