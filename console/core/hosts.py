"""A Host header that is not a host name: a 400 that says so, before anything needs the routing it breaks.

werkzeug encodes the Host with IDNA to bind the URL map; a label over 63 characters or an empty one
("a..b") fails, so the request has no URL adapter and its routing exception is a bare BadHost. Anything that
builds a URL then fails too (the console's error page links its stylesheet with url_for): every console
page and /healthz answered 500. Checked first, ahead of every other before-request hook.
"""

from __future__ import annotations

from flask import Flask, abort, request
from werkzeug.exceptions import BadHost

SHOWN_CHARS = 80


def refuse_bad_host() -> None:
    if not isinstance(request.routing_exception, BadHost):
        return
    host = request.environ.get("HTTP_HOST", "")
    shown = host if len(host) <= SHOWN_CHARS else host[:SHOWN_CHARS] + "…"
    abort(
        400,
        description=f"The Host header {shown!r} is not a host name: each dot-separated label must be "
        "1 to 63 characters.",
    )


def init_app(app: Flask) -> None:
    """Call last in create_app: the check goes ahead of the hooks registered before it (CSRF among them)."""
    app.before_request_funcs.setdefault(None, []).insert(0, refuse_bad_host)
