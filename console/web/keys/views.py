"""API keys per mode (create, roll, revoke, reveal), and the workspace itself: start, keep, start over."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from flask import abort, flash, g, redirect, render_template, request, url_for

from console.core.errors import FieldError, ServiceError, ValidationFailed
from console.core.routes import Routes
from console.core.timeutil import utcnow
from console.extensions import db
from console.keys import services as keys
from console.keys.models import ApiKey
from console.modes import MODES, base_url
from console.requestlog import usage
from console.web.shared.apiclient import api_root
from console.web.shared.blueprint import is_htmx, render_htmx
from console.web.shared.exchanges import masked_secret
from console.web.shared.workspace_session import may_use_secret, open_workspace, opened_here, opening_key
from console.web.shared.workspace_session import reset_workspace as start_over
from console.workspaces.collection import named_idle_after
from console.workspaces.services import get_workspace
from console.workspaces.services import keep_workspace as keep

routes = Routes()

# The roll button's choices: (value of keys.GRACE_PERIODS, label).
GRACE_CHOICES = (
    ("none", "now"),
    ("1h", "in 1 hour"),
    ("24h", "in 24 hours"),
    ("7d", "in 7 days"),
)

# The pages' "Open its workspace" forms, by the `open_id` each sends: the template that draws it again, refused.
OPEN_FORMS = {
    "main": "console/shared/_open_workspace.html",
    "step": "console/shared/_open_workspace.html",
    "rejoin": "console/training/_rejoin.html",
}


def _own_key(key_id: str) -> ApiKey:
    """One of the workspace's keys this browser may manage (`may_use_secret`)."""
    try:
        key = keys.get_key(key_id, g.console_workspace.id)
    except ServiceError:
        abort(404)
    if not may_use_secret(key):
        abort(404)
    return key


def _context(revealed: dict | None = None, created_id: str | None = None, done: str | None = None) -> dict:
    all_keys = keys.list_keys(g.console_workspace.id)
    root = api_root()
    return {
        "modes": [
            {
                "mode": mode,
                "base_url": base_url(root, mode),  # as the README and `console keys` name it: paths add /v1
                "keys": sorted(
                    (k for k in all_keys if k.mode == mode),
                    key=lambda k: (k.revoked_at is not None, -k.created_at.timestamp()),
                ),
            }
            for mode in MODES
        ],
        "masked": masked_secret,
        "revealed": revealed or {},
        "created_id": created_id,
        "done": done,
        "grace_periods": GRACE_CHOICES,
        "usage": usage.recent(g.console_workspace.id),
        "keys_by_id": {k.id: k for k in all_keys},
        "usable": {k.id for k in all_keys if may_use_secret(k)},
        "now": utcnow(),
    }


def _answer(done: str, created_id: str | None = None):
    """The keys redrawn for htmx, with `done` (what just happened) where the focus goes; else back to the page."""
    if is_htmx():
        return render_template("console/keys/_keys.html", **_context(created_id=created_id, done=done))
    return redirect(url_for("console.keys"))


@routes.get("/keys", endpoint="keys")
def keys_page():
    return render_htmx("console/keys/keys.html", "console/keys/_keys.html", **_context())


@routes.post("/keys")
def create_key():
    mode = request.form.get("mode", "")
    if mode not in MODES:  # the form offers only these: a tampered request gets the error page, saying why
        raise ValidationFailed([FieldError("mode", f"must be one of {', '.join(MODES)}")])
    opened = opening_key(g.console_workspace) if opened_here(g.console_workspace) else None
    created = keys.create_key(
        g.console_workspace.id,
        mode,
        request.form.get("label", "").strip(),
        strongest=opened.mode if opened is not None else None,
    )
    db.session.commit()
    return _answer(f"{mode.capitalize()} key created: it is highlighted below.", str(created.key.id))


@routes.post("/keys/<key_id>/roll")
def roll_key(key_id: str):
    old = _own_key(key_id)
    grace = keys.grace_period(request.form.get("grace", "none"))  # a tampered value: the error page says why
    created = keys.roll_key(old, grace)
    db.session.commit()
    return _answer("Key rolled: the new key is highlighted below.", str(created.key.id))


@routes.post("/keys/<key_id>/revoke")
def revoke_key(key_id: str):
    keys.revoke_key(_own_key(key_id))
    db.session.commit()
    return _answer("Key revoked: requests with it now get 401.")


@routes.post("/keys/<key_id>/reveal")
def reveal_key(key_id: str):
    """The secret in clear, only on an explicit (POST, CSRF-checked) request, as a small fragment."""
    key = _own_key(key_id)
    return render_template("console/shared/_secret.html", key=key, secret=keys.secret_of(key), revealed=True)


@routes.post("/keys/<key_id>/hide")
def hide_key(key_id: str):
    key = _own_key(key_id)
    return render_template("console/shared/_secret.html", key=key, secret=masked_secret(key), revealed=False)


def _back() -> str:
    """The console page the form was sent from (same host only), else the walkthrough."""
    try:
        referrer = urlsplit(request.referrer or "")
    except ValueError:  # "http://[": not a URL (urlsplit refuses an unclosed IPv6 bracket)
        return url_for("console.walkthrough")
    if (
        referrer.netloc == request.host
        and referrer.path.startswith("/")
        and not referrer.path.startswith("//")
    ):
        return referrer.path + (f"?{referrer.query}" if referrer.query else "")
    return url_for("console.walkthrough")


@routes.post("/workspace")
def start_workspace():
    """The walkthrough's "Create my workspace": the first action, so the before-request hook made it."""
    return redirect(url_for("console.walkthrough"))


@routes.post("/workspace/keep")
def keep_workspace():
    """Name the workspace: collected after WORKSPACE_NAMED_IDLE_DAYS unused, not the visitor's 30 days."""
    try:
        keep(g.console_workspace, request.form.get("name", ""))
    except ValidationFailed as exc:
        db.session.rollback()
        flash(f"The workspace was not kept: {exc.fields[0].message}", "error")
        return redirect(_back())
    db.session.commit()
    named_idle = named_idle_after()
    kept_for = (
        # In days as set, fractions kept (0.5 days is not "0 days"), as the workspace bar's badge shows it.
        f"it is deleted only after {round(named_idle / timedelta(days=1), 1):g} days without a visit or API call"
        if named_idle is not None
        else "it is never deleted for being idle"
    )
    flash(f"Workspace kept as “{g.console_workspace.name}”: {kept_for}.", "ok")
    return redirect(_back())


@routes.post("/workspace/open", no_create=True, creates=True)
def open_key_workspace():
    """Show this browser the workspace of a pasted secret: where the calls made with it are (e.g. the
    secret `make run` printed, used with the README's curl). Counted by the per-address limit, so secrets
    cannot be tried in bulk; the secret is never repeated in a message, a log line or a URL."""
    try:
        key = keys.key_for_secret(request.form.get("secret"))
    except ValidationFailed as exc:
        why = exc.fields[0].message
        if is_htmx():
            # The form redrawn in place, open, the message beside the field (a redirect closed it and put the
            # message at the top of the page); the pasted secret is not written back.
            form = request.form.get("open_id", "")
            template = OPEN_FORMS.get(form, OPEN_FORMS["main"])
            return render_template(template, open_id=form if form in OPEN_FORMS else "main", refused=why)
        flash(why, "error")
        return redirect(_back())
    workspace = open_workspace(get_workspace(key.workspace_id), key)
    db.session.commit()
    flash(
        f"This browser now shows the workspace of the {key.mode} key ending in {key.secret_last4}"
        + (
            f", named “{workspace.name}”" if workspace.name else ""
        )  # quoted: a bare name read as a description
        + ": its requests, Link tokens, events and timelines.",
        "ok",
    )
    if is_htmx():
        return "", 204, {"HX-Redirect": _back()}  # the whole page changes workspace: load it anew
    return redirect(_back())


@routes.post("/workspace/reset", no_create=True, creates=True)
def reset_workspace():
    """Start over in a brand-new workspace; the old one is deleted with everything it owns (unless kept)."""
    start_over()
    return redirect(url_for("console.walkthrough"))
