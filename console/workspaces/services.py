"""Creating, finding, keeping and deleting workspaces, noting when one was last used, and sizing them.

Visitor workspaces (an anonymous console visitor's, made by their first action) are capped per client address:
at `VISITOR_WORKSPACES_PER_ADDRESS` (200; 0: no cap) the address's least recently used ones are deleted to make
room, unnamed ones before ones named in the console. Never a refusal, and never another address's workspace: a
bot creating from one address (at the per-address rate, `CONSOLE_CREATES_PER_MINUTE`) churns its own, so the
database holds at most the cap's worth of its workspaces instead of 30 days of them.
"""

from __future__ import annotations

import logging
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from sqlalchemy import and_, func, or_, select, update

from console.core.errors import FieldError, NotFound, ValidationFailed, shown
from console.core.owners import address_hash
from console.core.timeutil import utcnow
from console.extensions import db
from console.workspaces.models import Workspace

DEMO_NAME = "Demo workspace"
MAX_NAME_LENGTH = 120
# last_active_at is written at most this often per workspace: activity is coarse, requests are many.
ACTIVITY_RESOLUTION = timedelta(hours=1)
DEFAULT_VISITOR_WORKSPACES_PER_ADDRESS = 200

log = logging.getLogger(__name__)


def create_workspace(name: str | None = None, *, is_demo: bool = False, kept: bool = True) -> Workspace:
    """A new workspace; `kept=False` (an anonymous console visitor's) lets the idle collector delete it."""
    workspace = Workspace(
        name=(name or "Workspace").strip()[:MAX_NAME_LENGTH] or "Workspace",
        is_demo=is_demo,
        kept=kept,
        last_active_at=utcnow(),
    )
    db.session.add(workspace)
    db.session.flush()
    return workspace


def visitor_workspaces_per_address() -> int:
    return int(
        current_app.config.get("VISITOR_WORKSPACES_PER_ADDRESS", DEFAULT_VISITOR_WORKSPACES_PER_ADDRESS)
    )


def _visitor_workspaces_of(owner: str):
    """The workspaces `owner` (a hashed client address) holds against its cap: those its visitors created and
    that are still theirs (unnamed, or named in the console). A trainee's or the CLI's are not created here."""
    return and_(
        Workspace.created_from == owner,
        Workspace.is_demo.is_(False),
        or_(Workspace.kept.is_(False), Workspace.named_in_console.is_(True)),
    )


def create_visitor_workspace(name: str, address: str | None) -> Workspace:
    """An anonymous console visitor's workspace (collected once idle), created from client `address`, after
    making room for it under that address's cap (`make_room_for_visitor`). The caller commits."""
    owner = address_hash(address) if address else None
    if owner is not None:
        make_room_for_visitor(owner)
    workspace = create_workspace(name, kept=False)
    workspace.created_from = owner
    db.session.flush()
    return workspace


def make_room_for_visitor(owner: str) -> list[uuid.UUID]:
    """Delete the least recently used visitor workspaces of `owner` (a hashed client address) past
    `VISITOR_WORKSPACES_PER_ADDRESS` less one, unnamed before named; return their ids (the caller commits).

    A bot is its own victim; a room behind one address loses only what it used least lately (a Reset
    already deletes the workspace it leaves, so a room's live workspaces are about one per person).
    """
    cap = visitor_workspaces_per_address()
    if cap <= 0:
        return []
    held = db.session.scalar(select(func.count()).where(_visitor_workspaces_of(owner))) or 0
    excess = held - cap + 1
    if excess <= 0:
        return []
    victims = db.session.scalars(
        select(Workspace.id)
        .where(_visitor_workspaces_of(owner))
        .order_by(Workspace.named_in_console, Workspace.last_active_at, Workspace.id)
        .limit(excess)
    ).all()
    deleted = [ws for ws in victims if delete_workspace(ws, _visitor_workspaces_of(owner))]
    if deleted:
        log.info(
            "Deleted %d visitor workspace(s) of one client address to stay within VISITOR_WORKSPACES_PER_ADDRESS",
            len(deleted),
        )
    return deleted


def get_workspace(workspace_id: uuid.UUID | str) -> Workspace:
    try:
        key = uuid.UUID(str(workspace_id))
    except ValueError as exc:
        raise NotFound(f"No workspace with id {shown(workspace_id)}.") from exc
    workspace = db.session.get(Workspace, key)
    if workspace is None:
        raise NotFound(f"No workspace with id {shown(workspace_id)}.")
    return workspace


def demo_workspace() -> Workspace:
    """The demo workspace, created on first use."""
    workspace = db.session.scalars(
        select(Workspace).where(Workspace.is_demo.is_(True)).order_by(Workspace.created_at)
    ).first()
    return workspace or create_workspace(DEMO_NAME, is_demo=True)


def clean_name(name: str | None, field: str = "name", what: str = "the workspace") -> str:
    """A display name trimmed and checked: not empty, not too long, no control characters."""
    cleaned = (name or "").strip()
    if not cleaned:
        raise ValidationFailed([FieldError(field, f"Give {what} a name.")])
    if len(cleaned) > MAX_NAME_LENGTH:
        raise ValidationFailed([FieldError(field, f"At most {MAX_NAME_LENGTH} characters.")])
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in cleaned):
        raise ValidationFailed([FieldError(field, "Letters, digits, spaces and punctuation only.")])
    if not any(unicodedata.category(ch)[0] in "LNPS" for ch in cleaned):
        # Only combining marks and spaces: a name that shows as nothing (a blank row on a trainer's grid).
        raise ValidationFailed([FieldError(field, f"Give {what} a name with at least one letter or digit.")])
    return cleaned


def keep_workspace(workspace: Workspace, name: str) -> Workspace:
    """A visitor names their workspace in the console: it is kept from the short idle collection, and
    collected only after the longer WORKSPACE_NAMED_IDLE_DAYS (a kept workspace, e.g. a trainee's, that
    the visitor renames gets that lifecycle too)."""
    workspace.name = clean_name(name)
    workspace.kept = True
    workspace.named_in_console = True
    db.session.flush()
    return workspace


def note_activity(workspace: Workspace) -> bool:
    """Move `last_active_at` to now when it is older than ACTIVITY_RESOLUTION (the caller commits).

    Returns whether a write was needed, so a busy workspace costs one UPDATE an hour, not one a request.
    """
    now = utcnow()
    last = workspace.last_active_at
    if last is not None and now - last < ACTIVITY_RESOLUTION:
        return False
    db.session.execute(
        update(Workspace)
        .where(
            Workspace.id == workspace.id,
            or_(Workspace.last_active_at.is_(None), Workspace.last_active_at < now - ACTIVITY_RESOLUTION),
        )
        .values(last_active_at=now)
        .execution_options(synchronize_session=False)
    )
    return True


def _owned_tables():
    """Every table holding a workspace's rows, children before parents, and how to find its rows.

    Derived from the metadata, so a new table with a `workspace_id` (or a child of one) is covered
    without touching this function.
    """
    tables = db.metadata.sorted_tables
    scoped = {t.name: t for t in tables if "workspace_id" in t.c and t.name != Workspace.__tablename__}
    for table in reversed(tables):
        if table.name in scoped:
            yield table, lambda ws, t=table: t.c.workspace_id == ws
            continue
        # Rows reached only through an owned parent (job transitions, webhook attempts).
        parents = [fk for fk in table.foreign_keys if fk.column.table.name in scoped]
        if parents:

            def condition(ws, fks=parents):
                return or_(
                    *(
                        fk.parent.in_(select(fk.column).where(fk.column.table.c.workspace_id == ws))
                        for fk in fks
                    )
                )

            yield table, condition


def delete_workspace(workspace_id: uuid.UUID, *only_if) -> bool:
    """Delete the workspace and every row it owns, in the current transaction (the caller commits).

    `only_if` adds conditions on the workspace row, checked by the same guarded UPDATE that locks it
    first, so a workspace that became active (or was named) meanwhile is left alone. False when the
    workspace is gone or a condition does not hold.
    """
    claimed = db.session.execute(
        update(Workspace)
        .where(Workspace.id == workspace_id, *only_if)
        .values(last_active_at=Workspace.last_active_at)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:
        return False
    for table, condition in _owned_tables():
        db.session.execute(table.delete().where(condition(workspace_id)))
    db.session.execute(Workspace.__table__.delete().where(Workspace.id == workspace_id))
    workspace = db.session.identity_map.get(db.session.identity_key(Workspace, workspace_id))
    if workspace is not None:
        db.session.expunge(workspace)
    return True


@dataclass(frozen=True)
class Size:
    """A workspace and how many rows it holds of the tables that grow with its use (`console workspaces list`)."""

    workspace: Workspace
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def largest_workspaces(limit: int = 20) -> list[Size]:
    """The workspaces holding the most rows of the tables nothing caps per workspace (Link tokens,
    accounts, jobs) and of the capped ones (events, request log), most first: where an operator looks for
    the tenant that grew the database. One grouped count per table."""
    from console.accounts.models import Account
    from console.events.models import Event
    from console.jobs.models import Job
    from console.link_tokens.models import LinkToken
    from console.requestlog.models import RequestLogEntry

    counts: dict[uuid.UUID, dict[str, int]] = {}
    for label, model in (
        ("link_tokens", LinkToken),
        ("accounts", Account),
        ("jobs", Job),
        ("events", Event),
        ("request_log", RequestLogEntry),
    ):
        for workspace_id, count in db.session.execute(
            select(model.workspace_id, func.count()).group_by(model.workspace_id)
        ):
            counts.setdefault(workspace_id, {})[label] = count
    ranked = sorted(counts.items(), key=lambda item: -sum(item[1].values()))[:limit]
    workspaces = {
        w.id: w for w in db.session.scalars(select(Workspace).where(Workspace.id.in_([i for i, _ in ranked])))
    }
    return [Size(workspaces[i], c) for i, c in ranked if i in workspaces]
