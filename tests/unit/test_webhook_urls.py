"""The webhook URL policy and SSRF checks, without public DNS (IP literals, localhost, a patched resolver)."""

from __future__ import annotations

import socket

import pytest

from console.webhooks import urls
from console.webhooks.urls import UrlRefused, address_refusal, check_url


@pytest.fixture
def dns(monkeypatch):
    """A fake resolver: names map to addresses; anything else does not resolve."""
    table: dict[str, list[str]] = {"hooks.example.com": ["93.184.216.34"]}

    def resolve(host, port):
        if host not in table:
            raise socket.gaierror("no such host")
        return table[host]

    monkeypatch.setattr(urls, "resolve", resolve)
    return table


@pytest.mark.parametrize("mode", ["sandbox", "development", "production"])
def test_https_public_host_is_accepted_everywhere(dns, mode):
    assert check_url("https://hooks.example.com/in?x=1", mode) == "https://hooks.example.com/in?x=1"


@pytest.mark.parametrize(
    "url",
    ["http://localhost:5000/hook", "http://127.0.0.1/hook", "http://[::1]:8080/", "https://localhost/x"],
)
def test_sandbox_accepts_local_urls(url):
    assert check_url(url, "sandbox") == url


@pytest.mark.parametrize("mode", ["development", "production"])
@pytest.mark.parametrize(
    "url",
    ["http://localhost:5000/hook", "http://127.0.0.1/hook", "http://[::1]/", "http://hooks.example.com/"],
)
def test_other_modes_require_https(dns, mode, url):
    with pytest.raises(UrlRefused, match="https://"):
        check_url(url, mode)


@pytest.mark.parametrize("mode", ["development", "production"])
@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("[::1]", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.10", "private"),
        ("169.254.169.254", "link-local"),
        ("[fe80::1]", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("224.0.0.1", "multicast"),
        ("[::ffff:10.0.0.1]", "private"),
        ("100.64.0.1", "private"),
    ],
)
def test_private_and_special_addresses_are_refused(mode, host, reason):
    with pytest.raises(UrlRefused, match=reason):
        check_url(f"https://{host}/hook", mode)


def test_localhost_name_is_refused_outside_the_sandbox():
    # Resolved for real: localhost is loopback on every machine, no public DNS involved.
    with pytest.raises(UrlRefused, match="loopback"):
        check_url("https://localhost/hook", "production")


def test_a_name_resolving_to_a_private_address_is_refused(dns):
    dns["internal.example.com"] = ["93.184.216.34", "10.0.0.5"]  # one bad address is enough
    with pytest.raises(UrlRefused, match=r"10\.0\.0\.5"):
        check_url("https://internal.example.com/", "development")


def test_sandbox_still_refuses_private_networks(dns):
    dns["metadata.example.com"] = ["169.254.169.254"]
    with pytest.raises(UrlRefused, match="link-local"):
        check_url("https://metadata.example.com/", "sandbox")


def test_unresolvable_host_is_refused(dns):
    with pytest.raises(UrlRefused, match="does not resolve"):
        check_url("https://nowhere.example.com/", "production")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.com/", "https://"),
        ("hooks.example.com/in", "https://"),
        ("https:///path", "https://"),
        ("https://user:pw@hooks.example.com/", "user name or password"),
        ("https://hooks.example.com/#frag", "fragment"),
        ("https://hooks.example.com/a b", "whitespace"),
        ("https://hooks.example.com:99999/", "valid URL"),
        ("https://hooks.example.com/" + "a" * 2100, "2048"),
    ],
)
def test_malformed_urls(dns, url, message):
    with pytest.raises(UrlRefused, match=message):
        check_url(url, "production")


def test_address_refusal_allows_loopback_only_in_the_sandbox():
    assert address_refusal("127.0.0.1", "sandbox") is None
    assert address_refusal("127.0.0.1", "production") == "is a loopback address"
    assert address_refusal("93.184.216.34", "production") is None


def test_peer_check_uses_the_connected_address():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with server, socket.create_connection(server.getsockname()) as client:
        assert urls.peer_refusal(client, "sandbox") is None
        assert "loopback" in urls.peer_refusal(client, "development")
        server.accept()[0].close()
