"""One error body for the whole API, and the headers every response carries.

`{"error": {"type", "code", "message", "status_code", "fields": [{"name", "message"}]}}`,
for service errors, unknown paths and methods, bad bodies and unexpected failures alike.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, current_app, g, jsonify, make_response, render_template, request
from sqlalchemy import exc as sa_exc
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from console.core.errors import ServiceError, ServiceUnavailable
from console.core.ids import uuid7
from console.modes import URL_PREFIXES, is_api_path
from console.requestlog import capture as requestlog_capture
from console.requestlog.redact import mask_api_secrets
from console.versions import LATEST_VERSION, SUPPORTED_VERSIONS

log = logging.getLogger(__name__)

# Werkzeug's own 4xx/5xx, mapped to our (type, code).
HTTP_ERRORS = {
    400: ("INVALID_REQUEST_PARAMETERS", "BAD_REQUEST"),
    404: ("RECORD_NOT_FOUND", "ROUTE_NOT_FOUND"),
    405: ("INVALID_REQUEST_PARAMETERS", "METHOD_NOT_ALLOWED"),
    413: ("INVALID_REQUEST_PARAMETERS", "BODY_TOO_LARGE"),
    415: ("INVALID_REQUEST_PARAMETERS", "UNSUPPORTED_CONTENT_TYPE"),
}


# `Allow` (a 405's, an OPTIONS answer's) lists methods in one order at every path; werkzeug's follows its sets.
_ALLOW_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allow_header(methods) -> str:
    """An `Allow` header's value: the methods, each once, in the order above (any other after them)."""
    named = {m for m in methods if m}
    return ", ".join(
        sorted(named, key=lambda m: (_ALLOW_ORDER.index(m) if m in _ALLOW_ORDER else len(_ALLOW_ORDER), m))
    )


def error_response(status: int, type_: str, code: str, message: str, fields: list | None = None):
    """The error body. An API secret a message would quote (one sent where an id goes: `GET /v1/jobs/sk_…`
    answered "No job with id sk_…") is named by its prefix and last four, as the request log keeps it."""
    fields = [
        {k: mask_api_secrets(v) if isinstance(v, str) else v for k, v in f.items()} for f in fields or []
    ]
    body = {
        "error": {
            "type": type_,
            "code": code,
            "message": mask_api_secrets(message),
            "status_code": status,
            "fields": fields,
        }
    }
    return jsonify(body), status


def _service_error(exc: ServiceError):
    response, status = error_response(
        exc.status_code, exc.type, exc.code, exc.message, [f.as_dict() for f in exc.fields]
    )
    # Rate limits and an Idempotency-Key still in use say when to try again.
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response, status


# Database failures that say "not now" rather than "wrong": no free pooled connection within
# DB_POOL_TIMEOUT, a server that cannot be reached in DB_CONNECT_TIMEOUT, a statement cancelled by
# DB_STATEMENT_TIMEOUT, a lost connection, SQLite busy beyond its busy_timeout.
DATABASE_UNAVAILABLE = (sa_exc.TimeoutError, sa_exc.OperationalError, sa_exc.DisconnectionError)
UNAVAILABLE_RETRY_AFTER = 2


_UNWRITABLE = ("disk is full", "readonly database", "disk I/O error")

# `app.extensions[UNAVAILABLE_PAGES]`: console endpoints that answer an unavailable database with a page of their
# own (given the message), such as the presenter's stage, whose script swaps in only a stage; None from one falls
# back to the busy page. Filled by `create_app`'s wiring (console.web.init_app), never at import.
UNAVAILABLE_PAGES = "unavailable_pages"


def unavailable_pages(app: Flask) -> dict[str, Callable[[str], Any]]:
    """The app's endpoint -> own unavailable page map (see UNAVAILABLE_PAGES), made empty on first use."""
    return app.extensions.setdefault(UNAVAILABLE_PAGES, {})


def unavailable_message(exc: Exception) -> str:
    """What to tell the caller about a database failure of DATABASE_UNAVAILABLE's kinds; logs it once."""
    # The driver's own message, first line: SQLAlchemy's wrapper would add the statement's parameters.
    cause = getattr(exc, "orig", None) or exc
    summary = (str(cause).strip().splitlines() or [""])[0][:300]
    # SQLite's "database is locked": another process (a developer's GUI, a script) holds the write lock past
    # busy_timeout. The database answers, it is busy: "cannot reach" sent people looking for a server.
    busy = isinstance(exc, sa_exc.TimeoutError) or "is locked" in summary
    # SQLite's full disk or read-only file: every write fails until the operator acts, so say it on the log.
    unwritable = any(words in summary for words in _UNWRITABLE)
    log.log(
        logging.ERROR if unwritable else logging.WARNING,
        "Database unavailable (request %s): %s: %s%s",
        g.get("request_id"),
        type(cause).__name__,
        summary,
        "; free space where the database is, or make it writable" if unwritable else "",
    )
    if busy:
        message = "The service is busy right now. Try again in a few seconds."
    elif unwritable:
        message = "The service cannot save changes right now. Try again later."
    else:
        # A refused or lost connection as well as a timeout: "did not answer in time" was wrong for a refusal.
        message = "The service cannot reach its database right now. Try again in a few seconds."
    return message


def _database_unavailable(exc: Exception):
    """503 with Retry-After, in the API's error shape or as a console page; never a hang or a bare 500."""
    message = unavailable_message(exc)
    if is_api_path(request.path):
        return _service_error(ServiceUnavailable(message, retry_after=UNAVAILABLE_RETRY_AFTER))
    own = current_app.extensions.get(UNAVAILABLE_PAGES, {}).get(request.endpoint or "")
    page = own(message) if own is not None else None
    if page is None:
        page = render_template("unavailable.html", message=message, retry_after=UNAVAILABLE_RETRY_AFTER)
    return page, 503, {"Retry-After": str(UNAVAILABLE_RETRY_AFTER)}


def _http_error(exc: HTTPException):
    if not is_api_path(request.path):
        meant = _api_path_meant(exc)
        if meant is None:
            return _http_error_page(exc)
        if "/v1/" in request.path:
            # `$BASE/sandbox/v1/…` with BASE already ending in /sandbox: the endpoint is there, after a repeat
            # (or after a path that is no part of the base URL: `--api http://host:5000/nowhere`).
            extra = request.path[: len(request.path) - len(meant)]
            if meant.startswith(extra):
                what = "repeats part of the base URL"
            elif extra in URL_PREFIXES.values():
                # `/development/sandbox/v1/…`: a client given one mode's base URL that adds another's itself (a
                # sandbox-only tool such as `pcc.py trigger` given the development base URL).
                what = f"puts another mode's base URL, {extra}, before this one's"
            else:
                what = f"has {extra} before the base URL"
            message = f"No endpoint at {request.path}. It {what}: the endpoint is {meant}."
        else:
            message = f"No endpoint at {request.path}. The API's paths start with /v1 after the mode's base: {meant}."
        # Answered in the API's shape, so with the API's headers too: every API answer names its Service-Version.
        g.api_shaped_answer = True
        return error_response(404, *HTTP_ERRORS[404], message)
    type_, code = HTTP_ERRORS.get(exc.code or 500, ("UNKNOWN_ERROR", "HTTP_ERROR"))
    if exc.code == 404:
        message = f"No endpoint at {request.path}."
        if "/v1/v1/" in request.path + "/":
            # The start-up banner lists each API as `…/sandbox/v1`; pasted as a base the README's paths extend
            # (`$BASE/v1/link_tokens`), it doubles the version: say so, since the path otherwise looks right.
            message += " The path says /v1 twice: the base URL already ended in /v1."
        elif request.path.endswith("/") and _routes_to(request.path.rstrip("/"), request.method):
            # `…/v1/link_tokens/` (a client that joins paths with a trailing slash): the endpoint exists without it.
            message += f" Leave out the trailing slash: {request.path.rstrip('/')}."
    elif exc.code == 413:
        # werkzeug's own words ("The data value transmitted exceeds the capacity limit") name no limit.
        limit = current_app.config.get("MAX_CONTENT_LENGTH") or 0
        message = f"The request body is larger than this API accepts ({limit:,} bytes, {limit / 1024 / 1024:g} MiB)."
    elif exc.code == 405:
        allowed = allow_header(getattr(exc, "valid_methods", None) or [])
        message = f"Method {request.method} is not allowed on {request.path}. Allowed: {allowed}."
    else:
        message = exc.description or exc.name
    response, status = error_response(exc.code or 500, type_, code, message)
    if exc.code == 405 and getattr(exc, "valid_methods", None):
        response.headers["Allow"] = allow_header(exc.valid_methods)
    return response, status


def _api_path_meant(exc: HTTPException) -> str | None:
    """For an API call whose path lacks its /v1 (`POST /sandbox/link_tokens`; the spec's header example omits
    the prefix) or holds the API's path after a repeat of the base (`/sandbox/sandbox/v1/jobs`), the path it
    meant, so that the caller gets the API's 404 saying so instead of a console page.
    An API call is told by its `x-api-secret` header (every call carries one) or a method a page link never
    uses; a browser's GET of an unknown page still gets the console's page."""
    if exc.code != 404 or ("x-api-secret" not in request.headers and request.method in ("GET", "HEAD")):
        return None
    path = request.path
    v1 = path.find("/v1/")
    if v1 > 0:
        # The API's path after something else (`/sandbox/sandbox/v1/jobs`: the base URL given twice), from its
        # mode's prefix when one comes just before the /v1.
        before = [prefix for prefix in URL_PREFIXES.values() if prefix and path[:v1].endswith(prefix)]
        meant = path[v1 - len(before[0]) :] if before else path[v1:]
    else:
        prefix = next(
            p for p in sorted(URL_PREFIXES.values(), key=len, reverse=True) if path.startswith(p + "/")
        )
        meant = f"{prefix}/v1{path[len(prefix) :]}"  # "/sandbox" before production's ""
    # A path that exists for other methods counts: only what is around it is wrong.
    return meant if _routes_to(meant, request.method) else None


def _routes_to(path: str, method: str) -> bool:
    """Whether `method path` is an endpoint (a 405 for it counts: the path exists)."""
    try:
        current_app.url_map.bind("").match(path, method=method)
    except MethodNotAllowed:
        return True
    except HTTPException:
        return False
    return True


# A console page's 404 (no such page, or one of another workspace's), here and in console.web.shared.blueprint.
NOT_FOUND_PAGE_MESSAGE = "Nothing here, or it belongs to another workspace."


def _http_error_page(exc: HTTPException):
    """A console-styled page for a 4xx outside the API (an unknown path, a tampered form value) that no
    view answered with its own: werkzeug's bare page otherwise. Redirects and the rest pass through."""
    code = exc.code or 500
    if not 400 <= code < 500:
        return exc
    message = NOT_FOUND_PAGE_MESSAGE if code == 404 else (exc.description or exc.name)
    response = make_response(render_template("http_error.html", title=exc.name, message=message), code)
    if code == 405 and getattr(exc, "valid_methods", None):
        response.headers["Allow"] = ", ".join(exc.valid_methods)
    return response


def _unexpected(exc: Exception):
    if isinstance(exc, HTTPException):
        return _http_error(exc)
    # The request id ties the log line to what the caller saw; no headers or bodies are logged.
    log.exception("Unhandled error (request %s)", g.get("request_id"))
    if not is_api_path(request.path):
        raise exc
    return error_response(
        500, "UNKNOWN_ERROR", "INTERNAL_ERROR", "An unexpected error occurred. Try again later."
    )


def _assign_request_id() -> None:
    # Time-ordered, as the request log indexes it (console.core.ids); still a UUID, as the spec says.
    g.request_id = str(uuid7())
    g.request_started = time.perf_counter()  # the request log's latency


def _requested_version() -> str:
    """The version an answer given before the version was checked names (a 401, a 404, a 429): the one the
    request asked for when it is supported, since that is the version its client reads answers in; the latest
    when it named none or one we do not serve."""
    asked = (request.headers.get("Service-Version") or "").strip()
    return asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION


def _response_headers(response):
    response.headers["x-service-request-id"] = g.get("request_id") or str(uuid7())
    if is_api_path(request.path) or g.get("api_shaped_answer"):
        response.headers["Service-Version"] = g.get("api_version") or _requested_version()
        verdict = g.get("rate_limit")
        if verdict is not None:
            response.headers["X-RateLimit-Limit"] = str(verdict.limit)
            response.headers["X-RateLimit-Remaining"] = str(max(0, verdict.remaining))
            response.headers["X-RateLimit-Reset"] = str(verdict.reset_after)
    return response


def init_app(app: Flask) -> None:
    app.before_request(_assign_request_id)
    # Registered first so it runs last (Flask runs after-request hooks in reverse): the request log
    # sees every header the caller got.
    app.after_request(requestlog_capture.collect)
    app.after_request(_response_headers)
    app.register_error_handler(ServiceError, _service_error)
    app.register_error_handler(HTTPException, _http_error)
    for failure in DATABASE_UNAVAILABLE:
        app.register_error_handler(failure, _database_unavailable)
    app.register_error_handler(Exception, _unexpected)
