"""An API error's `fields` placed on the console form inputs they name.

The API names each bad field by its JSON path (`allocation.targets[0].routing_number`); a form maps
a path to the id of the input holding it, and paths no input holds are listed above the form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from console.requestlog.models import RequestLogEntry
from console.web.shared.apiclient import response_json


@dataclass(frozen=True)
class FieldErrors:
    placed: dict[str, list[str]] = field(default_factory=dict)  # input id -> "name message" lines
    unplaced: list[tuple[str, str]] = field(default_factory=list)  # (name, message) no input holds

    def __bool__(self) -> bool:
        return bool(self.placed or self.unplaced)

    def on(self, *prefixes: str) -> bool:
        """Whether any input whose id starts with one of the prefixes has an error (to open its section)."""
        return any(input_id.startswith(prefixes) for input_id in self.placed)


def of_response(row: RequestLogEntry | None) -> list[Mapping[str, Any]]:
    """The `error.fields` of a logged 400 answer (empty for anything else)."""
    if row is None or row.status != 400:
        return []
    error = (response_json(row) or {}).get("error")
    fields = error.get("fields") if isinstance(error, dict) else None
    return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else []


def message_of(row: RequestLogEntry | None) -> str:
    """The `error.message` of a logged refusal, or the status when the answer carried none."""
    if row is None:
        return ""
    error = (response_json(row) or {}).get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message else f"HTTP {row.status or 'no response'}"


def place(fields: list[Mapping[str, Any]], input_for: Callable[[str], str | None]) -> FieldErrors:
    """Split field errors into messages per form input id and those no input holds."""
    result = FieldErrors()
    for item in fields:
        name, message = str(item.get("name", "")), str(item.get("message", ""))
        input_id = input_for(name)
        if input_id is None:
            result.unplaced.append((name, message))
        else:
            result.placed.setdefault(input_id, []).append(f"{name} {message}")
    return result


def list_index_removed(name: str) -> str:
    """`enabled_events[2]` -> `enabled_events`: a list's item errors belong to the list's inputs."""
    return re.sub(r"\[\d+\]$", "", name)


# The webhook registration forms' inputs (walkthrough step 2: prefix "wh"; the webhooks page: "wh2"), by the
# API's field name; `_webhook_fields.html` gives the version and events inputs these ids.
WEBHOOK_INPUTS = {"url": "url", "status": "status", "version": "version", "enabled_events": "events"}


def webhook_inputs(prefix: str, *, status: bool = True) -> Callable[[str], str | None]:
    """The input id holding each webhook field in the form whose ids start with `prefix` (`status`: whether
    the form has a status input; an error on a field it lacks is listed above the form)."""

    def input_for(name: str) -> str | None:
        field_name = list_index_removed(name)
        suffix = WEBHOOK_INPUTS.get(field_name) if status or field_name != "status" else None
        return f"{prefix}-{suffix}" if suffix else None

    return input_for
