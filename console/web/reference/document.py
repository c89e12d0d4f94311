"""The API reference page's data: the served OpenAPI document, grouped by tag, and its "try it" calls."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

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
    has_body: bool = False
    # What "Try it" starts the body with: the document's example, indented, else "{}". Sent as it stands, the
    # example is a valid request (the README's first call for POST /link_tokens), where "{}" only drew a 400.
    body_example: str = "{}"

    @property
    def path_params(self) -> list[str]:
        return [p["name"] for p in self.parameters if p["in"] == "path"]

    @property
    def query_params(self) -> list[str]:
        return [p["name"] for p in self.parameters if p["in"] == "query"]


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
                    "requestBody" in op,
                    _body_example(op.get("requestBody")),
                )
            )
    return list(groups.items())


def _body_example(request_body: Any) -> str:
    """The JSON request body's example (`example`, else the first of `examples`), as indented JSON; "{}" without."""
    if not isinstance(request_body, dict):
        return "{}"
    media = (request_body.get("content") or {}).get("application/json")
    if not isinstance(media, dict):
        return "{}"
    if "example" in media:
        example = media["example"]
    else:
        first = next(iter((media.get("examples") or {}).values()), None)
        if not isinstance(first, dict) or "value" not in first:
            return "{}"
        example = first["value"]
    return json.dumps(example, indent=2)


def find_operation(doc: dict[str, Any], method: str, path: str) -> Operation | None:
    """The documented operation `method path` (path as templated in the document), or None."""
    for _tag, ops in operations_by_tag(doc):
        for op in ops:
            if op.method == method.upper() and op.path == path:
                return op
    return None


def fill_path(op: Operation, values: dict[str, str]) -> str | None:
    """The operation's path with each `{name}` replaced by its value, quoted; None if one is missing."""
    path = op.path
    for name in op.path_params:
        value = (values.get(name) or "").strip()
        if not value:
            return None
        path = path.replace("{" + name + "}", quote(value, safe=""))
    return path
