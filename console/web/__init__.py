"""The developer console: server-rendered pages (Jinja2 + htmx) over the same API customers use."""

from __future__ import annotations

from flask import Flask


def init_app(app: Flask) -> None:
    """Register the console blueprint at `/`, with its inbox exempt from CSRF (it checks signatures)."""
    from htmx_flask import Htmx

    from console.extensions import csrf
    from console.web import (
        models,  # noqa: F401  (registers the console's tables)
        views,  # noqa: F401  (attaches the routes)
    )
    from console.web.blueprint import bp
    from console.web.views.webhooks import inbox_receive

    if "htmx" not in app.extensions:
        Htmx(app)
    csrf.exempt(inbox_receive)
    app.register_blueprint(bp)
