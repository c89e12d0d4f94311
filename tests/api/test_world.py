"""Platforms, employers and search through the API."""

from __future__ import annotations

import uuid

import pytest

from console.api.ratelimit import RateLimiter
from console.world.seed_data import EMPLOYER_IDS, PLATFORM_IDS
from tests.conftest import assert_error


def collect(api, path):
    """Every item of a paginated collection, following next_cursor."""
    items, cursor = [], None
    while True:
        sep = "&" if "?" in path else "?"
        url = path + (f"{sep}cursor={cursor}" if cursor else "")
        body = api.get(url).get_json()
        assert body["meta"]["count"] == len(body["data"])
        items += body["data"]
        cursor = body["meta"]["next_cursor"]
        if not cursor:
            return items


def test_platforms_are_paginated_in_name_order(api):
    first = api.get("/platforms?limit=3").get_json()
    assert first["meta"]["count"] == 3 and first["meta"]["next_cursor"]
    everything = collect(api, "/platforms?limit=3")
    assert len(everything) >= 18
    assert len({p["id"] for p in everything}) == len(everything)
    names = [p["name"] for p in everything]
    assert names == sorted(names)
    assert everything[:3] == first["data"]


def test_platform_fields(api):
    platform = api.get(f"/platforms/{PLATFORM_IDS['paycrest']}").get_json()["data"]
    assert platform["id"] == str(PLATFORM_IDS["paycrest"])
    assert platform["name"] == "Paycrest"
    assert set(platform) >= {
        "id",
        "name",
        "type",
        "partner",
        "supported_jobs",
        "amount_supported",
        "mfa_methods",
    }


def test_platform_filters(api):
    partners = [p for p in collect(api, "/platforms?limit=100") if p["partner"]]
    assert all("(Partnership)" in p["name"] for p in partners) and len(partners) >= 2
    benefits = collect(api, "/platforms?type=benefits")
    assert benefits and all(p["type"] == "benefits" for p in benefits)
    switching = collect(api, "/platforms?supported_jobs=direct_deposit_switch&type=payroll")
    assert all("direct_deposit_switch" in p["supported_jobs"] for p in switching)
    assert len(switching) < len(collect(api, "/platforms?type=payroll"))
    amounts = collect(api, "/platforms?amount_supported=true")
    assert amounts and all(p["amount_supported"] for p in amounts)
    named = collect(api, "/platforms?q=payc")
    assert [p["name"] for p in named] == ["Paycrest"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("type=bank", "type"),
        ("supported_jobs=teleport", "supported_jobs"),
        ("amount_supported=maybe", "amount_supported"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("cursor=garbage!", "cursor"),
    ],
)
def test_bad_filters_name_the_field(api, query, field):
    error = assert_error(api.get(f"/platforms?{query}"), 400, "INVALID_REQUEST_PARAMETERS")
    assert [f["name"] for f in error["fields"]] == [field]


def test_unknown_platform_and_employer_are_404(api):
    assert_error(api.get(f"/platforms/{uuid.uuid4()}"), 404, "RECORD_NOT_FOUND")
    assert_error(api.get("/platforms/not-a-uuid"), 404, "RECORD_NOT_FOUND")
    assert_error(api.get(f"/employers/{uuid.uuid4()}"), 404, "RECORD_NOT_FOUND")


def test_employers_are_searchable_by_name(api):
    employers = collect(api, "/employers?limit=10")
    assert len(employers) >= 30
    one = employers[0]
    found = collect(api, f"/employers?q={one['name'][:5].lower()}")
    assert one["id"] in [e["id"] for e in found]
    assert all(one["name"][:5].lower() in e["name"].lower() for e in found)
    detail = api.get(f"/employers/{one['id']}").get_json()["data"]
    assert detail == one
    assert detail["platform_id"] in {p["id"] for p in collect(api, "/platforms?limit=100")}


def test_search_returns_employers_and_platforms(api):
    employer_id = next(iter(EMPLOYER_IDS.values()))
    employer = api.get(f"/employers/{employer_id}").get_json()["data"]
    hits = api.get(f"/search?q={employer['name'][:4]}").get_json()["data"]
    assert employer["id"] in [h["id"] for h in hits if h["type"] == "employer"]
    hits = api.get("/search?q=pay").get_json()["data"]
    assert {h["type"] for h in hits} <= {"employer", "platform"}
    assert any(h["type"] == "platform" for h in hits)
    assert len(api.get("/search?limit=5").get_json()["data"]) == 5


def test_search_is_paginated_like_every_collection(app, api):
    """next_cursor leads to the rest (it was null whatever was left, so a client following it stopped early)."""
    app.extensions["ratelimiter"] = RateLimiter(
        "memory://", dict.fromkeys(app.config["RATE_LIMITS"], "1000/second")
    )
    for query in ("", "?q=a"):
        sep = "&" if query else "?"
        everything = api.get(f"/search{query}{sep}limit=100").get_json()
        assert everything["meta"]["next_cursor"] is None and everything["meta"]["count"] > 3
        first = api.get(f"/search{query}{sep}limit=3").get_json()
        assert first["meta"]["count"] == 3 and first["meta"]["next_cursor"]
        assert collect(api, f"/search{query}{sep}limit=3") == everything["data"]
    other = api.get("/platforms?limit=1").get_json()["meta"]["next_cursor"]
    first = api.get("/search?q=a&limit=1").get_json()
    for cursor in (other, "not-a-cursor", ""):
        error = assert_error(api.get(f"/search?q=a&cursor={cursor}"), 400, "INVALID_REQUEST_PARAMETERS")
        assert [f["name"] for f in error["fields"]] == ["cursor"]
    # A cursor of another search: its hit is not in this one.
    employers_only = api.get("/search?q=zzzz-no-such-name&cursor=" + first["meta"]["next_cursor"])
    assert_error(employers_only, 400, "INVALID_REQUEST_PARAMETERS")


def test_search_can_require_jobs(api):
    hits = api.get("/search?supported_jobs=direct_deposit_switch&limit=100").get_json()["data"]
    platforms = {p["id"]: p for p in collect(api, "/platforms?limit=100")}
    assert all("direct_deposit_switch" in platforms[h["platform_id"]]["supported_jobs"] for h in hits)
