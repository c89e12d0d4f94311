"""The errors services raise; the API turns each into one JSON error body.

Every error carries a `type` (a broad category), a `code` (the precise reason) and
a human message. Validation errors also list every bad field by JSON path.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    name: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "message": self.message}


class ServiceError(Exception):
    status_code = 400
    type = "INVALID_REQUEST_PARAMETERS"
    code = "INVALID_REQUEST"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        fields: list[FieldError] | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.fields = list(fields or [])
        if code is not None:
            self.code = code
        if status_code is not None:
            self.status_code = status_code


class ValidationFailed(ServiceError):
    """One or more request fields are invalid; `fields` names each of them, up to MAX_FIELDS.

    Past MAX_FIELDS the error keeps the first ones and its message says how many more there are
    (`total` counts them all when the caller stopped collecting early), so a body of 100,000 bad
    items still gets a small, fast answer.
    """

    code = "INVALID_FIELDS"
    MAX_FIELDS = 50

    def __init__(
        self,
        fields: list[FieldError],
        message: str | None = None,
        *,
        code: str | None = None,
        total: int | None = None,
    ):
        total = max(total or 0, len(fields))
        shown = [_clipped(f) for f in fields[: self.MAX_FIELDS]]
        self.omitted = total - len(shown)
        more = f" and {self.omitted:,} more" if self.omitted else ""
        if message is None:
            message = f"Invalid request parameters: {', '.join(f.name for f in shown)}{more}."
        elif more:
            message = f"{message} ({len(shown)} fields listed{more}.)"
        super().__init__(message, code=code, fields=shown)


# A field's name as an error shows it (a body's JSON path, a query or form parameter): the caller wrote it, so
# it is echoed no longer than this. A query string of 6,000-character names was echoed whole, twice each.
MAX_SHOWN_NAME = 200


def shown(value: object, limit: int = 100) -> str:
    """A value the caller sent (an id from the path, …) as a message quotes it: its first `limit` characters,
    then `…`. A malformed id was quoted whole: a 60,000-character path came back in the 404."""
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _clipped(field: FieldError) -> FieldError:
    if len(field.name) <= MAX_SHOWN_NAME:
        return field
    return FieldError(field.name[:MAX_SHOWN_NAME] + "…", field.message)


class Unauthorized(ServiceError):
    status_code = 401
    type = "UNAUTHORIZED_REQUEST"
    code = "INVALID_API_SECRET"


class Forbidden(ServiceError):
    status_code = 403
    type = "FORBIDDEN"
    code = "FORBIDDEN"


class NotFound(ServiceError):
    status_code = 404
    type = "RECORD_NOT_FOUND"
    code = "RECORD_NOT_FOUND"


class Conflict(ServiceError):
    status_code = 409
    type = "INVALID_REQUEST_PARAMETERS"
    code = "CONFLICT"


class RateLimited(ServiceError):
    status_code = 429
    type = "RATE_LIMIT_EXCEEDED"
    code = "RATE_LIMIT_EXCEEDED"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServiceUnavailable(ServiceError):
    """A dependency (the database) is saturated or not answering in time; the caller should retry."""

    status_code = 503
    type = "SERVICE_UNAVAILABLE"
    code = "SERVICE_UNAVAILABLE"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
