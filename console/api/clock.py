"""The sandbox clock: GET /v1/sandbox/clock, and moving it: POST /v1/sandbox/clock/advance (by an
amount), /jump (to a moment) and /advance_to_next (to the next scheduled item)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any

from flask import jsonify
from pydantic import ConfigDict, Field
from pydantic_core import InitErrorDetails

from console.api.conventions import current_workspace, json_body, sandbox_only
from console.clock import moves
from console.clock import services as clock
from console.core.bodies import MESSAGES, RequestModel, field_error, guarded, validate
from console.core.errors import FieldError
from console.core.routes import Routes
from console.core.timeutil import isoformat, parse_datetime
from console.db.snapshot import read_snapshot
from console.extensions import db
from console.scheduler import agenda

routes = Routes()


def _clock_state(**extra: Any) -> dict:
    workspace = current_workspace()
    return {
        "data": {
            "now": isoformat(clock.now(workspace)),
            "offset_seconds": workspace.clock_offset_seconds,
            **extra,
        }
    }


MAX_UNITS = {
    "seconds": moves.MAX_ADVANCE.total_seconds(),
    "hours": moves.MAX_ADVANCE.total_seconds() / 3600,
    "days": moves.MAX_ADVANCE.days,
    "business_days": moves.MAX_ADVANCE.days,  # the calendar walk refuses what ends past 400 days
}


def _advance_error(unit: str, value: Any) -> str | None:
    if unit == "business_days":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return "must be a positive integer"
    elif (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        return "must be a positive number"
    if value > MAX_UNITS[unit]:
        return f"moves the clock more than {moves.MAX_ADVANCE.days} days"
    return None


def _amount(unit: str) -> Any:
    kind = int if unit == "business_days" else float
    field = Field(default=None, gt=0, le=MAX_UNITS[unit], description=f"How many {unit.replace('_', ' ')}.")
    return Annotated[kind, field, guarded(lambda value: _advance_error(unit, value))]


EXACTLY_ONE_UNIT = f"give exactly one of {', '.join(moves.UNITS)}"


class ClockAdvanceRequest(RequestModel):
    """POST /v1/sandbox/clock/advance: exactly one of the units, a positive amount (at most 400 days)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})
    null_is_absent = False  # `{"seconds": null}` is a bad seconds, not "no unit given"

    seconds: _amount("seconds")
    hours: _amount("hours")
    days: _amount("days")
    business_days: _amount("business_days")

    @classmethod
    def presence_rules(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        given = [unit for unit in moves.UNITS if unit in data]
        if len(given) == 1:
            return []
        if not given and data:
            # `{"minutes": 5}`: the unknown field is the mistake. Listing the four units as bad fields too named
            # fields the caller never sent; the message (advance_clock) says which ones there are.
            return []
        return [field_error((unit,), EXACTLY_ONE_UNIT) for unit in given or moves.UNITS]

    def unit_and_amount(self) -> tuple[str, float]:
        return next((unit, getattr(self, unit)) for unit in moves.UNITS if getattr(self, unit) is not None)


def _moment_error(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if len(value) > 64 or "\x00" in value:
        return "must be an ISO 8601 date and time, e.g. 2026-11-24T14:00:00Z"
    try:
        parse_datetime(value)
    except (ValueError, OverflowError):
        return "must be an ISO 8601 date and time, e.g. 2026-11-24T14:00:00Z"
    return None


Moment = Annotated[
    datetime,
    Field(
        description="ISO 8601 date and time (UTC when no offset is given); later than the workspace clock, "
        f"at most {moves.MAX_ADVANCE.days} days ahead.",
        json_schema_extra={"type": "string", "format": "date-time", "maxLength": 64},
    ),
    guarded(_moment_error, parse_datetime),
]


class ClockJumpRequest(RequestModel):
    """POST /v1/sandbox/clock/jump: the moment to move the workspace clock to (later than its now)."""

    to: Moment


class ClockNextRequest(RequestModel):
    """POST /v1/sandbox/clock/advance_to_next: no field (an empty object, or no body)."""


@routes.get("/sandbox/clock")
@sandbox_only
def get_clock():
    read_snapshot(db.session)  # the clock's offset and what is due on it, one moment
    items = agenda.upcoming(current_workspace(), limit=10)
    return jsonify(_clock_state(next_due=[item.as_dict() for item in items]))


def _advance_message(fields: list[FieldError]) -> str | None:
    """With an unknown field (`minutes`, `weeks`) or no unit or several, the units there are; otherwise the
    usual message."""
    if not any(f.message in (MESSAGES["extra_forbidden"], EXACTLY_ONE_UNIT) for f in fields):
        return None
    names = ", ".join(f.name for f in fields)
    return f"Invalid request parameters: {names}. Give exactly one of {', '.join(moves.UNITS)}."


@routes.post("/sandbox/clock/advance")
@sandbox_only
def advance_clock():
    unit, amount = validate(ClockAdvanceRequest, json_body(), message=_advance_message).unit_and_amount()
    fired = moves.advance_by(current_workspace(), unit, amount)
    return jsonify(_clock_state(fired=fired))


@routes.post("/sandbox/clock/jump")
@sandbox_only
def jump_clock():
    moment = validate(ClockJumpRequest, json_body()).to
    fired = moves.jump_to(current_workspace(), moment)
    return jsonify(_clock_state(fired=fired))


@routes.post("/sandbox/clock/advance_to_next")
@sandbox_only
def advance_clock_to_next():
    validate(ClockNextRequest, json_body())
    item, fired = moves.advance_to_next(current_workspace())
    return jsonify(_clock_state(advanced_to=item.as_dict(), fired=fired))
