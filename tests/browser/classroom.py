"""A class of trainees at different points of the exercises, made over HTTP against a served app (a live
server in the browser tests, docs/screenshots.py's server for the grid picture).

Each trainee joins through the join link as a browser would (their own cookie jar and CSRF token), then their
"own backend" calls the API with their sandbox key: nothing is written behind the app's back except, for the
trainees meant to look stuck, their joining time moved back (nothing else can make 15 minutes pass).
"""

from __future__ import annotations

import re
import time
from datetime import timedelta

import requests
from sqlalchemy import select, update

from tests.factories import LINK_TOKEN

NAMES = (
    "Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Linus Torvalds", "Margaret Hamilton",
    "Dennis Ritchie", "Barbara Liskov", "Ken Thompson", "Frances Allen", "Donald Knuth", "Radia Perlman",
    "Edsger Dijkstra", "Hedy Lamarr", "Tim Berners-Lee", "Shafi Goldwasser", "Guido van Rossum", "Anita Borg",
    "John McCarthy", "Sophie Wilson",
)  # fmt: skip
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
TOKEN_BODY = LINK_TOKEN


def open_new_class(page, base_url: str, name: str) -> str:
    """As a trainer in the browser: create a class, open its grid; its join link."""
    return open_new_class_links(page, base_url, name)[0]


def open_new_class_links(page, base_url: str, name: str) -> tuple[str, str]:
    """`open_new_class`, with the trainer link too (for a second trainer screen): (join link, trainer link)."""
    page.goto(base_url + "/training")
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create class").click()
    join_link = page.locator("#join-link").inner_text()
    trainer_link = page.locator("#trainer-link").inner_text()
    page.get_by_role("link", name="Open the grid").click()
    return join_link, trainer_link


def join(join_link: str, name: str) -> requests.Session:
    browser = requests.Session()
    page = browser.get(join_link, timeout=30)
    page.raise_for_status()
    answer = browser.post(
        join_link, data={"name": name, "csrf_token": CSRF.search(page.text).group(1)}, timeout=30
    )
    answer.raise_for_status()
    assert answer.url.endswith("/training/me"), answer.url
    return browser


def _backend(root: str, secret: str):
    headers = {"x-api-secret": secret, "Service-Version": "2023-11-22"}

    def call(method: str, path: str, body: dict | None = None) -> dict:
        answer = requests.request(method, f"{root}/sandbox/v1{path}", json=body, headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text
        return answer.json()["data"]

    return call


def progress(root: str, secret: str, steps: int) -> None:
    """The trainee's own code does the first `steps` of: a Link token (1), Link from their page (2), their
    endpoint (3), a pending switch to success and a federal switch sent (6)."""
    call = _backend(root, secret)
    if steps >= 1:
        token = call("POST", "/link_tokens", TOKEN_BODY)
    if steps >= 2:
        requests.get(
            f"{root}/sandbox/link",
            params={"token": token["token"], "origin": "http://localhost:8000"},
            timeout=60,
        ).raise_for_status()
    if steps >= 3:
        call(
            "POST",
            "/webhooks",
            {
                "url": "http://127.0.0.1:9/hooks",
                "status": "active",
                "version": "2023-11-22",
                "enabled_events": ["account.added"],
            },
        )
    if steps >= 4:
        from console.training.client import pcc

        for scenario, advance in (
            ("user_pending_success", {"seconds": 90}),
            ("federal_sent", {"business_days": 1}),
        ):
            pcc.SCENARIOS = _scenarios()
            pcc.trigger(root, secret, scenario)
            call("POST", "/sandbox/clock/advance", advance)


def _scenarios() -> dict:
    from console.trigger import resolve

    table = {}
    for name in ("user_pending_success", "federal_sent"):
        scenario = resolve(name)
        table[name] = {
            "key": scenario.key,
            "token_body": scenario.token_body(),
            "completion": scenario.completion,
        }
    return table


def check_endpoint(root: str, secret: str, deadline_seconds: float = 60) -> None:
    """The trainee runs the conformance check on the endpoint they registered (127.0.0.1:9, where nothing
    listens: the grid's cell reads `down`) and waits for its report."""
    call = _backend(root, secret)
    hook = call("GET", "/webhooks")[0]
    headers = {"x-api-secret": secret, "Service-Version": "2023-11-22"}
    path = f"{root}/sandbox/v1/sandbox/webhooks/{hook['id']}/conformance"
    started = requests.post(path, headers=headers, timeout=60)
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + deadline_seconds
    while call("GET", f"/sandbox/webhooks/{hook['id']}/conformance")["status"] != "done":
        assert time.monotonic() < deadline, "the conformance run did not finish"
        time.sleep(0.2)


def seed_class(
    app, join_link: str, root: str, count: int = 20, *, check_endpoints: bool = False
) -> list[str]:
    """`count` trainees joined through `join_link`, each a little further than the one before (every fifth
    has done nothing and joined 15 minutes ago: stuck). Returns their names in joining order.

    `check_endpoints`: those who stopped at registering their endpoint then run the conformance check on it
    and fail (docs/screenshots.py: the grid's red cells)."""
    from console.extensions import db
    from console.keys.models import ApiKey
    from console.keys.services import secret_of
    from console.training.models import CohortMember

    names = list(NAMES[:count])
    for name in names:
        join(join_link, name)
    with app.app_context():
        members = {
            m.name: m for m in db.session.scalars(select(CohortMember).where(CohortMember.name.in_(names)))
        }
        secrets = {
            name: secret_of(
                db.session.scalars(select(ApiKey).where(ApiKey.workspace_id == m.workspace_id)).first()
            )
            for name, m in members.items()
        }
        stuck = [members[name].id for index, name in enumerate(names) if index % 5 == 4]
        earlier = members[names[0]].joined_at - timedelta(minutes=15)
        db.session.execute(update(CohortMember).where(CohortMember.id.in_(stuck)).values(joined_at=earlier))
        db.session.commit()
    for index, name in enumerate(names):
        if index % 5 != 4:
            steps = (0, 1, 2, 3, 4, 1, 3, 4)[index % 8]
            progress(root, secrets[name], steps)
            if check_endpoints and steps == 3:
                check_endpoint(root, secrets[name])
    return names
