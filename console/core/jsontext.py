"""JSON text from outside: how deep it nests, measured without parsing, and parsing only what is shallow.

Python's json parser recurses once per nesting level, so 10,000 nested brackets raise RecursionError
(and a document that parses at depth 900 breaks whatever walks it next). Every JSON body this service
reads from a client is measured first by a linear scan over the raw bytes.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

# Deeper than any body of this API needs (the Link token request nests 4 levels), and far below the
# depth at which a recursive parser, validator or encoder would exhaust the stack.
MAX_JSON_DEPTH = 32
# A JSON string literal, escapes included (unrolled so each character is looked at once).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_DEPTH_STEP = [0] * 256
for _byte in b"[{":
    _DEPTH_STEP[_byte] = 1
for _byte in b"]}":
    _DEPTH_STEP[_byte] = -1


class TooDeep(ValueError):
    """The JSON text nests arrays and objects deeper than MAX_JSON_DEPTH."""


def json_depth(raw: bytes | str) -> int:
    """How deep `raw` nests arrays and objects, counted linearly without parsing (strings skipped)."""
    data = raw.encode("utf-8", errors="surrogatepass") if isinstance(raw, str) else raw
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


def _openings(raw: bytes | str) -> int:
    if isinstance(raw, str):
        return raw.count("{") + raw.count("[")
    return raw.count(b"{") + raw.count(b"[")


def loads(raw: bytes | str) -> Any:
    """`json.loads`, refusing text nested deeper than MAX_JSON_DEPTH; raises ValueError (or TooDeep)."""
    # No deeper than its opening brackets, counted in C: most bodies have a few, and skip the scan (which
    # cost twice the parse of a Link token request, on every API POST and again in the request log).
    if _openings(raw) > MAX_JSON_DEPTH and json_depth(raw) > MAX_JSON_DEPTH:
        raise TooDeep(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        return json.loads(raw)
    except RecursionError:  # unreachable after the depth check; kept so no caller ever sees it
        raise TooDeep("JSON nested too deep") from None


# A string parsed from `"\\ud800"` holds this; UTF-8 has no form for it (no page or text column can take it).
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(value: Any) -> Any:
    """Parsed JSON with each lone surrogate in its strings (keys too) as U+FFFD.

    `"\\ud800"` is valid JSON, and parses to a string no page or database can encode (UTF-8 has no form for
    it): what shows or stores parsed text from outside goes through this first."""
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [printable(item) for item in value]
    if isinstance(value, dict):
        return {printable(key): printable(item) for key, item in value.items()}
    return value
