"""A brand colour with a newline after it (`#aabbcc%0A` in a stage URL or the brand form): `re.match` with `$`
took it for a colour, so it was kept with its newline; as a profile's colour (8 characters in a 7-character
column) PostgreSQL refused the insert and the save was a 500."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from console.extensions import db
from console.presenter import brand
from console.presenter.models import PresenterProfile
from tests.web.conftest import Visitor

pytestmark = pytest.mark.both_backends


def test_a_colour_with_a_newline_after_it_is_no_colour():
    assert brand.from_args({"color": "#AABBCC\n"}).color == brand.DEFAULT_COLOR
    assert brand.from_args({"color": "#AABBCC"}).color == "#aabbcc"


def test_saving_a_profile_with_such_a_colour_saves_the_default_one_not_a_500(app):
    presenter = Visitor(app.test_client())
    presenter.get("/present")
    response = presenter.post("/present/profiles", {"brand": "Acme", "color": "#aabbcc\n", "stories": []})
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    with app.app_context():
        assert db.session.scalars(select(PresenterProfile.color)).all() == [brand.DEFAULT_COLOR]
