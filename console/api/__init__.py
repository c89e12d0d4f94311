"""The `/v1` REST API, mounted once per mode at that mode's base URL.

One blueprint holds every endpoint; it is registered three times (sandbox,
development, production) and the mode of a request comes from which copy
answered it, so the same view code serves every base URL.
"""

from __future__ import annotations

import importlib

from flask import Blueprint, Flask

from console.modes import MODES, URL_PREFIXES

api = Blueprint("api", __name__)

# Each module attaches its routes to `api`; imported before registration.
ROUTE_MODULES = (
    "link_tokens",
    "world",
    "accounts",
    "jobs",
    "sandbox",
    "clock",
    "webhooks",
    "listen",
    "events",
    "openapi",
)


def endpoint_name(mode: str, view: str) -> str:
    """The `url_for` name of an API view in a mode, e.g. `api_sandbox.create_link_token`."""
    return f"api_{mode}.{view}"


def init_app(app: Flask) -> None:
    for module in ROUTE_MODULES:
        importlib.import_module(f"console.api.{module}")
    for mode in MODES:
        app.register_blueprint(api, url_prefix=URL_PREFIXES[mode] + "/v1", name=f"api_{mode}")


# Installed once at import: a blueprint cannot change after its first registration,
# and every app the factory builds registers this same blueprint.
from console.api import conventions as _conventions  # noqa: E402

_conventions.install(api)
