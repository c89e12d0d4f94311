"""Presenter mode: the stage at /present, where a story's steps run one key press at a time.

Left, the prospect's branded app in a phone (Link opens inside it through the real SDK); right, what
the app's backend sees (webhooks, the job's timeline, its API calls), live. A step's action runs on
POST; the stage for step N is a plain GET, so going back shows a caption again without redoing it, and a
reload at a step where Link belongs open (console.presenter.stories.Story.link_open_at) opens it again.
Every run starts fresh: the title screen (step 0) shows an empty panel and step 1 runs on a new workspace.
The panel's words, event states and call grouping are console.presenter.feed's.

Profiles (`/p/<slug>`, a stage-picker in the prospect's brand) may be presented by anyone with the link and
changed only by a browser that holds
the profile in its signed session: the one that saved it, or one that opened its private edit link
(`/p/<slug>/edit/<secret>`), as trainers unlock a cohort. Other sessions get 404 from the edit pages.
"""

from __future__ import annotations

import hashlib
import logging

from flask import Response, abort, current_app, flash, g, redirect, render_template, request, session, url_for
from werkzeug.exceptions import RequestEntityTooLarge

from console.api.errors import DATABASE_UNAVAILABLE, unavailable_message
from console.clock.services import now as clock_now
from console.core.errors import FieldError, RateLimited, ServiceError, ValidationFailed
from console.core.params import nul_fields
from console.core.routes import Routes
from console.core.timeutil import utcnow
from console.extensions import db
from console.keys.secrets import seal, unseal
from console.modes import SANDBOX
from console.presenter import brand, feed, profiles, stories
from console.training import cohorts
from console.web.link import guide as linkguide
from console.web.link import tokens as linktokens
from console.web.present import actions, drive
from console.web.requests import queries as requestlog
from console.web.shared import live, throttle
from console.web.shared.apiclient import api_root
from console.web.shared.workspace_session import browser_id, has_workspace, reset_workspace
from console.web.timeline import queries as timeline
from console.web.webhooks import inbox

routes = Routes()

log = logging.getLogger(__name__)
BACKEND_ROWS = 5  # events and calls the panel shows (newest first); it reads more to group them
BACKEND_READ = 30
SUMMARY_ROWS = 100
# The story whose run this browser's workspace holds (set when step 1 starts one): the summary of another story
# printed that run's webhooks and calls under its own title.
RUN_KEY = "presenter_run"
TRAINEE_REFUSAL = (
    "This browser is in your training class's workspace, and every presenter run starts in a fresh one: your "
    "exercises would start over. Open the presenter in a private window or another browser."
)
EDITOR_KEY = "presenter_profiles"
# The profile just saved and its edit secret, sealed (the session cookie is signed, not encrypted), for the
# "profile saved" page its save redirects to, until the presenter moves on to the profile's edit page.
SAVED_KEY = "presenter_saved"
# A sales engineer prepares a handful of demos from one browser; the session cookie stays small.
MAX_EDITED_PROFILES = 20


def _profile():
    slug = request.values.get("profile")
    return profiles.get(slug) if slug else None


def _edited() -> list[str]:
    """The slugs of the profiles this browser may change."""
    return list(session.get(EDITOR_KEY) or [])


def _unlock(slug: str) -> None:
    slugs = [s for s in _edited() if s != slug] + [slug]
    session[EDITOR_KEY] = slugs[-MAX_EDITED_PROFILES:]


def _forget(slug: str) -> None:
    session[EDITOR_KEY] = [s for s in _edited() if s != slug]


def _may_edit(profile) -> bool:
    return profile is not None and profile.slug in _edited()


def _editable_or_404(slug: str):
    """The profile, for a session that may change it; 404 otherwise (whether or not it exists)."""
    profile = profiles.get(slug)
    if not _may_edit(profile):
        abort(404)
    return profile


def _my_profiles() -> list:
    found = (profiles.get(slug) for slug in reversed(_edited()))
    return [p for p in found if p is not None]


def _used(profile) -> None:
    """Note that the profile was opened (a write at most once an hour per profile)."""
    if profile is not None and profiles.note_use(profile):
        db.session.commit()


OTHER_RUN = (
    "Another tab or window of this browser started a story since, and a browser presents one run at a time: this "
    "stage's run was replaced. Press r to start this story again, or close the other tab."
)


def address_refusal(error: RateLimited) -> str:
    """Step 1 refused by the per-address limit on new workspaces: said as what happened. The limit's own words
    ("Too many … from your address") blamed the presenter, who had pressed one key, when another browser or
    program behind the same address (a colleague, a script, a room sharing one network) had used it up."""
    limit = current_app.extensions["console_throttle"].creates_per_minute
    return (
        f"The server makes at most {limit} new workspaces a minute for each network address, and this step starts "
        "one: that many were made from this address in the last minute, by another browser or program using it "
        f"(or by this one). Try again in {error.retry_after} s."
    )


def _run_mark() -> str:
    """Which run the stage shows (a digest of its workspace's id; "" before one exists): a step posted from a stage
    whose run another tab has since replaced would act on that tab's run."""
    if not has_workspace():
        return ""
    return hashlib.sha256(f"presenter-run:{g.console_workspace.id}".encode()).hexdigest()[:16]


def _caption(story: stories.Story, number: int, mark: brand.Brand, profile=None) -> str:
    """Step `number`'s caption on this stage (the profile's edit, if any), the prospect's name filled in."""
    text = profiles.caption(profile, story, number) if number else story.summary
    return text.replace("{brand}", mark.name)


def _brand(profile=None) -> brand.Brand:
    """The stage's brand: a saved profile's (`?profile=<slug>`), else the one the URL spells out."""
    profile = profile or _profile()
    return profiles.brand_of(profile) if profile else brand.from_args(request.values)


def _name_cut(profile=None) -> str | None:
    """The company name the address spells out when the stage cut it (longer than brand.MAX_NAME), for the
    presenter to be told rather than find it cut on the stage; a profile's name was checked when saved."""
    return None if profile else brand.cut_name(request.values)


def _story_or_404(key: str) -> stories.Story:
    story = stories.get(key)
    if story is None:
        problem = stories.problem(key)
        if problem is not None:
            # A bookmarked stage whose file was broken since said "Not found ... another workspace": say what
            # is wrong with the file, and where, so it is fixed before the call.
            abort(
                Response(
                    render_template("console/present/present_broken.html", key=key, problem=problem), 404
                )
            )
        abort(404)
    return story


_NOT_READ = object()


def backend_context(kept: linktokens.Kept | object | None = _NOT_READ) -> dict:
    """What the app's backend has seen in this workspace: webhooks, API calls, the newest job timeline.

    `kept`: the newest console Link token when the caller has read it already (the stage does).
    """
    workspace = g.console_workspace
    if kept is _NOT_READ:
        kept = linktokens.newest(workspace.id) if has_workspace() else None
    found = timeline.for_link_token(workspace, SANDBOX, kept.link_token_id) if kept else None
    events = feed.event_rows(inbox.page(workspace.id, limit=BACKEND_READ).rows)
    # Every customer's switch of the run, not only the newest token's (a second customer has none yet).
    switches = timeline.workspace_jobs(workspace, SANDBOX) if has_workspace() else []
    customers = feed.name_customers([jt.job for jt in switches], events)
    yours, setup = feed.split_calls(requestlog.page(workspace.id, limit=BACKEND_READ).rows)
    return {
        "events": events[:BACKEND_ROWS],
        "calls": yours[:BACKEND_ROWS],
        "setup_calls": setup,
        "timeline": found,
        "switches": switches,
        "customers": customers,
        "job": found.jobs[-1].job if found and found.jobs else None,
        "pulse": live.pulse(workspace),
        "link_token_id": kept.link_token_id if kept else "",
        "clock": _clock(workspace),
        "run": _run_mark(),
        **WORDS,
    }


# How the panel words things (console.presenter.feed), for the stage, its poll and the summary.
WORDS = {
    "when": feed.short_time,
    "job_words": feed.job_words,
    "outcome_words": feed.outcome_words,
    "tone": feed.tone,
    "phone_words": feed.phone_words,
}


def _clock(workspace) -> dict:
    """The stage's one clock: the workspace's (real time on hover)."""
    return {"now": clock_now(workspace), "real": utcnow()}


def _fresh_backend() -> dict:
    """The backend panel before step 1: empty, not polling (step 1 starts the run on a new workspace)."""
    return {
        "events": [],
        "calls": [],
        "setup_calls": [],
        "timeline": None,
        "switches": [],
        "customers": {},
        "job": None,
        "pulse": "",
        "link_token_id": "",
        "clock": None,
        "run": "",
        **WORDS,
    }


def _stage(story: stories.Story, number: int, *, failure: dict | None = None, status: int = 200):
    workspace = g.console_workspace
    profile = _profile()
    if failure is None:
        # Not while showing a failed step: the database may be refusing writes (a held lock, a full disk), and
        # this one failing too turned the stage into the busy page. The stage's own GET noted the use.
        _used(profile)
    mark = _brand(profile)
    number = max(0, min(number, len(story.steps)))
    step = story.steps[number - 1] if number else None
    # The title screen never shows an earlier run: the panel is empty there and step 1 makes a new workspace.
    fresh = number == 0
    kept = linktokens.newest(workspace.id) if has_workspace() and not fresh else None
    view = linkguide.view(workspace, kept.link_token_id, kept.token, kept.origin) if kept else None
    # The phone's button opens Link with the newest token while it can (unused, or open: Link resumes at its
    # screen), for the presenter's own hands; after a reload at a Link step the stage opens it with this too.
    unused_token = kept.token if view and view.state.can_open else None
    # Link is open in the phone from an open_link step until a step completes it; a reload there opens it again.
    opens = story.link_open_at(number)
    next_step = story.steps[number] if number < len(story.steps) else None
    backend = _fresh_backend() if fresh else backend_context(kept)
    return render_template(
        "console/present/present.html",
        story=story,
        number=number,
        step=step,
        caption=_caption(story, number, mark, profile),
        next_step=next_step,
        drive_plan=drive.plan(next_step),
        brand=mark,
        brand_args=mark.args(),
        name_cut=_name_cut(profile),
        failure=failure,
        open_token=unused_token if opens else None,
        unused_token=unused_token,
        link_closed=request.args.get("closed") == "1" and number < len(story.steps),
        poll=not fresh,
        waiting_words=f"Waiting for the webhook to reach {mark.name}'s backend…",
        **backend,
    ), status


@routes.get("/present", endpoint="present")
def present_index():
    good, broken = stories.all_stories()
    profile = _profile()
    _used(profile)
    mark = _brand(profile)
    return render_template(
        "console/present/present_index.html",
        stories=profiles.offered(profile, good),
        broken=broken,
        brand=mark,
        brand_args=mark.args(),
        name_cut=_name_cut(profile),
        profile=profile,
        may_edit=_may_edit(profile),
        my_profiles=_my_profiles(),
        short_url=url_for("console.present_profile", slug=profile.slug) if profile else None,
    )


@routes.post("/present/brand", no_create=True)
def use_brand():
    """The brand form's "Use this brand": the start page with the brand in its address (stories link it)."""
    return redirect(url_for("console.present", **brand.from_args(request.form).args()), code=303)


@routes.post("/present/profiles", no_create=True, creates=True)
def save_profile():
    """Save the brand and chosen stories as a profile: its short URL, and the private edit link once."""
    known = {s.key for s in stories.all_stories()[0]}
    chosen = [k for k in request.form.getlist("stories") if k in known]
    profile, secret = profiles.create(
        brand.from_args(request.form),
        chosen,
        owner=browser_id(),
        address=throttle.client_address(),
        contact=request.form.get("contact"),
    )
    db.session.commit()
    _unlock(profile.slug)
    # POST-redirect-GET: reloading the result page must not save another profile (a reload re-sent the form).
    session[SAVED_KEY] = {"profile": profile.slug, "secret": seal(secret).decode()}
    return redirect(url_for("console.profile_saved", slug=profile.slug), code=303)


@routes.get("/present/profiles/<slug>/saved")
def profile_saved(slug: str):
    """The profile just saved, with its short link and its private edit link: to its creator's browser only."""
    profile = _editable_or_404(slug)
    pending = session.get(SAVED_KEY) or {}
    if pending.get("profile") != profile.slug:  # shown, and the presenter has moved on to its edit page since
        return redirect(url_for("console.edit_profile", slug=profile.slug))
    root = api_root()
    secret = unseal(pending["secret"].encode())
    response = Response(
        render_template(
            "console/present/present_profile_saved.html",
            profile=profile,
            short_link=root + url_for("console.present_profile", slug=profile.slug),
            edit_link=root + url_for("console.unlock_profile", slug=profile.slug, secret=secret),
        )
    )
    response.headers["Cache-Control"] = (
        "no-store"  # it holds the edit link, as the cohort's created page does
    )
    return response


@routes.get("/p/<slug>/edit/<secret>")
def unlock_profile(slug: str, secret: str):
    """The private edit link: this browser may change the profile from now on."""
    profile = profiles.get(slug)
    if profile is None or not profiles.secret_matches(profile, secret):
        abort(404)
    _unlock(profile.slug)
    return redirect(url_for("console.edit_profile", slug=profile.slug))


def _edit_page(profile, *, errors: dict[str, str] | None = None, form=None, status: int = 200):
    good = stories.all_stories()[0]
    chosen = set(profile.stories or [])
    return render_template(
        "console/present/present_profile_edit.html",
        profile=profile,
        brand=profiles.brand_of(profile),
        stories=good,
        chosen=chosen,
        offered=profiles.offered(profile, good),
        caption_of=lambda story, number: profiles.caption(profile, story, number),
        caption_field=profiles.caption_field,
        errors=errors or {},
        error_labels={
            "logo": "The logo",
            "brand": "Company name",
            "initials": "Initials",
            **{
                profiles.caption_field(s.key, n): f"{s.title}, step {n}"
                for s in good
                for n in range(1, len(s.steps) + 1)
            },
        },
        form=form,
        logo_max_kb=profiles.LOGO_MAX_BYTES // 1024,
        logo_max_side=profiles.LOGO_MAX_SIDE,
        max_caption=stories.MAX_CAPTION,
        short_url=url_for("console.present_profile", slug=profile.slug),
    ), status


@routes.get("/present/profiles/<slug>/edit")
def edit_profile(slug: str):
    profile = _editable_or_404(slug)
    if (session.get(SAVED_KEY) or {}).get("profile") == profile.slug:
        session.pop(SAVED_KEY)  # the presenter moved on from the saved page: the secret leaves the cookie
    _used(profile)
    return _edit_page(profile)


@routes.post("/present/profiles/<slug>", no_create=True, form_checked_by_view=True)
def update_profile(slug: str):
    """Save the edit form: brand, stories to offer, edited captions; a bad caption is named on the form."""
    profile = _editable_or_404(slug)
    errors = {f.name: f.message for f in nul_fields(request.form)}
    if not errors:
        try:
            profiles.update(
                profile,
                brand.from_args(request.form),
                request.form.getlist("stories"),
                {k: v for k, v in request.form.items() if k.startswith("caption-")},
                stories.all_stories()[0],
                contact=request.form.get("contact"),
            )
        except ValidationFailed as exc:
            errors = {f.name: f.message for f in exc.fields}
    if errors:
        db.session.rollback()
        return _edit_page(profile, errors=errors, form=request.form, status=400)
    db.session.commit()
    flash(f"Profile for {profile.name} saved.", "ok")
    return redirect(url_for("console.edit_profile", slug=profile.slug), code=303)


@routes.post("/present/profiles/<slug>/logo", no_create=True, form_checked_by_view=True)
def upload_profile_logo(slug: str):
    """Store an uploaded PNG or JPEG logo (256 KB at most); a refused file is explained on the form."""
    profile = _editable_or_404(slug)
    try:
        upload = request.files.get("logo")
        data = upload.read(profiles.LOGO_MAX_BYTES + 1) if upload else b""
        problems = nul_fields(request.form)
    except RequestEntityTooLarge:
        data, problems = b"", []
        problems.append(FieldError("logo", f"the file is larger than {profiles.LOGO_MAX_BYTES // 1024} KB."))
    if not problems:
        try:
            profiles.set_logo(profile, data)
        except ValidationFailed as exc:
            problems = exc.fields
    if problems:
        db.session.rollback()
        return _edit_page(profile, errors={"logo": problems[0].message}, status=400)
    db.session.commit()
    flash("Logo saved: it replaces the initials in the phone.", "ok")
    return redirect(url_for("console.edit_profile", slug=profile.slug), code=303)


@routes.post("/present/profiles/<slug>/logo/delete", no_create=True)
def remove_profile_logo(slug: str):
    profile = _editable_or_404(slug)
    profiles.remove_logo(profile)
    db.session.commit()
    flash("Logo removed: the phone shows the initials again.", "ok")
    return redirect(url_for("console.edit_profile", slug=profile.slug), code=303)


@routes.post("/present/profiles/<slug>/delete", no_create=True)
def delete_profile(slug: str):
    """Delete the profile: its short link answers 404 from now on."""
    profile = _editable_or_404(slug)
    name = profile.name
    profiles.delete(profile)
    db.session.commit()
    _forget(slug)
    flash(f"Profile for {name} deleted; its short link no longer works.", "ok")
    return redirect(url_for("console.present"), code=303)


@routes.get("/p/<slug>/logo")
def profile_logo(slug: str):
    """A profile's uploaded logo, with its own content type (PNG or JPEG, checked on upload), never sniffed."""
    profile = profiles.get(slug)
    if profile is None or not profile.logo_digest:
        abort(404)
    response = Response(profile.logo, mimetype=profile.logo_type)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Disposition"] = "inline"
    # The URL names the logo's version (?v=digest): that one never changes; anything else is checked each time.
    versioned = request.args.get("v") == profile.logo_digest
    response.headers["Cache-Control"] = "public, max-age=86400" if versioned else "no-cache"
    response.set_etag(profile.logo_digest)
    return response.make_conditional(request)


@routes.get("/p/<slug>")
def present_profile(slug: str):
    """A profile's short link: a clean stage-picker for the prospect's brand (no console chrome), each story
    with its stage link to copy."""
    profile = profiles.get(slug)
    if profile is None:
        abort(404)
    _used(profile)
    mark = profiles.brand_of(profile)
    root = api_root()
    offered = profiles.offered(profile, stories.all_stories()[0])
    return render_template(
        "console/present/present_picker.html",
        profile=profile,
        brand=mark,
        stories=offered,
        stage_links={
            s.key: root + url_for("console.present_stage", key=s.key, **mark.args()) for s in offered
        },
        short_link=root + url_for("console.present_profile", slug=profile.slug),
        may_edit=_may_edit(profile),
    )


@routes.get("/present/backend")
def present_backend():
    """The live poll of the backend panel: 204 while nothing in the workspace changed, and for a stage whose run
    another tab has replaced (its panel turned into that tab's run; it keeps its own, and its next step says why)."""
    if live.unchanged(g.console_workspace, request.args.get("pulse")):
        return "", 204
    if request.args.get("run") and request.args.get("run") != _run_mark():
        return "", 204
    return render_template("console/present/_present_backend.html", oob=True, **backend_context())


@routes.get("/present/<key>")
def present_stage(key: str):
    story = _story_or_404(key)
    try:
        number = int(request.args.get("step", "0"))
    except ValueError:
        number = 0
    return _stage(story, number)


@routes.post("/present/<key>/steps/<int:number>")
def present_step(key: str, number: int):
    """Run step `number`'s action, then show the stage at that step (or the failure, with a retry)."""
    story = _story_or_404(key)
    if not 1 <= number <= len(story.steps):
        abort(404)
    step = story.steps[number - 1]
    try:
        posted_run = request.form.get("run", "")
        if number > 1 and posted_run and posted_run != _run_mark():
            raise actions.ActionFailed(OTHER_RUN)
        if number == 1 and not g.get("console_workspace_created"):
            # Every run starts fresh: a new workspace (API key, inbox, clock at real time), never an earlier
            # run's webhooks, job or used Link token on the stage. Counted like any request that creates one.
            if cohorts.membership(g.console_workspace.id) is not None:
                # A trainee's Reset starts their class over on purpose; a look at the presenter must not.
                raise actions.ActionFailed(TRAINEE_REFUSAL)
            try:
                throttle.check_address()
            except RateLimited as error:
                raise actions.ActionFailed(address_refusal(error)) from None
            reset_workspace()
        if number == 1:
            session[RUN_KEY] = key
        actions.perform(g.console_workspace, step.action, step.arguments, org_name=_brand().name)
    except actions.ActionFailed as error:
        message = str(error)
    except ServiceError as error:
        message = error.message
    except DATABASE_UNAVAILABLE as error:  # busy, full or unreachable: say so, and the retry will do
        db.session.rollback()
        message = unavailable_message(error)
    except Exception:  # a demo never shows a traceback: say which step failed and offer the retry
        db.session.rollback()
        log.exception("Presenter step %s of %s failed", number, key)
        message = "Something went wrong on the server (it is in the server's log)."
    else:
        args = {"step": number, **_brand().args()}
        return redirect(url_for("console.present_stage", key=key, **args), code=303)
    db.session.rollback()
    failure = {
        "number": number,
        "caption": _caption(story, number, _brand(), _profile()),
        "message": message,
        # A replaced run cannot be retried (a retry fails the same way): the message says to press r instead.
        "retry": message != OTHER_RUN,
        # ... and the stage keeps its own phone and panel: what this answer would draw is the other tab's run.
        "replaced": message == OTHER_RUN,
    }
    return _stage(story, number - 1, failure=failure, status=422)


def unavailable_step(message: str):
    """The stage with the step's failure and its retry, when the database failed before the step could run
    (making the run's workspace under a held SQLite write lock, a full disk): the generic busy page is no
    stage, and the stage's script answered it with "Reload the page to continue" in front of the room."""
    args = request.view_args or {}
    story = stories.get(args.get("key", ""))
    number = args.get("number", 0)
    if story is None or not 1 <= number <= len(story.steps):
        return None
    db.session.rollback()
    try:
        # Inside the try: the caption reads a saved profile (`?profile=`), and with the database away that read
        # fails too; raised from this error handler it was a bare 500.
        failure = {
            "number": number,
            "caption": _caption(story, number, _brand(), _profile()),
            "message": message,
            "retry": True,
            "replaced": False,
        }
        page, _status = _stage(story, number - 1, failure=failure)  # answered with 503 and Retry-After
        return page
    except Exception:  # the database cannot even be read: the plain busy page then
        db.session.rollback()
        log.exception("The stage could not be drawn for the failed step %s of %s", number, story.key)
        return None


@routes.post("/present/<key>/restart", no_create=True)
def present_restart(key: str):
    """Back to the story's title screen; step 1 then runs on a fresh workspace (see present_step)."""
    _story_or_404(key)
    return redirect(url_for("console.present_stage", key=key, step=0, **_brand().args()), code=303)


@routes.get("/present/<key>/summary")
def present_summary(key: str):
    """A one-page summary of this run for the follow-up email (the browser prints it to PDF): the prospect's
    logo, the date, the presenter's contact, the story in words for paper, what the backend received."""
    story = _story_or_404(key)
    workspace = g.console_workspace
    profile = _profile()
    mark = _brand(profile)
    ran = session.get(RUN_KEY)
    ours = ran == key  # else the workspace holds another story's run, or none: nothing of it is this story's
    other = stories.get(ran) if ran and not ours else None
    events = feed.event_rows(inbox.page(workspace.id, limit=SUMMARY_ROWS).rows) if ours else []
    if events:
        # Two customers' identical "switch succeeded" rows say whose each is, as on the stage (paper had no names).
        switches = timeline.workspace_jobs(workspace, SANDBOX) if has_workspace() else []
        feed.name_customers([jt.job for jt in switches], events)
    # The step the stage was at when `s` was pressed: "Back to the stage" returns there. It went to the title, where
    # → starts a new run (a fresh workspace): one `s` by mistake mid-demo and the run was gone.
    back_step = request.args.get("step", "")
    back_step = min(int(back_step), len(story.steps)) if back_step.isdigit() else 0
    return render_template(
        "console/present/present_summary.html",
        back_step=back_step,
        other_run=other,
        story=story,
        brand=mark,
        brand_args=mark.args(),
        captions=[
            profiles.printed_caption(profile, story, n).replace("{brand}", mark.name)
            for n in range(1, len(story.steps) + 1)
        ],
        date=utcnow().strftime("%d %B %Y").lstrip("0"),
        contact=profile.contact if profile else None,
        events=list(reversed(events)),
        calls=list(reversed(feed.call_rows(requestlog.page(workspace.id, limit=SUMMARY_ROWS).rows)))
        if ours
        else [],
    )
