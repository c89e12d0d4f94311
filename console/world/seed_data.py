"""The fixed data of the simulated world, as pure Python; ids are uuid5 names so every fresh database agrees.

Everything here is fictional. SSNs start with 9 (never issued as Social Security numbers), phone numbers use
the 555-01xx range reserved for fiction, and emails use example.com. Generated people come from
`random.Random` seeded per person, so adding a person never reshuffles the others.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import Any

# Never change: every documented id is derived from it.
NAMESPACE = uuid.UUID("6f1c2a8e-5b7d-4c39-9e0a-3d2f4b6a8c10")
SEED = "payroll-world-v1"

JOB_NAMES = ("direct_deposit_switch", "employment", "income", "identity")
MFA_METHODS = ("sms", "email", "totp")
PAY_FREQUENCIES = ("weekly", "biweekly", "semimonthly", "monthly")
BASELINE_UPDATED_AT = datetime(2025, 1, 1, tzinfo=UTC)

DDS, EMP, INC, IDN = JOB_NAMES
ALL_JOBS = JOB_NAMES


def world_id(kind: str, key: str) -> uuid.UUID:
    """The stable id of a world row, e.g. world_id("platform", "paycrest")."""
    return uuid.uuid5(NAMESPACE, f"{kind}:{key}")


# slug, name, is_partner, supported_jobs, supports_amounts, mfa_methods, login_hint, brand_color
PAYROLL_PLATFORMS: tuple[tuple[str, str, bool, tuple[str, ...], bool, tuple[str, ...], str, str], ...] = (
    ("paycrest", "Paycrest", False, ALL_JOBS, True, (), "Username", "#1F6FEB"),
    ("ledgerline", "Ledgerline Payroll", False, ALL_JOBS, False, ("sms",), "Username", "#0E7C66"),
    ("worknest", "WorkNest", False, ALL_JOBS, True, ("email",), "Work email", "#7B3FE4"),
    ("tallyhour", "TallyHour", False, (DDS, EMP, INC), False, ("totp",), "Employee ID", "#D9480F"),
    (
        "harbor-pay",
        "Harbor Pay (Partnership)",
        True,
        (DDS, EMP, INC),
        False,
        ("sms", "email"),
        "Username",
        "#0B5394",
    ),
    (
        "summit-staffing",
        "Summit Staffing Payroll (Partnership)",
        True,
        (DDS,),
        True,
        ("sms", "totp"),
        "Employee ID",
        "#2B8A3E",
    ),
    ("clockwise-hr", "Clockwise HR", False, (EMP, INC, IDN), False, ("email", "totp"), "Username", "#C2255C"),
    ("brightledger", "BrightLedger", False, ALL_JOBS, False, MFA_METHODS, "Username", "#E8590C"),
    ("meridian-paydesk", "Meridian Paydesk", False, (DDS, EMP), False, (), "Employee ID", "#5C7CFA"),
    ("keystone-wages", "Keystone Wages", False, (EMP, INC), False, ("sms",), "Username", "#495057"),
)

# Federal benefits programs (spec: credential-less, full allocations only, no MFA).
BENEFITS_PROGRAMS: tuple[tuple[str, str, str], ...] = (
    ("ssa-retirement", "Social Security Retirement", "#112E51"),
    ("ssa-disability", "Social Security Disability", "#112E51"),
    ("ssa-survivor", "Social Security Survivor", "#112E51"),
    ("ssi", "Supplemental Security Income", "#112E51"),
    ("va-disability", "VA Disability Compensation", "#003F72"),
    ("va-pension", "VA Pension", "#003F72"),
    ("va-gi-bill", "GI Bill Education", "#003F72"),
    ("reap", "Reserve Education Assistance Program", "#3D4551"),
    ("civil-service-retirement", "Civil Service Retirement", "#5B616B"),
    ("railroad-retirement", "Railroad Retirement", "#4A5A2A"),
)
BENEFITS_LOGIN_HINT = "Legal name and Social Security number"

# slug | name | platform slug | industry | city | state | zip (the zip seeds the people who work there)
_EMPLOYER_TABLE = """
bluebird-bakery | Bluebird Bakery Co. | paycrest | Food service | Portland | OR | 97205
redwood-logistics | Redwood Logistics | paycrest | Transportation | Sacramento | CA | 95814
granite-valley-hospital | Granite Valley Hospital | paycrest | Healthcare | Manchester | NH | 03101
lumen-labs | Lumen Labs | paycrest | Technology | Austin | TX | 78701
copper-kettle | Copper Kettle Diners | ledgerline | Restaurants | Columbus | OH | 43215
northgate-schools | Northgate Unified Schools | ledgerline | Education | Tucson | AZ | 85701
pioneer-hardware | Pioneer Hardware | ledgerline | Retail | Boise | ID | 83702
tidewater-marine | Tidewater Marine Services | ledgerline | Maritime | Norfolk | VA | 23510
sparrow-software | Sparrow Software | worknest | Technology | Raleigh | NC | 27601
maple-grove-clinic | Maple Grove Clinic | worknest | Healthcare | Madison | WI | 53703
orbit-coffee | Orbit Coffee Roasters | worknest | Food service | Seattle | WA | 98101
quarry-creative | Quarry Creative Agency | worknest | Marketing | Denver | CO | 80202
ironclad-manufacturing | Ironclad Manufacturing | tallyhour | Manufacturing | Toledo | OH | 43604
prairie-fresh-foods | Prairie Fresh Foods | tallyhour | Grocery | Omaha | NE | 68102
silverline-transit | Silverline Transit | tallyhour | Transportation | Albuquerque | NM | 87102
willowbrook-senior-living | Willowbrook Senior Living | tallyhour | Healthcare | Tulsa | OK | 74103
lighthouse-outfitters | Lighthouse Outfitters | harbor-pay | Retail | Providence | RI | 02903
bayview-hotels | Bayview Hotels | harbor-pay | Hospitality | San Diego | CA | 92101
anchor-freight | Anchor Freight Lines | harbor-pay | Transportation | Savannah | GA | 31401
cobalt-cleaning | Cobalt Cleaning Services | harbor-pay | Facilities | Tampa | FL | 33602
peakforce-staffing | PeakForce Staffing | summit-staffing | Staffing | Salt Lake City | UT | 84101
evergreen-warehousing | Evergreen Warehousing | summit-staffing | Logistics | Spokane | WA | 99201
keel-and-beam | Keel & Beam Construction | summit-staffing | Construction | Reno | NV | 89501
juniper-mutual | Juniper Mutual Insurance | clockwise-hr | Insurance | Hartford | CT | 06103
atlas-ridge-consulting | Atlas Ridge Consulting | clockwise-hr | Consulting | Minneapolis | MN | 55401
crescent-dental | Crescent Dental Group | clockwise-hr | Healthcare | Baton Rouge | LA | 70801
starlight-cinemas | Starlight Cinemas | brightledger | Entertainment | Kansas City | MO | 64105
riverbend-bank | Riverbend Community Bank | brightledger | Banking | Louisville | KY | 40202
foxglove-florals | Foxglove Florals | brightledger | Retail | Burlington | VT | 05401
greenfield-coop | Greenfield Cooperative Farms | brightledger | Agriculture | Des Moines | IA | 50309
harvest-moon-grocers | Harvest Moon Grocers | meridian-paydesk | Grocery | Little Rock | AR | 72201
blue-mesa-energy | Blue Mesa Energy | meridian-paydesk | Energy | Phoenix | AZ | 85004
cedar-county-works | Cedar County Public Works | meridian-paydesk | Government | Cedar Rapids | IA | 52401
allegheny-ridge-steel | Allegheny Ridge Steel | keystone-wages | Manufacturing | Pittsburgh | PA | 15222
laurel-academy | Laurel Academy | keystone-wages | Education | Harrisburg | PA | 17101
mosaic-media | Mosaic Media Group | keystone-wages | Media | Nashville | TN | 37203
"""


def _table(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(cell.strip() for cell in line.split("|")) for line in text.strip().splitlines())


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


EMPLOYERS: tuple[tuple[str, ...], ...] = _table(_EMPLOYER_TABLE)

_PLATFORM_SLUGS = [p[0] for p in PAYROLL_PLATFORMS] + [b[0] for b in BENEFITS_PROGRAMS]
PLATFORM_IDS: dict[str, uuid.UUID] = {slug: world_id("platform", slug) for slug in _PLATFORM_SLUGS}
EMPLOYER_IDS: dict[str, uuid.UUID] = {e[0]: world_id("employer", e[0]) for e in EMPLOYERS}
_PLATFORM_BY_SLUG = {p[0]: p for p in PAYROLL_PLATFORMS}
_EMPLOYER_BY_SLUG = {e[0]: e for e in EMPLOYERS}


@dataclass(frozen=True)
class Job:
    employer: str
    status: str
    start: date
    end: date | None
    title: str
    income_cents: int
    frequency: str


@dataclass(frozen=True)
class Login:
    username: str
    password: str
    mfa_method: str | None = None
    locked: bool = False


@dataclass(frozen=True)
class PersonSpec:
    slug: str
    first: str
    last: str
    dob: date
    ssn: str
    phone: str
    zip: str
    jobs: tuple[Job, ...]
    logins: dict[str, Login] = field(default_factory=dict)  # by platform slug; missing ones are generated

    @property
    def email(self) -> str:
        return f"{self.first}.{self.last}@example.com".lower()


def _active(employer: str, start: date, title: str, income: int, freq: str = "biweekly") -> Job:
    return Job(employer, "active", start, None, title, income, freq)


def _ended(employer: str, start: date, end: date, title: str, income: int, freq: str = "biweekly") -> Job:
    return Job(employer, "inactive", start, end, title, income, freq)


D = date
# Hand-written people the docs name: the three platform-matching identities and the development demo logins.
NAMED_PEOPLE: tuple[PersonSpec, ...] = (
    # Matches exactly one platform: one active job on a partner platform, one ended job elsewhere.
    PersonSpec(
        "jordan-avery",
        "Jordan",
        "Avery",
        D(1988, 4, 12),
        "900001001",
        "4015550101",
        "02903",
        (
            _active("lighthouse-outfitters", D(2019, 3, 4), "Store Manager", 6_250_000),
            _ended("bluebird-bakery", D(2014, 6, 2), D(2019, 2, 15), "Baker", 3_100_000),
        ),
        {
            "harbor-pay": Login("javery", "Harbor-1988", "sms"),
            "paycrest": Login("jordan.avery", "Bluebird-14"),
        },
    ),
    # Matches several platforms: three active jobs, two of them on platforms that support amounts.
    PersonSpec(
        "morgan-castillo",
        "Morgan",
        "Castillo",
        D(1992, 9, 30),
        "900001002",
        "6145550102",
        "43215",
        (
            _active("copper-kettle", D(2021, 1, 11), "Line Cook", 3_400_000, "weekly"),
            _active("sparrow-software", D(2022, 8, 1), "QA Analyst", 7_200_000, "semimonthly"),
            _active("peakforce-staffing", D(2023, 5, 15), "Warehouse Associate", 2_900_000, "weekly"),
        ),
        {
            "ledgerline": Login("mcastillo", "Kettle-2021", "sms"),
            "worknest": Login("morgan.castillo@example.com", "Sparrow-2022", "email"),
            "summit-staffing": Login("E204417", "Peak-2023", "totp"),
        },
    ),
    # Matches no platform: every employment has ended.
    PersonSpec(
        "riley-okafor",
        "Riley",
        "Okafor",
        D(1979, 1, 23),
        "900001003",
        "4195550103",
        "43604",
        (
            _ended(
                "ironclad-manufacturing", D(2008, 2, 4), D(2016, 11, 30), "Machinist", 5_100_000, "weekly"
            ),
            _ended("bayview-hotels", D(2017, 1, 9), D(2023, 6, 30), "Front Desk Supervisor", 4_300_000),
        ),
        {"tallyhour": Login("E118230", "Ironclad-08", "totp"), "harbor-pay": Login("rokafor", "Bayview-17")},
    ),
    PersonSpec(
        "casey-nguyen",
        "Casey",
        "Nguyen",
        D(1990, 7, 19),
        "900001004",
        "5125550104",
        "78701",
        (_active("lumen-labs", D(2020, 2, 3), "Software Engineer", 11_800_000),),
        {"paycrest": Login("casey.nguyen", "Paycrest-Demo-1")},
    ),
    PersonSpec(
        "taylor-brooks",
        "Taylor",
        "Brooks",
        D(1984, 11, 2),
        "900001005",
        "5205550105",
        "85701",
        (_active("northgate-schools", D(2016, 8, 15), "Teacher", 5_400_000, "monthly"),),
        {"ledgerline": Login("tbrooks", "Ledger-Demo-2", "sms")},
    ),
    PersonSpec(
        "quinn-harper",
        "Quinn",
        "Harper",
        D(1998, 3, 27),
        "900001006",
        "2065550106",
        "98101",
        (_active("orbit-coffee", D(2022, 3, 7), "Barista", 3_200_000),),
        {"worknest": Login("quinn.harper@example.com", "Nest-Demo-3", "email")},
    ),
    PersonSpec(
        "sam-patel",
        "Sam",
        "Patel",
        D(1986, 5, 8),
        "900001007",
        "8165550107",
        "64105",
        (_active("starlight-cinemas", D(2018, 5, 21), "Operations Manager", 6_800_000, "semimonthly"),),
        {"brightledger": Login("spatel", "Bright-Demo-4", "totp")},
    ),
    PersonSpec(
        "alex-romero",
        "Alex",
        "Romero",
        D(1975, 12, 14),
        "900001008",
        "4025550108",
        "68102",
        (_active("prairie-fresh-foods", D(2017, 10, 2), "Produce Clerk", 3_000_000, "weekly"),),
        {"tallyhour": Login("E300512", "Tally-Demo-5", locked=True)},
    ),
)


def _identity(person: PersonSpec) -> dict[str, str]:
    """The `end_user.platform_matching` object of a Link token request for this person."""
    return {
        "social_security_number": person.ssn,
        "first_name": person.first,
        "last_name": person.last,
        "date_of_birth": person.dob.isoformat(),
        "mobile_phone_number": person.phone,
        "home_address_zip_code": person.zip,
        "email": person.email,
    }


_NAMED = {p.slug: p for p in NAMED_PEOPLE}
SANDBOX_MATCH_IDENTITIES: dict[str, dict[str, str]] = {
    "one": _identity(_NAMED["jordan-avery"]),
    "several": _identity(_NAMED["morgan-castillo"]),
    "none": _identity(_NAMED["riley-okafor"]),
}
# What each identity matches with required_jobs ["direct_deposit_switch"] and no amounts, in result order.
SANDBOX_MATCH_EXPECTED: dict[str, tuple[str, ...]] = {
    "one": ("harbor-pay",),
    "several": ("ledgerline", "summit-staffing", "worknest"),
    "none": (),
}


def _demo(person_slug: str, platform_slug: str) -> dict[str, Any]:
    person = _NAMED[person_slug]
    login = person.logins[platform_slug]
    employer = next(j.employer for j in person.jobs if _EMPLOYER_BY_SLUG[j.employer][2] == platform_slug)
    return {
        "person_slug": person_slug,
        "person_id": world_id("person", person_slug),
        "name": f"{person.first} {person.last}",
        "platform_slug": platform_slug,
        "platform_id": PLATFORM_IDS[platform_slug],
        "platform_name": _PLATFORM_BY_SLUG[platform_slug][1],
        "employer_id": EMPLOYER_IDS[employer],
        "employer_name": _EMPLOYER_BY_SLUG[employer][1],
        "username": login.username,
        "password": login.password,
        "mfa_method": login.mfa_method,
        "locked": login.locked,
    }


# Development/production logins for the docs, one per situation.
DEMO_PEOPLE: dict[str, dict[str, Any]] = {
    "no_mfa": _demo("casey-nguyen", "paycrest"),
    "sms": _demo("taylor-brooks", "ledgerline"),
    "email": _demo("quinn-harper", "worknest"),
    "totp": _demo("sam-patel", "brightledger"),
    "locked": _demo("alex-romero", "tallyhour"),
    "partner": _demo("jordan-avery", "harbor-pay"),
}

# program slug, first, last, ssn (None: that of the world person with the same name), enrolled
BENEFICIARIES: tuple[tuple[str, str, str, str | None, bool], ...] = (
    ("ssa-retirement", "Dolores", "Whitaker", "900002001", True),
    ("ssa-retirement", "Harold", "Greene", "900002002", True),
    ("ssa-disability", "Riley", "Okafor", None, True),
    ("ssa-survivor", "Marisol", "Vega", "900002003", True),
    ("ssi", "Terrence", "Mills", "900002004", True),
    ("ssi", "Beatrice", "Lang", "900002005", False),
    ("va-disability", "Marcus", "Reed", "900002006", True),
    ("va-disability", "Taylor", "Brooks", None, True),
    ("va-pension", "Eleanor", "Fitch", "900002007", True),
    ("va-gi-bill", "Morgan", "Castillo", None, True),
    ("reap", "Kendra", "Wallace", "900002008", True),
    ("civil-service-retirement", "Walter", "Simmons", "900002009", True),
    ("civil-service-retirement", "Gloria", "Nakamura", "900002010", True),
    ("railroad-retirement", "Earl", "Dawson", "900002011", True),
    ("railroad-retirement", "Ruth", "Calder", "900002012", True),
)
DEMO_BENEFICIARIES: dict[str, dict[str, Any]] = {
    "enrolled": {"program_id": PLATFORM_IDS["ssa-retirement"], "program_name": "Social Security Retirement",
                 "first_name": "Dolores", "last_name": "Whitaker", "ssn": "900002001"},
    "not_enrolled": {"program_id": PLATFORM_IDS["ssi"], "program_name": "Supplemental Security Income",
                     "first_name": "Beatrice", "last_name": "Lang", "ssn": "900002005"},
}  # fmt: skip

GENERATED_PEOPLE = 52
_FIRST_NAMES = _words(
    "Aaliyah Ben Carmen Dmitri Elena Farah Gabriel Hana Isaac Jade Kwame Lena Marcus Nadia Omar Priya Rafael "
    "Sofia Theo Uma Victor Wen Ximena Yusuf Zoe Andre Beatriz Cole Daria Emeka Fiona Hector Ingrid "
    "Joel Keiko Luis Maya Nico Olga Pavel"
)
_LAST_NAMES = _words(
    "Abbott Baptiste Chen Delgado Eriksen Fontaine Garza Haddad Iverson Jablonski Kowalczyk Lindqvist Mbeki "
    "Novak Oyelaran Petrov Quintero Rasmussen Sandoval Takahashi Underwood Varga Whitfield Xiong Yamada "
    "Zielinski Achebe Brennan Calloway Dubois"
)
_TITLES = _words(
    "Associate Analyst Coordinator Technician Specialist Supervisor Manager Driver Nurse Clerk Engineer "
    "Cashier Accountant Mechanic"
)
_AREA_CODES = ("212", "303", "312", "404", "415", "503", "602", "615", "704", "808", "919")
# Made-up eight-digit bank prefixes (not major banks); the ninth digit is the ABA check digit.
_BANK_PREFIXES = ("01190040", "02290051", "05390062", "07190073", "10190084", "12190095", "26390016")


def routing_number(prefix: str) -> str:
    """Complete an 8-digit prefix with its ABA check digit."""
    weights = (3, 7, 1, 3, 7, 1, 3, 7)
    total = sum(int(d) * w for d, w in zip(prefix, weights, strict=True))
    return prefix + str((10 - total % 10) % 10)


def _random_date(rng: random.Random, first_year: int, last_year: int) -> date:
    return date(rng.randint(first_year, last_year), rng.randint(1, 12), rng.randint(1, 28))


def _generated_person(index: int, first: str, last: str, used_ssns: set[str]) -> PersonSpec:
    slug = f"{first}-{last}".lower()
    rng = random.Random(f"{SEED}:person:{slug}")
    ssn = ""
    while not ssn or ssn in used_ssns:
        # Area 910-999 keeps generated SSNs apart from the hand-written 900xxxxxx block.
        ssn = f"9{rng.randint(10, 99)}{rng.randint(10, 99)}{rng.randint(1000, 9999)}"
    used_ssns.add(ssn)
    employers = rng.sample([e[0] for e in EMPLOYERS], rng.choice((1, 1, 2, 2, 2, 3)))
    jobs = []
    for position, employer in enumerate(employers):
        title = rng.choice(_TITLES)
        income = rng.randrange(26_000, 140_000, 500) * 100
        frequency = rng.choice(PAY_FREQUENCIES)
        if rng.random() < (0.85 if position == 0 else 0.2):
            jobs.append(_active(employer, _random_date(rng, 2010, 2024), title, income, frequency))
        else:
            start = _random_date(rng, 2003, 2019)
            end = min(start + timedelta(days=rng.randint(200, 2500)), date(2024, 12, 31))
            jobs.append(_ended(employer, start, end, title, income, frequency))
    zip_code = _EMPLOYER_BY_SLUG[employers[0]][6]
    phone = f"{rng.choice(_AREA_CODES)}555{101 + len(NAMED_PEOPLE) + index:04d}"
    return PersonSpec(slug, first, last, _random_date(rng, 1958, 2003), ssn, phone, zip_code, tuple(jobs))


def _all_people() -> list[PersonSpec]:
    people = list(NAMED_PEOPLE)
    used_names = {(p.first, p.last) for p in people}
    used_ssns = {p.ssn for p in people} | {b[3] for b in BENEFICIARIES if b[3]}
    rng = random.Random(f"{SEED}:names")
    while len(people) < len(NAMED_PEOPLE) + GENERATED_PEOPLE:
        name = (rng.choice(_FIRST_NAMES), rng.choice(_LAST_NAMES))
        if name not in used_names:
            used_names.add(name)
            people.append(_generated_person(len(people) - len(NAMED_PEOPLE), *name, used_ssns))
    return people


@dataclass(frozen=True)
class WorldData:
    """Row dicts per table, keyed by column name, in insert (foreign key) order."""

    platforms: list[dict[str, Any]]
    employers: list[dict[str, Any]]
    people: list[dict[str, Any]]
    employments: list[dict[str, Any]]
    credentials: list[dict[str, Any]]
    allocations: list[dict[str, Any]]
    beneficiaries: list[dict[str, Any]]


def _platform_rows() -> list[dict[str, Any]]:
    rows = [
        {"id": PLATFORM_IDS[slug], "slug": slug, "name": name, "type": "payroll", "is_partner": partner,
         "supported_jobs": list(jobs), "supports_amounts": amounts, "mfa_methods": list(mfa),
         "login_hint": hint, "brand_color": color}
        for slug, name, partner, jobs, amounts, mfa, hint, color in PAYROLL_PLATFORMS
    ]  # fmt: skip
    rows += [
        {"id": PLATFORM_IDS[slug], "slug": slug, "name": name, "type": "benefits", "is_partner": False,
         "supported_jobs": [DDS], "supports_amounts": False, "mfa_methods": [],
         "login_hint": BENEFITS_LOGIN_HINT, "brand_color": color}
        for slug, name, color in BENEFITS_PROGRAMS
    ]  # fmt: skip
    return rows


def _generated_login(person: PersonSpec, platform_slug: str, taken: set[str]) -> Login:
    rng = random.Random(f"{SEED}:login:{person.slug}:{platform_slug}")
    hint, methods = _PLATFORM_BY_SLUG[platform_slug][6], _PLATFORM_BY_SLUG[platform_slug][5]
    username = ""
    while not username or username.lower() in taken:
        if hint == "Employee ID":
            username = f"E{rng.randint(100000, 999999)}"
        elif hint == "Work email":
            username = person.email if not username else f"{person.slug}{rng.randint(1, 99)}@example.com"
        else:
            base = f"{person.first[0]}{person.last}".lower()
            username = base if not username else f"{base}{rng.randint(1, 99)}"
    mfa = rng.choice(methods) if methods and rng.random() < 0.5 else None
    return Login(username, f"{person.last}-{rng.randint(1000, 9999)}", mfa, locked=rng.random() < 0.05)


def _bank_account(rng: random.Random) -> tuple[str, str]:
    return routing_number(rng.choice(_BANK_PREFIXES)), str(rng.randint(10**9, 10**12 - 1))


def bank_accounts(person: PersonSpec) -> tuple[tuple[str, str], tuple[str, str]]:
    """The person's (routing, account) checking and savings accounts; every employment pays into them."""
    rng = random.Random(f"{SEED}:bank:{person.slug}")
    return _bank_account(rng), _bank_account(rng)


def _allocation_rows(person: PersonSpec, job: Job, employment_id: uuid.UUID) -> list[dict[str, Any]]:
    checking, savings = bank_accounts(person)
    rng = random.Random(f"{SEED}:allocation:{person.slug}:{job.employer}")
    draw = rng.random()
    lines: list[tuple[str, int | None, str, tuple[str, str]]] = []
    if draw >= 0.85:
        lines.append(("percent", rng.choice((5, 10, 15, 20, 25)), "savings", savings))
    elif draw >= 0.6:
        lines.append(("amount", rng.randrange(5_000, 50_001, 2_500), "savings", savings))
    lines.append(("remainder", None, "checking", checking))
    return [
        {"id": world_id("allocation", f"{person.slug}:{job.employer}:{priority}"),
         "employment_id": employment_id, "workspace_id": None, "mode": None, "priority": priority,
         "allocation_type": kind, "value": value,
         "routing_number": account[0], "account_number": account[1], "account_type": account_type,
         "updated_at": BASELINE_UPDATED_AT}
        for priority, (kind, value, account_type, account) in enumerate(lines, start=1)
    ]  # fmt: skip


@cache
def build_world() -> WorldData:
    """Every seeded row; the same on every call and every machine."""
    people = _all_people()
    world = WorldData(_platform_rows(), [], [], [], [], [], [])
    world.employers.extend(
        {"id": EMPLOYER_IDS[slug], "slug": slug, "name": name, "platform_id": PLATFORM_IDS[platform],
         "industry": industry, "city": city, "state": state}
        for slug, name, platform, industry, city, state, _zip in EMPLOYERS
    )  # fmt: skip
    taken: dict[str, set[str]] = {p[0]: set() for p in PAYROLL_PLATFORMS}
    for person in people:  # hand-written usernames first, so generated ones avoid them
        for platform_slug, login in person.logins.items():
            taken[platform_slug].add(login.username.lower())
    for person in people:
        person_id = world_id("person", person.slug)
        world.people.append(
            {"id": person_id, "slug": person.slug, "first_name": person.first, "last_name": person.last,
             "date_of_birth": person.dob, "ssn": person.ssn, "phone": person.phone, "zip": person.zip,
             "email": person.email}
        )  # fmt: skip
        platforms: list[str] = []
        for job in person.jobs:
            employment_id = world_id("employment", f"{person.slug}:{job.employer}")
            world.employments.append(
                {"id": employment_id, "person_id": person_id, "employer_id": EMPLOYER_IDS[job.employer],
                 "status": job.status, "start_date": job.start, "end_date": job.end, "job_title": job.title,
                 "annual_income_cents": job.income_cents, "pay_frequency": job.frequency}
            )  # fmt: skip
            world.allocations.extend(_allocation_rows(person, job, employment_id))
            platform_slug = _EMPLOYER_BY_SLUG[job.employer][2]
            if platform_slug not in platforms:
                platforms.append(platform_slug)
        for platform_slug in platforms:
            login = person.logins.get(platform_slug) or _generated_login(
                person, platform_slug, taken[platform_slug]
            )
            taken[platform_slug].add(login.username.lower())
            world.credentials.append(
                {"id": world_id("credential", f"{person.slug}:{platform_slug}"), "person_id": person_id,
                 "platform_id": PLATFORM_IDS[platform_slug], "username": login.username,
                 "password": login.password, "mfa_enabled": login.mfa_method is not None,
                 "mfa_method": login.mfa_method, "locked": login.locked}
            )  # fmt: skip
    by_name = {(p.first, p.last): p for p in people}
    for program, first, last, ssn, enrolled in BENEFICIARIES:
        person = by_name.get((first, last))
        if ssn is None and person is not None:
            ssn, (routing, account) = person.ssn, bank_accounts(person)[0]
        else:
            routing, account = _bank_account(random.Random(f"{SEED}:beneficiary:{program}:{ssn}"))
        assert ssn is not None, f"beneficiary {first} {last} needs an ssn or a world person"
        world.beneficiaries.append(
            {"id": world_id("beneficiary", f"{program}:{ssn}"), "platform_id": PLATFORM_IDS[program],
             "first_name": first, "last_name": last, "ssn": ssn, "routing_number": routing,
             "account_number": account, "enrolled": enrolled}
        )  # fmt: skip
    return world


PERSON_IDS: dict[str, uuid.UUID] = {p.slug: world_id("person", p.slug) for p in NAMED_PEOPLE}
