"""The API reference page's data: the served OpenAPI document, grouped by tag, and its "try it" calls."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from flask import current_app
from markupsafe import Markup, escape
from werkzeug.test import Client

from console.modes import URL_PREFIXES

OPENAPI_PATH = URL_PREFIXES["sandbox"] + "/v1/openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class BodyField:
    name: str
    type: (
        str  # as a person reads it: "string (uuid), or null", "array of one of: a, b", "LinkTokenAllocation"
    )
    required: bool  # (a nested field's: within its parent, when the parent is given)
    description: str
    # Where it sits: "" at the body's top level, else its parent's path as the API's errors name it
    # (`allocation.`, `allocation.targets[].`), so `allocation.targets[0].routing_number` reads off the table.
    parent: str = ""

    @property
    def path(self) -> str:
        return self.parent + self.name


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
    # The body's fields and the documented answers: the page showed parameters only, so what a POST takes was
    # learnt from its 400s. A field holding a referenced schema (`allocation`: `LinkTokenAllocation`) is followed
    # by that schema's fields, so what goes in it is on the page, not only its schema's name.
    body_fields: tuple[BodyField, ...] = ()
    body_description: str = ""
    responses: tuple[tuple[str, str], ...] = ()

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
                        {"name": p["name"], "in": p.get("in", ""), "description": _parameter_description(p)}
                        for p in op.get("parameters", [])
                        if isinstance(p, dict) and "name" in p
                    ],
                    anchor,
                    "requestBody" in op,
                    _body_example(op.get("requestBody")),
                    *_body(doc, op.get("requestBody")),
                    tuple(
                        (str(code), (answer or {}).get("description", "") if isinstance(answer, dict) else "")
                        for code, answer in (op.get("responses") or {}).items()
                    ),
                )
            )
    return list(groups.items())


def _parameter_description(parameter: dict) -> str:
    """Its description; for an undescribed id in the path (`webhook_id`), what it names ("The webhook's id."):
    the page showed an empty Description cell for every one of them."""
    description = parameter.get("description") or ""
    name = str(parameter["name"])
    if not description and parameter.get("in") == "path" and name.endswith("_id") and len(name) > 3:
        return f"The {name[:-3].replace('_', ' ')}'s id."
    return description


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


def _resolve(doc: dict[str, Any], schema: Any) -> Any:
    """A local `$ref` (`#/components/schemas/Name`) resolved once; anything else as it is."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/"):
        node: Any = doc
        for part in schema["$ref"][2:].split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else schema
    return schema


def type_of(schema: Any) -> str:
    """A schema's type in words, one level deep (a referenced schema is named, not expanded)."""
    if not isinstance(schema, dict):
        return ""
    if isinstance(schema.get("$ref"), str):
        return schema["$ref"].rsplit("/", 1)[-1]
    if "enum" in schema:
        return "one of: " + ", ".join(str(v) for v in schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        if isinstance(schema.get(combinator), list):
            kinds = [
                type_of(s)
                for s in schema[combinator]
                if not (isinstance(s, dict) and s.get("type") == "null")
            ]
            nullable = len(kinds) < len(schema[combinator])
            return " or ".join(k for k in kinds if k) + (", or null" if nullable else "")
    kind = schema.get("type", "")
    if kind == "array":
        return f"array of {type_of(schema.get('items')) or 'any'}"
    if isinstance(kind, list):
        kind = " or ".join(kind)
    return f"{kind} ({schema['format']})" if schema.get("format") else str(kind)


# How deep a body's referenced schemas are opened (`allocation.targets[].routing_number` is 2): enough for every
# body the API takes, and a bound for a document whose schemas refer to each other.
MAX_NESTING = 3


def _body(doc: dict[str, Any], request_body: Any) -> tuple[tuple[BodyField, ...], str]:
    """The JSON body's fields (required first, then in the document's order, each followed by the fields of the
    schema it holds) and its description."""
    if not isinstance(request_body, dict):
        return (), ""
    media = (request_body.get("content") or {}).get("application/json")
    schema = _resolve(doc, media.get("schema")) if isinstance(media, dict) else None
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return (), ""
    return tuple(_fields(doc, schema, "", ())), schema.get("description", "")


def _fields(
    doc: dict[str, Any], schema: dict[str, Any], parent: str, seen: tuple[str, ...]
) -> list[BodyField]:
    """An object schema's fields, each followed by those of the schema it holds (`seen`: the references opened
    on the way here, never opened again within themselves)."""
    required = set(schema.get("required") or ())
    props = [(name, prop) for name, prop in schema["properties"].items() if isinstance(prop, dict)]
    props.sort(
        key=lambda item: item[0] not in required
    )  # (a stable sort: each group keeps the document's order)
    fields: list[BodyField] = []
    for name, prop in props:
        ref, mark = _held_reference(prop)
        held = _resolve(doc, {"$ref": ref}) if ref else None
        opens = (
            isinstance(held, dict)
            and isinstance(held.get("properties"), dict)
            and ref not in seen
            and len(seen) < MAX_NESTING
        )
        # A field without its own description takes its schema's (`allocation`: LinkTokenAllocation's); not an
        # array's, whose items' schema describes one item.
        own = held.get("description", "") if isinstance(held, dict) and not mark else ""
        description = prop.get("description") or own
        fields.append(BodyField(name, type_of(prop), name in required, description, parent))
        if opens:
            fields.extend(_fields(doc, held, f"{parent}{name}{mark}.", (*seen, ref)))
    return fields


def _held_reference(prop: dict[str, Any]) -> tuple[str | None, str]:
    """The referenced schema a field holds, directly, as the non-null side of an `anyOf`/`oneOf`, or as an
    array's items, and what its fields' paths add after the field's name (`[]` for an array's items)."""
    for candidate, mark in ((prop, ""), (prop.get("items"), "[]")):
        if not isinstance(candidate, dict):
            continue
        if isinstance(candidate.get("$ref"), str):
            return candidate["$ref"], mark
        for combinator in ("anyOf", "oneOf"):
            refs = [
                s["$ref"]
                for s in candidate.get(combinator) or ()
                if isinstance(s, dict) and isinstance(s.get("$ref"), str)
            ]
            if len(refs) == 1:
                return refs[0], mark
    return None, ""


def code_spans(text: str) -> Markup:
    """The document's descriptions are Markdown: its `code` spans as <code>, everything else escaped as text
    (the backticks showed as typed)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no spans, the text as it is
        return Markup(escape(text))
    return Markup("").join(
        Markup("<code>{}</code>").format(part) if i % 2 else escape(part) for i, part in enumerate(parts)
    )


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
