"""The `/v1` REST API, mounted once per mode at that mode's base URL.

One blueprint, made by `init_app`, holds every endpoint; it is registered three times (sandbox,
development, production) and the mode of a request comes from which copy answered it, so the same
view code serves every base URL. Each route module declares its views in its
`routes`; importing it registers nothing.
"""

from __future__ import annotations

from flask import Blueprint, Flask

from console.modes import MODES, URL_PREFIXES


def endpoint_name(mode: str, view: str) -> str:
    """The `url_for` name of an API view in a mode, e.g. `api_sandbox.create_link_token`."""
    return f"api_{mode}.{view}"


def init_app(app: Flask) -> None:
    """The API blueprint with every module's routes and the conventions' hooks, at each mode's base URL."""
    from console.api import (
        accounts,
        clock,
        conventions,
        events,
        idempotency,
        jobs,
        link_tokens,
        listen,
        openapi,
        sandbox,
        webhooks,
        world,
    )

    api = Blueprint("api", __name__)
    for module in (link_tokens, world, accounts, jobs, sandbox, clock, webhooks, listen, events, openapi):
        module.routes.add_to(api)
    conventions.install(api)
    app.extensions[conventions.QUERY_PARAMETERS] = openapi.query_parameters
    idempotency.install_session_hooks()
    for mode in MODES:
        app.register_blueprint(api, url_prefix=URL_PREFIXES[mode] + "/v1", name=f"api_{mode}")
