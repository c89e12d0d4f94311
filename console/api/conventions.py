"""What every `/v1` request goes through: authentication, version, rate limit, Idempotency-Key, JSON body.

Order (docs/api.md, "Request checks, in order"): authentication (401) first, then the version
header (400), then the rate limit (429), then the query and path parameters (400), then a
POST's Idempotency-Key, then the body. Public endpoints (the OpenAPI document) skip all but the body.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, current_app, g, request

from console.api import idempotency
from console.api.errors import allow_header
from console.api.ratelimit import limiter
from console.core import jsontext
from console.core.errors import (
    FieldError,
    Forbidden,
    RateLimited,
    ServiceError,
    Unauthorized,
    ValidationFailed,
    shown,
)
from console.core.params import nul_fields
from console.db import sqlite
from console.db.rows import entity
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import authenticate
from console.modes import MODES
from console.versions import SUPPORTED_VERSIONS
from console.workspaces.models import Workspace
from console.workspaces.services import note_activity

BODY_METHODS = ("POST", "PUT", "PATCH")
# The API blueprint is registered once per mode, as `api_<mode>` (console.api.init_app).
BLUEPRINT_MODES = {f"api_{mode}": mode for mode in MODES}
# Set in the WSGI environ by the console's in-process dispatch (console.web.shared.apiclient). No HTTP
# header can produce an environ key with a dot, so a request from outside can never carry it.
CONSOLE_ENVIRON_KEY = "console.in_process"


def from_console() -> bool:
    """Whether this API request is the console's own in-process call (not a customer's backend)."""
    return bool(request.environ.get(CONSOLE_ENVIRON_KEY))


def public(view: Callable) -> Callable:
    """Mark an endpoint that needs no API secret, version header or rate limit."""
    view.is_public = True  # type: ignore[attr-defined]
    return view


def _view_is_public() -> bool:
    view = current_app.view_functions.get(request.endpoint or "")
    return bool(getattr(view, "is_public", False))


SHOWN_VERSION_CHARS = 40


def check_version() -> str:
    value = request.headers.get("Service-Version")
    if value is None:
        raise ServiceError("Missing Service-Version header.", code="MISSING_VERSION_HEADER")
    value = value.strip()
    if not value:  # as for x-api-secret: a non-ASCII value arrives empty behind Granian
        raise ServiceError(
            "The Service-Version header is empty (a value with non-ASCII characters arrives empty); "
            f"supported versions are {', '.join(SUPPORTED_VERSIONS)}.",
            code="UNSUPPORTED_VERSION",
        )
    if value not in SUPPORTED_VERSIONS:
        # Echoed no longer than a version could be: the header's whole 8 KB came back in the error.
        shown = value if len(value) <= SHOWN_VERSION_CHARS else value[:SHOWN_VERSION_CHARS] + "…"
        raise ServiceError(
            f"Unsupported Service-Version {shown!r}; supported versions are {', '.join(SUPPORTED_VERSIONS)}.",
            code="UNSUPPORTED_VERSION",
        )
    return value


def check_rate_limit(mode: str, key_id: str) -> None:
    verdict = limiter().hit(mode, key_id)
    g.rate_limit = verdict
    if not verdict.allowed:
        raise RateLimited(
            f"Rate limit of {verdict.limit} requests per second for this API key exceeded; "
            "retry with exponential backoff.",
            retry_after=verdict.reset_after,
        )


def current_mode() -> str:
    """The mode of the API request being served (each mode's blueprint is named `api_<mode>`)."""
    return BLUEPRINT_MODES[request.blueprint]


def api_secret_header() -> str | None:
    """The `x-api-secret` header; the two usual ways of sending a secret elsewhere are refused saying so
    (`Authorization: Bearer …`, as most APIs take it, or `curl -u`; and `x-api-secret: Bearer …`), and so is
    a secret in quotes."""
    secret = request.headers.get("x-api-secret")
    if secret is None and "Authorization" in request.headers:
        raise Unauthorized(
            "Missing x-api-secret header: an Authorization header was sent, and this API does not read it. "
            "Send the secret alone in x-api-secret (`x-api-secret: sk_sandbox_…`).",
            code="MISSING_API_SECRET",
        )
    if secret and secret[:7].lower() == "bearer ":
        raise Unauthorized(
            "The x-api-secret is the secret alone: drop the `Bearer ` before it.", code="INVALID_API_SECRET"
        )
    if secret and len(secret) > 1 and secret[0] == secret[-1] and secret[0] in "\"'":
        # No secret holds a quote (`sk_<mode>_` and URL-safe base64): these came from where it was kept (an env
        # file `docker run --env-file` reads keeps them, a config value copied with them).
        raise Unauthorized(
            "The x-api-secret is wrapped in quotes: send the secret alone, without them.",
            code="INVALID_API_SECRET",
        )
    return secret


def options_response():
    """`OPTIONS` on an endpoint's path: 204 naming its methods in `Allow`, no body and so no Content-Type.

    Flask's own answer was a 200 with an empty `text/html` body, and only after authentication. It is given
    before authentication (it says no more than the public OpenAPI document) and uses none of a key's rate.
    No CORS headers: the API is called from a backend holding a secret, never from a browser, so a browser's
    preflight gets no `Access-Control-Allow-Origin` and the browser refuses the call, saying why."""
    allowed = current_app.make_default_options_response().headers.get("Allow", "")
    answer = no_content()
    answer.headers["Allow"] = allow_header(m.strip() for m in allowed.split(","))
    return answer


def before_api_request() -> Response | None:
    # A customer's writes go before the console's at SQLite's write gate (a room of visitors must not
    # queue an API call behind its pages); the console's own in-process calls wait their turn.
    sqlite.prefer_writes(not from_console())
    g.api_mode = current_mode()
    if request.method == "OPTIONS" and getattr(request.url_rule, "provide_automatic_options", False):
        return options_response()
    if _view_is_public():
        return
    # Snapshots of the key and its workspace (read-only values); a view that changes either, or follows
    # their relationships, takes the ORM objects from `current_key` / `current_workspace`.
    key = authenticate(api_secret_header(), g.api_mode)
    g.api_key = key
    g.workspace = key.workspace
    g.api_version = check_version()
    check_rate_limit(g.api_mode, str(key.id))
    check_parameters()
    # An API call keeps its workspace from being collected as idle (one UPDATE an hour at most).
    if note_activity(g.workspace):
        db.session.commit()


def current_key() -> ApiKey:
    """This request's API key as the session's ORM object, its workspace loaded (no query for either).

    Made once per request and held in `g`: the session holds its objects weakly, and one rebuilt from the
    snapshot after a commit would carry the snapshot's values, not what the commit stored.
    """
    if "api_key_entity" not in g:
        key = entity(g.api_key)
        g.api_key_entity, g.workspace_entity = key, key.workspace
    return g.api_key_entity


def current_workspace() -> Workspace:
    """This request's workspace as the session's ORM object: for a view that changes it (the clock, say)."""
    current_key()
    return g.workspace_entity


def check_parameters() -> None:
    """Refuse a NUL in any query or path parameter, a query parameter the endpoint does not take, and a repeat of
    one that takes a single value, before a view reads them (docs/api.md, "Request checks, in order"). A misspelt
    filter (`?linktoken_id=`) was ignored, and the list answered unfiltered, as if it held the one token's jobs."""
    errors = nul_fields(request.args, request.view_args) or _query_parameter_errors()
    if errors:
        raise ValidationFailed(errors)
    _refuse_a_reads_body()


def _refuse_a_reads_body() -> None:
    """A GET's body is never read: one is refused, naming what it holds. Filters sent as JSON
    (`requests.get(url, json={"link_token_id": …})`, a client's default body) were ignored, and the list
    answered unfiltered, as if it held the one token's jobs."""
    if request.method not in ("GET", "HEAD"):
        return
    if not request.content_length and "chunked" not in request.headers.get("Transfer-Encoding", "").lower():
        return
    raw = request.get_data(cache=True)
    if not raw.strip():
        return
    try:
        parsed = jsontext.loads(raw)
    except ValueError:
        parsed = None
    names = [shown(name) for name in parsed][:5] if isinstance(parsed, dict) else []
    sent = (
        f"its {', '.join(names)} as query parameters (?{names[0]}=…)"
        if names
        else "its filters as query parameters"
    )
    raise ServiceError(f"A {request.method} request's body is not read: send {sent}, and no body.")


# app.extensions[QUERY_PARAMETERS]: (method, rule, mode) -> the query parameter names the route takes, each with
# whether it may be repeated, or None when it is not in the document; the OpenAPI document's own lists
# (`openapi.query_parameters`, wired by `console.api.init_app`: the document's module imports this one).
QUERY_PARAMETERS = "api_query_parameters"


def _query_parameter_errors() -> list[FieldError]:
    known = current_app.extensions.get(QUERY_PARAMETERS)
    if not request.args or request.url_rule is None or known is None:
        return []
    taken = known(request.method, request.url_rule.rule, current_mode())
    if taken is None:
        return []
    listed = ", ".join(sorted(taken)) if taken else "none"
    errors = []
    for name in request.args:
        if name not in taken:
            errors.append(FieldError(name, f"is not a parameter of this endpoint (it takes: {listed})"))
        elif not taken[name] and len(values := request.args.getlist(name)) > 1:
            # `?outcome=success&outcome=error` answered the first value's list alone, as if it were both.
            errors.append(
                FieldError(name, f"is given {len(values)} times; it takes one value (one call per value)")
            )
    return errors


def no_content():
    """A 204: no body, so no Content-Type either (Flask's default response would name text/html)."""
    response = current_app.response_class(status=204)
    response.headers.remove("Content-Type")
    return response


def json_body() -> dict[str, Any]:
    """The request body as a JSON object, or a 4xx naming what is wrong with it."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        return {}
    if not request.is_json:
        raise ServiceError(
            "Request bodies must be JSON: send Content-Type: application/json.",
            code="UNSUPPORTED_CONTENT_TYPE",
            status_code=415,
        )
    try:
        # Measured before parsing: 10,000 nested brackets must not reach a recursive parser.
        body = jsontext.loads(raw)
    except jsontext.TooDeep:
        raise ServiceError(
            f"The request body nests arrays and objects more than {jsontext.MAX_JSON_DEPTH} levels deep.",
            code="JSON_TOO_DEEP",
        ) from None
    except json.JSONDecodeError as exc:
        # Where, in the parser's words (a trailing comma, single quotes): never the body's own text.
        where = f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise ServiceError(f"The request body is not valid JSON: {where}.", code="MALFORMED_JSON") from None
    except ValueError:  # also bad UTF-8 and integers too long to convert
        raise ServiceError("The request body is not valid JSON.", code="MALFORMED_JSON") from None
    if not isinstance(body, dict):
        raise ServiceError("The request body must be a JSON object.", code="BODY_NOT_OBJECT")
    return body


def _end_api_request(_error: BaseException | None) -> None:
    sqlite.prefer_writes(False)  # the thread's next request (a console page, maybe) starts without it


def install(bp: Blueprint) -> None:
    bp.before_request(before_api_request)
    bp.teardown_request(_end_api_request)
    # After authentication, version and rate limit: a request they refuse never reserves its key.
    bp.before_request(idempotency.reserve_key)
    bp.after_request(idempotency.store_response)


def sandbox_only(view: Callable) -> Callable:
    """Refuse a sandbox tool (clock, headless completion, test data) outside the sandbox."""
    import functools

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any):
        if g.api_mode != "sandbox":
            raise Forbidden(
                f"{request.path} exists only in sandbox mode; call it at the sandbox base URL.",
                code="SANDBOX_ONLY",
            )
        return view(*args, **kwargs)

    return wrapper
