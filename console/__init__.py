"""Payroll connectivity service and developer console."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from console import config as settings

if TYPE_CHECKING:  # Flask is imported when an app is built: `console trigger` and `listen` never build one
    from flask import Flask

ROOT = Path(__file__).resolve().parent.parent


def create_app(config: dict | None = None) -> Flask:
    """Build the app: settings from the environment unless `config` gives them."""
    from flask import Flask

    app = Flask(
        __name__,
        template_folder=str(ROOT / "templates"),
        static_folder=str(ROOT / "static"),
        instance_path=str(settings.INSTANCE_DIR),
    )
    from console.core.jsonresponse import JSONProvider

    app.json = JSONProvider(app)
    app.config.update(settings.DEFAULTS)
    app.config.update(config if config is not None else settings.from_environment())
    app.config["SQLALCHEMY_ENGINE_OPTIONS"] = settings.engine_options(app.config)
    from console.webhooks.urls import parse_networks

    parse_networks(app.config.get("SANDBOX_WEBHOOK_NETWORKS"))  # a typo stops the start, with its entry named

    from console import db as database
    from console import extensions, models  # noqa: F401  (models registers every table)
    from console.api import errors as api_errors
    from console.api import init_app as init_api
    from console.api import ratelimit
    from console.requestlog import writer as requestlog_writer

    extensions.db.init_app(app)
    extensions.csrf.init_app(app)
    database.configure(app)
    ratelimit.init_app(app)
    requestlog_writer.init_app(app)
    api_errors.init_app(app)
    init_api(app)
    from console import web
    from console.health import views as health_views
    from console.link import views as link_views
    from console.web.shared import pageslots

    health_views.init_app(app)
    _register_scheduled_work(app)

    link_views.init_app(app)
    web.init_app(app)
    pageslots.init_app(app)
    # API calls authenticate with x-api-secret, not cookies, so CSRF does not apply to them.
    for name in app.blueprints:
        if name.startswith("api_"):
            extensions.csrf.exempt(app.blueprints[name])
    from console.core.wholebody import bounded

    # Last: after the extensions' own request class. A chunked body over MAX_CONTENT_LENGTH is a 413 too.
    app.request_class = bounded(app.request_class)
    from console.core import hosts

    hosts.init_app(app)  # last: its check runs before every other before-request hook
    return app


def _register_scheduled_work(app: Flask) -> None:
    """The task kinds the scheduler runs and the other tables an agenda lists, named here, not at import."""
    from console.jobs import services as jobs
    from console.link import expiry
    from console.scheduler import agenda
    from console.scheduler import services as scheduler
    from console.webhooks import services as webhooks

    scheduler.register_tasks(app, (*jobs.TASKS, *webhooks.TASKS, *expiry.TASKS))
    agenda.register_sources(app, (webhooks.AGENDA_SOURCE,))
