"""Sandbox clock endpoints (to be written)."""

from console.api import api  # noqa: F401
