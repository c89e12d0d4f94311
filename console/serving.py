"""Serving the app in one process with threads (waitress), for `console run`."""

from __future__ import annotations

import logging

from flask import Flask
from waitress import serve as waitress_serve


def serve(app: Flask, *, host: str, port: int, threads: int = 8) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    waitress_serve(app, host=host, port=port, threads=threads, ident="payroll-console")
