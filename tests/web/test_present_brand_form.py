"""The brand form (the start page, a profile's edit page) as a sales engineer fills it in: a new company name
brings its own initials unless initials were typed."""

from __future__ import annotations

import re

import pytest

from console.presenter import profiles


def initials_field(page: str) -> str:
    found = re.search(r'<input id="p-initials" name="initials" value="([^"]*)"', page)
    assert found, page
    return found.group(1)


def form_as_sent(page: str, **typed) -> dict:
    """What the browser sends when only `typed` fields are changed: the others as the page filled them in."""
    return {"initials": initials_field(page), **typed}


def test_the_start_page_form_with_only_the_name_typed_gives_the_name_its_initials(visitor):
    page = visitor.get("/present").get_data(as_text=True)
    # It was pre-filled with the default's "NL": typing "Acme Bank" alone put "NL" in Acme Bank's logo.
    assert initials_field(page) == ""
    used = visitor.post("/present/brand", form_as_sent(page, brand="Acme Bank"))
    assert used.status_code == 303
    stage = visitor.get(used.headers["Location"].replace("/present?", "/present/10-standard-switch?"))
    assert '<span class="app-logo" aria-hidden="true">AB</span>' in stage.get_data(as_text=True)

    typed = visitor.post("/present/brand", form_as_sent(page, brand="Acme Bank", initials="AC"))
    assert "initials=AC" in typed.headers["Location"]  # initials typed are kept


@pytest.mark.committing
def test_a_profiles_edit_page_with_only_the_name_changed_gives_the_new_name_its_initials(app, visitor):
    saved = visitor.post("/present/profiles", {"brand": "Acme Bank"})
    slug = re.search(r"/present/profiles/([a-z2-7]{8})/saved", saved.headers["Location"]).group(1)
    page = visitor.get(f"/present/profiles/{slug}/edit").get_data(as_text=True)
    assert initials_field(page) == ""
    changed = visitor.post(f"/present/profiles/{slug}", form_as_sent(page, brand="Bayside Credit Union"))
    assert changed.status_code == 303
    with app.app_context():
        assert profiles.get(slug).initials == "BC"
