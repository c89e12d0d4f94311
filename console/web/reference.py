"""The API reference page's data: the served OpenAPI document, grouped by tag for reading."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import current_app
from werkzeug.test import Client

from console.modes import URL_PREFIXES

OPENAPI_PATH = URL_PREFIXES["sandbox"] + "/v1/openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    description: str
    parameters: list[dict[str, Any]]
    anchor: str


def document() -> dict[str, Any] | None:
    """The OpenAPI document as the API serves it, read once per app (it only changes with the code)."""
    cache = current_app.extensions.setdefault("console_openapi", {})
    if "doc" not in cache:
        # A public endpoint of this very app: read in-process, there is nothing to show in the request log.
        response = Client(current_app).get(OPENAPI_PATH)
        doc = response.get_json(silent=True) if response.status_code == 200 else None
        response.close()
        if doc is None or "paths" not in doc:
            return None
        cache["doc"] = doc
    return cache["doc"]


def operations_by_tag(doc: dict[str, Any]) -> list[tuple[str, list[Operation]]]:
    """Operations grouped by their first tag, in the document's order."""
    groups: dict[str, list[Operation]] = {}
    for path, item in (doc.get("paths") or {}).items():
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            tag = (op.get("tags") or ["Other"])[0]
            anchor = f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "")
            groups.setdefault(tag, []).append(
                Operation(
                    method.upper(),
                    path,
                    op.get("summary", ""),
                    op.get("description", ""),
                    [
                        {"name": p["name"], "in": p.get("in", ""), "description": p.get("description", "")}
                        for p in op.get("parameters", [])
                        if isinstance(p, dict) and "name" in p
                    ],
                    anchor,
                )
            )
    return list(groups.items())
