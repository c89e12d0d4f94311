"""The developer console: server-rendered pages (Jinja2 + htmx) over the same API customers use."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flask import Flask


def init_app(app: Flask) -> None:
    """Register the console blueprint at `/` with every feature's pages, its inbox exempt from CSRF (it
    checks signatures), the security headers of every response, and the session cookie's lifetime and
    Secure flag."""
    from htmx_flask import Htmx

    from console.api.errors import unavailable_pages
    from console.extensions import csrf
    from console.web.clock import views as clock
    from console.web.events import views as events
    from console.web.keys import views as keys
    from console.web.present import actions as story_actions
    from console.web.present import views as present
    from console.web.reference import views as reference
    from console.web.requests import views as requests
    from console.web.scenarios import views as scenarios
    from console.web.shared import headers, throttle
    from console.web.shared.blueprint import make_blueprint, no_workspace_views
    from console.web.timeline import views as timeline
    from console.web.training import views as training
    from console.web.walkthrough import views as walkthrough
    from console.web.webhooks import endpoint
    from console.web.webhooks import views as webhooks
    from console.web.world import views as world

    features = (walkthrough, scenarios, present, events, timeline, clock, webhooks, endpoint, requests, keys)
    features += (world, reference, training)
    if "htmx" not in app.extensions:
        Htmx(app)
    throttle.init_app(
        app
    )  # the per-address and per-cohort limits; a malformed TRUSTED_PROXIES stops the start
    app.register_blueprint(make_blueprint(feature.routes for feature in features))
    for view in no_workspace_views(app):
        csrf.exempt(view)
    # The stories (a domain package) check each step against the stage's actions without importing them.
    app.extensions["story_actions"] = story_actions.argument_checks()
    app.extensions["story_scenario_fits"] = story_actions.scenario_misfit
    # A step the database could not take answers with the stage and its retry, not the generic busy page.
    unavailable_pages(app)["console.present_step"] = present.unavailable_step
    headers.init_app(app)
    configure_session_cookie(app)


def configure_session_cookie(app: Flask) -> None:
    """`Secure` when the public URL is https; idle expiry after CONSOLE_SESSION_IDLE_DAYS.

    Flask refuses a session cookie whose signature is older than PERMANENT_SESSION_LIFETIME, and the
    console re-signs it on activity (console.web.shared.workspace_session), so that lifetime is an idle time.
    """
    idle_days = float(app.config.get("CONSOLE_SESSION_IDLE_DAYS", 30))
    if not idle_days > 0:
        raise ValueError(f"CONSOLE_SESSION_IDLE_DAYS must be more than 0, not {idle_days}")
    app.config["PERMANENT_SESSION_LIFETIME"] = timedelta(days=idle_days)
    # Re-signed on activity at most hourly instead: a Set-Cookie on every poll could overwrite a newer cookie.
    app.config["SESSION_REFRESH_EACH_REQUEST"] = False
    public_url = (app.config.get("PUBLIC_URL") or "").strip().lower()
    if public_url.startswith("https://"):
        app.config["SESSION_COOKIE_SECURE"] = True
    from console.web.shared.session_cookie import CookieFirstSessionInterface

    app.session_interface = CookieFirstSessionInterface()
