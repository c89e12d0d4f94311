"""Address lists from settings: comma-separated addresses or CIDRs, parsed once at start."""

from __future__ import annotations

import ipaddress
from typing import Any

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(value: Any, setting: str, example: str) -> tuple[IPNetwork, ...]:
    """`value` (a comma-separated string or a list; empty means none) as networks. A malformed entry raises
    ValueError naming `setting`, the entry and an `example`, so a typo stops the server at start rather than
    silently allowing nothing (or more than meant)."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    networks = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{setting}: {item!r} is not {example}") from None
    return tuple(networks)
