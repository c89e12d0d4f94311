"""Hostile values in console forms get a message naming the problem."""

from __future__ import annotations


def test_a_try_it_body_nested_too_deep_is_told_so_not_that_it_is_invalid(visitor):
    form = {"method": "POST", "path": "/link_tokens", "mode": "sandbox", "body": "[" * 5000 + "]" * 5000}
    response = visitor.post("/reference/try", form, htmx=True)
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert "more than 32 levels deep" in page and "not valid JSON" not in page
