"""How the owners that per-owner caps count are stored: hashed, so no table holds a live session value or a
client's address in clear (a browser's random id, a client address as console.web.shared.throttle counts it)."""

from __future__ import annotations

import hashlib


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def browser_hash(browser: str) -> str:
    """A creating browser's id, as stored in a `created_by` column."""
    return _hash(f"browser:{browser}")


def address_hash(address: str) -> str:
    """A creating client address, as stored in a `created_from` column."""
    return _hash(f"address:{address}")
