"""The console's session cookie interface (kept apart from console/web/__init__.py so that importing a
console.web module, as `console trigger` does for the scenario gallery, does not import Flask's sessions)."""

from __future__ import annotations

from flask import Flask
from flask.sessions import SecureCookieSessionInterface


class CookieFirstSessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session, which looks for the cookie before building its signer.

    Flask builds an itsdangerous signer on every request, cookie or not; API calls never carry the
    console's cookie, and that signer was a measurable part of their cost. Same cookie, same checks.
    """

    def open_session(self, app: Flask, request):
        # No Cookie header at all (every API call): not even the cookies are parsed.
        if "HTTP_COOKIE" not in request.environ or not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()
        return super().open_session(app, request)
