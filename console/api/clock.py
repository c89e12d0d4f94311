"""The sandbox clock: GET /v1/sandbox/clock and POST /v1/sandbox/clock/advance."""

from __future__ import annotations

import math
from typing import Any

from flask import g, jsonify

from console.api import api
from console.api.conventions import json_body, sandbox_only
from console.clock import services as clock
from console.core.errors import FieldError, ValidationFailed
from console.core.timeutil import isoformat
from console.scheduler.services import upcoming


def _clock_state(**extra: Any) -> dict:
    workspace = g.workspace
    return {
        "data": {
            "now": isoformat(clock.now(workspace)),
            "offset_seconds": workspace.clock_offset_seconds,
            **extra,
        }
    }


def _advance_amount(body: dict) -> tuple[str, float]:
    """The one unit and positive amount of an advance request, or a 400 naming the bad fields."""
    given = [unit for unit in clock.UNITS if unit in body]
    unknown = sorted(set(body) - set(clock.UNITS))
    errors = [FieldError(name, "is not a field of this request") for name in unknown]
    if len(given) != 1:
        names = given or list(clock.UNITS)
        errors += [FieldError(n, "give exactly one of seconds, hours, days, business_days") for n in names]
        raise ValidationFailed(errors)
    unit, amount = given[0], body[given[0]]
    if unit == "business_days":
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
            errors.append(FieldError(unit, "must be a positive integer"))
    elif (
        isinstance(amount, bool)
        or not isinstance(amount, int | float)
        or not math.isfinite(amount)
        or amount <= 0
    ):
        errors.append(FieldError(unit, "must be a positive number"))
    if errors:
        raise ValidationFailed(errors)
    return unit, amount


@api.get("/sandbox/clock")
@sandbox_only
def get_clock():
    return jsonify(_clock_state(next_due=upcoming(g.workspace.id)))


@api.post("/sandbox/clock/advance")
@sandbox_only
def advance_clock():
    unit, amount = _advance_amount(json_body())
    fired = clock.advance_by(g.workspace, unit, amount)
    return jsonify(_clock_state(fired=fired))
