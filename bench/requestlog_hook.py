"""Cost of the request log on the API hot path: time inside the after-request hook, per request.

    python -m bench.requestlog_hook [N]

Sends N POST /sandbox/v1/link_tokens through Flask's test client (SQLite in a temporary folder),
timing the hook (`console.requestlog.capture.collect`) itself, then the same requests with the hook
removed, so the difference per request is visible next to the whole request's time. The writer
thread runs as in production (it writes the batches during the run).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from console import create_app
from console.extensions import db
from console.requestlog import capture
from console.requestlog.writer import writer_for

BODY = {
    "org_name": "Acme",
    "end_user_id": "bench",
    "required_jobs": ["direct_deposit_switch"],
    "allocation": {
        "targets": [{"type": "checking", "routing_number": "011000015", "account_number": "12345678"}]
    },
}


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 1000
    folder = Path(tempfile.mkdtemp())
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'bench.db'}",
            "SECRET_KEY": "bench",
            "RATELIMIT_STORAGE_URI": "memory://",
            "RATE_LIMITS": dict.fromkeys(("sandbox", "development", "production"), "100000/second"),
        }
    )
    with app.app_context():
        from console.keys.services import create_key
        from console.workspaces.services import create_workspace

        db.create_all()
        ws = create_workspace("bench")
        secret = create_key(ws.id, "sandbox").secret
        db.session.commit()
    client = app.test_client()
    headers = {"x-api-secret": secret, "Service-Version": "2023-11-22"}
    hook_times: list[float] = []
    original = capture.collect

    def timed(response):
        started = time.perf_counter()
        result = original(response)
        hook_times.append(time.perf_counter() - started)
        return result

    def run(label: str) -> float:
        durations = []
        for _ in range(n):
            started = time.perf_counter()
            response = client.post("/sandbox/v1/link_tokens", json=BODY, headers=headers)
            durations.append(time.perf_counter() - started)
            assert response.status_code == 200, response.get_data(as_text=True)
        median = statistics.median(durations) * 1000
        print(f"{label:<22} median request {median:.3f} ms")
        return median

    funcs = app.after_request_funcs[None]
    index = funcs.index(capture.collect)
    run("warm-up")
    funcs[index] = timed
    with_hook = run("with the hook")
    funcs[index] = lambda response: response
    without = run("without the hook")
    writer_for(app).close()
    print(
        f"hook itself: median {statistics.median(hook_times) * 1e6:.1f} µs, "
        f"p99 {sorted(hook_times)[int(len(hook_times) * 0.99)] * 1e6:.1f} µs over {len(hook_times)} requests"
    )
    print(f"difference of medians: {with_hook - without:+.3f} ms per request (noisy on a shared machine)")
    steady_state(app, secret)


def steady_state(app, secret: str, calls: int = 2000) -> None:
    """The hook alone in a loop (best of 5), and the writer's own work per row, without other noise."""
    from flask import g

    from console.keys.services import authenticate
    from console.requestlog.writer import Writer

    writer = Writer(app, interval=3600, capacity=calls * 6)
    app.extensions["requestlog_writer"] = writer
    with app.test_request_context(
        "/sandbox/v1/link_tokens", method="POST", json=BODY, headers={"Service-Version": "2023-11-22"}
    ):
        key = authenticate(secret, "sandbox")
        g.api_key, g.workspace, g.api_mode = key, key.workspace, "sandbox"
        g.request_id, g.request_started = "rid", time.perf_counter()
        response = app.response_class('{"data": {}}', mimetype="application/json")
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(calls):
                capture.collect(response)
            best = min(best, (time.perf_counter() - started) / calls)
    rows = len(writer._rows)
    started = time.perf_counter()
    writer.close()
    per_row = (time.perf_counter() - started) / rows
    print(
        f"hook alone: {best * 1e6:.1f} µs per request; writer: {per_row * 1e6:.1f} µs per row ({rows} rows, one batch)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
