"""Which webhook URLs are accepted, and which addresses a delivery may connect to (SSRF defence).

Every mode requires `https://`, except that the sandbox also takes `http://localhost`,
`http://127.0.0.1` and `http://[::1]` so developers can receive events on their own machine.
Hosts are resolved and every address checked: private, loopback, link-local, reserved,
multicast and unspecified addresses are refused (loopback is allowed in the sandbox only).
The check runs at registration, again before each delivery, and on the socket actually
connected (`peer_refusal`), so a DNS answer that changes in between does not get through.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from console.modes import SANDBOX

MAX_URL_LENGTH = 2048
SANDBOX_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UrlRefused(ValueError):
    """Why a URL or address may not receive webhooks; the message is safe to show the caller."""


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (tests monkeypatch this for public-looking names)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def address_refusal(address: str | IPAddress, mode: str) -> str | None:
    """Why a delivery must not connect to `address` in `mode`; None when it may."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
    if ip.is_loopback:
        return None if mode == SANDBOX else "is a loopback address"
    if ip.is_link_local:
        return "is a link-local address"
    if ip.is_multicast:
        return "is a multicast address"
    if ip.is_unspecified:
        return "is an unspecified address"
    if ip.is_reserved:
        return "is a reserved address"
    if ip.is_private or not ip.is_global:
        return "is a private address"
    return None


def _split(url: str):
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
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise UrlRefused("must be an absolute https:// URL")
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL end up in logs and the console; receivers verify the signature instead.
        raise UrlRefused("must not contain a user name or password")
    if parts.fragment:
        raise UrlRefused("must not contain a #fragment")
    return parts, port


def _is_sandbox_local(host: str) -> bool:
    return host.lower() in SANDBOX_LOCAL_HOSTS


def check_url(url: str, mode: str, *, check_dns: bool = True) -> str:
    """Return `url` if webhooks may be registered at it in `mode`, else raise `UrlRefused`."""
    parts, port = _split(url)
    host = parts.hostname or ""
    scheme = parts.scheme.lower()
    if scheme == "http" and not (mode == SANDBOX and _is_sandbox_local(host)):
        if mode == SANDBOX:
            raise UrlRefused(
                "must start with https:// (the sandbox also accepts http://localhost, "
                "http://127.0.0.1 and http://[::1])"
            )
        raise UrlRefused("must start with https://")
    if mode == SANDBOX and _is_sandbox_local(host):
        return url
    if check_dns:
        check_host(host, port or (443 if scheme == "https" else 80), mode)
    return url


def check_host(host: str, port: int, mode: str) -> list[str]:
    """Resolve `host` and refuse it if any address is off limits; returns the addresses."""
    literal = _literal(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise UrlRefused(f"host {host!r} does not resolve") from exc
        if not addresses:
            raise UrlRefused(f"host {host!r} does not resolve")
    for address in addresses:
        reason = address_refusal(address, mode)
        if reason:
            raise UrlRefused(f"host {host!r} resolves to {address}, which {reason}")
    return addresses


def check_delivery_url(url: str, mode: str) -> None:
    """The delivery-time check: the same policy, with a fresh DNS answer."""
    check_url(url, mode, check_dns=True)


def peer_refusal(sock: socket.socket, mode: str) -> str | None:
    """Why the connected peer of `sock` is off limits; checked on every new connection."""
    try:
        address = sock.getpeername()[0]
    except OSError:
        return None  # not connected: the send itself will fail and be recorded
    reason = address_refusal(address.split("%")[0], mode)
    return f"connected address {address} {reason}" if reason else None
