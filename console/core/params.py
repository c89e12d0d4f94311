"""Request parameters no handler should ever see: the one check the API, the console and Link share.

PostgreSQL text cannot hold NUL (U+0000), so a NUL in any query or path parameter (or a console
form field) would fail deep inside a query as a server error; SQLite would store it and show it
back. Each surface refuses it up front, in its own way (the API's error shape, a console page, a
Link screen), before any view reads the value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from werkzeug.datastructures import MultiDict

from console.core.errors import FieldError

NUL = "\x00"
NUL_MESSAGE = "must not contain NUL (U+0000) characters"


def _pairs(source: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    # A MultiDict (query string, form) yields every value of a repeated parameter only with multi=True.
    return source.items(multi=True) if isinstance(source, MultiDict) else source.items()


def nul_fields(*sources: Mapping[str, Any] | None) -> list[FieldError]:
    """One error per parameter name whose value (any of its values) contains NUL, in order seen."""
    names: list[str] = []
    for source in sources:
        for name, value in _pairs(source or {}):
            if isinstance(value, str) and NUL in value and name not in names:
                names.append(name)
    return [FieldError(name.replace(NUL, "\\u0000"), NUL_MESSAGE) for name in names]
