"""Presenter mode: the stage at /present, where a story's steps run one key press at a time.

Left, the prospect's branded app in a phone (Link opens inside it through the real SDK); right, what
the app's backend sees (webhooks, the job's timeline, its API calls), live. A step's action runs on
POST; the stage for step N is a plain GET, so going back shows a caption again without redoing it.
"""

from __future__ import annotations

import logging

from flask import abort, g, redirect, render_template, request, url_for

from console.core.errors import ServiceError
from console.extensions import db
from console.modes import SANDBOX
from console.presenter import actions, brand, profiles, stories
from console.web import inbox, linkguide, linktokens, live, requestlog, timeline
from console.web.blueprint import bp
from console.web.workspace_session import has_workspace, reset_workspace

log = logging.getLogger(__name__)
BACKEND_ROWS = 6
SUMMARY_ROWS = 100


def _profile():
    slug = request.values.get("profile")
    return profiles.get(slug) if slug else None


def _brand() -> brand.Brand:
    """The stage's brand: a saved profile's (`?profile=<slug>`), else the one the URL spells out."""
    profile = _profile()
    return profiles.brand_of(profile) if profile else brand.from_args(request.values)


def _story_or_404(key: str) -> stories.Story:
    story = stories.get(key)
    if story is None:
        abort(404)
    return story


def backend_context() -> dict:
    """What the app's backend has seen in this workspace: webhooks, API calls, the newest job timeline."""
    workspace = g.console_workspace
    kept = linktokens.newest(workspace.id) if has_workspace() else None
    found = timeline.for_link_token(workspace, SANDBOX, kept.link_token_id) if kept else None
    return {
        "messages": inbox.page(workspace.id, limit=BACKEND_ROWS).rows,
        "calls": requestlog.page(workspace.id, limit=BACKEND_ROWS).rows,
        "timeline": found,
        "job": found.jobs[-1].job if found and found.jobs else None,
        "pulse": live.pulse(workspace),
        "link_token_id": kept.link_token_id if kept else "",
    }


def _stage(story: stories.Story, number: int, *, failure: dict | None = None, status: int = 200):
    workspace = g.console_workspace
    mark = _brand()
    number = max(0, min(number, len(story.steps)))
    step = story.steps[number - 1] if number else None
    kept = linktokens.newest(workspace.id) if has_workspace() else None
    view = linkguide.view(workspace, kept.link_token_id, kept.token, kept.origin) if kept else None
    # The phone's button opens Link with the newest token while it is unused (the presenter's own hands).
    unused_token = kept.token if view and view.state.kind == linkguide.UNUSED else None
    opens = step is not None and step.action == "open_link" and request.args.get("open") == "1"
    return render_template(
        "console/present.html",
        story=story,
        number=number,
        step=step,
        caption=(step.caption if step else story.summary).replace("{brand}", mark.name),
        next_step=story.steps[number] if number < len(story.steps) else None,
        brand=mark,
        brand_args=mark.args(),
        failure=failure,
        open_token=unused_token if opens else None,
        unused_token=unused_token,
        **backend_context(),
    ), status


@bp.get("/present", endpoint="present")
def present_index():
    good, broken = stories.all_stories()
    profile = _profile()
    if profile is not None and profile.stories:
        by_key = {s.key: s for s in good}
        good = [by_key[k] for k in profile.stories if k in by_key]
    mark = _brand()
    return render_template(
        "console/present_index.html",
        stories=good,
        broken=broken,
        brand=mark,
        brand_args=mark.args(),
        profile=profile,
        short_url=url_for("console.present_profile", slug=profile.slug, _external=False) if profile else None,
    )


@bp.post("/present/profiles")
def save_profile():
    """Save the brand and chosen stories as a profile; answer with its short URL."""
    known = {s.key for s in stories.all_stories()[0]}
    chosen = [k for k in request.form.getlist("stories") if k in known]
    profile = profiles.create(brand.from_args(request.form), chosen)
    db.session.commit()
    return redirect(url_for("console.present_profile", slug=profile.slug), code=303)


@bp.get("/p/<slug>")
def present_profile(slug: str):
    """A profile's short URL: the presenter's start page with its brand and stories."""
    profile = profiles.get(slug)
    if profile is None:
        abort(404)
    return redirect(url_for("console.present", profile=profile.slug))


@bp.get("/present/backend")
def present_backend():
    """The live poll of the backend panel: 204 while nothing in the workspace changed."""
    if live.unchanged(g.console_workspace, request.args.get("pulse")):
        return "", 204
    return render_template("console/_present_backend.html", oob=True, **backend_context())


@bp.get("/present/<key>")
def present_stage(key: str):
    story = _story_or_404(key)
    try:
        number = int(request.args.get("step", "0"))
    except ValueError:
        number = 0
    return _stage(story, number)


@bp.post("/present/<key>/steps/<int:number>")
def present_step(key: str, number: int):
    """Run step `number`'s action, then show the stage at that step (or the failure, with a retry)."""
    story = _story_or_404(key)
    if not 1 <= number <= len(story.steps):
        abort(404)
    step = story.steps[number - 1]
    try:
        outcome = actions.perform(g.console_workspace, step.action, step.arguments, org_name=_brand().name)
    except actions.ActionFailed as error:
        message = str(error)
    except ServiceError as error:
        message = error.message
    except Exception:  # a demo never shows a traceback: say which step failed and offer the retry
        db.session.rollback()
        log.exception("Presenter step %s of %s failed", number, key)
        message = "Something went wrong on the server (it is in the server's log)."
    else:
        args = {"step": number, **_brand().args()}
        if outcome is not None and outcome.open_link:
            args["open"] = "1"
        return redirect(url_for("console.present_stage", key=key, **args), code=303)
    db.session.rollback()
    failure = {
        "number": number,
        "caption": step.caption.replace("{brand}", _brand().name),
        "message": message,
    }
    return _stage(story, number - 1, failure=failure, status=422)


@bp.post("/present/<key>/restart")
def present_restart(key: str):
    """Start the story again on fresh data: a new workspace (key, inbox webhook, clock at real time)."""
    _story_or_404(key)
    reset_workspace()
    return redirect(url_for("console.present_stage", key=key, step=0, **_brand().args()), code=303)


@bp.get("/present/<key>/summary")
def present_summary(key: str):
    """A one-page summary of this run for the follow-up email (the browser prints it to PDF)."""
    story = _story_or_404(key)
    workspace = g.console_workspace
    mark = _brand()
    return render_template(
        "console/present_summary.html",
        story=story,
        brand=mark,
        brand_args=mark.args(),
        captions=[s.caption.replace("{brand}", mark.name) for s in story.steps],
        messages=list(reversed(inbox.page(workspace.id, limit=SUMMARY_ROWS).rows)),
        calls=list(reversed(requestlog.page(workspace.id, limit=SUMMARY_ROWS).rows)),
    )
