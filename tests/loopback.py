"""The suite reaches this machine only: a connection or a name lookup for anything else fails in the test.

The rule (DEVELOPERS.md): no test sends traffic anywhere but 127.0.0.1. The product's own checks keep webhooks
off private addresses, but a test can still point the server at one by mistake (a training room's LAN
address as `PUBLIC_URL`, a public-looking name whose lookup goes to this machine's resolver, which is not on
loopback). Installed by `tests/conftest.py`'s `pytest_configure` for the suite's own processes, so such a test
fails at once, naming the address, instead of sending a packet. Processes a test starts (`console run`) are
not covered; their addresses come from the test.
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import socket

# Names a test may look up: this machine's own. Anything else is answered "does not resolve" without asking
# the resolver, as a name with no record would be.
LOCAL_NAMES = ("localhost", "localhost.localdomain")


def is_local(host: object) -> bool:
    """Whether `host` (an address or a name, as a socket call takes it) means this machine."""
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].lower()
    if name in LOCAL_NAMES or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _refused(host: object) -> ConnectionRefusedError:
    return ConnectionRefusedError(
        errno.ECONNREFUSED, f"tests reach only loopback; refused a connection to {host}"
    )


def _reaches_out(sock: socket.socket, address) -> bool:
    # A datagram socket's connect sends nothing (it only names the peer: how the training room finds this
    # machine's LAN address); its lookups are guarded below, and the suite sends no datagrams of its own.
    return (
        sock.family in (socket.AF_INET, socket.AF_INET6)
        and sock.type == socket.SOCK_STREAM
        and not is_local(address[0])
    )


def _guard_connect(connect):
    @functools.wraps(connect)
    def guarded(sock, address):
        if _reaches_out(sock, address):
            raise _refused(address[0])
        return connect(sock, address)

    return guarded


def _guard_connect_ex(connect_ex):
    @functools.wraps(connect_ex)
    def guarded(sock, address):
        if _reaches_out(sock, address):
            return errno.ECONNREFUSED  # connect_ex answers with the error number instead of raising
        return connect_ex(sock, address)

    return guarded


def _guard_getaddrinfo(getaddrinfo):
    @functools.wraps(getaddrinfo)
    def guarded(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        # None is the passive "any address" of a server binding; "" the resolver refuses itself.
        if name and not is_local(name) and not _is_address(name):
            # A literal address needs no resolver; connecting to a non-local one is refused above.
            raise socket.gaierror(socket.EAI_NONAME, f"tests look up only local names; {name} not looked up")
        return getaddrinfo(host, *args, **kwargs)

    return guarded


def install() -> None:
    """Refuse connections to, and lookups of, anything but this machine, in this process (idempotent)."""
    if getattr(socket.socket.connect, "__wrapped__", None) is not None:
        return
    socket.socket.connect = _guard_connect(socket.socket.connect)
    socket.socket.connect_ex = _guard_connect_ex(socket.socket.connect_ex)
    socket.getaddrinfo = _guard_getaddrinfo(socket.getaddrinfo)
