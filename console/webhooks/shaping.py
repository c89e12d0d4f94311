"""The payload a webhook receives, per its `version`.

Events are stored as of the latest version. From 2023-11-22, `params.action` of a switch may be
absent (the partner gave none), and then so are `allocation.type` and `allocation.value`.
Version 2023-04-18 predates that: such a payload, and any event of a platform-matching (Prime)
flow, cannot be valid for it. We deliver the payload unchanged (inventing an `action` would
mislead the receiver) and flag the delivery with a warning, as the spec says old webhooks do not
deliver valid Prime events and a 2023-11-22 webhook is needed.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from console.versions import PRIME_MIN_VERSION

SWITCH_EVENT = "direct_deposit_switch.added"


@dataclass(frozen=True)
class Shaped:
    payload: dict[str, Any]
    warning: str | None


def _without_orphan_allocation_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The spec's rule: no `allocation.type`/`value` when `action` is absent (defensive copy)."""
    params = payload.get("params")
    if not isinstance(params, dict) or "action" in params:
        return payload
    allocation = params.get("allocation")
    if not isinstance(allocation, dict) or not ({"type", "value"} & allocation.keys()):
        return payload
    shaped = copy.deepcopy(payload)
    shaped["params"]["allocation"].pop("type", None)
    shaped["params"]["allocation"].pop("value", None)
    return shaped


def version_warning(
    event_type: str, payload: dict[str, Any], version: str, via_platform_matching: bool
) -> str | None:
    """Why this event is not valid for a webhook of `version`, or None."""
    if version >= PRIME_MIN_VERSION:
        return None
    if via_platform_matching:
        return (
            f"Not valid for version {version}: platform-matching (Prime) events need a webhook of version "
            f"{PRIME_MIN_VERSION} or later."
        )
    params = payload.get("params")
    if event_type == SWITCH_EVENT and isinstance(params, dict) and "action" not in params:
        return (
            f"Not valid for version {version}: params.action is absent (the partner gave none), which "
            f"only version {PRIME_MIN_VERSION} or later allows."
        )
    return None


def shape(
    event_type: str, payload: dict[str, Any], version: str, via_platform_matching: bool = False
) -> Shaped:
    """The payload sent to a webhook of `version`, and the warning to record if any."""
    shaped = _without_orphan_allocation_fields(payload) if event_type == SWITCH_EVENT else payload
    return Shaped(shaped, version_warning(event_type, payload, version, via_platform_matching))


def body_bytes(event_type: str, event_id: str, payload: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed): `{"event", "event_id", "payload"}` as compact JSON."""
    document = {"event": event_type, "event_id": event_id, "payload": payload}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
