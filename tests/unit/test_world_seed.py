"""The seeded world: determinism, idempotence, the documented shape, and the world services."""

from __future__ import annotations

import re
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator

import pytest
from flask import Flask
from sqlalchemy import delete, func, inspect, select
from sqlalchemy.orm import Session

from console.core.errors import ValidationFailed
from console.db.base import Base
from console.extensions import db
from console.world import allocations, services
from console.world.models import (
    WORLD_MODELS,
    Beneficiary,
    Credential,
    DepositAllocation,
    Employer,
    Employment,
    Person,
    Platform,
)
from console.world.seed import seed_world, world_counts
from console.world.seed_data import (
    DEMO_BENEFICIARIES,
    DEMO_PEOPLE,
    JOB_NAMES,
    MFA_METHODS,
    PERSON_IDS,
    PLATFORM_IDS,
    build_world,
)

BENEFITS_NAMES = {
    "Social Security Retirement",
    "Social Security Disability",
    "Social Security Survivor",
    "Supplemental Security Income",
    "VA Disability Compensation",
    "VA Pension",
    "GI Bill Education",
    "Reserve Education Assistance Program",
    "Civil Service Retirement",
    "Railroad Retirement",
}
TARGET = {"type": "checking", "routing_number": "110000000", "account_number": "1234567890"}


def make_app() -> Flask:
    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = "sqlite://"
    db.init_app(app)
    with app.app_context():
        Base.metadata.create_all(db.engine, tables=[m.__table__ for m in WORLD_MODELS])
    return app


def dump(session: Session) -> dict[str, list[dict]]:
    """Every world row as plain data, ordered by id."""
    out = {}
    for model in WORLD_MODELS:
        columns = [c.key for c in inspect(model).column_attrs]
        rows = session.scalars(select(model).order_by(model.id))
        out[model.__tablename__] = [{c: getattr(r, c) for c in columns} for r in rows]
    return out


@pytest.fixture(scope="module")
def world_app() -> Iterator[Flask]:
    app = make_app()
    with app.app_context():
        seed_world(db.session)
        db.session.remove()
    yield app


@pytest.fixture
def world_session(world_app: Flask) -> Iterator[Session]:
    """The seeded session; whatever a test writes is rolled back (services never commit)."""
    with world_app.app_context():
        yield db.session
        db.session.rollback()
        db.session.remove()


def all_of(session: Session, model: type) -> list:
    return list(session.scalars(select(model)))


# --- determinism and idempotence ---------------------------------------------------------------------------


def test_two_fresh_databases_get_identical_rows():
    dumps = []
    for _ in range(2):
        app = make_app()
        with app.app_context():
            inserted = seed_world(db.session)
            assert inserted == {k: len(v) for k, v in vars(build_world()).items()}
            dumps.append(dump(db.session))
            db.session.remove()
    assert dumps[0] == dumps[1]


def test_seeding_again_inserts_nothing_and_repairs_what_is_missing():
    app = make_app()
    with app.app_context():
        seed_world(db.session)
        before = dump(db.session)
        assert set(seed_world(db.session).values()) == {0}
        removed = db.session.execute(delete(Beneficiary).where(Beneficiary.enrolled.is_(False))).rowcount
        db.session.commit()
        assert seed_world(db.session)["beneficiaries"] == removed >= 1
        assert dump(db.session) == before
        db.session.remove()


def test_documented_ids_are_stable():
    # Docs and tests name these literally; a change here means the namespace or a slug changed.
    assert str(PLATFORM_IDS["paycrest"]) == "8e8483e0-5235-5127-93ca-2efa4d35d6dc"
    assert str(PERSON_IDS["jordan-avery"]) == "e560468f-cb8d-5ead-8b25-50e0cc7debeb"


def test_counts(world_session):
    counts = world_counts(world_session)
    assert counts["employers"] >= 30
    assert counts["people"] >= 50
    assert counts["beneficiaries"] >= 15
    assert counts == {k: len(v) for k, v in vars(build_world()).items()}


# --- platforms and employers -------------------------------------------------------------------------------


def test_platforms_cover_the_required_variety(world_session):
    platforms = all_of(world_session, Platform)
    payroll = [p for p in platforms if p.type == "payroll"]
    assert len(payroll) >= 8
    assert {p.slug: p.id for p in platforms} == PLATFORM_IDS
    partners = [p for p in payroll if p.is_partner]
    assert len(partners) >= 2
    for p in platforms:
        assert p.name.endswith(" (Partnership)") == p.is_partner
        assert set(p.supported_jobs) <= set(JOB_NAMES)
        assert set(p.mfa_methods) <= set(MFA_METHODS)
        assert re.fullmatch(r"#[0-9A-F]{6}", p.brand_color)
    assert sum(p.supports_amounts for p in payroll) >= 2
    assert any("direct_deposit_switch" not in p.supported_jobs for p in payroll)
    assert set().union(*(p.mfa_methods for p in payroll)) == set(MFA_METHODS)
    assert len({tuple(p.mfa_methods) for p in payroll}) >= 4


def test_benefits_programs(world_session):
    programs = [p for p in all_of(world_session, Platform) if p.type == "benefits"]
    assert {p.name for p in programs} == BENEFITS_NAMES
    for p in programs:
        assert (p.supported_jobs, p.mfa_methods, p.is_partner, p.supports_amounts) == (
            ["direct_deposit_switch"],
            [],
            False,
            False,
        )


def test_employers_are_spread_over_payroll_platforms(world_session):
    employers = all_of(world_session, Employer)
    assert all(e.platform.type == "payroll" for e in employers)
    per_platform = Counter(e.platform_id for e in employers)
    payroll_ids = {p.id for p in all_of(world_session, Platform) if p.type == "payroll"}
    assert set(per_platform) == payroll_ids
    assert len({e.name for e in employers}) == len(employers)


# --- people, employments, credentials, allocations, beneficiaries -----------------------------------------


def test_people_are_well_formed(world_session):
    people = all_of(world_session, Person)
    assert len({p.ssn for p in people}) == len(people)
    assert len({(p.first_name, p.last_name) for p in people}) == len(people)
    for p in people:
        assert re.fullmatch(r"9\d{8}", p.ssn)
        assert re.fullmatch(r"\d{10}", p.phone)
        assert re.fullmatch(r"\d{5}", p.zip)
        assert re.fullmatch(r"[a-z.]+@example\.com", p.email)
        assert 1 <= len(p.employments) <= 3


def test_employments_mix_active_and_ended(world_session):
    jobs = all_of(world_session, Employment)
    for job in jobs:
        assert job.status in ("active", "inactive")
        assert (job.end_date is None) == (job.status == "active")
        assert job.end_date is None or job.end_date > job.start_date
        assert job.annual_income_cents > 0
        assert job.pay_frequency in ("weekly", "biweekly", "semimonthly", "monthly")
    statuses = defaultdict(set)
    for job in jobs:
        statuses[job.person_id].add(job.status)
    assert sum(s == {"active", "inactive"} for s in statuses.values()) >= 5
    assert sum(s == {"inactive"} for s in statuses.values()) >= 1


def test_one_credential_per_person_and_platform(world_session):
    expected = {(j.person_id, j.employer.platform_id) for j in all_of(world_session, Employment)}
    credentials = all_of(world_session, Credential)
    assert {(c.person_id, c.platform_id) for c in credentials} == expected
    assert len(credentials) == len(expected)
    assert len({(c.platform_id, c.username.lower()) for c in credentials}) == len(credentials)
    for c in credentials:
        assert c.mfa_enabled == (c.mfa_method is not None)
        assert c.mfa_method is None or c.mfa_method in c.platform.mfa_methods
    methods = Counter(c.mfa_method for c in credentials if c.mfa_enabled)
    assert all(methods[m] >= 2 for m in MFA_METHODS)
    assert sum(c.locked for c in credentials) >= 2


def aba_ok(routing: str) -> bool:
    digits = [int(d) for d in routing]
    return len(digits) == 9 and sum(d * w for d, w in zip(digits, (3, 7, 1) * 3, strict=True)) % 10 == 0


def test_baseline_allocations_end_with_one_remainder(world_session):
    rows = defaultdict(list)
    for a in all_of(world_session, DepositAllocation):
        assert a.workspace_id is None and a.mode is None
        assert aba_ok(a.routing_number)
        rows[a.employment_id].append(a)
    assert set(rows) == {j.id for j in all_of(world_session, Employment)}
    kinds = Counter()
    for lines in rows.values():
        lines.sort(key=lambda a: a.priority)
        assert [a.priority for a in lines] == list(range(1, len(lines) + 1))
        assert [a.allocation_type for a in lines].count("remainder") == 1
        assert lines[-1].allocation_type == "remainder" and lines[-1].value is None
        kinds.update(a.allocation_type for a in lines)
    assert kinds["amount"] >= 5 and kinds["percent"] >= 3


def test_beneficiaries(world_session):
    beneficiaries = all_of(world_session, Beneficiary)
    assert all(b.platform.type == "benefits" for b in beneficiaries)
    assert len({b.platform_id for b in beneficiaries}) >= 8
    people_ssns = {p.ssn for p in all_of(world_session, Person)}
    assert sum(b.ssn in people_ssns for b in beneficiaries) >= 2
    assert any(not b.enrolled for b in beneficiaries)


# --- services ----------------------------------------------------------------------------------------------


def test_demo_people_log_in_as_documented(world_session):
    for key, demo in DEMO_PEOPLE.items():
        result = services.find_person_by_credentials(
            demo["platform_id"], demo["username"].upper(), demo["password"], session=world_session
        )
        assert result.person is not None and result.person.id == demo["person_id"], key
        if demo["locked"]:
            assert result.status == services.LOGIN_LOCKED
            continue
        assert result.ok
        assert result.credential.mfa_method == demo["mfa_method"]
        assert result.employments[0].employer_id == demo["employer_id"]
    assert {d["mfa_method"] for d in DEMO_PEOPLE.values()} >= {None, *MFA_METHODS}


def test_login_failures(world_session):
    demo = DEMO_PEOPLE["no_mfa"]
    check = services.find_person_by_credentials
    assert (
        check(demo["platform_id"], demo["username"], "nope", session=world_session).status == "wrong_password"
    )
    assert (
        check(demo["platform_id"], "nobody", demo["password"], session=world_session).status == "unknown_user"
    )
    assert check(
        PLATFORM_IDS["worknest"], demo["username"], demo["password"], session=world_session
    ).status == ("unknown_user")
    assert (
        check("not-a-uuid", demo["username"], demo["password"], session=world_session).status
        == "unknown_user"
    )


def test_list_platforms_filters_and_orders(world_session):
    def names(**kw):
        return [p.name for p in world_session.scalars(services.list_platforms(**kw, session=world_session))]

    every = names()
    assert every == sorted(every)
    assert names(q="PARTNERSHIP") == ["Harbor Pay (Partnership)", "Summit Staffing Payroll (Partnership)"]
    assert "Clockwise HR" not in names(supported_jobs=["direct_deposit_switch"])
    assert set(names(amount_supported=True)) == {
        "Paycrest",
        "Summit Staffing Payroll (Partnership)",
        "WorkNest",
    }
    assert set(names(type="benefits")) == BENEFITS_NAMES
    assert names(q="%") == []


def test_list_employers_and_gets(world_session):
    employers = list(world_session.scalars(services.list_employers("bak")))
    assert [e.name for e in employers] == ["Bluebird Bakery Co."]
    assert services.get_employer(employers[0].id, session=world_session) is employers[0]
    assert services.get_platform(str(PLATFORM_IDS["paycrest"]), session=world_session).name == "Paycrest"
    assert services.get_platform("garbage", session=world_session) is None
    assert services.get_person("casey-nguyen", session=world_session).first_name == "Casey"


def test_search_mixes_employers_and_platforms(world_session):
    hits = services.search("harbor", limit=10, session=world_session)
    assert [(h.kind, h.name) for h in hits] == [("platform", "Harbor Pay (Partnership)")]
    hits = services.search("bay", limit=10, session=world_session)
    assert ("employer", "Bayview Hotels") in [(h.kind, h.name) for h in hits]
    assert hits[0].platform.slug == "harbor-pay"
    first = services.search("", limit=5, session=world_session)
    assert len(first) == 5 and all(h.kind == "platform" and h.platform.type == "payroll" for h in first)
    dds = services.search("", limit=500, required_jobs=["direct_deposit_switch"], session=world_session)
    assert all(h.platform.supports_jobs(["direct_deposit_switch"]) for h in dds)
    assert services.search("social security", limit=10, types=["payroll"], session=world_session) == []
    assert len(services.search("social security", limit=10, session=world_session)) == 3


def test_find_beneficiary(world_session):
    enrolled = DEMO_BENEFICIARIES["enrolled"]
    found = services.find_beneficiary(
        enrolled["program_id"], enrolled["first_name"].upper(), f" {enrolled['last_name']} ", "900-00-2001",
        session=world_session,
    )  # fmt: skip
    assert found is not None and found.enrolled
    missing = DEMO_BENEFICIARIES["not_enrolled"]
    assert not services.find_beneficiary(**{k: v for k, v in missing.items() if k != "program_name"},
                                         session=world_session).enrolled  # fmt: skip
    assert services.find_beneficiary(PLATFORM_IDS["ssi"], "Dolores", "Whitaker", "900002001",
                                     session=world_session) is None  # fmt: skip


def employment_of(session: Session, person_slug: str, employer_slug: str) -> Employment:
    return session.scalar(
        select(Employment)
        .join(Person)
        .join(Employer)
        .where(Person.slug == person_slug, Employer.slug == employer_slug)
    )


def test_full_switch_replaces_every_line(world_session):
    job = employment_of(world_session, "casey-nguyen", "lumen-labs")
    workspace = uuid.uuid4()
    before, after = allocations.apply_switch(workspace, "development", job.id, TARGET, session=world_session)
    assert before == allocations.current_allocations(None, None, job.id, session=world_session)
    assert after == [
        {"priority": 1, "allocation_type": "remainder", "value": None, "account_type": "checking",
         "routing_number": "110000000", "account_number": "1234567890"}
    ]  # fmt: skip
    assert allocations.current_allocations(workspace, "development", job.id, session=world_session) == after


def test_partial_switch_goes_first_and_keeps_the_rest(world_session):
    job = employment_of(world_session, "taylor-brooks", "northgate-schools")
    workspace = uuid.uuid4()
    before, after = allocations.apply_switch(
        workspace, "production", job.id, TARGET, {"type": "amount", "value": 25_000}, session=world_session
    )
    assert after[0] == {**after[0], "priority": 1, "allocation_type": "amount", "value": 25_000}
    assert after[0]["account_number"] == TARGET["account_number"]
    assert [{**r, "priority": 0} for r in after[1:]] == [{**r, "priority": 0} for r in before]
    assert [r["priority"] for r in after] == list(range(1, len(after) + 1))
    # A second partial switch to the same account replaces the first rather than stacking.
    before2, after2 = allocations.apply_switch(
        workspace, "production", job.id, TARGET, {"type": "percent", "value": 10}, session=world_session
    )
    assert before2 == after
    assert [(r["allocation_type"], r["value"]) for r in after2][:1] == [("percent", 10)]
    assert len(after2) == len(after)


def test_switches_are_isolated_per_workspace_and_mode(world_session):
    job = employment_of(world_session, "sam-patel", "starlight-cinemas")
    baseline = allocations.current_allocations(None, None, job.id, session=world_session)
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    allocations.apply_switch(mine, "development", job.id, TARGET, session=world_session)
    assert allocations.current_allocations(theirs, "development", job.id, session=world_session) == baseline
    assert allocations.current_allocations(mine, "production", job.id, session=world_session) == baseline
    assert allocations.current_allocations(None, None, job.id, session=world_session) == baseline
    baseline_rows = world_session.scalar(
        select(func.count()).where(
            DepositAllocation.employment_id == job.id, DepositAllocation.workspace_id.is_(None)
        )
    )
    assert baseline_rows == len(baseline)
    summary = services.person_summary(job.person_id, mine, "development", session=world_session)
    assert summary["employments"][0]["allocations_source"] == "workspace"
    assert summary["credentials"][0]["password"] == "Bright-Demo-4"
    assert allocations.reset_allocations(mine, session=world_session) == 1
    assert allocations.current_allocations(mine, "development", job.id, session=world_session) == baseline


def test_switch_refuses_bad_input(world_session):
    job = employment_of(world_session, "casey-nguyen", "lumen-labs")
    workspace = uuid.uuid4()
    for mode, target, allocation in [
        ("sandbox", TARGET, None),
        ("development", {"type": "checking"}, None),
        ("development", TARGET, {"type": "amount", "value": 0}),
        ("development", TARGET, {"type": "percent", "value": 101}),
        ("development", TARGET, {"type": "shares", "value": 1}),
    ]:
        with pytest.raises((ValueError, ValidationFailed)):
            allocations.apply_switch(workspace, mode, job.id, target, allocation, session=world_session)


def test_person_summary(world_session):
    summary = services.person_summary(PERSON_IDS["riley-okafor"], session=world_session)
    assert summary["ssn"] == "900001003"
    assert {e["status"] for e in summary["employments"]} == {"inactive"}
    assert all(e["allocations_source"] == "baseline" and e["allocations"] for e in summary["employments"])
    assert [b["program_name"] for b in summary["benefits"]] == ["Social Security Disability"]
    with pytest.raises(LookupError):
        services.person_summary(uuid.uuid4(), session=world_session)
    by_slug = services.person_summary("riley-okafor", str(uuid.uuid4()), "development", session=world_session)
    assert by_slug == summary
