"""JSON text from outside: refused when nested too deep, parsed otherwise (console.core.jsontext)."""

from __future__ import annotations

import json

import pytest

from console.core import jsontext
from console.core.jsontext import MAX_JSON_DEPTH, TooDeep


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("kind", [str, bytes])
def test_the_limit_itself_parses_and_one_level_more_is_refused(kind):
    at_limit, beyond = nested(MAX_JSON_DEPTH), nested(MAX_JSON_DEPTH + 1)
    convert = (lambda t: t.encode()) if kind is bytes else (lambda t: t)
    assert jsontext.loads(convert(at_limit)) == json.loads(at_limit)
    with pytest.raises(TooDeep):
        jsontext.loads(convert(beyond))


def test_many_brackets_side_by_side_are_not_depth():
    # More opening brackets than the limit (so the quick count does not decide), two levels deep.
    wide = json.dumps([{"a": [i]} for i in range(3 * MAX_JSON_DEPTH)])
    assert jsontext.loads(wide)[-1] == {"a": [3 * MAX_JSON_DEPTH - 1]}


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"note": nested(10 * MAX_JSON_DEPTH)})
    assert jsontext.loads(text) == {"note": nested(10 * MAX_JSON_DEPTH)}


def test_deep_nesting_hidden_among_many_brackets_is_still_refused():
    text = "[" + ",".join(["{}"] * (2 * MAX_JSON_DEPTH)) + "," + nested(MAX_JSON_DEPTH) + "]"
    with pytest.raises(TooDeep):
        jsontext.loads(text)
