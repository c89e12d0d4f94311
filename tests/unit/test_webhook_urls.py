"""The webhook URL policy and SSRF checks, without public DNS (IP literals, localhost, a patched resolver)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from console.webhooks import urls
from console.webhooks.urls import Policy, UrlRefused, address_refusal

# A developer's machine: the server listens on 127.0.0.1:5000, so sandbox loopback targets are allowed.
LOCAL = Policy.from_config({})
# A shared server (a training room, a public demo): it listens on every interface.
SHARED = Policy.from_config({"LISTEN_HOST": "0.0.0.0", "LISTEN_PORT": 8000})


def check_url(url, mode, policy=LOCAL):
    return urls.check_url(url, mode, policy)


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
    ["http://localhost:5001/hook", "http://127.0.0.1/hook", "http://[::1]:8080/", "https://localhost/x"],
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
    assert address_refusal("127.0.0.1", "sandbox", LOCAL) is None
    assert address_refusal("127.0.0.1", "production", LOCAL) == "is a loopback address"
    assert address_refusal("93.184.216.34", "production", LOCAL) is None


def test_peer_check_uses_the_connected_address():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with server, socket.create_connection(server.getsockname()) as client:
        assert urls.peer_refusal(client, "sandbox", LOCAL) is None
        assert "loopback" in urls.peer_refusal(client, "development", LOCAL)
        assert "does not take loopback" in urls.peer_refusal(client, "sandbox", SHARED)
        own = Policy(sandbox_loopback=True, own_ports=frozenset({server.getsockname()[1]}))
        assert "own port" in urls.peer_refusal(client, "sandbox", own)
        server.accept()[0].close()


# IPv6 transition addresses -------------------------------------------------------------------

PRIVATE, LOOPBACK, PUBLIC = "10.0.0.1", "127.0.0.1", "93.184.216.34"


def sixtofour(v4):  # 2002:AABB:CCDD::/48 carries AA.BB.CC.DD
    return str(ipaddress.IPv6Address((0x2002 << 112) | (int(ipaddress.IPv4Address(v4)) << 80) | 1))


def nat64(v4, prefix="64:ff9b::"):  # the IPv4 address in the last 32 bits
    return str(ipaddress.IPv6Address(int(ipaddress.IPv6Address(prefix)) | int(ipaddress.IPv4Address(v4))))


def teredo(client, server=PUBLIC):  # 2001:0:<server>:<flags>:<port>:<client, bits inverted>
    value = (0x20010000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | (0xFFFF << 32)
    return str(ipaddress.IPv6Address(value | (int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF)))


def mapped(v4):
    return f"::ffff:{v4}"


def compatible(v4):
    return str(ipaddress.IPv6Address(int(ipaddress.IPv4Address(v4))))


@pytest.mark.parametrize("mode", ["sandbox", "development", "production"])
@pytest.mark.parametrize("embed", [sixtofour, nat64, teredo, compatible])
@pytest.mark.parametrize(("inside", "reason"), [(PRIVATE, "private"), (LOOPBACK, "loopback")])
def test_transition_addresses_embedding_private_or_loopback_ipv4_are_refused(mode, embed, inside, reason):
    # Refused in the sandbox too: the embedded loopback is a gateway's, not this machine's.
    address = embed(inside)
    refusal = address_refusal(address, mode, LOCAL)
    assert refusal == f"embeds {inside}, which is a {reason} address"
    with pytest.raises(UrlRefused, match=f"embeds {inside}"):
        check_url(f"https://[{address}]/hook", mode)


@pytest.mark.parametrize("mode", ["development", "production"])
@pytest.mark.parametrize(("inside", "reason"), [(PRIVATE, "private"), (LOOPBACK, "loopback")])
def test_ipv4_mapped_addresses_are_the_ipv4_address(mode, inside, reason):
    assert address_refusal(mapped(inside), mode, LOCAL) == f"is a {reason} address"


def test_ipv4_mapped_loopback_follows_the_sandbox_loopback_policy():
    assert address_refusal(mapped(LOOPBACK), "sandbox", LOCAL) is None
    assert "does not take loopback" in address_refusal(mapped(LOOPBACK), "sandbox", SHARED)


def test_teredo_server_address_is_checked_too():
    assert address_refusal(teredo(PUBLIC, server=PRIVATE), "production", LOCAL) == (
        f"embeds {PRIVATE}, which is a private address"
    )


@pytest.mark.parametrize("mode", ["sandbox", "development", "production"])
@pytest.mark.parametrize(
    ("address", "refusal"),
    [
        (sixtofour(PUBLIC), None),  # reaches 93.184.216.34 through a 6to4 relay
        (nat64(PUBLIC), None),  # reaches 93.184.216.34 through the network's NAT64
        (mapped(PUBLIC), None),  # is 93.184.216.34
        (teredo(PUBLIC), "is a Teredo address (not globally routable)"),
        (compatible(PUBLIC), "is an IPv4-compatible address (deprecated, not routable)"),
        (nat64(PUBLIC, "64:ff9b:1::"), "is a local-use NAT64 address (it translates into a private network)"),
        (
            nat64(PRIVATE, "64:ff9b:1::"),
            "is a local-use NAT64 address (it translates into a private network)",
        ),
    ],
)
def test_transition_addresses_embedding_public_ipv4(mode, address, refusal):
    assert address_refusal(address, mode, LOCAL) == refusal


class FakePeer:
    """A connected socket as far as `peer_refusal` can tell (no route to these addresses exists here)."""

    def __init__(self, address, port=443):
        self.peer = (address, port, 0, 0)

    def getpeername(self):
        return self.peer


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        (sixtofour(PRIVATE), "embeds 10.0.0.1"),
        (nat64(LOOPBACK), "embeds 127.0.0.1"),
        (teredo(PRIVATE), "embeds 10.0.0.1"),
        (compatible(PRIVATE), "embeds 10.0.0.1"),
        (mapped(PRIVATE), "private"),
        (nat64(PUBLIC, "64:ff9b:1::"), "local-use NAT64"),
        ("fe80::1%eth0", "link-local"),
    ],
)
def test_the_connected_address_gets_the_same_rules(address, reason):
    refusal = urls.peer_refusal(FakePeer(address), "production", LOCAL)
    assert refusal.startswith(f"connected address {address} ") and reason in refusal
    assert urls.peer_refusal(FakePeer(sixtofour(PUBLIC)), "production", LOCAL) is None


def test_a_name_resolving_to_a_transition_address_is_refused(dns):
    dns["sneaky.example.com"] = [sixtofour(PRIVATE)]
    with pytest.raises(UrlRefused, match=r"embeds 10\.0\.0\.1"):
        check_url("https://sneaky.example.com/", "production")


# Sandbox loopback: the deployment's policy ----------------------------------------------------


# Behind a TLS proxy (the README's setup): the server listens on 127.0.0.1, people reach it at PUBLIC_URL.
BEHIND_PROXY = {"LISTEN_HOST": "127.0.0.1", "LISTEN_PORT": 5000, "PUBLIC_URL": "https://demo.example.com"}


@pytest.mark.parametrize(
    ("config", "allowed"),
    [
        ({}, True),  # the default: HOST=127.0.0.1, no PUBLIC_URL (`make run`)
        ({"LISTEN_HOST": "127.0.0.1"}, True),
        ({"LISTEN_HOST": "localhost"}, True),
        ({"LISTEN_HOST": "::1"}, True),
        ({"LISTEN_HOST": "127.0.1.1"}, True),
        ({"LISTEN_HOST": "0.0.0.0"}, False),  # shown as loopback, reached from anywhere
        ({"LISTEN_HOST": "::"}, False),
        ({"LISTEN_HOST": "10.1.2.3"}, False),
        ({"LISTEN_HOST": "0.0.0.0", "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": True}, True),
        ({"LISTEN_HOST": "0.0.0.0", "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": False}, False),
        # PUBLIC_URL decides when set, however the server listens:
        (BEHIND_PROXY, False),
        ({**BEHIND_PROXY, "PUBLIC_URL": "https://demo.example.com:8443/console/"}, False),
        ({**BEHIND_PROXY, "PUBLIC_URL": "http://10.0.0.7:5000"}, False),
        ({**BEHIND_PROXY, "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": True}, True),
        ({"LISTEN_HOST": "127.0.0.1", "PUBLIC_URL": "http://127.0.0.1:5000/"}, True),
        ({"LISTEN_HOST": "::1", "PUBLIC_URL": "http://[::1]:5000"}, True),
        ({"LISTEN_HOST": "0.0.0.0", "PUBLIC_URL": "http://localhost:8080"}, True),
    ],
)
def test_loopback_is_allowed_when_the_public_url_is_loopback_or_the_operator_says_so(config, allowed):
    policy = Policy.from_config(config)
    assert policy.sandbox_loopback is allowed
    assert (address_refusal("127.0.0.1", "sandbox", policy, 9000) is None) is allowed


def test_behind_a_proxy_loopback_urls_are_refused_at_every_check(dns):
    """The issue's case: https PUBLIC_URL, listening on 127.0.0.1; another local port is not reachable."""
    policy = Policy.from_config(BEHIND_PROXY)
    dns["local.example.com"] = ["127.0.0.1"]
    for url in (
        "http://127.0.0.1:6379/",
        "http://localhost:9000/x",
        "http://[::1]:8080/",
        "https://local.example.com:8443/",
    ):
        with pytest.raises(
            UrlRefused, match=r"does not take loopback webhooks.*SANDBOX_ALLOW_LOOPBACK_WEBHOOKS"
        ):
            check_url(url, "sandbox", policy)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with server, socket.create_connection(server.getsockname()) as client:  # a name that changed its answer
        assert "does not take loopback webhooks" in urls.peer_refusal(client, "sandbox", policy)
        server.accept()[0].close()


@pytest.mark.parametrize(
    ("config", "ports"),
    [
        ({}, {5000}),
        ({"LISTEN_PORT": 8123}, {8123}),
        (BEHIND_PROXY, {5000, 443}),
        ({"LISTEN_PORT": 8123, "PUBLIC_URL": "http://demo.example.com"}, {8123, 80}),
        ({"LISTEN_PORT": 8123, "PUBLIC_URL": "https://demo.example.com:8443/console"}, {8123, 8443}),
        ({"PUBLIC_URL": "not a url"}, {5000}),
    ],
)
def test_own_ports_are_the_listen_port_and_the_public_urls(config, ports):
    assert Policy.from_config(config).own_ports == ports


@pytest.mark.parametrize("port", [5000, 443])
def test_own_ports_are_refused_on_loopback_even_when_loopback_is_allowed(port):
    policy = Policy.from_config({**BEHIND_PROXY, "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": True})
    for url in (f"http://127.0.0.1:{port}/", f"http://localhost:{port}/hook", f"https://[::1]:{port}/"):
        with pytest.raises(UrlRefused, match=rf"own port \({port}\)"):
            check_url(url, "sandbox", policy)
    assert check_url("http://127.0.0.1:9000/hook", "sandbox", policy) == "http://127.0.0.1:9000/hook"


@pytest.mark.parametrize("mode", ["sandbox", "production"])
def test_the_public_url_itself_is_never_a_target(dns, mode):
    dns["demo.example.com"] = ["93.184.216.35"]  # a public address: only the name says it is this service
    policy = Policy.from_config(BEHIND_PROXY)
    for url in ("https://demo.example.com/sandbox/v1/webhooks", "https://DEMO.example.com:443/"):
        with pytest.raises(UrlRefused, match=r"this service's own address \(PUBLIC_URL\)"):
            check_url(url, mode, policy)
    assert check_url("https://demo.example.com:8443/", mode, policy) == "https://demo.example.com:8443/"


@pytest.mark.parametrize(
    "url",
    ["http://localhost:5000/hook", "http://127.0.0.1:9000/hook", "http://[::1]/", "https://localhost/x"],
)
def test_a_shared_server_refuses_loopback_urls(url):
    with pytest.raises(UrlRefused, match="does not take loopback webhooks"):
        check_url(url, "sandbox", SHARED)


@pytest.mark.parametrize(
    "url", ["http://localhost:5000/hook", "http://127.0.0.1:5000/", "http://[::1]:5000/x"]
)
def test_the_services_own_port_is_never_a_target(url):
    with pytest.raises(UrlRefused, match=r"own port \(5000\)"):
        check_url(url, "sandbox")
    with pytest.raises(UrlRefused, match="own port"):  # the operator's setting does not change it
        check_url(url, "sandbox", Policy.from_config({"SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": True}))
    assert check_url(url, "sandbox", Policy(sandbox_loopback=True, own_ports=frozenset({8000}))) == url


def test_own_port_is_checked_on_names_resolving_to_loopback(dns):
    dns["me.example.com"] = ["127.0.0.1"]
    with pytest.raises(UrlRefused, match="own port"):
        check_url("https://me.example.com:5000/", "sandbox")
    assert check_url("https://me.example.com:5001/", "sandbox") == "https://me.example.com:5001/"


# Offline: what the sandbox says when DNS does not answer --------------------------------------


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "no such name in DNS"),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), "is this server offline"),
    ],
)
@pytest.mark.parametrize("mode", ["sandbox", "production"])
def test_a_failed_lookup_says_the_host_does_not_resolve(monkeypatch, error, message, mode):
    def resolve(host, port):
        raise error

    monkeypatch.setattr(urls, "resolve", resolve)
    with pytest.raises(UrlRefused, match=f"host 'hooks.example.com' does not resolve.*{message}"):
        check_url("https://hooks.example.com/in", mode)
    assert check_url("http://127.0.0.1:9000/in", "sandbox") == "http://127.0.0.1:9000/in"  # no DNS needed
