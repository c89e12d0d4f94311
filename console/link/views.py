"""Link's server-rendered screens (to be written)."""

from flask import Flask


def init_app(app: Flask) -> None:
    """Register the Link blueprint under each mode's base URL."""
