"""The developer console (to be written)."""

from flask import Flask


def init_app(app: Flask) -> None:
    """Register the console blueprint."""
