"""Which webhook URLs are accepted, and which addresses a delivery may connect to (SSRF defence).

Every mode requires `https://`, except that the sandbox also takes `http://localhost`,
`http://127.0.0.1` and `http://[::1]` so developers can receive events on their own machine.
Hosts are resolved (in every mode, the sandbox included) and every address checked: private,
loopback, link-local, reserved, multicast and unspecified addresses are refused, and so are IPv6
transition addresses that embed one of those IPv4 addresses (6to4, NAT64, Teredo, IPv4-mapped and
IPv4-compatible). The check runs at registration, again before each delivery, and on the socket
actually connected (`peer_refusal`), so a DNS answer that changes in between does not get through.

Loopback is the sandbox's first exception, and the deployment decides it (`Policy`): loopback
targets are allowed when the service's public root is itself loopback (`PUBLIC_URL`, or, when that
is unset, the address it listens on: a developer's machine) or the operator allows them
(`SANDBOX_ALLOW_LOOPBACK_WEBHOOKS`). How the server listens does not decide it: behind a TLS proxy
it listens on 127.0.0.1 too, and anyone could then register `http://127.0.0.1:<port>` and read
what that port answers. The service's own ports (where it listens, and `PUBLIC_URL`'s port, the
proxy's) are never a target on loopback, whatever the settings: a webhook never calls the service
itself. Nor is the `PUBLIC_URL` origin itself, anywhere (the built-in inbox is reached in-process).

The second is `SANDBOX_WEBHOOK_NETWORKS` (a training room's LAN): sandbox webhooks may target
addresses inside those networks directly, over `http://` too. It lifts only the "private address"
refusal: loopback, link-local, multicast, unspecified and reserved addresses stay refused, and so
does this machine's own address on the service's own port.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from console.core import networks as core_networks
from console.core.networks import IPNetwork
from console.modes import SANDBOX
from console.webhooks import dns

MAX_URL_LENGTH = 2048
# The url of a relayed sandbox webhook (`console.webhooks.relay`): its deliveries are fetched by its
# listener (`console listen`); the server never connects anywhere for it.
RELAY_URL = "relay://console-listen"
SANDBOX_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
DEFAULT_LISTEN_HOST = "127.0.0.1"
DEFAULT_LISTEN_PORT = 5000

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NO_SUCH_NAME = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}

NAT64 = ipaddress.ip_network(
    "64:ff9b::/96"
)  # RFC 6052 well-known prefix: the IPv4 address is the last 32 bits
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215 local use: translates into the local network
SIXTOFOUR = ipaddress.ip_network("2002::/16")
TEREDO = ipaddress.ip_network("2001::/32")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated (RFC 4291); :: and ::1 are in it too


PRIVATE = "is a private address"


class UrlRefused(ValueError):
    """Why a URL or address may not receive webhooks; the message is safe to show the caller."""


def parse_networks(value: Any) -> tuple[IPNetwork, ...]:
    """`SANDBOX_WEBHOOK_NETWORKS`: comma-separated CIDRs (or a list of them); empty means none."""
    return core_networks.parse_networks(
        value, "SANDBOX_WEBHOOK_NETWORKS", "a network (write CIDRs like 192.168.1.0/24)"
    )


@dataclass(frozen=True)
class Policy:
    """What this deployment allows sandbox webhooks to reach beyond the public internet."""

    sandbox_loopback: bool = False
    # The service's own ports (where it listens, PUBLIC_URL's): never a target on loopback or this machine.
    own_ports: frozenset[int] = frozenset()
    sandbox_networks: tuple[IPNetwork, ...] = ()  # SANDBOX_WEBHOOK_NETWORKS
    own_origin: tuple[str, int] | None = None  # PUBLIC_URL's (host, port): the service itself, anywhere
    dns_seconds: float = dns.DEFAULT_TIMEOUT  # WEBHOOK_DNS_SECONDS: how long a host's lookup may take

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Policy:
        """Loopback is allowed when the public root is loopback (`public_root_is_loopback`), or the operator
        says so (`SANDBOX_ALLOW_LOOPBACK_WEBHOOKS`); how the server listens alone does not allow it."""
        public = public_origin(config.get("PUBLIC_URL"))
        ports = {int(config.get("LISTEN_PORT") or DEFAULT_LISTEN_PORT)}
        if public is not None:
            ports.add(public[1])
        return cls(
            sandbox_loopback=public_root_is_loopback(config)
            or bool(config.get("SANDBOX_ALLOW_LOOPBACK_WEBHOOKS")),
            own_ports=frozenset(ports),
            sandbox_networks=parse_networks(config.get("SANDBOX_WEBHOOK_NETWORKS")),
            own_origin=public,
            dns_seconds=float(config.get("WEBHOOK_DNS_SECONDS") or dns.DEFAULT_TIMEOUT),
        )

    def in_sandbox_networks(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.sandbox_networks)


def public_origin(public_url: Any) -> tuple[str, int] | None:
    """`PUBLIC_URL`'s (host, port), the port defaulting to its scheme's; None when unset or not a URL."""
    if not public_url or not isinstance(public_url, str):
        return None
    try:
        parts = urlsplit(public_url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return _host_key(parts.hostname), port or (443 if scheme == "https" else 80)


def _host_key(host: str) -> str:
    """A host name as DNS compares it: case-insensitive, and `name.` (fully qualified) is `name`."""
    return host.lower().rstrip(".")


def public_root_is_loopback(config: Mapping[str, Any]) -> bool:
    """Whether the service's public root is this machine only: people reach it on loopback, so it is a
    developer's machine and its sandbox may call loopback endpoints.

    That root is `PUBLIC_URL` when set (behind a proxy, the proxy's address: not loopback, however the
    server listens). Unset, it is where the server listens (`LISTEN_HOST`), so `make run` on 127.0.0.1
    counts and `HOST=0.0.0.0` does not (a wildcard is only *shown* as loopback, it is reached from anywhere).
    """
    public_url = config.get("PUBLIC_URL")
    if public_url:
        origin = public_origin(public_url)
        return origin is not None and is_loopback_host(origin[0])
    return is_loopback_host(str(config.get("LISTEN_HOST") or DEFAULT_LISTEN_HOST))


def is_this_machine(ip: IPAddress) -> bool:
    """Whether `ip` is one of this machine's own addresses (binding to it works only then)."""
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(ip), 0))
    except OSError:
        return False
    return True


def is_relay_url(url: object) -> bool:
    return url == RELAY_URL


def is_loopback_host(host: str) -> bool:
    """Whether a listen address or host name means this machine only (`localhost`, 127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    literal = _literal(host)
    return literal is not None and literal.is_loopback


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (tests monkeypatch this for public-looking names)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


def connect_lookup(host: str, port: int) -> list[str]:
    """The addresses a delivery tries, in the resolver's order (never monkeypatched: tests that fake `resolve`
    for public-looking names must not make a delivery connect to the address they made up)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def connect_addresses(host: str, port: int, policy: Policy) -> list[str]:
    """Where a delivery's new connection goes: a literal address as it is, else the name looked up afresh,
    with the DNS deadline (`WEBHOOK_DNS_SECONDS`); `UrlRefused` names a name that does not resolve in time.

    Why: http.client resolved the name itself, with no deadline, after the delivery-time check had (with one):
    a zone that stops answering between the two held a sender for the resolver's own timeouts (up to ~30 s).
    Each address is still judged once connected (`peer_refusal`), so a changed answer gains nothing."""
    literal = _literal(host)
    if literal is not None:
        return [str(literal)]
    return _resolved(host, port, policy, "", connect_lookup)


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _embedded_refusal(ip: ipaddress.IPv6Address) -> str | None:
    """Why an IPv6 transition address is refused for the IPv4 address it carries (None: not one, or fine).

    A packet to such an address is translated or tunnelled to the IPv4 address inside, so that
    address decides. Loopback inside is refused even in the sandbox: it is some gateway's loopback.
    """
    embedded: list[ipaddress.IPv4Address] = []
    if ip in SIXTOFOUR:
        embedded = [ip.sixtofour]
    elif ip in NAT64:
        embedded = [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    elif ip in TEREDO:
        embedded = list(ip.teredo)  # the Teredo server and the (de-obfuscated) client
    elif ip in IPV4_COMPATIBLE and int(ip) > 1:
        embedded = [ipaddress.IPv4Address(int(ip))]
    for address in embedded:
        reason = _ip_refusal(address)
        if reason:
            return f"embeds {address}, which {reason}"
    return None


def _ip_refusal(ip: IPAddress) -> str | None:
    if ip.is_loopback:
        return "is a loopback address"
    if ip.is_link_local:
        return "is a link-local address"
    if ip.is_multicast:
        return "is a multicast address"
    if ip.is_unspecified:
        return "is an unspecified address"
    if ip.is_reserved:
        return "is a reserved address"
    if ip.is_private or not ip.is_global:
        return PRIVATE
    return None


def address_refusal(
    address: str | IPAddress, mode: str, policy: Policy, port: int | None = None
) -> str | None:
    """Why a delivery must not connect to `address` (on `port`, when known) in `mode`; None when it may."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
        else:
            reason = _embedded_refusal(ip)
            if reason:
                return reason
            if ip in NAT64:
                return None  # the well-known NAT64 prefix reaches the public IPv4 address inside
            if ip in NAT64_LOCAL:
                return "is a local-use NAT64 address (it translates into a private network)"
            if ip in TEREDO:
                return "is a Teredo address (not globally routable)"
            if ip in IPV4_COMPATIBLE and int(ip) > 1:
                return "is an IPv4-compatible address (deprecated, not routable)"
    if ip.is_loopback:
        return _loopback_refusal(mode, policy, port)
    reason = _ip_refusal(ip)
    if reason == PRIVATE and mode == SANDBOX and policy.in_sandbox_networks(ip):
        return _network_refusal(ip, policy, port)
    if reason is None:
        # A public address can be this machine's own too (a server not behind NAT): the service's own
        # port there is the service itself, as on loopback.
        return _network_refusal(ip, policy, port)
    return reason


def _network_refusal(ip: IPAddress, policy: Policy, port: int | None) -> str | None:
    """A public address, or one inside SANDBOX_WEBHOOK_NETWORKS: allowed, except this service itself."""
    if port is not None and port in policy.own_ports and is_this_machine(ip):
        return f"is this server's own address on the service's own port ({port})"
    return None


def _loopback_refusal(mode: str, policy: Policy, port: int | None) -> str | None:
    if mode != SANDBOX:
        return "is a loopback address"
    if port is not None and port in policy.own_ports:  # first: allowing loopback does not change it
        return f"is a loopback address on this service's own port ({port})"
    if not policy.sandbox_loopback:
        return (
            "is a loopback address, and this server does not take loopback webhooks "
            "(its public URL is not a loopback address; its operator can allow them with "
            "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS)"
        )
    return None


def _split(url: str, mode: str = ""):
    if not isinstance(url, str) or not url:
        raise UrlRefused("must be a URL string")
    if len(url) > MAX_URL_LENGTH:
        raise UrlRefused(f"must be at most {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise UrlRefused("must not contain whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused("is not a valid URL") from exc
    if port == 0:  # nothing listens there: every delivery would fail
        raise UrlRefused("must not have port 0")
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        # Named as the http rule below names it: "localhost:8000/hooks" in the sandbox is one scheme short, and
        # an https-only message sent its author looking for a certificate it does not need.
        also = (
            " (the sandbox also accepts http://localhost, http://127.0.0.1 and http://[::1])"
            if mode == SANDBOX
            else ""
        )
        raise UrlRefused(f"must be an absolute URL starting with https://{also}")
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL end up in logs and the console; receivers verify the signature instead.
        raise UrlRefused("must not contain a user name or password")
    if parts.fragment:
        raise UrlRefused("must not contain a #fragment")
    return parts, port


def _is_sandbox_local(host: str) -> bool:
    return host.lower() in SANDBOX_LOCAL_HOSTS


def check_url(url: str, mode: str, policy: Policy, *, check_dns: bool = True, owner: str = "") -> str:
    """Return `url` if webhooks may be registered at it in `mode`, else raise `UrlRefused`.

    `owner`: the workspace whose request this is, for its share of DNS lookups (`console.webhooks.dns`)."""
    parts, port = _split(url, mode)
    host = parts.hostname or ""
    scheme = parts.scheme.lower()
    port = port or (443 if scheme == "https" else 80)
    if policy.own_origin is not None and (_host_key(host), port) == policy.own_origin:
        raise UrlRefused(
            f"host {host!r} on port {port} is this service's own address (PUBLIC_URL): a webhook never "
            "calls the service itself"
        )
    if scheme == "http" and not (mode == SANDBOX and _is_sandbox_local(host)):
        if mode == SANDBOX and policy.sandbox_networks:
            _check_http_in_networks(host, port, policy, check_dns, owner)
        elif mode == SANDBOX:
            raise UrlRefused(
                "must start with https:// (the sandbox also accepts http://localhost, "
                "http://127.0.0.1 and http://[::1])"
            )
        else:
            raise UrlRefused("must start with https://")
    if mode == SANDBOX and _is_sandbox_local(host):
        reason = _loopback_refusal(mode, policy, port)
        if reason:
            raise UrlRefused(f"host {host!r} {reason}")
        return url
    if check_dns:
        check_host(host, port, mode, policy, owner)
    return url


def _check_http_in_networks(host: str, port: int, policy: Policy, check_dns: bool, owner: str) -> None:
    """Plain http:// in the sandbox reaches only the operator's networks (SANDBOX_WEBHOOK_NETWORKS)."""
    literal = _literal(host.strip("[]"))
    if literal is None and not check_dns:
        return  # the delivery-time check resolves it
    addresses = (
        [literal] if literal is not None else [_literal(a) for a in _resolved(host, port, policy, owner)]
    )
    outside = [a for a in addresses if a is None or not policy.in_sandbox_networks(a)]
    if outside:
        networks = ", ".join(str(n) for n in policy.sandbox_networks)
        raise UrlRefused(
            f"must start with https:// (the sandbox also accepts http://localhost, http://127.0.0.1, "
            f"http://[::1] and http:// addresses in this server's webhook networks: {networks})"
        )


def _resolved(
    host: str, port: int, policy: Policy, owner: str, lookup: Callable[[str, int], list[str]] | None = None
) -> list[str]:
    look = lookup or resolve  # `resolve` read at the call, so that tests' fakes of it apply
    try:
        addresses = dns.lookup(lambda: look(host, port), owner, policy.dns_seconds)
    except dns.TooSlow:
        raise UrlRefused(
            f"host {host!r} did not resolve within {policy.dns_seconds:g} s (its DNS servers are slow or "
            "not answering)"
        ) from None
    except dns.TooMany:
        raise UrlRefused(
            f"host {host!r} was not looked up: {dns.PER_OWNER} DNS lookups of this workspace are still "
            "waiting for an answer; try again in a few seconds"
        ) from None
    except (OSError, UnicodeError) as exc:
        raise _dns_failure(host, exc) from exc
    if not addresses:
        raise UrlRefused(f"host {host!r} does not resolve (no address in DNS)")
    return addresses


def _dns_failure(host: str, exc: BaseException) -> UrlRefused:
    """A refusal that says the name did not resolve, and when the lookup itself failed, that too."""
    if isinstance(exc, socket.gaierror) and exc.errno in NO_SUCH_NAME:
        return UrlRefused(f"host {host!r} does not resolve (no such name in DNS)")
    # Offline, or no DNS server answering: say so, since every mode resolves webhook hosts.
    return UrlRefused(f"host {host!r} does not resolve: the DNS lookup failed (is this server offline?)")


def check_host(host: str, port: int, mode: str, policy: Policy, owner: str = "") -> list[str]:
    """Resolve `host` and refuse it if any address is off limits; returns the addresses."""
    literal = _literal(host)
    addresses = [str(literal)] if literal is not None else _resolved(host, port, policy, owner)
    for address in addresses:
        reason = address_refusal(address, mode, policy, port)
        if reason:
            raise UrlRefused(f"host {host!r} resolves to {address}, which {reason}")
    return addresses


def check_delivery_url(url: str, mode: str, policy: Policy) -> None:
    """The delivery-time check: the same policy, with a fresh DNS answer."""
    check_url(url, mode, policy, check_dns=True)


def peer_refusal(sock: socket.socket, mode: str, policy: Policy) -> str | None:
    """Why the connected peer of `sock` is off limits; the same rules, on every new connection."""
    try:
        peer = sock.getpeername()
    except OSError:
        return None  # not connected: the send itself will fail and be recorded
    address, port = peer[0], peer[1]
    reason = address_refusal(address.split("%")[0], mode, policy, port)
    return f"connected address {address} {reason}" if reason else None
