"""Link's server-rendered screens (Jinja2 + htmx), mounted once per mode at `{base}/link`.

Views only translate HTTP into flow steps and render the screen the flow is on. Every request
carries the Link token itself (query string or hidden field), never a cookie: Link usually runs in
a third-party iframe where cookies are not sent, which is also why CSRF protection is exempted
here (there is no ambient credential for a forged request to ride on; see docs/link.md).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, abort, current_app, redirect, render_template, request, url_for
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm.exc import StaleDataError

from console.config import public_root
from console.core.errors import shown
from console.core.params import nul_fields
from console.extensions import csrf, db
from console.link import flow as link_flow
from console.link import models as m
from console.link import presenters
from console.link_tokens.services import find_by_token
from console.modes import MODES, URL_PREFIXES

link = Blueprint("link", __name__)
BLUEPRINT_MODES = {f"link_{mode}": mode for mode in MODES}
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")


def current_mode() -> str:
    return BLUEPRINT_MODES[request.blueprint]


def parent_origin() -> str | None:
    """The embedding page's origin, if it is a plain http(s) origin; messages go only there."""
    value = (request.values.get("origin") or "").strip()
    return value if _ORIGIN.match(value) else None


# Wider than any amount Link accepts, narrow enough that no exponent ("1e999999") overflows or
# builds a million-digit integer: the flow rejects what is outside with its own message.
_CENTS_LIMIT = Decimal(10) ** 15


def _dollars_to_cents(text: str) -> Any:
    try:
        amount = Decimal(text.replace(",", "").replace("$", "").strip())
    except InvalidOperation:
        return text
    if not amount.is_finite() or abs(amount) >= _CENTS_LIMIT:
        return text
    return int((amount * 100).to_integral_value())


def _allocation_value(form) -> Any:
    kind = form.get("type", "")
    if kind == "amount":
        return _dollars_to_cents(form.get("amount", ""))
    return form.get("percent", "") if kind == "percent" else None


ACTIONS: dict[str, Callable[[link_flow.Flow, Any], None]] = {
    "accept": lambda f, form: f.accept_terms(),
    "matching_done": lambda f, form: f.finish_matching(),
    "choose_match": lambda f, form: f.choose_match(form.get("platform_id", "")),
    "mfa_method": lambda f, form: f.choose_mfa_method(form.get("method", "")),
    "select": lambda f, form: f.select(form.get("kind", ""), form.get("id", "")),
    "login": lambda f, form: f.login(form.get("username", ""), form.get("password", "")),
    "mfa": lambda f, form: f.submit_mfa(form.get("code", "")),
    "federal": lambda f, form: f.submit_federal(
        form.get("first_name", ""), form.get("last_name", ""), form.get("ssn", "")
    ),
    "allocation": lambda f, form: f.choose_allocation(
        form.get("type", ""), _allocation_value(form), form.get("target_index", 0)
    ),
    "confirm": lambda f, form: f.confirm(),
    "back": lambda f, form: f.back(form.get("step", "")),
    "to_search": lambda f, form: f.to_search(),
    "exit": lambda f, form: f.exit(),
}


def _render(template_ctx: dict[str, Any], events: list[dict[str, Any]], status: int = 200):
    ctx = {
        **template_ctx,
        "token": request.values.get("token", ""),
        "origin": parent_origin() or "",
        "events_json": json.dumps(events, separators=(",", ":")),
        "matching_delay_ms": int(current_app.config.get("LINK_MATCHING_DELAY_MS", 2500)),
    }
    if request.headers.get("HX-Request") == "true":
        # htmx swaps only 2xx responses; the error screen itself carries the failure.
        return render_template("link/_screen.html", **ctx), 200
    return render_template("link/page.html", **ctx), status


def _problem(code: str, message: str, status: int):
    """A screen for a request that has no usable token (so no flow)."""
    ctx = presenters.problem_context(code, message, current_mode())
    event = {
        "name": "error",
        "payload": {"code": code, "message": message, "recoverable": False, "screen": None},
    }
    return _render(ctx, [event], status)


@link.before_request
def _refuse_nul_parameters():
    """The shared NUL check (console.core.params) over the query, path and form parameters."""
    errors = nul_fields(request.args, request.view_args, request.form)
    if errors:
        names = ", ".join(e.name for e in errors)
        return _problem(
            "INVALID_REQUEST", f"This request cannot be read ({names} contains a NUL character).", 400
        )
    return None


# How much of a refused `origin` the refusal quotes back (escaped by the template, as everything is).
_SHOWN_ORIGIN_CHARS = 80


@link.before_request
def _refuse_bad_origin():
    """A parent origin that is given but no plain http(s) origin is refused with a screen saying so.

    Link posts only to a valid declared origin: with a bad one it fell back to standalone framing and ran the flow
    without ever talking to its parent, so the developer's page saw nothing happen and nothing said why. The
    refusal holds no flow (no step runs, no form carries the token), so it stays framable: the developer reads it
    in the frame of their own page. "null" is what the SDK sends from a page opened as a file; it keeps its own
    handling (training exercise 2 says why Link cannot show there).
    """
    if request.endpoint in (f"{request.blueprint}.terms", f"{request.blueprint}.privacy"):
        return None
    value = (request.values.get("origin") or "").strip()
    if not value or value == m.OPAQUE_ORIGIN or parent_origin() is not None:
        return None
    return _problem(
        "INVALID_ORIGIN",
        f"Link was opened with origin “{shown(value, _SHOWN_ORIGIN_CHARS)}”, which is not a plain http(s) origin, so it cannot talk to the "
        "page that opened it. Pass that page's origin: its scheme, host and port only, such as "
        "https://app.example.com or http://localhost:8000 (no path, no trailing slash). The SDK "
        "(/static/link.js) passes it for you.",
        400,
    )


def _token_or_problem():
    token = find_by_token(request.values.get("token", ""))
    if token is None:
        return None, _problem("INVALID_LINK_TOKEN", "This link is not valid. Start again from the app.", 401)
    return token, None


@link.get("")
def open_link():
    """The Link page: the current screen of the token's flow (a refresh shows the same screen)."""
    token, problem = _token_or_problem()
    if problem:
        return problem
    if token.mode != current_mode():
        # Tokens belong to one mode; send the person to that mode's Link with the same query.
        return redirect(url_for(f"link_{token.mode}.open_link", **request.args.to_dict()), code=307)
    flow = _load(token)
    _note_embedding(flow)
    db.session.commit()
    status = 410 if flow.row.state == m.EXPIRED else 200
    return _render(presenters.screen(flow, q=request.args.get("q", "")), flow.events, status)


@link.get("/search")
def search():
    """Search results for the search screen (htmx), without changing the flow."""
    token, problem = _token_or_problem()
    if problem or token.mode != current_mode():
        abort(404)
    flow = _load(token)
    db.session.commit()
    if flow.row.state != m.SEARCH:
        return "", 204
    results = presenters.search_results(flow, request.args.get("q", ""))
    return render_template("link/_search_results.html", results=results, token=request.args.get("token", ""),
                           origin=parent_origin() or "")  # fmt: skip


@link.post("/step")
def step():
    """One step of the flow; a step for a screen already left re-renders the current screen."""
    token, problem = _token_or_problem()
    if problem:
        return problem
    if token.mode != current_mode():
        return _problem("INVALID_LINK_TOKEN", "This link belongs to another environment.", 401)
    action = ACTIONS.get(request.form.get("action", ""))
    if action is None:
        abort(400)
    leaving = request.form.get("action") == "exit"
    try:
        flow = _load(token)
        if not flow.row.finished or leaving:
            with contextlib.suppress(link_flow.StaleStep):
                action(flow, request.form)
        db.session.commit()
    except (StaleDataError, IntegrityError):
        # A concurrent submit of the same step won; show where the flow now stands.
        db.session.rollback()
        flow = _load(token)
        flow.events = []
        if leaving:
            # The person still asked to leave, and the exit event is what tells the SDK to close Link:
            # without it, Link stayed open on its goodbye screen.
            flow.exit()
        db.session.commit()
    ctx = presenters.screen(flow)
    if leaving:
        # Whatever state the flow ended in, the person asked to leave: show the goodbye screen.
        ctx.update(template="exit", title=presenters.TITLES[m.EXITED])
    return _render(ctx, flow.events)


@link.get("/terms")
def terms():
    """What using this sandbox's Link means (opened in a new tab from the intro screen)."""
    return render_template("link/legal.html", page="terms", mode=current_mode())


@link.get("/privacy")
def privacy():
    """What this sandbox's Link does with what a person enters."""
    return render_template("link/legal.html", page="privacy", mode=current_mode())


def _own_origins() -> set[str]:
    """This service's origins: the one Link was reached at and the configured public root."""
    origins = {request.host_url.rstrip("/")}
    root = urlsplit(public_root(current_app.config))
    origins.add(f"{root.scheme}://{root.netloc}")
    return origins


def _note_embedding(flow: link_flow.Flow) -> None:
    """Remember the first parent page that opened Link from another origin than the console's own:
    the sign that a customer's own page embeds Link with the SDK (training exercise 2)."""
    origin = parent_origin()
    if origin is None and (request.values.get("origin") or "").strip() == m.OPAQUE_ORIGIN:
        origin = (
            m.OPAQUE_ORIGIN
        )  # a trainee's index.html opened as a file: exercise 2 says why Link did not show
    if origin and flow.row.embedding_origin in (None, m.OPAQUE_ORIGIN) and origin not in _own_origins():
        flow.row.embedding_origin = origin[:255]


def _load(token) -> link_flow.Flow:
    try:
        return link_flow.load(token)
    except IntegrityError:
        # Two first requests raced to start the flow; the other one's row is there now.
        db.session.rollback()
        return link_flow.load(token)


def _security_headers(response):
    origin = parent_origin()
    # Link is meant to be framed by customer pages: allow the declared parent (or any, standalone).
    ancestors = f"'self' {origin}" if origin else "*"
    response.headers["Content-Security-Policy"] = (
        # No inline style either: a search result's colour is set through the CSSOM (link-frame.js).
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors {ancestors}"
    )
    # The token rides in the URL: keep it out of Referer headers and caches.
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


link.after_request(_security_headers)


def init_app(app: Flask) -> None:
    """Register the Link blueprint under each mode's base URL."""
    app.config.setdefault("LINK_MATCHING_DELAY_MS", 2500)
    for mode in MODES:
        app.register_blueprint(link, url_prefix=URL_PREFIXES[mode] + "/link", name=f"link_{mode}")
    csrf.exempt(link)
