"""Cohorts: a trainer's class, its join link, its trainees' workspaces, and their progress grid.

The join token is shared with the room and kept as is; the trainer's secret is returned once and only
its hash is kept (the console holds the cohorts a trainer unlocked in their session, see
console/web/training/views.py). Progress is never stored: it is read from the workspaces each time,
and `pulse` tells a polling page cheaply whether anything it shows could have changed.

Limits, so that no anonymous visitor fills the database: a browser may have created at most
`TRAINING_COHORTS_PER_TRAINER` cohorts that still exist (409 COHORT_LIMIT), and a cohort takes at most
`TRAINING_TRAINEES_PER_COHORT` trainees (409 COHORT_FULL). A trainer archives a class when it is over
(the join link stops, 409 COHORT_ARCHIVED, and the trainees' workspaces are no longer kept: the idle
collector deletes each after `WORKSPACE_IDLE_DAYS` without use) or deletes it at once with every
trainee's workspace.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import re
import secrets
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from flask import current_app
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from console.conformance.models import ACTIVE as RUN_ACTIVE
from console.conformance.models import ConformanceReport, ConformanceRun
from console.core import timeutil
from console.core.errors import FieldError, NotFound, ServiceError, ValidationFailed
from console.core.owners import browser_hash
from console.db.locking import lock_owner, lock_row
from console.extensions import db
from console.jobs.models import Job
from console.keys.models import ApiKey
from console.keys.services import create_key, secret_of
from console.link.models import LinkSession
from console.link_tokens.models import LinkToken
from console.modes import SANDBOX
from console.requestlog.models import RequestLogEntry
from console.training import exercises, snippets
from console.training.models import Cohort, CohortMember, own_call
from console.training.room import STUCK_MINUTES
from console.webhooks.models import Webhook
from console.workspaces.models import Workspace
from console.workspaces.services import clean_name, create_workspace, delete_workspace

DEFAULT_COHORTS_PER_TRAINER = 20
DEFAULT_TRAINEES_PER_COHORT = 60
# How long the same join form, sent again, answers with the membership it made (a double submit, a resent
# POST after a lost answer) rather than being read as someone else taking the name.
JOIN_FORM_TOKEN_REPLAY = timedelta(minutes=10)


class Joined(NamedTuple):
    member: CohortMember
    workspace: Workspace
    # True when this join form had joined already (its second sending): nothing new was made.
    again: bool = False


@dataclass(frozen=True)
class Row:
    member: CohortMember
    results: list[tuple[exercises.Exercise, exercises.Result]]
    # The newest API call of the trainee's own code (not the console's), else when they joined.
    last_activity: datetime | None = None
    # Exercises left and no API call for STUCK_MINUTES: the grid highlights the row.
    stuck: bool = False
    # How long ago `last_activity` was, in words ("just now", "4 min ago", "1 h ago", "2 d ago").
    last_activity_text: str = ""

    @property
    def done(self) -> int:
        return sum(1 for _, result in self.results if result.done)

    @property
    def finished(self) -> bool:
        return self.done == len(self.results)


@dataclass(frozen=True)
class Summary:
    """The class's progress in one line: who finished, how many ticks, who is stuck."""

    trainees: int
    finished: int
    done: int
    total: int
    stuck: int
    per_exercise: dict[str, int]  # exercise key -> trainees who did it

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0

    def line(self) -> str:
        if not self.trainees:
            return "Nobody has joined yet."
        people = "trainee" if self.trainees == 1 else "trainees"
        text = (
            f"{self.trainees} {people} · {self.finished} finished · "
            f"{self.done} of {self.total} exercises done ({self.percent}%)"
        )
        if self.stuck:
            text += f" · {self.stuck} quiet for {STUCK_MINUTES}+ min"
        return text


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def cohorts_per_trainer() -> int:
    return int(current_app.config.get("TRAINING_COHORTS_PER_TRAINER", DEFAULT_COHORTS_PER_TRAINER))


def trainees_per_cohort() -> int:
    return int(current_app.config.get("TRAINING_TRAINEES_PER_COHORT", DEFAULT_TRAINEES_PER_COHORT))


def owned_count(owner: str) -> int:
    """Cohorts this browser created that still exist (archived ones included: delete them to free a place)."""
    return db.session.scalar(select(func.count()).where(Cohort.created_by == browser_hash(owner))) or 0


def create_cohort(name: str, keys: list[str], *, owner: str | None = None) -> tuple[Cohort, str]:
    """A new cohort and its trainer secret (returned only here). The caller commits.

    `owner`: the creating browser's id; one that already has `TRAINING_COHORTS_PER_TRAINER` cohorts is
    refused (409 COHORT_LIMIT).
    """
    if owner is not None:
        limit = cohorts_per_trainer()
        # Held until the caller commits: several creates from one browser at the same moment each counted
        # room for one more (on SQLite `FOR UPDATE` locks nothing) and together passed the cap.
        lock_owner(Cohort, browser_hash(owner))
        if owned_count(owner) >= limit:
            raise ServiceError(
                f"This browser already has {limit:,} classes, the most one trainer may keep on this server. "
                "Delete a class that is over (Delete on its grid) and create the new one again.",
                code="COHORT_LIMIT",
                status_code=409,
            )
    errors = []
    try:
        cleaned = clean_name(name, what="the class")
    except ValidationFailed as exc:
        errors.extend(exc.fields)
    chosen = [key for key in exercises.KEYS if key in keys]
    unknown = [key for key in keys if key not in exercises.BY_KEY]
    if unknown or not chosen:
        errors.append(FieldError("exercises", "Choose at least one exercise of the list."))
    if errors:
        raise ValidationFailed(errors)
    secret = secrets.token_urlsafe(24)
    cohort = Cohort(
        name=cleaned,
        exercises=chosen,
        join_token=secrets.token_urlsafe(18),
        trainer_secret_hash=_hash(secret),
        created_by=browser_hash(owner) if owner is not None else None,
    )
    db.session.add(cohort)
    db.session.flush()
    return cohort, secret


def get_cohort(cohort_id: uuid.UUID | str) -> Cohort:
    try:
        cohort = db.session.get(Cohort, uuid.UUID(str(cohort_id)))
    except ValueError:
        cohort = None
    if cohort is None:
        raise NotFound("No such class.")
    return cohort


def by_join_token(token: str) -> Cohort:
    cohort = db.session.scalars(select(Cohort).where(Cohort.join_token == token)).first() if token else None
    if cohort is None:
        # Most often typed from the projector: the token mixes letters and digits that read alike there.
        raise NotFound(
            "No class has this join link. Typed it from the screen? Check it character by character (l, I and "
            "1, O and 0 look alike, and capitals count) or scan its QR code; else ask your trainer for the "
            "current one."
        )
    return cohort


def trainer_secret_matches(cohort: Cohort, secret: str) -> bool:
    return hmac.compare_digest(cohort.trainer_secret_hash, _hash(secret or ""))


def closed(cohort: Cohort) -> ServiceError | None:
    """Why the cohort takes no one at all (its trainer archived it), or None. The join page says it before
    anyone types a name; being full or busy is decided when someone joins."""
    if cohort.archived_at is None:
        return None
    return ServiceError(
        f"{cohort.name} is over: its trainer archived it, so it takes no new trainees.",
        code="COHORT_ARCHIVED",
        status_code=409,
    )


def new_join_form_token() -> str:
    """A join form's one-time token (its field `join_form_token`): see `join`. Not the join link's token
    (`by_join_token`), which the whole room shares."""
    return secrets.token_urlsafe(18)


def join_form_token_hash(join_form_token: str) -> str:
    """What is kept of a join form token: the member row holds it, the browser's session a prefix of it."""
    return _hash(f"join-form:{join_form_token}")


def earlier_join(cohort: Cohort, join_form_token: str) -> Joined | None:
    """The membership this join form token made already, if its form was sent before, or None.

    Within JOIN_FORM_TOKEN_REPLAY of that join, the form's second sending is answered with the same membership
    (the trainee lands on their page). Later, the form is spent: it is refused by name, never read as a new
    trainee taking a name (the token only ever reached the browser the form was rendered for)."""
    if not join_form_token:
        return None
    found = db.session.execute(
        select(CohortMember, Workspace)
        .join(Workspace, Workspace.id == CohortMember.workspace_id)
        .where(CohortMember.join_form_token_hash == join_form_token_hash(join_form_token))
    ).first()
    if found is None:
        return None
    member, workspace = found
    if member.cohort_id != cohort.id:
        # The hash is unique across classes: this form, sent to another class's address, could only fail on
        # it when written. Refused here, by name, with nothing made.
        raise ValidationFailed(
            [
                FieldError(
                    "join_form_token", "This join form is another class's. Send the form on this page again."
                )
            ]
        )
    if timeutil.utcnow() - _aware(member.joined_at) > JOIN_FORM_TOKEN_REPLAY:
        raise ValidationFailed(
            [
                FieldError(
                    "join_form_token",
                    f"This join form was used already, to join as {member.name}, more than "
                    f"{JOIN_FORM_TOKEN_REPLAY.seconds // 60} minutes ago. Open the join link again.",
                )
            ]
        )
    return Joined(member, workspace, again=True)


def join(
    cohort: Cohort, name: str, join_form_token: str = "", admit: Callable[[], None] | None = None
) -> Joined:
    """A named, kept workspace with a sandbox key for a trainee, in the cohort. The caller commits
    (and registers the console's inbox, as for every console workspace, unless `again`).

    `join_form_token`: the join form's one-time token (`new_join_form_token`). The same form sent twice, even at the
    same moment (a double submit that reached the server twice), joins once: the second sending answers
    with the first's membership (`again`), not a "name already taken" refusal and a second row. Its hash is
    unique, so of two joins racing past the check below only one row is written; the other finds it.

    `admit`: called once the join is known to be a new trainee's, just before anything is created (the
    console's joins-per-minute throttle, which raises RateLimited). A refused name, a class that is full or
    the same form sent again does not count: a room retyping names after clashes must not use up the
    minute's joins of the trainees still to come."""
    again = earlier_join(cohort, join_form_token)
    if again is not None:
        return again
    over = closed(cohort)
    if over is not None:
        raise over
    cleaned = clean_name(name, what="yourself")
    # Lock the cohort row so two joins at the same moment cannot both take the last place (on SQLite too, where
    # `FOR UPDATE` locked nothing and both joins counted room for one).
    lock_row(Cohort, cohort.id)
    again = earlier_join(cohort, join_form_token)  # the other sending held the lock until it committed
    if again is not None:
        return again
    limit = trainees_per_cohort()
    if member_count(cohort) >= limit:
        raise ServiceError(
            f"{cohort.name} is full: it has {limit:,} trainees, the most a class may have on this server. "
            "Ask your trainer.",
            code="COHORT_FULL",
            status_code=409,
        )
    taken = _same_name(cohort, cleaned)
    if taken is not None:
        # The other sending of this very form may have committed since the check above (on SQLite, with no
        # lock, nothing keeps it out): its row, seen here by its name, is this join, not a clash.
        again = earlier_join(cohort, join_form_token)
        if again is not None:
            return again
        raise _name_taken(taken)
    if admit is not None:
        admit()
    workspace = create_workspace(f"{cleaned} · {cohort.name}", kept=True)
    create_key(workspace.id, SANDBOX, "Training")
    member = CohortMember(
        cohort_id=cohort.id,
        workspace_id=workspace.id,
        name=cleaned,
        name_key=name_key(cleaned),
        joined_at=timeutil.utcnow(),
        join_form_token_hash=join_form_token_hash(join_form_token) if join_form_token else None,
    )
    db.session.add(member)
    try:
        db.session.flush()
    except IntegrityError:
        # SQLite reads outside a transaction: another join passed the checks above before it committed, and
        # its row holds this form's hash (the same join, sent twice) or this name (someone else, at the same
        # moment: without the unique name both were written, two identical rows). Nothing of this one is kept.
        db.session.rollback()
        again = earlier_join(cohort, join_form_token)
        if again is not None:
            return again
        taken = _same_name(cohort, cleaned)
        if taken is None:
            raise
        raise _name_taken(taken) from None
    return Joined(member, workspace)


def _name_taken(taken: str) -> ValidationFailed:
    # Two identical rows on the grid and in the export: the trainer could not tell them apart.
    return ValidationFailed(
        [
            FieldError(
                "name",
                f"Someone in this class already joined as {taken}: add an initial or a surname "
                "so that your trainer can tell you apart. If that was you (another browser, or your "
                "cookies were cleared), open your workspace with your sandbox secret instead (below).",
            )
        ]
    )


def start_over(workspace: Workspace) -> Workspace | None:
    """A trainee's fresh start: a new workspace (with its sandbox key) takes the old one's place in the class,
    so the trainer's grid keeps the row and shows its exercises from the start, and the old workspace is
    deleted with all it owns. None when `workspace` is in no class. The caller commits.

    Why: the console's Reset left the class behind (a trainee's workspace is kept, so the browser only left
    it), and joining again under the same name was refused: the trainee was cut off from the room."""
    found = membership(workspace.id)
    if found is None:
        return None
    member, _cohort = found
    # Kept as the old one was: while the class runs, not once it is archived (collected when idle).
    fresh = create_workspace(workspace.name, kept=workspace.kept)
    create_key(fresh.id, SANDBOX, "Training")
    member.workspace_id = fresh.id
    db.session.flush()  # the membership moves before the old workspace, and its cascade, go
    delete_workspace(workspace.id)
    return fresh


def trainee_facts(workspace: Workspace, may_show: Callable[[ApiKey], bool]) -> snippets.Facts:
    """What fills a trainee's snippets: their newest live sandbox secret that `may_show` lets this browser see
    (for their own page only), the held token of exercise 5 and their own newest webhook.

    `may_show`: the console's one rule for which secrets a browser may see (`workspace_session.may_use_secret`).
    A browser that opened the trainee's workspace with a pasted secret is shown that secret, never a newer key
    the trainee made since: the newest one reaches more than the secret it was given, and stays good once the
    trainee revokes the leaked one."""
    keys = db.session.scalars(
        select(ApiKey)
        .where(
            ApiKey.workspace_id == workspace.id,
            ApiKey.mode == SANDBOX,
            ApiKey.revoked_at.is_(None),
            ApiKey.expires_at.is_(None),
        )
        .order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
    )  # at most API_KEYS_PER_MODE: the active keys a workspace may hold in a mode
    key = next((k for k in keys if may_show(k)), None)
    hooks = exercises.own_webhooks(workspace)
    return snippets.Facts(
        secret=secret_of(key) if key is not None else None,
        held_link_token_id=str(workspace.held_link_token_id) if workspace.held_link_token_id else None,
        webhook_id=str(hooks[0].id) if hooks else None,
    )


def member_count(cohort: Cohort) -> int:
    return db.session.scalar(select(func.count()).where(CohortMember.cohort_id == cohort.id)) or 0


def archive(cohort: Cohort) -> None:
    """End the class (the caller commits): the join link stops working and the trainees' workspaces are no
    longer kept, so the idle collector deletes each after WORKSPACE_IDLE_DAYS without a visit or API call.
    The grid, the trainees' pages and the export keep working until then."""
    if cohort.archived_at is not None:
        return
    cohort.archived_at = timeutil.utcnow()
    members_of = select(CohortMember.workspace_id).where(CohortMember.cohort_id == cohort.id)
    db.session.execute(
        update(Workspace)
        .where(Workspace.id.in_(members_of), Workspace.is_demo.is_(False))
        .values(kept=False)
        .execution_options(synchronize_session=False)
    )


def remove_member(member: CohortMember) -> None:
    """Take a trainee's row off the class (the caller commits): a bot that holds the join link, a trainee who
    joined twice, a typo. The seat is free again (the cap counts the members there are) and the row leaves
    every grid at its next poll (`cohort_pulse` reads who the members are).

    The workspace is detached, not deleted: no longer kept, it is collected like a visitor's once unused for
    WORKSPACE_IDLE_DAYS, and its keys work until then (a removed trainee who was a real one keeps what their
    backend uses; a bot's key is of no use to anyone else). Deleting it at once would cut a trainee removed by
    mistake off everything they built. Not a ban: the browser may join again, as a new row, subject to the
    cap and the joins per minute; a bot that keeps coming back is stopped by archiving the class."""
    db.session.execute(
        update(Workspace)
        .where(Workspace.id == member.workspace_id, Workspace.is_demo.is_(False))
        .values(kept=False)
        .execution_options(synchronize_session=False)
    )
    db.session.delete(member)
    db.session.flush()


def delete_cohort(cohort: Cohort) -> int:
    """Delete the cohort, its memberships and every trainee's workspace with all it owns, in the current
    transaction (the caller commits). Returns how many workspaces went."""
    workspace_ids = list(
        db.session.scalars(select(CohortMember.workspace_id).where(CohortMember.cohort_id == cohort.id))
    )
    deleted = sum(1 for ident in workspace_ids if delete_workspace(ident, Workspace.is_demo.is_(False)))
    db.session.execute(CohortMember.__table__.delete().where(CohortMember.cohort_id == cohort.id))
    db.session.delete(cohort)
    db.session.flush()
    return deleted


def _same_name(cohort: Cohort, name: str) -> str | None:
    """A member's name that reads the same as `name` (case, runs of spaces and compatibility forms such as
    fullwidth letters aside: fullwidth "Ada" is "Ada" on the grid), or None."""
    wanted = _read_as(name)
    names = db.session.scalars(select(CohortMember.name).where(CohortMember.cohort_id == cohort.id))
    return next((n for n in names if _read_as(n) == wanted), None)


def _read_as(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def name_key(name: str) -> str:
    """What CohortMember.name_key holds: a fixed-length digest of the name as the grid reads it (NFKC and
    casefold can make a 120-character name longer)."""
    return hashlib.sha256(_read_as(name).encode()).hexdigest()


def membership(workspace_id: uuid.UUID) -> tuple[CohortMember, Cohort] | None:
    row = db.session.execute(
        select(CohortMember, Cohort)
        .join(Cohort, Cohort.id == CohortMember.cohort_id)
        .where(CohortMember.workspace_id == workspace_id)
    ).first()
    return (row[0], row[1]) if row else None


def joined_as(cohort: Cohort, workspace_id: uuid.UUID) -> str | None:
    """The member name a workspace joined `cohort` under, or None. A workspace joins once: a second join
    from the same browser would leave a row on the trainer's grid that no browser answers for."""
    found = membership(workspace_id)
    return found[0].name if found is not None and found[1].id == cohort.id else None


def members(cohort: Cohort) -> list[CohortMember]:
    return list(
        db.session.scalars(
            select(CohortMember)
            .where(CohortMember.cohort_id == cohort.id)
            .order_by(CohortMember.joined_at, CohortMember.id)
        )
    )


def get_member(cohort: Cohort, member_id: str) -> CohortMember:
    try:
        member = db.session.get(CohortMember, uuid.UUID(str(member_id)))
    except ValueError:
        member = None
    if member is None or member.cohort_id != cohort.id:
        raise NotFound("No such trainee in this class.")
    return member


def results(cohort: Cohort, member: CohortMember) -> list[tuple[exercises.Exercise, exercises.Result]]:
    workspace = db.session.get(Workspace, member.workspace_id)
    return exercises.progress(workspace, cohort.exercises)


def last_calls(workspace_ids: list[uuid.UUID]) -> dict[uuid.UUID, datetime]:
    """Each workspace's newest API call of the trainee's own (curl, their backend, pcc.py; real time), from the
    request log. Left out: the console's own calls (a `step` names the action: the inbox registered at joining
    is not the trainee at work) and a listener's polls and delivery results (`models.listener_loop`: one a
    second while `console listen` runs, so a trainee whose listener ran was never "stuck").

    One query, a max per workspace, each read from the partial index `ix_request_log_entries_own_calls`
    (workspace_id, created_at) over exactly those rows: one probe per trainee whatever their log holds."""
    if not workspace_ids:
        return {}
    newest = (
        select(func.max(RequestLogEntry.created_at))
        .where(RequestLogEntry.workspace_id == Workspace.id, own_call())
        .scalar_subquery()
    )
    rows = db.session.execute(select(Workspace.id, newest).where(Workspace.id.in_(list(workspace_ids))))
    return {ident: at for ident, at in rows if at is not None}


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def grid(cohort: Cohort, now: datetime | None = None) -> list[Row]:
    """One row per trainee, in joining order. A row is `stuck` when exercises are left and the trainee's
    workspace made no API call (nor joined) in the last STUCK_MINUTES: on a projector, who needs a visit."""
    now = now or timeutil.utcnow()
    people = members(cohort)
    calls = last_calls([m.workspace_id for m in people])
    rows = []
    for member in people:
        found = results(cohort, member)
        call = calls.get(member.workspace_id)
        moments = [_aware(m) for m in (call, member.joined_at) if m is not None]
        last = max(moments) if moments else None
        unfinished = any(not result.done for _, result in found)
        stuck = unfinished and last is not None and now - last >= timedelta(minutes=STUCK_MINUTES)
        text = ago(last, now) if last is not None else ""
        if text and (call is None or _aware(call) < last):  # the join, not an API call: say so
            text = f"joined {text}"
        rows.append(Row(member, found, last, stuck, text))
    return rows


def ago(moment: datetime, now: datetime) -> str:
    """In the grid's "Last API call" column. Whole hours past the first: "joined 1 h 12 min ago", bold on a
    stuck row (the one the trainer looks for an hour in), ran over the row's Remove button at 1280 px."""
    minutes = int((now - moment).total_seconds() // 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes} min ago"
    if minutes < 24 * 60:
        return f"{minutes // 60} h ago"
    return f"{minutes // (24 * 60)} d ago"


def summary(cohort: Cohort, rows: list[Row]) -> Summary:
    per_exercise = dict.fromkeys(cohort.exercises, 0)
    for row in rows:
        for exercise, result in row.results:
            if result.done:
                per_exercise[exercise.key] = per_exercise.get(exercise.key, 0) + 1
    return Summary(
        trainees=len(rows),
        finished=sum(1 for row in rows if row.finished),
        done=sum(row.done for row in rows),
        total=sum(len(row.results) for row in rows),
        stuck=sum(1 for row in rows if row.stuck),
        per_exercise=per_exercise,
    )


def pulse(workspace_ids: list[uuid.UUID], extra: str = "") -> str:
    """A digest that changes whenever a fact an exercise reads changes in any of these workspaces.

    One SELECT of aggregate subqueries (each on an index led by workspace_id), so a poll that finds
    nothing new costs one small query whatever the class size.
    """
    ids = list(workspace_ids) or [uuid.UUID(int=0)]
    aggregates = [
        select(func.count(), func.max(LinkToken.created_at)).where(LinkToken.workspace_id.in_(ids)),
        select(func.count(LinkSession.embedding_origin), func.max(LinkSession.updated_at)).where(
            LinkSession.workspace_id.in_(ids)
        ),
        select(func.count(), func.max(Webhook.updated_at)).where(Webhook.workspace_id.in_(ids)),
        select(func.count(), func.max(ConformanceReport.ran_at)).where(
            ConformanceReport.workspace_id.in_(ids)
        ),
        # Runs queued or running: exercise 4 says "running…" meanwhile (on the (workspace_id, status) index).
        select(func.count()).where(
            ConformanceRun.workspace_id.in_(ids), ConformanceRun.status.in_(RUN_ACTIVE)
        ),
        select(func.count(), func.max(Job.timestamp)).where(Job.workspace_id.in_(ids)),
        select(
            func.count(Workspace.held_link_token_id), func.count(Workspace.held_link_token_found_at)
        ).where(Workspace.id.in_(ids)),
    ]
    columns = [column for query in aggregates for column in _scalars(query)]
    parts = db.session.execute(select(*columns)).one()
    return hashlib.sha256((repr(tuple(parts)) + extra).encode()).hexdigest()[:16]


def _scalars(query):
    """Each column of a one-row aggregate query as its own scalar subquery."""
    return [query.with_only_columns(column).scalar_subquery() for column in query.selected_columns]


def cohort_pulse(cohort: Cohort, now: datetime | None = None) -> str:
    """The grid's digest: the trainees' facts, who they are, and the minute (the last-activity column and
    the stuck highlight move with time alone, so the grid is redrawn at least once a minute)."""
    ids = list(
        db.session.scalars(select(CohortMember.workspace_id).where(CohortMember.cohort_id == cohort.id))
    )
    minute = (now or timeutil.utcnow()).strftime("%Y-%m-%dT%H:%M")
    return pulse(ids, extra=",".join(str(i) for i in ids) + "|" + minute)


# What makes a spreadsheet read a cell as a formula (or, for "|", a DDE command in older Excel).
FORMULA_STARTS = ("=", "+", "-", "@", "|", "\t", "\r")


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula."""
    return "'" + text if text[:1] in FORMULA_STARTS else text


def export_filename(cohort: Cohort) -> str:
    """`class-<name as lowercase ASCII words>.csv` (a trainer downloads several; named with the word the pages
    use), else with the class's id. A name with the word in it already is not given it twice: "Zoë's class,
    March" is `zoe-s-class-march.csv`, not `class-zoe-s-class-march.csv`."""
    ascii_name = unicodedata.normalize("NFKD", cohort.name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:60].strip("-")
    if not slug:
        return f"class-{cohort.id}.csv"
    return f"{slug}.csv" if "class" in slug.split("-") else f"class-{slug}.csv"


def export_csv(cohort: Cohort) -> str:
    """One row per trainee: name, joined, exercises done and chosen, then each exercise's done (yes/no) and
    reason.

    Starts with a byte-order mark: without one, Excel reads the file as the system's code page and garbles
    names outside ASCII (Numbers, LibreOffice and Google Sheets read it either way).
    """
    chosen = [e for e in exercises.CURRICULUM if e.key in cohort.exercises]
    out = io.StringIO()
    out.write("\ufeff")
    writer = csv.writer(out)
    # `done` and `exercises` are counts in two columns: "3/6" in one cell opened in Excel as a date (3 June).
    header = ["trainee", "joined_at", "done", "exercises"]
    for exercise in chosen:
        header += [exercise.key, f"{exercise.key}_reason"]
    writer.writerow(header)
    for row in grid(cohort):
        line = [_cell(row.member.name), row.member.joined_at.isoformat(), row.done, len(row.results)]
        for _exercise, result in row.results:
            line += ["yes" if result.done else "no", _cell(result.reason)]
        writer.writerow(line)
    return out.getvalue()
