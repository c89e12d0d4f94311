"""The Link token request body, declared once: it validates requests and is the OpenAPI schema.

Field names in errors are JSON paths (`allocation.targets[0].routing_number`), and every bad field
is reported at once, so a developer can fix the whole request in one go. References to existing
records (account, platform, employer) are checked by the service, which has the workspace.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ConfigDict, model_validator
from pydantic_core import InitErrorDetails

from console.core import validators as v
from console.core.bodies import (
    RequestModel,
    array,
    boolean,
    field_error,
    integer,
    one_of,
    refuse,
    text,
    validate,
)

JOB_NAMES = ("direct_deposit_switch", "employment", "income", "identity")
TARGET_TYPES = ("checking", "savings")
PRESET_TYPES = ("amount", "percent")


def _preset_type_message(value: Any) -> str:
    if isinstance(value, dict):
        # The spec writes the pair as `allocation.type.amount` with `allocation.type.value`: read literally,
        # an object. Say how it is sent here (docs/api.md, Link tokens).
        return (
            f"must be a string, one of {', '.join(PRESET_TYPES)}, with the number in allocation.value beside it "
            '(the spec\'s allocation.type.amount and allocation.type.value: {"type": "amount", "value": 5000})'
        )
    return f"must be one of {', '.join(PRESET_TYPES)}"


MAX_AMOUNT_CENTS = 10_000_000  # $100,000 per paycheck: anything above is a unit mistake, not a wish.
MAX_TARGETS = 10
MAX_REQUIRED_JOBS = 10  # four names exist; repeats are tolerated (they collapse), a flood is not


def _uuid_error(value: str) -> str | None:
    try:
        uuid.UUID(value)
    except ValueError:
        return "must be a UUID string"
    return None


def _no_personal_data(value: str) -> str | None:
    reason = v.looks_like_personal_data(value)
    if reason:
        return f"must not contain personal data ({reason}); use your own opaque user id"
    return None


# uuid.UUID also reads "urn:uuid:<36>" (45 characters) and "{<36>}"; the canonical form is kept.
Uuid = text(45, check=_uuid_error, exact=True, clean=lambda value: str(uuid.UUID(value)), format="uuid")
Name = text(100)


class Target(RequestModel):
    """A bank account the paycheck goes to."""

    type: one_of(TARGET_TYPES)
    routing_number: text(
        9, check=v.aba_routing_error, exact=True, pattern="^[0-9]{9}$", description="Passes the ABA checksum."
    )
    account_number: text(17, check=v.account_number_error, exact=True, pattern="^[0-9]{4,17}$")


class LinkTokenAllocation(RequestModel):
    """The target accounts and, optionally, a pre-configured amount (`type` with `value`)."""

    # A null is an absent field here (as the validation reads it): both null or absent, or both given.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"type": {"type": "null"}, "value": {"type": "null"}}},
                {
                    "properties": {"type": {"type": "string"}, "value": {"type": "integer"}},
                    "required": ["type", "value"],
                },
            ]
        }
    )

    targets: array(Target, max_items=MAX_TARGETS)
    type: one_of(PRESET_TYPES, message=_preset_type_message) | None = None
    value: (
        integer(1, MAX_AMOUNT_CENTS, description="Cents for amount, whole percent (1-100) for percent.")
        | None
    ) = None

    @classmethod
    def presence_rules(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        kind = data.get("type")
        if "value" in data and kind is None:
            return [field_error(("type",), f"must be one of {', '.join(PRESET_TYPES)}")]
        if kind in PRESET_TYPES and "value" not in data:
            return [field_error(("value",), f"is required when allocation.type is {kind}")]
        return []

    @model_validator(mode="after")
    def _percent_range(self) -> LinkTokenAllocation:
        if self.type == "percent" and self.value is not None and self.value > 100:
            refuse([field_error(("value",), "must be between 1 and 100", self.value)])
        return self


class PlatformMatching(RequestModel):
    """The person's identity, matched against payroll providers. Exactly one form of SSN."""

    model_config = ConfigDict(
        json_schema_extra={
            # Exactly one given; a null is an absent field here (as the validation reads it).
            "oneOf": [
                {"properties": {name: {"type": "string"}}, "required": [name]}
                for name in ("social_security_number", "social_security_last_four")
            ]
        }
    )

    social_security_number: text(9, check=v.ssn_error, exact=True, pattern="^[0-9]{9}$") | None = None
    social_security_last_four: (
        text(4, check=v.ssn_last_four_error, exact=True, pattern="^[0-9]{4}$") | None
    ) = None
    first_name: Name
    last_name: Name
    date_of_birth: text(10, check=v.past_date_error, exact=True, format="date", description="A past date.")
    mobile_phone_number: text(
        10, check=v.phone_error, exact=True, pattern="^[0-9]{10}$", description="No country code."
    )
    home_address_zip_code: text(5, check=v.zip_error, exact=True, pattern="^[0-9]{5}$")
    email: text(254, check=v.email_error, format="email")

    @classmethod
    def presence_rules(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        full, four = "social_security_number" in data, "social_security_last_four" in data
        if full and four:
            return [
                field_error((), "give either social_security_number or social_security_last_four, not both")
            ]
        if not full and not four:
            return [
                field_error(
                    ("social_security_number",), "is required when social_security_last_four is omitted"
                )
            ]
        return []


class EndUser(RequestModel):
    platform_matching: PlatformMatching | None = None


class LinkTokenRequest(RequestModel):
    """POST /v1/link_tokens. With `end_user.platform_matching`, `skip_intro_screen` must not be true;
    `amount` and `allocation.type`/`value` must agree."""

    org_name: text(200)
    end_user_id: (
        text(255, check=_no_personal_data, description="Your own opaque id; no personal data.") | None
    ) = None
    end_user: EndUser | None = None
    allocation: LinkTokenAllocation
    required_jobs: array(
        one_of(JOB_NAMES), max_items=MAX_REQUIRED_JOBS, not_a_list="must be a non-empty array of job names"
    )
    account_id: Uuid | None = None
    platform_id: Uuid | None = None
    employer_id: Uuid | None = None
    skip_intro_screen: boolean() = False
    amount: integer(1, MAX_AMOUNT_CENTS, description="Pre-configured amount in cents.") | None = None
    disable_direct_deposit_splitting: boolean() = False

    @classmethod
    def presence_rules(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        end_user = data.get("end_user")
        if not isinstance(end_user, dict) or end_user.get("platform_matching") is None:
            return []
        broken = []
        if data.get("skip_intro_screen") is True:
            # Spec rule 1: the intro screen is where the person accepts the terms before matching.
            broken.append(
                field_error(
                    ("skip_intro_screen",),
                    "must not be true with end_user.platform_matching: the intro screen is where the user "
                    "accepts the terms before their data is sent to payroll providers",
                )
            )
        # With platform_id or employer_id too, the spec sends the user straight to that platform with no matching
        # flow: accepted (not a 400), and the matching data is not kept (`platform_matching` below).
        return broken

    @model_validator(mode="after")
    def _one_preset(self) -> LinkTokenRequest:
        preset = (self.allocation.type, self.allocation.value)
        if self.amount is not None and self.allocation.type is not None and preset != ("amount", self.amount):
            conflict = "conflicts with allocation.type/allocation.value; give one of them"
            refuse([field_error(("amount",), conflict, self.amount)])
        return self

    @property
    def preconfigured_allocation(self) -> dict | None:
        """`amount` or `allocation.type` + `allocation.value`, as one {type, value} (docs/api.md, "Decisions where the spec says \"not shown\"")."""
        if self.allocation.type is not None:
            return {"type": self.allocation.type, "value": self.allocation.value}
        if self.amount is not None:
            return {"type": "amount", "value": self.amount}
        return None

    @property
    def platform_matching(self) -> dict | None:
        """The matching data to keep with the token: none when `platform_id` or `employer_id` routes the user
        directly (spec: no platform-matching flow then), so personal data nothing will read is never stored.
        An on-demand update (`account_id`) keeps it: a partner platform's account needs it again."""
        matching = self.end_user.platform_matching if self.end_user else None
        if matching is None or ((self.platform_id or self.employer_id) and not self.account_id):
            return None
        return matching.model_dump(exclude_none=True)


KNOWN_FIELDS = frozenset(LinkTokenRequest.model_fields)
MATCHING_FIELDS = tuple(PlatformMatching.model_fields)


def validate_request(body: Any) -> LinkTokenRequest:
    """The request as a model, or ValidationFailed naming every bad field."""
    return validate(LinkTokenRequest, body)
