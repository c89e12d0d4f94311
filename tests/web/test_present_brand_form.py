"""The brand form (the start page, a profile's edit page) as a sales engineer fills it in: a new company name
brings its own initials unless initials were typed."""

from __future__ import annotations

import re
from html import unescape

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


def test_a_name_too_long_for_the_stage_in_the_address_is_said_not_cut_silently(visitor):
    """A company name typed into the stage's address (41 characters) was cut to its first 40 without a word:
    the start page says so under the name field, and the stage in its presenter's controls."""
    typed = "Northwind Lending and Savings Association"  # 41 characters
    assert len(typed) == 41
    start = unescape(visitor.get("/present", query_string={"brand": typed}).get_data(as_text=True))
    assert 'aria-describedby="p-brand-cut"' in start
    assert (
        "The address gives a name of 41 characters; the stage shows its first 40: "
        "“Northwind Lending and Savings Associatio”." in " ".join(start.split())
    )
    stage = unescape(
        visitor.get("/present/10-standard-switch", query_string={"brand": typed}).get_data(as_text=True)
    )
    controls = stage.split('aria-label="Presenter controls"', 1)[1].split("</nav>", 1)[0]
    assert 'id="brand-cut"' in controls and "company name of 41 characters" in controls
    # A name that fits, its spaces as typed or not, is not mentioned.
    for fits in ("Acme   Bank", "x" * 40):
        for path in ("/present", "/present/10-standard-switch"):
            page = visitor.get(path, query_string={"brand": fits}).get_data(as_text=True)
            assert "brand-cut" not in page, (path, fits)
