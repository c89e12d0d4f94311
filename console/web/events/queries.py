"""The live event log: filtered keyset pages of a workspace's events, and each event's deliveries."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import Select, select

from console.events.models import EVENT_TYPES, Event
from console.extensions import db
from console.web.events import deliveries
from console.web.shared import keyset

COLUMNS = (Event.created_at, Event.id)
PAGE_SIZE = 25
FILTER_NAMES = ("type", "link_token_id", "account_id", "end_user_id")


@dataclass(frozen=True)
class Filters:
    """The log's filters as typed, plus what was wrong with them (shown, never raised)."""

    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return any(self.values.values())

    def query_args(self) -> dict[str, str]:
        return {k: v for k, v in self.values.items() if v}


def parse_filters(args: Mapping[str, str]) -> Filters:
    values = {name: (args.get(name) or "").strip() for name in FILTER_NAMES}
    errors = {}
    if values["type"] and values["type"] not in EVENT_TYPES:
        errors["type"] = f"must be one of {', '.join(EVENT_TYPES)}"
    for name in ("link_token_id", "account_id"):
        if values[name]:
            try:
                uuid.UUID(values[name])
            except ValueError:
                # The rows show an id's first 8 characters; the filter needs it whole. Said only of what looks
                # like those 8: "not its first 8" answered any typo ("zz") as if it were one.
                whole = "must be the whole id (36 characters, as an event's details show it)"
                short = re.fullmatch(r"[0-9a-fA-F]{8}", values[name]) is not None
                errors[name] = f"{whole}, not its first 8" if short else whole
    return Filters(values, errors)


def _query(workspace_id: uuid.UUID, mode: str, filters: Filters) -> Select | None:
    """Events matching the filters, or None when a filter cannot match anything."""
    if filters.errors:
        return None
    query = select(Event).where(Event.workspace_id == workspace_id, Event.mode == mode)
    v = filters.values
    if v["type"]:
        query = query.where(Event.type == v["type"])
    if v["link_token_id"]:
        query = query.where(Event.link_token_id == uuid.UUID(v["link_token_id"]))
    if v["account_id"]:
        query = query.where(Event.account_id == uuid.UUID(v["account_id"]))
    if v["end_user_id"]:
        query = query.where(Event.end_user_id == v["end_user_id"])
    return query


def page(
    workspace_id: uuid.UUID, mode: str, filters: Filters, cursor: str | None = None, limit: int = PAGE_SIZE
) -> keyset.Page:
    """Events newest first, older than `cursor`."""
    query = _query(workspace_id, mode, filters)
    if query is None:
        return keyset.Page([], None)
    return keyset.newest_first(query, COLUMNS, cursor=cursor, limit=limit)


def newer(workspace_id: uuid.UUID, mode: str, filters: Filters, after: str | None) -> list[Event]:
    """Events that arrived after the newest one the page shows (live updates)."""
    query = _query(workspace_id, mode, filters)
    return [] if query is None else keyset.newer_than(query, COLUMNS, after)


def live_cursor(events: list[Event], previous: str | None) -> str:
    """The cursor the next poll starts from: the newest event shown, or where we were."""
    if events:
        return keyset.cursor_of(events[0])
    return previous or keyset.encode_start(COLUMNS)


def get(workspace_id: uuid.UUID, event_id: str) -> Event | None:
    """One event of the workspace (any other id, including another workspace's, is None)."""
    try:
        event = db.session.get(Event, uuid.UUID(str(event_id)))
    except ValueError:
        return None
    return event if event is not None and event.workspace_id == workspace_id else None


def statuses(events: list[Event]) -> dict[uuid.UUID, str]:
    """A one-word delivery status per event, for the list's badges."""
    return deliveries.status_by_event([e.id for e in events])


# Badges one poll may check: the first page and a few older ones (the query string stays small).
MAX_SHOWN = 100


def changed_badges(workspace_id: uuid.UUID, shown: list[str]) -> list[tuple[Event, str | None]]:
    """The events among `shown` ("<event id>:<status shown>") whose delivery status is no longer the one
    shown, with their status now; this workspace's events only."""
    seen: dict[uuid.UUID, str] = {}
    for item in shown[:MAX_SHOWN]:
        ident, _, status = item.partition(":")
        try:
            seen[uuid.UUID(ident)] = status
        except ValueError:
            continue
    if not seen:
        return []
    events = list(
        db.session.scalars(select(Event).where(Event.workspace_id == workspace_id, Event.id.in_(list(seen))))
    )
    now = deliveries.status_by_event([e.id for e in events])
    return [(e, now.get(e.id)) for e in events if (now.get(e.id) or "none") != seen[e.id]]
