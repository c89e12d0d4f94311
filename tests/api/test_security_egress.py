"""Webhook egress, an attacker's tries: the service's own address written another way. No DNS is asked:
`urls.resolve` is faked for made-up names, and no delivery is sent."""

from __future__ import annotations

import ipaddress

import pytest

from console.api.ratelimit import RateLimiter
from console.webhooks import urls
from tests.conftest import assert_error

BODY = {"status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"}
PUBLIC_ADDRESS = "93.184.216.34"  # a global address, never contacted: registration only resolves


@pytest.fixture(autouse=True)
def generous_rate_limit(app):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )


@pytest.fixture
def public_server(app, monkeypatch):
    """A shared server behind a TLS proxy at https://demo.example.com, whose names resolve to its public
    address."""
    monkeypatch.setitem(app.config, "PUBLIC_URL", "https://demo.example.com")
    monkeypatch.setitem(app.config, "LISTEN_HOST", "0.0.0.0")
    monkeypatch.setitem(app.config, "LISTEN_PORT", 5000)
    monkeypatch.setattr(urls, "resolve", lambda host, port: [PUBLIC_ADDRESS])


def url_message(response) -> str:
    error = assert_error(response, 400, "INVALID_REQUEST_PARAMETERS", "INVALID_FIELDS")
    (field,) = error["fields"]
    assert field["name"] == "url"
    return field["message"]


@pytest.mark.parametrize(
    "url",
    [
        "https://demo.example.com./sandbox/v1/webhooks",  # fully qualified: the same name to DNS
        "https://DEMO.Example.COM.:443/inbox/x",
    ],
)
def test_the_public_url_written_with_a_trailing_dot_is_still_the_service_itself(api, public_server, url):
    """It compared the host as written, so `demo.example.com.` passed as some other public host."""
    assert "this service's own address (PUBLIC_URL)" in url_message(
        api.post("/webhooks", json={**BODY, "url": url})
    )


def test_the_services_port_on_this_machines_public_address_is_refused(api, public_server, monkeypatch):
    """A server not behind NAT holds its public address itself: its own port there is the service, as on
    loopback. Only private addresses inside SANDBOX_WEBHOOK_NETWORKS were checked for being this machine."""
    ours = ipaddress.ip_address(PUBLIC_ADDRESS)
    monkeypatch.setattr(urls, "is_this_machine", lambda ip: ip == ours)
    for url in ("https://other-name.example/", f"https://{PUBLIC_ADDRESS}:5000/"):
        message = url_message(api.post("/webhooks", json={**BODY, "url": url}))
        assert "this server's own address on the service's own port" in message
    # Another port of the same address is an ordinary public endpoint; and so is the port elsewhere.
    assert api.post("/webhooks", json={**BODY, "url": f"https://{PUBLIC_ADDRESS}:8443/"}).status_code == 200
    monkeypatch.setattr(urls, "is_this_machine", lambda ip: False)
    assert api.post("/webhooks", json={**BODY, "url": "https://other-name.example/"}).status_code == 200


def test_the_delivery_time_peer_check_applies_the_same_rule(public_server, monkeypatch):
    policy = urls.Policy.from_config({"PUBLIC_URL": "https://demo.example.com", "LISTEN_PORT": 5000})
    monkeypatch.setattr(urls, "is_this_machine", lambda ip: True)
    assert "own port (443)" in urls.address_refusal(PUBLIC_ADDRESS, "production", policy, 443)
    assert urls.address_refusal(PUBLIC_ADDRESS, "production", policy, 8443) is None
