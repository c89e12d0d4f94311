"""SANDBOX_WEBHOOK_NETWORKS: sandbox webhooks may reach a training room's LAN directly, and nothing more."""

from __future__ import annotations

import socket

import pytest

from console import create_app
from console.api.ratelimit import RateLimiter
from console.webhooks import urls
from console.webhooks.urls import Policy, UrlRefused, address_refusal
from tests.conftest import assert_error, base_config

ROOM = Policy.from_config(
    {"LISTEN_HOST": "0.0.0.0", "LISTEN_PORT": 8000, "SANDBOX_WEBHOOK_NETWORKS": "10.42.0.0/16, fd00:42::/64"}
)


class FakePeer:
    def __init__(self, address, port):
        self.peer = (address, port, 0, 0)

    def getpeername(self):
        return self.peer


@pytest.fixture
def dns(monkeypatch):
    table = {"laptop.room.lan": ["10.42.7.9"], "printer.office.lan": ["10.43.0.2"]}

    def resolve(host, port):
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "no such host")
        return table[host]

    monkeypatch.setattr(urls, "resolve", resolve)
    return table


def test_parse_networks():
    assert urls.parse_networks("") == ()
    assert urls.parse_networks(None) == ()
    assert [str(n) for n in urls.parse_networks(" 192.168.1.0/24 ,, 10.0.0.7")] == [
        "192.168.1.0/24",
        "10.0.0.7/32",
    ]
    assert [str(n) for n in urls.parse_networks(["fd00::/8"])] == ["fd00::/8"]
    with pytest.raises(ValueError, match=r"'10\.0\.0\.0/33' is not a network"):
        urls.parse_networks("192.168.1.0/24,10.0.0.0/33")


def test_off_by_default():
    assert Policy.from_config({}).sandbox_networks == ()
    with pytest.raises(UrlRefused, match="must start with https://"):
        urls.check_url("http://10.42.7.9:3000/hook", "sandbox", Policy.from_config({}))
    assert address_refusal("10.42.7.9", "sandbox", Policy.from_config({}), 3000) == "is a private address"


@pytest.mark.parametrize(
    "url",
    [
        "http://10.42.7.9:3000/hook",
        "https://10.42.0.1/x",
        "http://[fd00:42::5]:8080/",
        "http://laptop.room.lan:5000/hooks",
    ],
)
def test_an_address_inside_the_networks_is_allowed_in_the_sandbox(dns, url):
    assert urls.check_url(url, "sandbox", ROOM) == url
    assert urls.check_delivery_url(url, "sandbox", ROOM) is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://10.43.0.1:3000/hook", "webhook networks: 10.42.0.0/16, fd00:42::/64"),
        ("http://printer.office.lan/", "webhook networks"),
        ("https://10.43.0.1/hook", "private address"),
        ("http://192.168.1.20/", "webhook networks"),
    ],
)
def test_an_address_outside_the_networks_is_refused(dns, url, message):
    with pytest.raises(UrlRefused, match=message):
        urls.check_url(url, "sandbox", ROOM)


@pytest.mark.parametrize("mode", ["development", "production"])
def test_other_modes_ignore_the_setting(mode):
    with pytest.raises(UrlRefused, match="must start with https://"):
        urls.check_url("http://10.42.7.9/", mode, ROOM)
    with pytest.raises(UrlRefused, match="private address"):
        urls.check_url("https://10.42.7.9/", mode, ROOM)


def test_listing_a_special_range_does_not_open_it():
    policy = Policy.from_config(
        {"SANDBOX_WEBHOOK_NETWORKS": "169.254.0.0/16,127.0.0.0/8,0.0.0.0/0", "LISTEN_HOST": "0.0.0.0"}
    )
    assert "link-local" in address_refusal("169.254.169.254", "sandbox", policy, 80)
    assert "loopback" in address_refusal("127.0.0.1", "sandbox", policy, 3000)
    assert "embeds 10.42.0.1" in address_refusal(
        "2002:a2a:1::1", "sandbox", ROOM, 80
    )  # 6to4 of an inside address


def test_the_connected_socket_gets_the_same_rule():
    assert urls.peer_refusal(FakePeer("10.42.7.9", 3000), "sandbox", ROOM) is None
    refusal = urls.peer_refusal(FakePeer("10.43.0.1", 3000), "sandbox", ROOM)
    assert refusal == "connected address 10.43.0.1 is a private address"


def test_never_this_servers_own_address_on_its_own_port(monkeypatch):
    monkeypatch.setattr(urls, "is_this_machine", lambda ip: str(ip) == "10.42.0.1")
    assert "own address on the service's own port (8000)" in address_refusal(
        "10.42.0.1", "sandbox", ROOM, 8000
    )
    assert address_refusal("10.42.0.1", "sandbox", ROOM, 3000) is None  # another port of this machine
    assert address_refusal("10.42.0.2", "sandbox", ROOM, 8000) is None  # a trainee's laptop on port 8000
    with pytest.raises(UrlRefused, match="own port"):
        urls.check_url("http://10.42.0.1:8000/inbox", "sandbox", ROOM)


def test_is_this_machine():
    assert urls.is_this_machine(urls.ipaddress.ip_address("127.0.0.1"))
    assert not urls.is_this_machine(urls.ipaddress.ip_address("192.0.2.77"))  # TEST-NET-1, never assigned


def test_a_typo_stops_the_app_from_starting(tmp_path):
    config = {**base_config(f"sqlite:///{tmp_path / 'x.db'}"), "SANDBOX_WEBHOOK_NETWORKS": "10.0.0.0/8,lan"}
    with pytest.raises(ValueError, match="'lan' is not a network"):
        create_app(config)


def test_registration_through_the_api(app, api):
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )
    app.config.update(LISTEN_HOST="0.0.0.0", SANDBOX_WEBHOOK_NETWORKS="10.42.0.0/16")
    body = {"status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"}
    inside = api.post("/webhooks", json={**body, "url": "http://10.42.3.4:3000/hook"})
    assert inside.status_code == 200, inside.get_json()
    error = assert_error(
        api.post("/webhooks", json={**body, "url": "http://10.9.3.4:3000/hook"}),
        400,
        "INVALID_REQUEST_PARAMETERS",
    )
    assert "webhook networks: 10.42.0.0/16" in error["fields"][0]["message"]
