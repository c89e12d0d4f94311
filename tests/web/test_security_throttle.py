"""The per-address limit on creating requests counts an IPv6 client by its /64: each of the 2^64 addresses a
host or home is given counted on its own, so rotating through them gave a bot a fresh limit each time."""

from __future__ import annotations

from console.web.shared import throttle
from tests.web.test_quotas import browser, limit_creates


def test_addresses_of_one_ipv6_64_share_one_limit(app):
    limit_creates(app, 2)
    for address in ("2001:db8:1:2::1", "2001:db8:1:2:ffff::9"):
        assert browser(app, address).post("/workspace").status_code == 302
    refused = browser(app, "2001:db8:1:2:abcd:ef01:2345:6789").post("/workspace")
    assert refused.status_code == 429
    assert (
        browser(app, "2001:db8:1:3::1").post("/workspace").status_code == 302
    )  # the next /64 is someone else


def test_an_ipv4_mapped_address_counts_as_its_ipv4_address(app):
    limit_creates(app, 1)
    assert browser(app, "192.0.2.10").post("/workspace").status_code == 302
    assert browser(app, "::ffff:192.0.2.10").post("/workspace").status_code == 429


def test_behind_a_trusted_proxy_the_forwarded_ipv6_client_is_counted_by_its_64(app):
    limit_creates(app, 1, proxies="127.0.0.1")
    first = browser(app, "127.0.0.1", **{"X-Forwarded-For": "2001:db8:5:6::10"})
    assert first.post("/workspace").status_code == 302
    second = browser(app, "127.0.0.1", **{"X-Forwarded-For": "2001:db8:5:6::99"})
    assert second.post("/workspace").status_code == 429


def test_owner_of():
    assert throttle.owner_of("2001:db8::1") == "2001:db8::/64"
    assert throttle.owner_of("::ffff:10.0.0.1") == "10.0.0.1"
    assert throttle.owner_of("10.0.0.1") == "10.0.0.1"
    assert throttle.owner_of("not an address") == "not an address"
