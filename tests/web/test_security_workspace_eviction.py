"""The per-address cap on visitor workspaces deletes the address's own least recently used ones: a hostile visitor
claiming another's address in X-Forwarded-For must fill and churn only its own share, never evict the victim's."""

from __future__ import annotations

from console.extensions import db
from console.workspaces.models import Workspace
from tests.web.test_quotas import browser, limit_creates

VICTIM = "198.51.100.7"
ATTACKER = "203.0.113.9"
PROXY = "10.0.0.5"


def _exists(app, visitor) -> bool:
    with app.app_context():
        return db.session.get(Workspace, visitor.workspace_id) is not None


def test_a_forwarded_address_from_an_untrusted_peer_does_not_evict_its_workspaces(app, monkeypatch):
    monkeypatch.setitem(app.config, "VISITOR_WORKSPACES_PER_ADDRESS", 1)
    limit_creates(app, 0)  # no TRUSTED_PROXIES: X-Forwarded-For is ignored
    victim = browser(app, VICTIM)
    assert victim.post("/workspace").status_code == 302
    for _ in range(3):
        assert browser(app, ATTACKER, **{"X-Forwarded-For": VICTIM}).post("/workspace").status_code == 302
    assert _exists(app, victim)


def test_through_a_trusted_proxy_the_hop_it_appended_is_the_owner_not_the_clients_claim(app, monkeypatch):
    monkeypatch.setitem(app.config, "VISITOR_WORKSPACES_PER_ADDRESS", 1)
    limit_creates(app, 0, proxies=PROXY)
    victim = browser(app, PROXY, **{"X-Forwarded-For": VICTIM})
    assert victim.post("/workspace").status_code == 302
    for _ in range(3):  # the attacker's own claim first, the proxy's record of its real address last
        spoofed = browser(app, PROXY, **{"X-Forwarded-For": f"{VICTIM}, {ATTACKER}"})
        assert spoofed.post("/workspace").status_code == 302
    assert _exists(app, victim)
