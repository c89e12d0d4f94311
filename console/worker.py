"""The background worker: scheduled tasks and webhook deliveries (to be written)."""

from flask import Flask


def start_in_process(app: Flask) -> None:
    """Start the worker loops as daemon threads of this process (used by `console run`)."""


def run_forever(app: Flask) -> None:
    """Run the worker loops in the foreground until SIGTERM/SIGINT (used by `console worker`)."""
