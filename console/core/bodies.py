"""Request bodies declared once, as pydantic models: the same declaration validates and documents.

A body model subclasses `RequestModel` and builds its fields from the types here. Each type is a
`Field` (the constraints the OpenAPI document shows: maxLength, pattern, enum, maxItems, ...) plus a
guard that runs first and fails with this API's own message ("must be a string", "must be exactly 9
digits", ...), so pydantic's constraint never has to speak. `validate(model, data)` turns every
failure into a `FieldError` named by its JSON path (`allocation.targets[0].routing_number`) and raises
one `ValidationFailed`, so every bad field is reported at once.

Strings refuse NUL (PostgreSQL cannot store it; SQLite refuses it too, for one behaviour) and have a
maximum length; arrays have a maximum number of items; unknown fields are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema, models_json_schema
from pydantic_core import InitErrorDetails, PydanticCustomError

from console.core.errors import FieldError, ValidationFailed
from console.core.timeutil import parse_datetime

Check = Callable[[Any], str | None]
M = TypeVar("M", bound=BaseModel)

NOT_A_STRING = "must be a string"
NUL_MESSAGE = "must not contain NUL characters (\\u0000)"
# JSON allows "\ud800" on its own; no database can store it.
UNPAIRED_SURROGATE = "must be valid Unicode text (no unpaired surrogate such as \\ud800)"
# Validation context key: unknown fields counted but left out of validation (see _few_unknown_fields).
UNREPORTED = "unreported_fields"
# A field name echoes the client's key; an absurdly long key is cut so the error stays small.
MAX_NAME_PART = 100

# pydantic's own error types, in this API's words (guards produce most messages themselves).
MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "string_type": NOT_A_STRING,
    "string_unicode": UNPAIRED_SURROGATE,
    "int_type": "must be an integer",
    "bool_type": "must be a boolean",
    "float_type": "must be a number",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
}


def _is_utf8(value: str) -> bool:
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def refusal(message: str) -> PydanticCustomError:
    """A validation error carrying our exact message (braces in it are not a template)."""
    return PydanticCustomError("field", "{message}", {"message": message})


def field_error(loc: tuple[str | int, ...], message: str, value: Any = None) -> InitErrorDetails:
    """One error at a path relative to the model being validated, for cross-field rules."""
    return InitErrorDetails(type=refusal(message), loc=loc, input=value)


def refuse(errors: Sequence[InitErrorDetails], title: str = "request") -> None:
    """Raise cross-field errors from a model validator; pydantic merges them with the field errors."""
    if errors:
        raise ValidationError.from_exception_data(title, list(errors))


def guarded(check: Check, clean: Callable[[Any], Any] | None = None) -> BeforeValidator:
    """A validator that runs before the type and its constraints, failing with `check`'s message."""

    def run(value: Any) -> Any:
        message = check(value)
        if message is not None:
            raise refusal(message)
        return clean(value) if clean is not None else value

    return BeforeValidator(run)


def _init_details(error: dict[str, Any]) -> InitErrorDetails:
    """A reported error as input for a new ValidationError (to merge it with more)."""
    if error["type"] == "field":
        return field_error(error["loc"], error["ctx"]["message"], error.get("input"))
    details = InitErrorDetails(type=error["type"], loc=error["loc"], input=error.get("input"))
    if error.get("ctx"):
        details["ctx"] = error["ctx"]
    return details


def _few_unknown_fields(model: type[BaseModel], data: dict[str, Any], context: dict | None) -> dict[str, Any]:
    """`data` with only the first unknown fields that an error can list; the others are counted.

    Reporting 100,000 unknown fields one by one would cost far more than the request is worth.
    """
    known = model.model_fields
    unknown = [key for key in data if key not in known]
    if len(unknown) <= ValidationFailed.MAX_FIELDS or context is None:
        return data
    dropped = set(unknown[ValidationFailed.MAX_FIELDS :])
    context[UNREPORTED] = context.get(UNREPORTED, 0) + len(dropped)
    return {key: value for key, value in data.items() if key not in dropped}


class RequestModel(BaseModel):
    """A JSON request body: strict JSON types, no unknown fields, `null` means "not given".

    `presence_rules` states rules about which fields are given together ("exactly one of ..."); they
    look only at the raw input, so they are reported alongside every other bad field. Rules about
    values that must each be valid first go in an ordinary `model_validator(mode="after")`.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    # Clients send `"field": null` for "not given"; a required field given as null is then "is required".
    null_is_absent: ClassVar[bool] = True

    @classmethod
    def presence_rules(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _given_fields(cls, data: Any, handler: Callable[[Any], Any], info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        if cls.null_is_absent:
            data = {key: value for key, value in data.items() if value is not None}
        if not all(map(_is_utf8, data)):  # a key like "\ud800" is named with the escape it was sent as
            data = {
                key.encode("utf-8", "backslashreplace").decode("utf-8"): value for key, value in data.items()
            }
        data = _few_unknown_fields(cls, data, info.context)
        broken = cls.presence_rules(data)
        if not broken:
            return handler(data)
        try:
            handler(data)
        except ValidationError as exc:
            broken += [_init_details(e) for e in exc.errors(include_url=False)]
        refuse(broken, cls.__name__)


# Field types -----------------------------------------------------------------------------------


def text(
    max_length: int,
    *,
    check: Check | None = None,
    exact: bool = False,
    clean: Callable[[str], Any] | None = None,
    blank: bool = False,
    pattern: str | None = None,
    description: str | None = None,
    **schema: Any,
) -> Any:
    """A string of at most `max_length` characters without NUL; `check` adds a precise rule.

    `exact`: `check` describes the whole format (e.g. "must be exactly 9 digits") and speaks first;
    otherwise length and emptiness are checked before `check` runs, which bounds its work.
    """

    def rule(value: Any) -> str | None:
        if not isinstance(value, str):
            return NOT_A_STRING
        if "\x00" in value:
            return NUL_MESSAGE
        if not _is_utf8(value):
            return UNPAIRED_SURROGATE
        if exact and check is not None:
            return check(value)
        if len(value) > max_length:
            return f"must be at most {max_length} characters"
        if not blank and not value.strip():
            return "must not be empty"
        return check(value) if check is not None else None

    field = Field(
        max_length=max_length,
        min_length=None if blank or exact else 1,
        pattern=pattern,
        description=description,
        json_schema_extra=schema or None,
    )
    return Annotated[str, field, guarded(rule, clean)]


def one_of(values: Iterable[str], *, message: str | Callable[[Any], str] | None = None, **field: Any) -> Any:
    """One of a fixed set of strings (an `enum` in the document)."""
    allowed = tuple(values)
    default = f"must be one of {', '.join(allowed)}"

    def rule(value: Any) -> str | None:
        if isinstance(value, str) and value in allowed:
            return None
        if message is None:
            return default
        return message(value) if callable(message) else message

    return Annotated[Literal[allowed], Field(**field), guarded(rule)]  # type: ignore[valid-type]


def integer(low: int, high: int, *, description: str | None = None) -> Any:
    """A JSON integer (not a boolean, not 1.0) from `low` to `high`."""

    def rule(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        if not low <= value <= high:
            return f"must be between {low} and {high}"
        return None

    return Annotated[int, Field(ge=low, le=high, description=description), guarded(rule)]


MAX_DATETIME_LENGTH = 64
NOT_A_DATETIME = "must be an ISO 8601 datetime, e.g. 2024-01-31T12:00:00Z"


def moment(*, description: str | None = None) -> Any:
    """An ISO 8601 datetime string (no offset means UTC), given to the model as an aware UTC datetime."""

    def rule(value: Any) -> str | None:
        if not isinstance(value, str):
            return NOT_A_STRING
        if "\x00" in value:
            return NUL_MESSAGE
        if len(value) > MAX_DATETIME_LENGTH:
            return f"must be at most {MAX_DATETIME_LENGTH} characters"
        try:
            parse_datetime(value)
        except ValueError:
            return NOT_A_DATETIME
        return None

    field = Field(description=description, json_schema_extra={"maxLength": MAX_DATETIME_LENGTH})
    return Annotated[datetime, field, guarded(rule, parse_datetime)]


def boolean(description: str | None = None) -> Any:
    return Annotated[bool, Field(description=description)]


def array(
    item: Any,
    *,
    max_items: int,
    not_a_list: str = "must be a non-empty array",
    description: str | None = None,
) -> Any:
    """A non-empty array of at most `max_items`; the count is checked before any item is looked at."""

    def rule(value: Any) -> str | None:
        if not isinstance(value, list) or not value:
            return not_a_list
        if len(value) > max_items:
            return f"must have at most {max_items} items"
        return None

    return Annotated[
        list[item], Field(min_length=1, max_length=max_items, description=description), guarded(rule)
    ]


# Validation --------------------------------------------------------------------------------------


def json_path(loc: Sequence[str | int]) -> str:
    """`("allocation", "targets", 0, "type")` -> `allocation.targets[0].type`."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        name = part if len(part) <= MAX_NAME_PART else part[:MAX_NAME_PART] + "…"
        path += f".{name}" if path else name
    return path


def _message(error: dict[str, Any]) -> str:
    if error["type"] == "field":
        return error["ctx"]["message"]
    return MESSAGES.get(error["type"]) or error["msg"]


def field_errors(exc: ValidationError) -> tuple[list[FieldError], int]:
    """The first field errors of a pydantic failure (in this API's words) and how many there are."""
    errors = exc.errors(include_url=False, include_input=False, include_context=True)
    shown = [FieldError(json_path(e["loc"]), _message(e)) for e in errors[: ValidationFailed.MAX_FIELDS]]
    return shown, exc.error_count()


def validate(
    model: type[M],
    data: Any,
    *,
    context: dict | None = None,
    message: Callable[[list[FieldError]], str | None] | None = None,
) -> M:
    """The body as `model`, or ValidationFailed naming every bad field (the first 50 of them).

    `message(fields)` may word the error's message for the fields shown (None: the usual one).
    """
    context = dict(context or {})
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        shown, total = field_errors(exc)
        total += context.get(UNREPORTED, 0)
        raise ValidationFailed(shown, message(shown) if message else None, total=total) from None


# OpenAPI -----------------------------------------------------------------------------------------


class _DocumentSchema(GenerateJsonSchema):
    """JSON Schema for the OpenAPI document: no generated titles, no `default: null` noise."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: Any) -> dict[str, Any]:
        result = super().model_schema(schema)
        result.pop("title", None)
        return result

    def nullable_schema(self, schema: Any) -> dict[str, Any]:
        result = super().nullable_schema(schema)
        inner = result.get("anyOf", [{}])[0]
        if "description" in inner:  # where a reader looks: beside the field, not inside a branch
            result = {"description": inner.pop("description"), **result}
        return result

    def default_schema(self, schema: Any) -> dict[str, Any]:
        result = super().default_schema(schema)
        if result.get("default", ...) is None:
            del result["default"]
        return result


def openapi_schemas(models: Iterable[type[BaseModel]], ref_prefix: str = "#/components/schemas/") -> dict:
    """Component schemas of `models` and every model they nest, named by class, `$ref`s into components."""
    _, document = models_json_schema(
        [(model, "validation") for model in models],
        ref_template=ref_prefix + "{model}",
        schema_generator=_DocumentSchema,
    )
    return document.get("$defs", {})
