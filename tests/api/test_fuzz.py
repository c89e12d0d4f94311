"""Property-based fuzzing of every operation of the served OpenAPI document (Schemathesis).

The document is read from the app itself (`GET /sandbox/v1/openapi.json`), and Schemathesis makes one
test per operation, with its three phases: the document's examples, coverage (boundary values and
values of the wrong type or shape for every parameter and body field, unexpected methods) and
fuzzing (generated valid data, a hostile parameter value in two requests of three; invalid data too
with FUZZ_RANDOM=1). Requests go in-process to the WSGI app (no network)
with a real sandbox key; every other path id is swapped for one of a record that exists (a Link token
completed headlessly, its account, job and events, a webhook), so successful answers are checked
too. Each response must be no server error, a documented status code and content type, and match
its documented schema.

Bounded: FUZZ_EXAMPLES generated examples per operation (default 30) on top of the coverage cases,
deterministic (derandomized) so a run is repeatable; under a minute for both database backends. Set
FUZZ_RANDOM=1 (and a larger FUZZ_EXAMPLES) to explore with fresh randomness.
"""

from __future__ import annotations

import base64
import itertools
import json
import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from console import create_app
from console.extensions import db
from console.modes import MODES
from console.webhooks import urls
from console.world.seed_data import PLATFORM_IDS
from tests.conftest import VERSION, Api, _clear_customer_tables, base_config

pytestmark = pytest.mark.slow

EXPLORING = os.environ.get("FUZZ_RANDOM") is not None
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "30"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
OPENAPI_PATH = "/sandbox/v1/openapi.json"
TARGET = {"type": "checking", "routing_number": "011000015", "account_number": "12345678"}


def _served_document() -> dict:
    """The document as the app serves it (routes only: no database is touched to build it)."""
    app = create_app(base_config("sqlite://"))
    response = app.test_client().get(OPENAPI_PATH)
    assert response.status_code == 200
    return response.get_json()


# Loaded at collection: Schemathesis makes one test per operation from it.
# The generated phase sends valid requests (a hostile value in two of three, by the hooks below): ~1,000 over
# the operations, as many as 60 examples of both kinds gave. Invalid requests are the coverage phase's (a wrong type, a bound
# crossed, a field missing: every parameter and body field, deterministically, ~1,700),
# tests/api/test_request_bodies.py's sweep (every body node by every other JSON type: a 400 naming its path)
# and tests/api/test_hostile_params.py's. The ~1,100 random invalid ones the generated phase also sent (60
# examples, about half of each kind) took half of this module's CPU (41.7 CPU-s against 22.2 without);
# FUZZ_RANDOM=1 sends them again.
CONFIG = (
    None
    if EXPLORING
    else SchemathesisConfig.from_dict({"phases": {"fuzzing": {"generation": {"mode": "positive"}}}})
)
schema = schemathesis.openapi.from_dict(_served_document(), config=CONFIG)


def _cursor(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


# Values hostile callers send, which schema-driven generation alone rarely produces: in two requests
# of three, one of them replaces (or adds) a query or path parameter.
HOSTILE_TEXT = [
    "\x00",
    "a\x00b",
    "9" * 5000,
    "\u00b2",
    "\uff15",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "%_\\",
]
TAMPERED_CURSORS = [
    _cursor([["v", "abc"], ["v", "abc"]]),
    _cursor(["uuid", 1]),
    _cursor(["v", None]),
    _cursor([["dt", "0001-01-01T00:00:00+01:00"], ["uuid", "00000000-0000-0000-0000-000000000000"]]),
    _cursor([["v", None], ["v", None]]),
    "a\x00",
]


def _with_one_hostile(values: dict | None, names: list[str]):
    values = dict(values or {})
    if not names:
        return st.just(values)

    def replaced(name: str):
        pool = TAMPERED_CURSORS if name == "cursor" else HOSTILE_TEXT
        return st.sampled_from(pool).map(lambda value: {**values, name: value})

    hostile = st.sampled_from(names).flatmap(replaced)
    return st.one_of(st.just(values), hostile, hostile)


@schema.hook
def flatmap_query(context, query):
    return _with_one_hostile(query, [p.name for p in context.operation.query])


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    return _with_one_hostile(path_parameters, [p.name for p in context.operation.path_parameters])


@pytest.fixture(scope="module")
def fuzz_app(database_url):
    """The app without a practical rate limit (else most examples would only test the 429).

    2000 a second: this one thread's requests, each through the whole app, come at a few hundred a second at
    most, and a 429 is a documented answer (it would pass the checks, not fail them). Not 100000: the limiter
    keeps a ring of `amount` times per key and reads all of it on each request (ratelimit.TableCounters.hit),
    about 10 ms a request at 100000, most of this module's time."""
    app = create_app({**base_config(database_url), "RATE_LIMITS": dict.fromkeys(MODES, "2000/second")})
    with app.app_context():
        _clear_customer_tables()
    yield app
    with app.app_context():
        db.session.remove()
        _clear_customer_tables()
        db.engine.dispose()


def _webhook(api: Api) -> str | None:
    body = {
        "url": "http://127.0.0.1:9/hooks",
        "status": "active",
        "version": VERSION,
        "enabled_events": ["account.added", "direct_deposit_switch.added"],
    }
    response = api.post("/webhooks", json=body)
    # None once fuzzed creates have used up the key's quota of webhooks.
    return response.get_json()["data"]["id"] if response.status_code == 200 else None


@pytest.fixture(scope="module")
def sandbox(fuzz_app):
    """A sandbox API client and the ids of one record of each kind, made through the API itself."""
    from console.keys.services import create_key
    from console.workspaces.services import create_workspace

    with fuzz_app.app_context():
        workspace = create_workspace("Fuzzed workspace")
        secret = create_key(workspace.id, "sandbox", "fuzz").secret
        db.session.commit()
    api = Api(fuzz_app.test_client(), secret)
    token = api.post(
        "/link_tokens",
        json={"org_name": "Acme", "end_user_id": "fuzz-user", "required_jobs": ["direct_deposit_switch"],
              "allocation": {"targets": [TARGET]}},
    ).get_json()["data"]  # fmt: skip
    done = api.post(
        f"/sandbox/link_tokens/{token['id']}/complete",
        json={"platform_id": str(PLATFORM_IDS["paycrest"]),
              "credentials": {"username": "user_good", "password": "pass_good"}},
    ).get_json()["data"]  # fmt: skip
    ids = {
        "link_token_id": token["id"],
        "account_id": done["account_id"],
        "job_id": done["job_id"],
        "webhook_id": _webhook(api),
        "event_id": api.get("/events?limit=1").get_json()["data"][0]["id"],
        "platform_id": done["platform_id"],
        "employer_id": api.get("/employers?limit=1").get_json()["data"][0]["id"],
    }
    assert all(ids.values()), ids
    return api, ids


@pytest.fixture(autouse=True)
def _no_dns(monkeypatch):
    # Generated webhook URLs name random hosts: answer for them instead of asking a resolver.
    monkeypatch.setattr(urls, "resolve", lambda host, port: ["93.184.216.34"])


_alternate = itertools.count()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not EXPLORING,
    suppress_health_check=list(HealthCheck),
)
def test_operation_conforms_to_the_document(case, fuzz_app, sandbox):
    api, ids = sandbox
    if case.path_parameters and next(_alternate) % 2:
        real = dict(ids)
        if case.method.upper() == "DELETE":
            # Each delete gets its own webhook (or keeps its generated id), so the shared one stays.
            real["webhook_id"] = _webhook(api) or case.path_parameters["webhook_id"]
        case.path_parameters = {name: real.get(name, value) for name, value in case.path_parameters.items()}
    case.call_and_validate(app=fuzz_app, headers={"x-api-secret": api.secret}, checks=CHECKS)
