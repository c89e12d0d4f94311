"""Credential-less platform matching over the seeded world."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from sqlalchemy.orm import Session

from console.db.base import Base
from console.extensions import db
from console.world.matching import find_people, match_platforms
from console.world.models import WORLD_MODELS
from console.world.seed import seed_world
from console.world.seed_data import PERSON_IDS, SANDBOX_MATCH_EXPECTED, SANDBOX_MATCH_IDENTITIES

DDS = ["direct_deposit_switch"]
ONE, SEVERAL, NONE = (SANDBOX_MATCH_IDENTITIES[k] for k in ("one", "several", "none"))


@pytest.fixture(scope="module")
def world_session() -> Iterator[Session]:
    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = "sqlite://"
    db.init_app(app)
    with app.app_context():
        Base.metadata.create_all(db.engine, tables=[m.__table__ for m in WORLD_MODELS])
        seed_world(db.session)
        yield db.session
        db.session.remove()


def slugs(session: Session, identity: dict, *, jobs=DDS, amounts: bool = False) -> list[str]:
    return [
        m.platform.slug
        for m in match_platforms(session, identity, required_jobs=jobs, amounts_configured=amounts)
    ]


@pytest.mark.parametrize("case", ["one", "several", "none"])
def test_sandbox_identities_match_as_documented(world_session, case):
    found = slugs(world_session, SANDBOX_MATCH_IDENTITIES[case])
    assert found == list(SANDBOX_MATCH_EXPECTED[case])
    assert len(found) == {"one": 1, "none": 0}.get(case, len(found))
    assert case != "several" or len(found) >= 2


def test_identities_are_complete_link_token_payloads():
    fields = {"social_security_number", "first_name", "last_name", "date_of_birth", "mobile_phone_number",
              "home_address_zip_code", "email"}  # fmt: skip
    assert all(set(identity) == fields for identity in SANDBOX_MATCH_IDENTITIES.values())


def test_results_are_ordered_by_name_and_carry_their_source(world_session):
    matches = match_platforms(world_session, SEVERAL, required_jobs=DDS, amounts_configured=False)
    assert [m.platform.name for m in matches] == sorted(m.platform.name for m in matches)
    for m in matches:
        assert m.employment.status == "active"
        assert m.employment.employer.platform_id == m.platform.id
        assert m.employment.person_id == PERSON_IDS["morgan-castillo"]
        assert m.credential is not None and m.credential.platform_id == m.platform.id
        assert m.credential.person_id == m.employment.person_id


def test_last_four_matches_like_the_full_number(world_session):
    identity = {k: v for k, v in ONE.items() if k != "social_security_number"}
    identity["social_security_last_four"] = ONE["social_security_number"][-4:]
    assert slugs(world_session, identity) == ["harbor-pay"]


def test_full_number_wins_over_last_four(world_session):
    identity = {
        **ONE,
        "social_security_number": "911111111",
        "social_security_last_four": ONE["social_security_number"][-4:],
    }
    assert slugs(world_session, identity) == []


def test_names_are_case_insensitive(world_session):
    identity = {**ONE, "first_name": " JORDAN ", "last_name": "avery"}
    assert slugs(world_session, identity) == ["harbor-pay"]


@pytest.mark.parametrize(
    "change",
    [
        {"date_of_birth": "1988-04-13"},
        {"date_of_birth": "04/12/1988"},
        {"first_name": "Jordana"},
        {"last_name": "Averys"},
        {"social_security_number": "900001009"},
        {"social_security_number": "90000100"},
        {"first_name": ""},
    ],
)
def test_any_identity_field_off_means_no_match(world_session, change):
    assert slugs(world_session, {**ONE, **change}) == []


def test_contact_details_do_not_take_part(world_session):
    identity = {
        **ONE,
        "mobile_phone_number": "2125550199",
        "home_address_zip_code": "10001",
        "email": "x@y.org",
    }
    assert slugs(world_session, identity) == ["harbor-pay"]
    assert slugs(
        world_session, {k: v for k, v in ONE.items() if k not in ("email", "mobile_phone_number")}
    ) == ["harbor-pay"]


def test_inactive_employments_are_excluded(world_session):
    # Jordan Avery once worked at a Paycrest employer; Riley Okafor's jobs have all ended.
    assert len(find_people(world_session, ONE)) == 1
    assert "paycrest" not in slugs(world_session, ONE)
    assert find_people(world_session, NONE) and slugs(world_session, NONE, jobs=[]) == []


def test_required_jobs_filter(world_session):
    assert slugs(world_session, SEVERAL, jobs=[*DDS, "identity"]) == ["ledgerline", "worknest"]
    assert slugs(world_session, SEVERAL, jobs=[]) == ["ledgerline", "summit-staffing", "worknest"]
    assert slugs(world_session, ONE, jobs=["identity"]) == []


def test_amounts_filter(world_session):
    assert slugs(world_session, SEVERAL, amounts=True) == ["summit-staffing", "worknest"]
    assert slugs(world_session, ONE, amounts=True) == []
    matches = match_platforms(world_session, SEVERAL, required_jobs=DDS, amounts_configured=True)
    assert all(m.platform.supports_amounts for m in matches)
