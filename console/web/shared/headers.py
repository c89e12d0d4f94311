"""Security headers on every response: the console's strict policy, a closed one for the API.

The console (and anything else a browser may render, such as a 404 page) gets a Content-Security-
Policy without inline script or style: scripts and styles come from `/static` only, htmx runs with
eval and its injected indicator <style> turned off (the `htmx-config` meta in base.html), and Link
opens in a same-origin iframe. `frame-ancestors 'none'` and `X-Frame-Options: DENY` stop another
site from framing the console to click its reveal, revoke or reset buttons.

Link's screens set their own policy (console.link.views: framable by the customer page that opened
them) and are left alone here. Static files get only the headers that cannot change how they load
(the SDK is fetched by customer pages on other origins).
"""

from __future__ import annotations

from flask import Flask, g, request
from werkzeug.wrappers import Response

from console.modes import is_api_path

CONSOLE_CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "frame-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    )
)
# JSON is never rendered as a page; should a browser open it, nothing may load or frame it.
API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


def _kind() -> str:
    blueprint = request.blueprint or ""
    if blueprint.startswith("link_"):
        return "link"
    # An API answer given before any view ran has no blueprint: a 404 or 405 from routing (`DELETE /v1/jobs`),
    # or the API-shaped 404 of a path missing its /v1 (console.api.errors). It is the API's JSON all the same,
    # and got the console page's policy and referrer rule.
    if blueprint.startswith("api_") or is_api_path(request.path) or g.get("api_shaped_answer"):
        return "api"
    if request.endpoint == "static":
        return "static"
    return "console"


def add_security_headers(response: Response) -> Response:
    headers = response.headers
    headers.setdefault("X-Content-Type-Options", "nosniff")
    kind = _kind()
    if kind == "link":
        return response
    headers.setdefault("Referrer-Policy", "same-origin" if kind == "console" else "no-referrer")
    if kind == "static":
        return response
    headers.setdefault("Content-Security-Policy", CONSOLE_CSP if kind == "console" else API_CSP)
    headers.setdefault("X-Frame-Options", "DENY")
    return response


# Behind an https PUBLIC_URL (the README's TLS set-up: a proxy in front), browsers are told to use https only.
# Half a year, this host only: a server later moved to plain http would lock its visitors out for that long.
HSTS = "max-age=15552000"


def _add_hsts(response: Response) -> Response:
    response.headers.setdefault("Strict-Transport-Security", HSTS)
    return response


def init_app(app: Flask) -> None:
    app.after_request(add_security_headers)
    if str(app.config.get("PUBLIC_URL") or "").strip().lower().startswith("https://"):
        app.after_request(_add_hsts)
