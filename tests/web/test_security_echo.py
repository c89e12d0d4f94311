"""The console's error page names a bad form field without echoing a long name back whole."""

from __future__ import annotations

from console.core.errors import MAX_SHOWN_NAME


def test_a_nul_in_a_long_form_field_name_is_named_cut_on_the_page(visitor):
    name = "f" * 6000
    response = visitor.post("/keys", {"mode": "sandbox", name: "x\x00"})
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert "f" * MAX_SHOWN_NAME + "…" in page
    assert "f" * (MAX_SHOWN_NAME + 1) not in page
