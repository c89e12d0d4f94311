"""Console page speed with a big workspace: server time per page with 100,000 events.

    python -m bench.console_pages              # 100,000 events, 30 timed requests per page
    python -m bench.console_pages --events 20000 --runs 10

Seeds one workspace through the console itself (first visit: workspace, key, inbox webhook), then
bulk-inserts events with one delivery and one attempt each, Link tokens, accounts, jobs with their
transitions, request-log rows and inbox messages. Each page is requested in-process with the Flask
test client, so the time measured is the server's (routing, queries, templates), not the network's.
Uses a throwaway SQLite file unless $BENCH_DATABASE_URL names another (throwaway: its tables are dropped).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

from sqlalchemy import insert

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_MS = 100.0
BATCH = 10_000
TYPES = ("account.added", "employment.added", "direct_deposit_switch.added", "direct_deposit_switch.added")


def build_app(database_url: str):
    from console import create_app
    from console.extensions import db
    from console.world.seed import seed_world

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": database_url,
            "SECRET_KEY": "bench-only",
            "TESTING": True,  # the console's API calls go in-process; nothing leaves the machine
            "RATELIMIT_STORAGE_URI": "memory://",
        }
    )
    with app.app_context():
        db.drop_all()
        db.create_all()
        seed_world(db.session)
        db.session.commit()
    return app


def _insert(table, rows: list[dict]) -> None:
    from console.extensions import db

    for start in range(0, len(rows), BATCH):
        db.session.execute(insert(table), rows[start : start + BATCH])


def seed(app, workspace_id: uuid.UUID, n_events: int) -> dict:
    """Bulk rows for one workspace; returns ids the timed URLs need."""
    from console.accounts.models import Account
    from console.api.pagination import encode_cursor
    from console.core.timeutil import utcnow
    from console.events.models import Event
    from console.extensions import db
    from console.jobs.models import Job, JobTransition
    from console.keys.models import ApiKey
    from console.link_tokens.models import LinkToken
    from console.requestlog.models import RequestLogEntry
    from console.web.webhooks.models import InboxMessage
    from console.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery
    from console.world.seed_data import PLATFORM_IDS

    with app.app_context():
        key = db.session.query(ApiKey).filter_by(workspace_id=workspace_id).one()
        webhook = db.session.query(Webhook).filter_by(workspace_id=workspace_id).one()
        now = utcnow()
        n_tokens = max(1, n_events // 50)
        common = {"workspace_id": workspace_id, "mode": "sandbox"}
        tokens, accounts, jobs, transitions = [], [], [], []
        for i in range(n_tokens):
            at = now - timedelta(minutes=n_tokens - i)
            token_id, account_id, job_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
            tokens.append({**common, "id": token_id, "api_key_id": key.id, "token_hash": uuid.uuid4().hex * 2,
                           "org_name": "Bench", "end_user_id": f"user_{i}", "required_jobs": ["direct_deposit_switch"],
                           "targets": [], "created_at": at, "expires_at": at + timedelta(hours=1)})  # fmt: skip
            accounts.append({**common, "id": account_id, "end_user_id": f"user_{i}", "link_token_id": token_id,
                             "platform_id": PLATFORM_IDS["paycrest"], "platform_name": "Paycrest",
                             "created_at": at})  # fmt: skip
            jobs.append({**common, "id": job_id, "account_id": account_id, "link_token_id": token_id,
                         "end_user_id": f"user_{i}", "outcome": "success", "params": {}, "timestamp": at,
                         "first_attempt_at": at, "created_at": at})  # fmt: skip
            transitions.append({"id": uuid.uuid4(), "job_id": job_id, "sequence": 1, "from_outcome": None,
                                "to_outcome": "success", "at": at})  # fmt: skip
        events, deliveries, attempts = [], [], []
        for i in range(n_events):
            at = now - timedelta(seconds=n_events - i)
            t = i % n_tokens
            event_id, delivery_id = uuid.uuid4(), uuid.uuid4()
            events.append({**common, "id": event_id, "type": TYPES[i % len(TYPES)], "payload": {"n": i},
                           "link_token_id": tokens[t]["id"], "account_id": accounts[t]["id"],
                           "end_user_id": f"user_{t}", "created_at": at})  # fmt: skip
            deliveries.append({**common, "id": delivery_id, "event_id": event_id, "webhook_id": webhook.id,
                               "status": "delivered", "attempt_count": 1, "round_attempts": 1, "due_at": at,
                               "run_after": at, "created_at": at, "delivered_at": at,
                               "first_attempt_at": at, "last_attempt_at": at})  # fmt: skip
            attempts.append({"id": uuid.uuid4(), "delivery_id": delivery_id, "webhook_id": webhook.id,
                             "event_id": event_id, "number": 1, "at": at, "sent_timestamp": int(at.timestamp()),
                             "outcome": "delivered", "status_code": 200, "latency_ms": 3})  # fmt: skip
        requests = [{"id": uuid.uuid4(), "workspace_id": workspace_id, "mode": "sandbox", "step": "jobs",
                     "method": "GET", "url": "http://localhost/sandbox/v1/jobs", "path": "/sandbox/v1/jobs",
                     "request_headers": {}, "status": 200, "response_headers": {}, "response_body": "{}",
                     "created_at": now - timedelta(seconds=i)} for i in range(n_events // 10)]  # fmt: skip
        inbox = [{"id": uuid.uuid4(), "workspace_id": workspace_id, "received_at": now - timedelta(seconds=i),
                  "headers": {}, "body": "{}", "event_type": "account.added", "verified": True}
                 for i in range(n_events // 10)]  # fmt: skip
        for table, rows in ((LinkToken, tokens), (Account, accounts), (Job, jobs), (JobTransition, transitions),
                            (Event, events), (WebhookDelivery, deliveries), (WebhookAttempt, attempts),
                            (RequestLogEntry, requests), (InboxMessage, inbox)):  # fmt: skip
            _insert(table, rows)
        db.session.commit()
        middle = tokens[n_tokens // 2]
        deep = events[n_events // 2]
        return {
            "deep_cursor": encode_cursor([deep["created_at"], deep["id"]], (Event.created_at, Event.id)),
            "event_id": events[-1]["id"],
            "link_token_id": middle["id"],
            "account_id": accounts[n_tokens // 2]["id"],
        }


def pages(ids: dict, poll_cursor: str) -> list[tuple[str, str, str]]:
    """(name, path pattern, URL) of every page timed."""
    return [
        ("Walkthrough", "/", "/"),
        ("Event log", "/events", "/events"),
        ("Event log, 2,000 pages deep", "/events/rows?cursor=", f"/events/rows?cursor={ids['deep_cursor']}"),
        ("Event log, type filter", "/events?type=", "/events?type=account.added"),
        (
            "Event log, Link token filter",
            "/events?link_token_id=",
            f"/events?link_token_id={ids['link_token_id']}",
        ),
        ("Event log, end user filter", "/events?end_user_id=", "/events?end_user_id=user_7"),
        ("Event log, live poll (nothing new)", "/events/rows?after=", f"/events/rows?after={poll_cursor}"),
        ("Event detail", "/events/{id}", f"/events/{ids['event_id']}"),
        ("Timeline index", "/timeline", "/timeline"),
        (
            "Timeline, Link token",
            "/timeline/link-tokens/{id}",
            f"/timeline/link-tokens/{ids['link_token_id']}",
        ),
        ("Timeline, account", "/timeline/accounts/{id}", f"/timeline/accounts/{ids['account_id']}"),
        ("Webhooks and inbox", "/webhooks", "/webhooks"),
        ("Request log", "/requests", "/requests"),
        ("Scenarios", "/scenarios", "/scenarios"),
        ("API keys", "/keys", "/keys"),
        ("Clock", "/clock", "/clock"),
        # Every open clock, timeline or presenter page asks this every 2 s.
        (
            "Clock, live poll (nothing new)",
            "/clock/scheduled?pulse=",
            f"/clock/scheduled?pulse={ids['pulse']}",
        ),
        ("World", "/world?tab=people", "/world?tab=people"),
        ("API reference", "/reference", "/reference"),
    ]


def measure(client, url: str, runs: int) -> tuple[float, float]:
    for _ in range(3):  # warm caches and compiled templates
        client.get(url)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code in (200, 204), (url, response.status_code)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def _workspace(app, events: int):
    """A fresh visitor's workspace seeded with `events` events: (client, ids, live-poll cursor)."""
    from console.web.shared import workspace_session

    client = app.test_client()
    # What a visitor's first action does: the workspace, its sandbox key and the inbox webhook.
    with app.test_request_context("/"):
        workspace_id = workspace_session.start_new_workspace().id
    with client.session_transaction() as session:
        session[workspace_session.SESSION_KEY] = str(workspace_id)
    ids = seed(app, workspace_id, events)
    with app.app_context():
        from console.extensions import db
        from console.web.shared import live
        from console.workspaces.models import Workspace

        ids["pulse"] = live.pulse(db.session.get(Workspace, workspace_id))
    html = client.get("/events").get_data(as_text=True)
    poll_cursor = html.split("/events/rows?after=", 1)[1].split('"', 1)[0].replace("&amp;", "&")
    return client, ids, poll_cursor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--baseline-events", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url = os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{Path(tmp) / 'console_pages.db'}"
        app = build_app(url)
        started = time.perf_counter()
        client, ids, poll_cursor = _workspace(app, args.events)
        print(
            f"Seeded {args.events:,} events (+ deliveries, attempts) in {time.perf_counter() - started:.1f} s"
        )
        # Baseline, same run and database: a workspace 100x smaller. A ratio near 1 means the
        # page's cost does not grow with the workspace (keyset pagination and indexes at work).
        small, small_ids, small_cursor = _workspace(app, args.baseline_events)
        baseline = {name: path for name, _, path in pages(small_ids, small_cursor)}
        print(
            f"\n| Page | median ms | p95 ms | baseline median ms ({args.baseline_events:,} events) | ratio |"
            "\n|---|---:|---:|---:|---:|"
        )
        worst = 0.0
        for name, pattern, path in pages(ids, poll_cursor):
            median, p95 = measure(client, path, args.runs)
            base, _ = measure(small, baseline[name], args.runs)
            worst = max(worst, median)
            print(f"| {name} (`{pattern}`) | {median:.1f} | {p95:.1f} | {base:.1f} | {median / base:.2f} |")
        verdict = "PASS" if worst < TARGET_MS else "FAIL"
        print(f"\nSlowest median {worst:.1f} ms; target < {TARGET_MS:.0f} ms: {verdict}")
        return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
