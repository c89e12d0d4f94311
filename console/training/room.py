"""Where the room reaches this server: the root of the join link and of every snippet, and the warning a
trainer needs when trainees' laptops cannot reach it.

The root is `PUBLIC_URL` when set, else the root of the request being answered: the address the trainer
(or a trainee) typed is one their browser reached, which is what the room needs when the server listens
on every address (`HOST=0.0.0.0`) and `PUBLIC_URL` was not set. A `Host` header steers only the page it
is sent for (nothing is stored from it). The trainer is warned, with the fix, whenever that root is this
machine only: the server listens on loopback, `PUBLIC_URL` is loopback, or the page was opened at
`127.0.0.1`/`localhost`.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import segno

from console.webhooks.urls import is_loopback_host, public_origin

# The class's own progress window: a trainee with exercises left and no API call for this long is
# highlighted on the grid (idle or stuck: worth a visit).
STUCK_MINUTES = 10


@dataclass(frozen=True)
class Root:
    url: str  # scheme://host[:port][/path], no trailing slash
    problem: str | None  # why laptops in the room cannot reach `url`, with the fix; None when they can


def lan_address() -> str | None:
    """This machine's address on its default route (no packet is sent), for the fix's example; None if none."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if is_loopback_host(address) or address == "0.0.0.0" else address


def _fix(port: int) -> str:
    address = lan_address() or "<this laptop's address>"
    # make run serves on its default port unless told: name the port PUBLIC_URL promises when it is another
    port_arg = "" if port == 5000 else f" PORT={port}"
    return f"PUBLIC_URL=http://{address}:{port} make run HOST=0.0.0.0{port_arg}"


def class_root(config: dict[str, Any], request_root: str) -> Root:
    """The root trainees are given, and the problem with it if the room cannot reach it."""
    port = int(config.get("LISTEN_PORT") or 5000)
    configured = (config.get("PUBLIC_URL") or "").strip()
    if configured:
        url = configured.rstrip("/")
        origin = public_origin(configured)
        if origin is not None and is_loopback_host(origin[0]):
            return Root(
                url,
                f"PUBLIC_URL is {url}, an address only this machine reaches: trainees' laptops cannot open "
                f"the join link. Restart with this laptop's address on the room's network: {_fix(port)}",
            )
        return Root(url, None)
    url = request_root.rstrip("/")
    listen = str(config.get("LISTEN_HOST") or "127.0.0.1")
    if is_loopback_host(listen):
        return Root(
            url,
            f"This server listens on {listen} only: trainees' laptops cannot reach it, whatever address "
            f"the join link shows. Stop it and serve on the room's network: {_fix(port)}",
        )
    host = urlsplit(url).hostname or ""
    if is_loopback_host(host):
        return Root(
            url,
            f"You opened this page at {host}, so the join link and the snippets say {host}, which only this "
            "machine reaches. Open this page at this laptop's address on the room's network, or set "
            f"PUBLIC_URL: {_fix(port)}",
        )
    return Root(url, None)


def qr_svg(text: str, title: str) -> str:
    """An inline SVG QR code of `text` (for a phone in the room to scan the join link off the projector)."""
    code = segno.make(text, error="m")
    return code.svg_inline(scale=1, border=2, title=title, omitsize=True, dark="#111", light="#fff")
