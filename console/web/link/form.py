"""The Link token form: every request field of the spec, its presets, and form <-> JSON body.

The console sends what the person typed, unvalidated: the API is the one that judges a request,
and its field errors are what the walkthrough shows.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from console.world.seed_data import PLATFORM_IDS, SANDBOX_MATCH_IDENTITIES

JOB_CHOICES = ("direct_deposit_switch", "employment", "income", "identity")
TARGET_TYPES = ("checking", "savings")
TRI_STATE = ("", "true", "false")  # omitted, true, false: the spec shows `false` sent explicitly
MATCHING_FIELDS = (
    ("social_security_number", "Social security number (9 digits)"),
    ("social_security_last_four", "…or its last four digits"),
    ("first_name", "First name"),
    ("last_name", "Last name"),
    ("date_of_birth", "Date of birth (YYYY-MM-DD)"),
    ("mobile_phone_number", "Mobile phone (10 digits)"),
    ("home_address_zip_code", "Home ZIP code (5 digits)"),
    ("email", "Email"),
)
TARGET_SLOTS = 2
DEFAULT_TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "1234567890"}
ORG_NAME = "Acme Neobank"
# The federal benefits preset routes straight to this program (the only job a program does is a switch).
FEDERAL_PROGRAM = "ssa-retirement"


def _new_end_user_id() -> str:
    # Opaque and fresh per run, as the spec asks: no personal data, one per person.
    return "user_" + secrets.token_hex(4)


def _base() -> dict[str, Any]:
    return {
        "org_name": ORG_NAME,
        "end_user_id": _new_end_user_id(),
        "required_jobs": ["direct_deposit_switch"],
        "allocation": {"targets": [dict(DEFAULT_TARGET)]},
    }


def _matching(kind: str) -> dict[str, Any]:
    body = _base()
    body["end_user"] = {"platform_matching": dict(SANDBOX_MATCH_IDENTITIES[kind])}
    return body


def _federal() -> dict[str, Any]:
    body = _base()
    body["required_jobs"] = ["direct_deposit_switch"]
    body["platform_id"] = str(PLATFORM_IDS[FEDERAL_PROGRAM])
    body["disable_direct_deposit_splitting"] = False
    return body


def _direct_platform() -> dict[str, Any]:
    body = _base()
    body["platform_id"] = str(PLATFORM_IDS["paycrest"])
    return body


def _on_demand(account_id: str | None, platform_matching: Mapping[str, str] | None) -> dict[str, Any]:
    # end_user_id carries over from the first connection (spec §8), so it is left out.
    body = _base()
    del body["end_user_id"]
    body["account_id"] = account_id or ""
    if platform_matching:
        body["end_user"] = {"platform_matching": dict(platform_matching)}
    return body


@dataclass(frozen=True)
class Preset:
    key: str
    title: str
    description: str


PRESETS: tuple[Preset, ...] = (
    Preset("standard", "Standard switch", "Search an employer or platform and log in with test credentials."),
    Preset("prime_one", "Prime: one match", "Platform matching finds exactly one platform for the person."),
    Preset("prime_several", "Prime: several matches", "Platform matching offers every matched platform."),
    Preset("prime_none", "Prime: no match", "Nothing matches: Link falls back to the standard search."),
    Preset(
        "federal",
        "Federal benefits",
        "Straight to a benefits program: legal name and a test SSN, no password.",
    ),
    Preset("on_demand", "On-demand update", "A new token for an account you already connected."),
    Preset("direct", "Direct platform routing", "platform_id sends the person straight to Paycrest."),
)
PRESET_KEYS = {p.key for p in PRESETS}


def preset_body(
    key: str, *, account_id: str | None = None, platform_matching: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The request body a preset fills in (unknown keys give the standard switch).

    `account_id` and `platform_matching` are the on-demand update's account and what its platform needs.
    """
    builders = {
        "prime_one": lambda: _matching("one"),
        "prime_several": lambda: _matching("several"),
        "prime_none": lambda: _matching("none"),
        "federal": _federal,
        "direct": _direct_platform,
        "on_demand": lambda: _on_demand(account_id, platform_matching),
    }
    return builders.get(key, _base)()


def _tri(value: Any) -> str:
    return "" if value is None else ("true" if value else "false")


def form_values(body: Mapping[str, Any]) -> dict[str, Any]:
    """Form field values for a request body, so a preset can fill the form."""
    allocation = body.get("allocation") or {}
    targets = list(allocation.get("targets") or [])
    matching = (body.get("end_user") or {}).get("platform_matching")
    values: dict[str, Any] = {
        "org_name": body.get("org_name", ""),
        "end_user_id": body.get("end_user_id", ""),
        "required_jobs": list(body.get("required_jobs") or []),
        "account_id": body.get("account_id", ""),
        "platform_id": body.get("platform_id", ""),
        "employer_id": body.get("employer_id", ""),
        "skip_intro_screen": _tri(body.get("skip_intro_screen")),
        "disable_direct_deposit_splitting": _tri(body.get("disable_direct_deposit_splitting")),
        "amount": str(body.get("amount", "")),
        "allocation_type": allocation.get("type", ""),
        "allocation_value": str(allocation.get("value", "")),
        "pm_enabled": matching is not None,
    }
    for i in range(TARGET_SLOTS):
        target = targets[i] if i < len(targets) else {}
        values[f"target_type_{i}"] = target.get("type", "checking" if i == 0 else "")
        values[f"routing_number_{i}"] = target.get("routing_number", "")
        values[f"account_number_{i}"] = target.get("account_number", "")
    for name, _label in MATCHING_FIELDS:
        values[f"pm_{name}"] = (matching or {}).get(name, "")
    return values


# ASCII digits, at most 18 (any such value fits a 64-bit integer): str.isdigit() also passes "²", and
# int() refuses runs of over 4,300 digits, so both used to end in a 500.
_INTEGER = re.compile(r"-?[0-9]{1,18}")


def _number(text: str) -> Any:
    """An integer when the text is a plain one; otherwise the text, for the API to reject by name."""
    stripped = text.strip()
    return int(stripped) if _INTEGER.fullmatch(stripped) else stripped


def body_from_form(form: Mapping[str, Any], required_jobs: list[str]) -> dict[str, Any]:
    """The JSON body for what the form holds; empty fields are left out."""

    def text(name: str) -> str:
        return str(form.get(name) or "").strip()

    body: dict[str, Any] = {}
    for name in ("org_name", "end_user_id", "account_id", "platform_id", "employer_id"):
        if text(name):
            body[name] = text(name)
    body["required_jobs"] = required_jobs
    targets = []
    for i in range(TARGET_SLOTS):
        routing, account = text(f"routing_number_{i}"), text(f"account_number_{i}")
        if routing or account:
            targets.append(
                {
                    "type": text(f"target_type_{i}") or "checking",
                    "routing_number": routing,
                    "account_number": account,
                }
            )
    allocation: dict[str, Any] = {"targets": targets}
    if text("allocation_type"):
        allocation["type"] = text("allocation_type")
    if text("allocation_value"):
        allocation["value"] = _number(text("allocation_value"))
    body["allocation"] = allocation
    if text("amount"):
        body["amount"] = _number(text("amount"))
    for flag in ("skip_intro_screen", "disable_direct_deposit_splitting"):
        if text(flag) in ("true", "false"):
            body[flag] = text(flag) == "true"
    if form.get("pm_enabled"):
        body["end_user"] = {
            "platform_matching": {
                name: text(f"pm_{name}") for name, _ in MATCHING_FIELDS if text(f"pm_{name}")
            }
        }
    return body


# The API names a field by its JSON path; each maps to the form input that holds it.
_TARGET_FIELD = re.compile(r"^allocation\.targets(?:\[(\d+)\](?:\.(\w+))?)?$")
_TARGET_INPUTS = {"type": "lt-type-{}", "routing_number": "lt-routing-{}", "account_number": "lt-account-{}"}
_PLAIN_INPUTS = {
    **{
        name: f"lt-{name}" for name in ("org_name", "end_user_id", "account_id", "platform_id", "employer_id")
    },
    **{name: f"lt-{name}" for name in ("amount", "skip_intro_screen", "disable_direct_deposit_splitting")},
    "allocation.type": "lt-allocation_type",
    "allocation.value": "lt-allocation_value",
    "allocation": "lt-routing-0",
    "required_jobs": "lt-jobs",
    "end_user": "lt-pm_enabled",
    "end_user.platform_matching": "lt-pm_enabled",
    **{f"end_user.platform_matching.{name}": f"lt-pm-{name}" for name, _ in MATCHING_FIELDS},
}


def field_input(name: str) -> str | None:
    """The id of the form input (or group) a field error's JSON path names, or None when none holds it."""
    if re.fullmatch(r"required_jobs\[\d+\]", name):
        name = "required_jobs"
    if name in _PLAIN_INPUTS:
        return _PLAIN_INPUTS[name]
    target = _TARGET_FIELD.match(name)
    if target:
        index = int(target.group(1) or 0)
        if index < TARGET_SLOTS:
            return _TARGET_INPUTS.get(target.group(2) or "routing_number", "lt-routing-{}").format(index)
    return None
