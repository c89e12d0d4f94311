"""Validating a Link token request, collecting every bad field at once.

Field names in errors are JSON paths (`allocation.targets[0].routing_number`),
so a developer can fix the whole request in one go.
"""

from __future__ import annotations

import uuid
from typing import Any

from console.core import validators as v
from console.core.errors import FieldError

JOB_NAMES = ("direct_deposit_switch", "employment", "income", "identity")
TARGET_TYPES = ("checking", "savings")
KNOWN_FIELDS = {
    "org_name",
    "end_user_id",
    "end_user",
    "allocation",
    "required_jobs",
    "account_id",
    "platform_id",
    "employer_id",
    "skip_intro_screen",
    "amount",
    "disable_direct_deposit_splitting",
}
MATCHING_FIELDS = (
    "social_security_number",
    "social_security_last_four",
    "first_name",
    "last_name",
    "date_of_birth",
    "mobile_phone_number",
    "home_address_zip_code",
    "email",
)
MAX_AMOUNT_CENTS = 10_000_000  # $100,000 per paycheck: anything above is a unit mistake, not a wish.


class Collector:
    """Accumulates field errors while walking a request."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, name: str, message: str | None) -> None:
        if message:
            self.errors.append(FieldError(name, message))


def _string(c: Collector, body: dict, name: str, path: str, *, required: bool, max_len: int = 255) -> Any:
    value = body.get(name)
    if value is None:
        if required:
            c.add(path, "is required")
        return None
    if not isinstance(value, str):
        c.add(path, "must be a string")
        return None
    if not value.strip():
        c.add(path, "must not be empty")
        return None
    if len(value) > max_len:
        c.add(path, f"must be at most {max_len} characters")
        return None
    return value


def _bool(c: Collector, body: dict, name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        c.add(name, "must be a boolean")
        return False
    return value


def _uuid_string(c: Collector, body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        c.add(name, "must be a UUID string")
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        c.add(name, "must be a UUID string")
        return None


def _targets(c: Collector, allocation: Any) -> list[dict]:
    if allocation is None:
        c.add("allocation", "is required")
        return []
    if not isinstance(allocation, dict):
        c.add("allocation", "must be an object")
        return []
    targets = allocation.get("targets")
    if targets is None:
        c.add("allocation.targets", "is required")
        return []
    if not isinstance(targets, list) or not targets:
        c.add("allocation.targets", "must be a non-empty array")
        return []
    if len(targets) > 10:
        c.add("allocation.targets", "must have at most 10 targets")
    cleaned = []
    for i, target in enumerate(targets):
        path = f"allocation.targets[{i}]"
        if not isinstance(target, dict):
            c.add(path, "must be an object")
            continue
        kind = target.get("type")
        if kind not in TARGET_TYPES:
            c.add(f"{path}.type", f"must be one of {', '.join(TARGET_TYPES)}")
        c.add(f"{path}.routing_number", v.aba_routing_error(target.get("routing_number")))
        c.add(f"{path}.account_number", v.account_number_error(target.get("account_number")))
        for extra in sorted(set(target) - {"type", "routing_number", "account_number"}):
            c.add(f"{path}.{extra}", "is not a known field")
        cleaned.append(
            {
                "type": kind,
                "routing_number": target.get("routing_number"),
                "account_number": target.get("account_number"),
            }
        )
    return cleaned


def _int_in_range(c: Collector, value: Any, path: str, low: int, high: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        c.add(path, "must be an integer")
        return None
    if not low <= value <= high:
        c.add(path, f"must be between {low} and {high}")
        return None
    return value


def _preconfigured(c: Collector, body: dict) -> dict | None:
    """`amount` or `allocation.type` + `allocation.value`, as one {type, value} (README decision)."""
    result = None
    if body.get("amount") is not None:
        value = _int_in_range(c, body["amount"], "amount", 1, MAX_AMOUNT_CENTS)
        if value is not None:
            result = {"type": "amount", "value": value}
    allocation = body.get("allocation")
    if isinstance(allocation, dict) and ("type" in allocation or "value" in allocation):
        kind, value = allocation.get("type"), allocation.get("value")
        if kind not in ("amount", "percent"):
            c.add("allocation.type", "must be one of amount, percent")
            return result
        if value is None:
            c.add("allocation.value", f"is required when allocation.type is {kind}")
            return result
        high = MAX_AMOUNT_CENTS if kind == "amount" else 100
        checked = _int_in_range(c, value, "allocation.value", 1, high)
        if checked is None:
            return result
        if result is not None and result != {"type": kind, "value": checked}:
            c.add("amount", "conflicts with allocation.type/allocation.value; give one of them")
            return result
        result = {"type": kind, "value": checked}
    if isinstance(allocation, dict):
        for extra in sorted(set(allocation) - {"targets", "type", "value"}):
            c.add(f"allocation.{extra}", "is not a known field")
    return result


def _platform_matching(c: Collector, end_user: Any) -> dict | None:
    if end_user is None:
        return None
    if not isinstance(end_user, dict):
        c.add("end_user", "must be an object")
        return None
    for extra in sorted(set(end_user) - {"platform_matching"}):
        c.add(f"end_user.{extra}", "is not a known field")
    pm = end_user.get("platform_matching")
    if pm is None:
        return None
    base = "end_user.platform_matching"
    if not isinstance(pm, dict):
        c.add(base, "must be an object")
        return None
    for extra in sorted(set(pm) - set(MATCHING_FIELDS)):
        c.add(f"{base}.{extra}", "is not a known field")
    has_full = pm.get("social_security_number") is not None
    has_four = pm.get("social_security_last_four") is not None
    if has_full and has_four:
        c.add(base, "give either social_security_number or social_security_last_four, not both")
    elif not has_full and not has_four:
        c.add(f"{base}.social_security_number", "is required when social_security_last_four is omitted")
    elif has_full:
        c.add(f"{base}.social_security_number", v.ssn_error(pm["social_security_number"]))
    else:
        c.add(f"{base}.social_security_last_four", v.ssn_last_four_error(pm["social_security_last_four"]))
    _string(c, pm, "first_name", f"{base}.first_name", required=True, max_len=100)
    _string(c, pm, "last_name", f"{base}.last_name", required=True, max_len=100)
    checks = {
        "date_of_birth": v.past_date_error,
        "mobile_phone_number": v.phone_error,
        "home_address_zip_code": v.zip_error,
        "email": v.email_error,
    }
    for name, check in checks.items():
        if pm.get(name) is None:
            c.add(f"{base}.{name}", "is required")
        else:
            c.add(f"{base}.{name}", check(pm[name]))
    return {name: pm[name] for name in MATCHING_FIELDS if pm.get(name) is not None}


def validate_request(body: dict) -> tuple[dict, list[FieldError]]:
    """Check a Link token request's shape and values; return the cleaned request and all errors.

    References to existing records (account, platform, employer) are checked by the
    service, which has the workspace; this function needs no database.
    """
    c = Collector()
    for extra in sorted(set(body) - KNOWN_FIELDS):
        c.add(extra, "is not a known field")
    cleaned: dict[str, Any] = {
        "org_name": _string(c, body, "org_name", "org_name", required=True, max_len=200),
        "end_user_id": _string(c, body, "end_user_id", "end_user_id", required=False),
        "account_id": _uuid_string(c, body, "account_id"),
        "platform_id": _uuid_string(c, body, "platform_id"),
        "employer_id": _uuid_string(c, body, "employer_id"),
        "skip_intro_screen": _bool(c, body, "skip_intro_screen"),
        "disable_direct_deposit_splitting": _bool(c, body, "disable_direct_deposit_splitting"),
    }
    if cleaned["end_user_id"] is not None:
        reason = v.looks_like_personal_data(cleaned["end_user_id"])
        if reason:
            c.add("end_user_id", f"must not contain personal data ({reason}); use your own opaque user id")
    jobs = body.get("required_jobs")
    if jobs is None:
        c.add("required_jobs", "is required")
    elif not isinstance(jobs, list) or not jobs:
        c.add("required_jobs", "must be a non-empty array of job names")
    else:
        for i, job in enumerate(jobs):
            if job not in JOB_NAMES:
                c.add(f"required_jobs[{i}]", f"must be one of {', '.join(JOB_NAMES)}")
        jobs = list(dict.fromkeys(jobs))
    cleaned["required_jobs"] = jobs if isinstance(jobs, list) else []
    cleaned["targets"] = _targets(c, body.get("allocation"))
    cleaned["preconfigured_allocation"] = _preconfigured(c, body)
    cleaned["platform_matching"] = _platform_matching(c, body.get("end_user"))
    if cleaned["platform_matching"] is not None and cleaned["skip_intro_screen"]:
        # Spec rule 1: the intro screen is where the person accepts the terms before matching.
        c.add(
            "skip_intro_screen",
            "must not be true with end_user.platform_matching: the intro screen is where the user "
            "accepts the terms before their data is sent to payroll providers",
        )
    if cleaned["platform_matching"] is not None and (cleaned["platform_id"] or cleaned["employer_id"]):
        c.add(
            "end_user.platform_matching",
            "cannot be combined with platform_id or employer_id, which skip platform matching",
        )
    return cleaned, c.errors
