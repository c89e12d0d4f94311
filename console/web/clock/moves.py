"""The console's clock moves: what a form asks for, the API call that does it, where it would land.

A move is one of the preset buttons, an amount of a unit, a jump to a moment, or "the next scheduled
item". Before moving, the console works out the moment the clock would reach, so it can list the open
Link tokens that would expire on the way (`console.link.expiry.open_tokens_expiring_by`) and ask first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import g

from console.clock import moves
from console.clock import services as clock
from console.clock.business_days import add_business_days
from console.core.timeutil import parse_datetime
from console.scheduler import agenda
from console.web.shared.apiclient import response_json
from console.workspaces.models import Workspace

# The preset buttons: key -> (label, body of POST /v1/sandbox/clock/advance).
PRESETS = {
    "hour": ("+1 hour", {"hours": 1}),
    "business_day": ("+1 business day", {"business_days": 1}),
    "day": ("+24 hours", {"hours": 24}),
    "month": ("+30 days", {"days": 30}),
}
UNIT_LABELS = {"seconds": "seconds", "hours": "hours", "days": "days", "business_days": "business days"}
# Form fields a move carries (repeated in the confirmation form).
FIELDS = ("by", "amount", "unit", "to")


@dataclass(frozen=True)
class Move:
    """A requested clock move: the API call, and where the clock would land (None when unknown)."""

    path: str
    body: dict[str, Any]
    target: datetime | None
    form: dict[str, str] = field(default_factory=dict)  # the fields to resend when confirmed


class FormError(ValueError):
    """A move the form cannot express; `field` names the input to show it on."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


def _target_of(workspace: Workspace, body: dict[str, Any]) -> datetime | None:
    [(unit, amount)] = body.items()
    current = clock.now(workspace)
    try:
        if unit == "business_days":
            return add_business_days(current, int(amount)) if 0 < amount <= moves.MAX_ADVANCE.days else None
        return current + timedelta(seconds=amount * moves.SECONDS_PER[unit])
    except (OverflowError, ValueError):
        return None


def parse(workspace: Workspace, form: Mapping[str, str]) -> Move:
    """The move a clock form asks for (FormError for what the form itself can tell is wrong)."""
    by = form.get("by", "")
    kept = {name: form.get(name, "") for name in FIELDS}
    if by in PRESETS:
        body = dict(PRESETS[by][1])
        return Move("/sandbox/clock/advance", body, _target_of(workspace, body), kept)
    if by == "amount":
        unit = form.get("unit", "")
        if unit not in UNIT_LABELS:
            raise FormError("unit", f"must be one of {', '.join(UNIT_LABELS.values())}")
        text = (form.get("amount") or "").strip()
        try:
            amount: float = int(text) if unit == "business_days" else float(text)
        except ValueError:
            message = "must be a whole number" if unit == "business_days" else "must be a number"
            raise FormError("amount", message) from None
        if amount != amount:  # "nan" parses as a float
            raise FormError("amount", "must be a number")
        if not amount > 0:
            raise FormError("amount", "must be more than 0")
        if amount == float("inf"):  # "1e309", "inf": what the API would refuse as too far
            raise FormError("amount", f"moves the clock more than {moves.MAX_ADVANCE.days} days")
        body = {unit: amount}
        return Move("/sandbox/clock/advance", body, _target_of(workspace, body), kept)
    if by == "jump":
        text = (form.get("to") or "").strip()
        try:
            moment = parse_datetime(text)
        except (ValueError, OverflowError):
            raise FormError("to", "must be a date and time, e.g. 2026-11-24T14:00") from None
        # isoformat, not strftime: "%Y" does not pad years before 1000, and the API refuses "1-01-01".
        iso = moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
        return Move("/sandbox/clock/jump", {"to": iso}, moment, kept)
    if by == "next":
        target = agenda.next_due_at(workspace, after=clock.now(workspace))
        return Move("/sandbox/clock/advance_to_next", {}, target, kept)
    raise FormError("by", "is not a clock move")


def move_context(advance=None, confirm=None, form_error=None, form=None) -> dict:
    """What the clock controls and their result box need (see _clock_controls.html, _fired.html)."""
    answer = (response_json(advance.row) or {}) if advance is not None else {}
    fired = (answer.get("data") or {}).get("fired", []) if advance is not None else []
    api_error = (answer.get("error") or {}).get("message") if advance is not None else None
    # Errors beside the input they are about: the form's own, or the fields the API named.
    form_errors = {form_error.field: str(form_error)} if form_error is not None else {}
    for bad in (answer.get("error") or {}).get("fields") or []:
        form_errors["to" if bad.get("name") == "to" else "amount"] = bad.get("message", "")
    return {
        "presets": PRESETS,
        "units": UNIT_LABELS,
        "advance": advance,
        "fired": fired,
        "api_error": api_error,
        "confirm": confirm,
        "form_errors": form_errors,
        "form": form or {},
        "next_item": _next_item(),
        "jump_default": (clock.now(g.console_workspace) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
        "advanced_to": (answer.get("data") or {}).get("advanced_to") if advance is not None else None,
    }


def _next_item() -> agenda.Item | None:
    workspace = g.console_workspace
    if not workspace.id:
        return None
    return next(iter(agenda.upcoming(workspace, limit=1, after=clock.now(workspace))), None)
