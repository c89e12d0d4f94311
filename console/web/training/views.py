"""Training mode: the trainer's cohorts and live grid, the join link, and a trainee's exercises.

Trainer access: creating a cohort (or opening its trainer link, `/training/<id>/trainer/<secret>`)
puts the cohort's id in this browser's signed session cookie; the grid, a trainee's reasons and the CSV
answer 404 to any session without it. Trainees are ordinary console visitors in a named, kept
workspace: they see their own exercises at `/training/me`, never the grid or anyone else's data.
"""

from __future__ import annotations

from flask import Response, abort, current_app, flash, g, redirect, render_template, request, session, url_for
from markupsafe import Markup

from console import trigger
from console.core.errors import NotFound, RateLimited, ServiceError, ValidationFailed
from console.core.routes import Routes
from console.extensions import db
from console.keys.secrets import seal, unseal
from console.training import cohorts, exercises, holds, room, snippets
from console.web.link import tokens as linktokens
from console.web.scenarios import gallery as scenarios
from console.web.shared import throttle
from console.web.shared.apiclient import response_json
from console.web.shared.workspace_session import (
    api_client,
    browser_id,
    current_workspace,
    enter_workspace,
    may_use_secret,
)

routes = Routes()

TRAINER_KEY = "trainer_cohorts"
# The cohort this browser just created and its trainer secret, for the "created" page (see training_create).
CREATED_KEY = "training_created"
# A trainer runs a few classes from one browser; the cookie stays small.
MAX_TRAINER_COHORTS = 20
# The headless switch whose webhooks are held back in exercise 5: it succeeds at once.
MISSED_SCENARIO = "user_good"


def _trained() -> list[str]:
    return list(session.get(TRAINER_KEY) or [])


def _unlock(cohort_id) -> None:
    ids = [i for i in _trained() if i != str(cohort_id)] + [str(cohort_id)]
    session[TRAINER_KEY] = ids[-MAX_TRAINER_COHORTS:]


def _forget(cohort_id) -> None:
    session[TRAINER_KEY] = [i for i in _trained() if i != str(cohort_id)]


# A grid's URL copied to another browser (the projector's) answered the console's "Nothing here, or it belongs
# to another workspace", which a trainer (who has no workspace) could not act on. Said alike whether or not the
# class exists, so it tells a stranger nothing.
NOT_A_TRAINERS_CLASS = (
    "No class of this browser's is here. A class's grid opens in the browser that created it, or in one that "
    "opened its trainer link (shown on the page its creation led to); or the class was deleted."
)


def _idle_period() -> str:
    """How long a workspace no longer kept lasts unused, as templates/console/training/_idle.html says it."""
    days = current_app.config.get("WORKSPACE_IDLE_DAYS")
    return str(round(float(days), 1)).removesuffix(".0") + " days" if days else "the server's idle period"


def _trainer_cohort(cohort_id: str):
    """The cohort, for a session that trains it; 404 otherwise (whether or not it exists)."""
    if cohort_id not in _trained():
        raise NotFound(NOT_A_TRAINERS_CLASS)
    try:
        return cohorts.get_cohort(cohort_id)
    except NotFound:
        raise NotFound(NOT_A_TRAINERS_CLASS) from None


def _root() -> room.Root:
    """The class's root: PUBLIC_URL, else the root this request came to (see console.training.room)."""
    return room.class_root(current_app.config, request.url_root)


def _links(cohort, root: room.Root, secret: str | None = None) -> dict:
    links = {"join": root.url + url_for("console.training_join", token=cohort.join_token)}
    if secret:
        links["trainer"] = root.url + url_for("console.training_unlock", cohort_id=cohort.id, secret=secret)
    return links


def _room_context(cohort, secret: str | None = None) -> dict:
    """The join link (and trainer link), its QR code, and the warning when the room cannot reach it."""
    root = _root()
    links = _links(cohort, root, secret)
    return {
        "links": links,
        "root": root,
        "join_qr": Markup(room.qr_svg(links["join"], f"QR code of the join link of {cohort.name}")),
    }


def _my_cohorts() -> list:
    """The classes this browser trains that still exist."""
    mine = []
    for ident in _trained():
        try:
            mine.append(cohorts.get_cohort(ident))
        except NotFound:  # deleted since
            continue
    return mine


@routes.get("/training", endpoint="training")
def training_home():
    return render_template(
        "console/training/home.html",
        curriculum=exercises.CURRICULUM,
        cohorts=_my_cohorts(),
        errors={},
        form={},
        trainee=cohorts.membership(g.console_workspace.id) is not None,
    )


@routes.post("/training/cohorts", endpoint="training_create", no_create=True, creates=True)
def training_create():
    form = {"name": request.form.get("name", ""), "exercises": request.form.getlist("exercises")}
    try:
        cohort, secret = cohorts.create_cohort(form["name"], form["exercises"], owner=browser_id())
    except ValidationFailed as exc:
        errors = {f.name: f.message for f in exc.fields}
        return render_template(
            "console/training/home.html",
            curriculum=exercises.CURRICULUM,
            cohorts=_my_cohorts(),  # the page refused keeps the trainer's list of classes (it went blank)
            errors=errors,
            form=form,
            trainee=False,
        ), 400
    db.session.commit()
    _unlock(cohort.id)
    # POST-redirect-GET: reloading the result page must not create another cohort. The trainer secret is
    # shown on that page only, so it waits in this (the creator's) session until the grid is opened, sealed
    # (the session cookie is signed, not encrypted); only its hash is stored server-side.
    session[CREATED_KEY] = {"cohort": str(cohort.id), "secret": seal(secret).decode()}
    return redirect(url_for("console.training_created", cohort_id=cohort.id), code=303)


@routes.get("/training/<cohort_id>/created", endpoint="training_created")
def training_created(cohort_id: str):
    """The cohort just created, with its join and trainer links: to its creator's browser only."""
    cohort = _trainer_cohort(cohort_id)
    pending = session.get(CREATED_KEY) or {}
    if pending.get("cohort") != str(cohort.id):  # the trainer link was shown and the grid opened since
        return redirect(url_for("console.training_grid", cohort_id=cohort.id))
    response = Response(
        render_template(
            "console/training/created.html",
            cohort=cohort,
            **_room_context(cohort, unseal(pending["secret"].encode())),
        )
    )
    response.headers["Cache-Control"] = "no-store"  # it holds the trainer link
    return response


@routes.get("/training/<cohort_id>/trainer/<secret>", endpoint="training_unlock")
def training_unlock(cohort_id: str, secret: str):
    try:
        cohort = cohorts.get_cohort(cohort_id)
    except NotFound:
        abort(404)
    if not cohorts.trainer_secret_matches(cohort, secret):
        abort(404)
    _unlock(cohort.id)
    return redirect(url_for("console.training_grid", cohort_id=cohort.id))


def _grid_context(cohort) -> dict:
    chosen = [e for e in exercises.CURRICULUM if e.key in cohort.exercises]
    rows = cohorts.grid(cohort)
    return {
        "cohort": cohort,
        "chosen": chosen,
        "rows": rows,
        "summary": cohorts.summary(cohort, rows),
        "stuck_minutes": room.STUCK_MINUTES,
        "pulse": cohorts.cohort_pulse(cohort),
    }


@routes.get("/training/<cohort_id>", endpoint="training_grid")
def training_grid(cohort_id: str):
    cohort = _trainer_cohort(cohort_id)
    if (session.get(CREATED_KEY) or {}).get("cohort") == str(cohort.id):
        session.pop(CREATED_KEY)  # the trainer moved on from the created page: the secret leaves the cookie
    return render_template("console/training/grid.html", **_room_context(cohort), **_grid_context(cohort))


@routes.get("/training/<cohort_id>/grid", endpoint="training_grid_live")
def training_grid_live(cohort_id: str):
    """The grid's poll: 204 while no trainee's facts changed, else the grid redrawn. A grid that showed the
    class open reloads once it is archived (HX-Refresh): another trainer screen, the projector's, kept
    showing the join link and its QR code, which now turn latecomers away."""
    cohort = _trainer_cohort(cohort_id)
    if _archived_since_shown(cohort):
        return "", 200, {"HX-Refresh": "true"}
    seen = request.args.get("pulse")
    if seen and seen == cohorts.cohort_pulse(cohort):
        return "", 204
    return render_template("console/training/_grid.html", **_grid_context(cohort))


def _archived_since_shown(cohort) -> bool:
    """Whether a polling page (its `archived` argument: it said so) showed this class open, and it is archived."""
    return cohort.archived_at is not None and not request.args.get("archived")


@routes.post("/training/<cohort_id>/archive", endpoint="training_archive", no_create=True)
def training_archive(cohort_id: str):
    """End the class: no more joins; the trainees' workspaces are collected once idle (trainer only)."""
    cohort = _trainer_cohort(cohort_id)
    cohorts.archive(cohort)
    db.session.commit()
    flash(f"{cohort.name} is archived.", "ok")  # the page's own note under it says what that means
    return redirect(url_for("console.training_grid", cohort_id=cohort.id), code=303)


@routes.post("/training/<cohort_id>/delete", endpoint="training_delete", no_create=True)
def training_delete(cohort_id: str):
    """Delete the class with its memberships and every trainee's workspace, now (trainer only)."""
    cohort = _trainer_cohort(cohort_id)
    name = cohort.name
    gone = cohorts.delete_cohort(cohort)
    db.session.commit()
    _forget(cohort_id)
    flash(f"{name} is deleted, with its {gone} trainee workspace{'' if gone == 1 else 's'}.", "ok")
    return redirect(url_for("console.training"), code=303)


@routes.post("/training/<cohort_id>/trainees/<member_id>/remove", endpoint="training_remove", no_create=True)
def training_remove(cohort_id: str, member_id: str):
    """Take a trainee's row off the class (trainer only): its seat is free again and its workspace detached
    (collected once idle; see cohorts.remove_member)."""
    cohort = _trainer_cohort(cohort_id)
    try:
        member = cohorts.get_member(cohort, member_id)
    except NotFound:  # removed already (a second click, another trainer screen): the grid says it is gone
        flash("That trainee is no longer in this class.", "ok")
        return redirect(url_for("console.training_grid", cohort_id=cohort.id), code=303)
    name = member.name
    cohorts.remove_member(member)
    db.session.commit()
    flash(
        f"{name} is removed from {cohort.name}: their seat is free, and their workspace is no longer kept "
        f"(deleted once unused for {_idle_period()}).",
        "ok",
    )
    return redirect(url_for("console.training_grid", cohort_id=cohort.id), code=303)


@routes.get("/training/<cohort_id>/trainees/<member_id>", endpoint="training_trainee")
def training_trainee(cohort_id: str, member_id: str):
    cohort = _trainer_cohort(cohort_id)
    member = cohorts.get_member(cohort, member_id)
    return render_template(
        "console/training/trainee.html", cohort=cohort, member=member, results=cohorts.results(cohort, member)
    )


@routes.get("/training/<cohort_id>/export.csv", endpoint="training_export")
def training_export(cohort_id: str):
    cohort = _trainer_cohort(cohort_id)
    filename = cohorts.export_filename(cohort)
    return Response(
        cohorts.export_csv(cohort),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"},
    )


# The join form tokens this browser was given (the first 16 characters of each one's hash, the newest few): a
# join form token replays a join only from the browser it was rendered for, not from anyone who read it.
JOIN_FORM_TOKENS_KEY = "training_join_form_tokens"
# The class this browser last joined ({"cohort": id, "name": ...}): once its trainer deletes it (with the
# trainee's workspace), /training/me can say so instead of "not in a training class".
JOINED_CLASS_KEY = "training_joined_class"
JOIN_FORM_TOKENS_KEPT = 5


def _new_join_form_token() -> str:
    join_form_token = cohorts.new_join_form_token()
    kept = [f for f in session.get(JOIN_FORM_TOKENS_KEY) or [] if isinstance(f, str)]
    session[JOIN_FORM_TOKENS_KEY] = [*kept, _kept_of(join_form_token)][-JOIN_FORM_TOKENS_KEPT:]
    return join_form_token


def _kept_of(join_form_token: str) -> str:
    """What the session keeps of a join form token: a prefix of its hash (the cookie stays small)."""
    return cohorts.join_form_token_hash(join_form_token)[:16]


def _own_join_form_token() -> str:
    """The join form token sent, if this browser was given it, else "" (a join without one)."""
    sent = request.form.get("join_form_token", "")
    return sent if sent and _kept_of(sent) in (session.get(JOIN_FORM_TOKENS_KEY) or []) else ""


@routes.get("/training/join/<token>", endpoint="training_join")
def training_join(token: str):
    cohort = cohorts.by_join_token(token)
    joined = _joined_as(cohort)
    over = cohorts.closed(cohort) if joined is None else None
    page = render_template(
        "console/training/join.html",
        cohort=cohort,
        token=token,
        errors={},
        form={},
        join_form_token=_new_join_form_token(),
        joined=joined,
        refused=over,
        closed=over is not None,
    )
    return (page, 410) if over is not None else page  # the link is gone for good: no form to fill in vain


def _joined_as(cohort) -> str | None:
    """This browser's name in the cohort, if its workspace joined it already."""
    workspace = current_workspace()  # from the session: the join pages do not load a workspace
    return cohorts.joined_as(cohort, workspace.id) if workspace is not None else None


@routes.post("/training/join/<token>", endpoint="training_join_submit", no_create=True, creates=True)
def training_join_submit(token: str):
    cohort = cohorts.by_join_token(token)
    if _joined_as(cohort) is not None:
        return redirect(url_for("console.training_me"))
    form = {"name": request.form.get("name", "")}
    join_form_token = _own_join_form_token()
    try:
        joined = cohorts.join(
            cohort, form["name"], join_form_token, admit=lambda: throttle.check_joins(cohort.id)
        )
    except ValidationFailed as exc:
        db.session.rollback()
        errors = {f.name: f.message for f in exc.fields}
        return render_template(
            "console/training/join.html",
            cohort=cohort,
            token=token,
            errors=errors,
            form=form,
            join_form_token=_new_join_form_token(),
            joined=None,
        ), 400
    except ServiceError as exc:  # full, archived, or too many joins this minute: said on the page
        db.session.rollback()
        return (
            render_template(
                "console/training/join.html",
                cohort=cohort,
                token=token,
                errors={},
                form=form,
                join_form_token=_new_join_form_token(),
                joined=None,
                refused=exc,
                closed=cohorts.closed(cohort) is not None,
            ),
            exc.status_code,
            {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else {},
        )
    # The form's first sending registers the console's inbox; its second only enters the same workspace.
    enter_workspace(joined.workspace, register_inbox=not joined.again)
    _remember_class(cohort, joined.workspace)
    return redirect(url_for("console.training_me"))


def _me_context() -> dict:
    workspace = g.console_workspace
    found = cohorts.membership(workspace.id)
    if found is None:
        return {"member": None, **_left_class(workspace)}
    member, cohort = found
    _remember_class(cohort, workspace)
    return {
        "member": member,
        "cohort": cohort,
        "results": exercises.progress(workspace, cohort.exercises),
        "pulse": cohorts.pulse([workspace.id]),
        "held": workspace.held_link_token_id,
    }


def _remember_class(cohort, workspace) -> None:
    """Keep JOINED_CLASS_KEY on the workspace this browser uses in the class (a Reset gives it a new one);
    written only when it changed, not on every poll."""
    wanted = {"cohort": str(cohort.id), "name": cohort.name, "workspace": str(workspace.id)}
    if session.get(JOINED_CLASS_KEY) != wanted:
        session[JOINED_CLASS_KEY] = wanted


def _left_class(workspace) -> dict:
    """Why this browser, which joined a class, is no longer in it: `deleted_class` (its trainer deleted the
    class, with the trainee's workspace) or `removed_from` (its trainer removed this workspace's row; the class
    is still there, with its join link), each the class's name; both None otherwise."""
    joined = session.get(JOINED_CLASS_KEY)
    if not isinstance(joined, dict):
        return {"deleted_class": None, "removed_from": None}
    name = str(joined.get("name") or "") or None
    try:
        cohort = cohorts.get_cohort(joined.get("cohort", ""))
    except NotFound:
        return {"deleted_class": name, "removed_from": None}
    # The class is still there: removed, if this is the workspace that was in it; else this browser opened
    # another workspace since.
    removed = joined.get("workspace") == str(workspace.id)
    return {"deleted_class": None, "removed_from": cohort.name if removed else None}


@routes.get("/training/me", endpoint="training_me")
def training_me():
    """A trainee's exercises, with snippets filled with their own key: this page is the only one that shows
    it (never cached: `no-store`)."""
    context = _me_context()
    if context["member"] is not None:
        root = _root()
        context["root"] = root
        context["snippets"] = snippets.for_exercises(
            root.url, cohorts.trainee_facts(g.console_workspace, may_use_secret)
        )
        context["solutions"] = {e.key: exercises.solution(e, root.url) for e, _ in context["results"]}
    response = Response(render_template("console/training/me.html", **context))
    response.headers["Cache-Control"] = "no-store"
    return response


@routes.get("/training/pcc.py", endpoint="training_client")
def training_client():
    """The room's single-file client (listen, trigger, verify; standard library only), with this server's
    root and the sandbox scenarios written in: `curl -O <root>/training/pcc.py`. It holds no secret."""
    return Response(
        snippets.client_source(_root().url, trigger.table()),
        mimetype="text/x-python",
        headers={"Content-Disposition": 'inline; filename="pcc.py"'},
    )


@routes.get("/training/me/progress", endpoint="training_me_live")
def training_me_live():
    """The trainee page's poll: 204 while nothing changed, else each exercise's status (out of band); 410
    once the membership the page showed is gone (the class was deleted, with the trainee's workspace), so
    the page stops asking and says so. Removed from the class by its trainer (the class and the workspace are
    still there), or the class archived since the page showed it open, it answers HX-Refresh: the page reloads
    and says that."""
    context = _me_context()
    if context["member"] is None:
        if context["removed_from"]:  # the page reloads to say so (its trainer removed this row)
            return "", 200, {"HX-Refresh": "true"}
        return "", 410
    if _archived_since_shown(
        context["cohort"]
    ):  # the page reloads to say so, and what becomes of the workspace
        return "", 200, {"HX-Refresh": "true"}
    seen = request.args.get("pulse")
    if seen and seen == context["pulse"]:
        return "", 204
    return render_template("console/training/_progress.html", oob=True, **context)


@routes.post("/training/me/miss-webhook", endpoint="training_miss_webhook", no_create=True)
def training_miss_webhook():
    """Exercise 5's setup: run a switch headlessly whose webhooks skip the trainee's own endpoints."""
    workspace = g.console_workspace
    if cohorts.membership(workspace.id) is None:
        abort(404)
    if holds.recovered(workspace):  # done stays done (the page no longer offers the button)
        return redirect(url_for("console.training_me") + "#exercise-missed_webhook")
    scenario = scenarios.get(MISSED_SCENARIO)
    client = api_client(workspace)
    created = client.call("POST", "/link_tokens", body=scenario.token_body(), step="training")
    data = (response_json(created) or {}).get("data") or {}
    if created.status != 200 or not data.get("id"):
        return render_template(
            "console/shared/error.html",
            title="Could not start the switch",
            message=f"The API answered {created.status}.",
        ), 502
    linktokens.remember(workspace.id, data["id"], data["token"], "training")
    holds.hold(workspace, data["id"])
    db.session.commit()
    client.call(
        "POST", f"/sandbox/link_tokens/{data['id']}/complete", body=scenario.completion, step="training"
    )
    return redirect(url_for("console.training_me") + "#exercise-missed_webhook")
