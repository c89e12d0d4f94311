"""The `breakable` template filter: a long API name or path wraps after its separators, and stays escaped."""

from __future__ import annotations

from console.web.shared.blueprint import _breakable


def test_a_break_opportunity_after_each_separator_and_none_at_the_end():
    assert str(_breakable("direct_deposit_switch.added")) == "direct_<wbr>deposit_<wbr>switch.<wbr>added"
    assert str(_breakable("/v1/a-b/")) == "/<wbr>v1/<wbr>a-<wbr>b/"


def test_the_text_is_escaped_before_the_breaks_are_added():
    assert str(_breakable("<b>_x")) == "&lt;b&gt;_<wbr>x"
