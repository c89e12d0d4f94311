"""A console visitor on the Flask test client: a session cookie, the CSRF token, htmx headers."""

from __future__ import annotations

import re
import uuid

import pytest
from flask import template_rendered

CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


class Visitor:
    """One browser session of the console (its own cookie jar, hence its own workspace)."""

    def __init__(self, client) -> None:
        self.client = client
        self.csrf: str | None = None

    def get(self, url: str, *, htmx: bool = False, **kwargs):
        headers = {"HX-Request": "true"} if htmx else {}
        response = self.client.get(url, headers=headers, **kwargs)
        match = CSRF_INPUT.search(response.get_data(as_text=True))
        if match:
            self.csrf = match.group(1)
        return response

    def post(self, url: str, data: dict | None = None, *, htmx: bool = False, csrf: bool = True, **kwargs):
        if csrf and self.csrf is None:
            self.get("/")
        form = dict(data or {})
        headers = dict(kwargs.pop("headers", {}))
        if csrf:
            if htmx:
                headers["X-CSRFToken"] = self.csrf  # what hx-headers on <body> sends
            else:
                form["csrf_token"] = self.csrf
        if htmx:
            headers["HX-Request"] = "true"
        return self.client.post(url, data=form, headers=headers, **kwargs)

    def start(self) -> Visitor:
        """Open the console and take the first action, which creates the workspace."""
        self.get("/")
        response = self.post("/workspace")
        assert response.status_code == 302, response.get_data(as_text=True)
        return self

    @property
    def workspace_id(self) -> uuid.UUID:
        with self.client.session_transaction() as session:
            return uuid.UUID(session["workspace_id"])


@pytest.fixture
def visitor(app, client) -> Visitor:
    """A visitor who has opened the console and started (so has a workspace and a CSRF token)."""
    return Visitor(client).start()


@pytest.fixture
def other_visitor(app) -> Visitor:
    """A second visitor in another browser: another cookie jar, another workspace."""
    return Visitor(app.test_client()).start()


@pytest.fixture
def rendered(app):
    """Names of the templates rendered during the test, in order."""
    names: list[str] = []

    def record(sender, template, context, **extra):
        names.append(template.name)

    template_rendered.connect(record, app)
    yield names
    template_rendered.disconnect(record, app)
