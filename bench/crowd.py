"""A crowd on the console, a customer on the API: the API's latency while 48 clients load console pages.

    python -m bench.crowd                       # 3 rounds of 10 s; --write updates BENCHMARKS.md
    python -m bench.crowd --runs 1 --duration 3 # a smoke run

The room of issue 9: `console run` with its defaults (SQLite, worker in-process) on a free port of
127.0.0.1. `wrk -t2 -c48` loads the walkthrough page (`/`) as fast as it answers, without cookies, so
every visit is a new visitor. Meanwhile one customer backend
(a keep-alive connection of this process) creates a Link token every 50 ms, rotating over sandbox keys
so the per-key limit never binds, and times each call. Baseline, in the same round: the same customer
with no crowd. Target: the API's p99 under the crowd stays under 500 ms and nothing answers 5xx.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.api import (
    BIN,
    LINK_TOKEN_BODY,
    SECRET_KEY,
    VERSION,
    Server,
    seed,
    write_benchmarks,
    write_script,
    wrk,
)

TARGET_P99_MS = 500.0
CUSTOMER_INTERVAL = 0.05
MARK_START, MARK_END = "<!-- bench.crowd:start -->", "<!-- bench.crowd:end -->"


@dataclass
class Calls:
    seconds: list[float]
    statuses: list[int]

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000

    @property
    def non_2xx(self) -> int:
        return sum(1 for s in self.statuses if not 200 <= s < 300)


def customer(port: int, secrets: list[str], stop: threading.Event) -> Calls:
    """Link tokens at a steady pace on one keep-alive connection until `stop`; each call timed."""
    calls = Calls([], [])
    body = json.dumps(LINK_TOKEN_BODY)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    n = 0
    while not stop.is_set():
        n += 1
        headers = {"x-api-secret": secrets[n % len(secrets)], "Service-Version": VERSION,
                   "Content-Type": "application/json"}  # fmt: skip
        started = time.monotonic()
        try:
            connection.request("POST", "/sandbox/v1/link_tokens", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            status = 599
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        calls.seconds.append(time.monotonic() - started)
        calls.statuses.append(status)
        time.sleep(max(0.0, CUSTOMER_INTERVAL - (time.monotonic() - started)))
    connection.close()
    return calls


def timed_customer(port: int, secrets: list[str], seconds: float) -> Calls:
    stop = threading.Event()
    result: list[Calls] = []
    thread = threading.Thread(target=lambda: result.append(customer(port, secrets, stop)))
    thread.start()
    time.sleep(seconds)
    stop.set()
    thread.join(60)
    return result[0]


@dataclass
class Round:
    alone: Calls
    crowded: Calls
    pages_per_second: float
    pages_non_2xx: int


def one_round(server: Server, secrets: list[str], script: Path, args) -> Round:
    server.start()
    try:
        timed_customer(server.port, secrets, 1.0)  # warm
        alone = timed_customer(server.port, secrets, args.duration)
        stop = threading.Event()
        result: list[Calls] = []
        thread = threading.Thread(target=lambda: result.append(customer(server.port, secrets, stop)))
        thread.start()
        crowd = wrk(server.url + "/", script, threads=2, connections=args.connections, duration=args.duration)
        stop.set()
        thread.join(60)
    finally:
        server.stop()
    # 5xx answers and failed connections; the page's 2xx and 3xx are both a served page.
    pages_non_2xx = crowd.detail["n5xx"] + crowd.detail["socket_errors"] + crowd.detail["timeouts"]
    return Round(alone, result[0], crowd.rps, pages_non_2xx)


def table(rounds: list[Round]) -> str:
    def med(values) -> float:
        return statistics.median(values)

    alone_p99 = med(r.alone.percentile(0.99) for r in rounds)
    crowd_p99 = med(r.crowded.percentile(0.99) for r in rounds)
    met = crowd_p99 < TARGET_P99_MS and all(r.pages_non_2xx == 0 and r.crowded.non_2xx == 0 for r in rounds)
    lines = [
        "| what | API calls | API p50 ms | API p99 ms (median) | p99 per round | API max ms | API non-2xx | "
        "console pages/s | console 5xx or errors |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
        f"| the customer alone (baseline) | {sum(len(r.alone.seconds) for r in rounds)} | "
        f"{med(r.alone.percentile(0.5) for r in rounds):.1f} | {alone_p99:.1f} | "
        f"{' / '.join(f'{r.alone.percentile(0.99):.0f}' for r in rounds)} | "
        f"{max(max(r.alone.seconds) for r in rounds) * 1000:.0f} | {sum(r.alone.non_2xx for r in rounds)} | — | — |",
        f"| the customer while 48 clients load `/` | {sum(len(r.crowded.seconds) for r in rounds)} | "
        f"{med(r.crowded.percentile(0.5) for r in rounds):.1f} | {crowd_p99:.1f} | "
        f"{' / '.join(f'{r.crowded.percentile(0.99):.0f}' for r in rounds)} | "
        f"{max(max(r.crowded.seconds) for r in rounds) * 1000:.0f} | {sum(r.crowded.non_2xx for r in rounds)} | "
        f"{med(r.pages_per_second for r in rounds):,.0f} | {sum(r.pages_non_2xx for r in rounds)} |",
    ]
    verdict = (
        f"Target (API p99 < {TARGET_P99_MS:.0f} ms under the crowd, no 5xx): **{'met' if met else 'not met'}**; "
        f"p99 ratio crowd / alone {crowd_p99 / alone_p99:.1f}x."
    )
    return "\n".join(lines) + "\n\n" + verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--connections", type=int, default=48, help="console clients (wrk connections)")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("bench.crowd: wrk is not installed (apt-get install wrk, or `make bench`); skipped")
        return 0
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="bench-crowd-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "instance").mkdir()
        data = seed(f"sqlite:///{tmp / 'instance' / 'console.db'}", keys=50, jobs=1000, jobs_per_token=10)
        for name in ("DATABASE_URL", "RATELIMIT_STORAGE_URI", "RUN_WORKER", "PUBLIC_URL"):
            os.environ.pop(name, None)
        server = Server(
            "run",
            [[str(BIN / "console"), "run", "--host", "127.0.0.1", "--port", "{port}"]],
            # The crowd stands for a room of visitors, each at an address of its own; wrk's 48 connections all
            # come from 127.0.0.1, which the per-address limit would cut to 50 pages/s.
            {
                "CONSOLE_INSTANCE_DIR": str(tmp / "instance"),
                "SECRET_KEY": SECRET_KEY,
                "CONSOLE_PAGES_PER_SECOND": "0",
            },
            "/sandbox/v1/openapi.json",
            tmp / "run.log",
            wait_for_worker=True,
        )
        # The page script sends the API headers too; the console ignores them.
        script = write_script(tmp / "crowd.lua", method="GET", paths=["/"], secrets=data.secrets, body=None)
        for n in range(args.runs):
            result = one_round(server, data.secrets, script, args)
            rounds.append(result)
            print(
                f"  round {n + 1}: alone p99 {result.alone.percentile(0.99):.1f} ms; with the crowd "
                f"p99 {result.crowded.percentile(0.99):.1f} ms, max {max(result.crowded.seconds) * 1000:.0f} ms, "
                f"API non-2xx {result.crowded.non_2xx}; console {result.pages_per_second:,.0f} pages/s, "
                f"5xx/errors {result.pages_non_2xx}",
                flush=True,
            )
    header = (
        f"`console run` defaults; `wrk -t2 -c{args.connections} -d{args.duration:g}s` on `/` and one customer "
        f"creating a Link token every {CUSTOMER_INTERVAL * 1000:.0f} ms; {args.runs} round(s), {os.cpu_count()} CPUs, "
        f"load average at start {load}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
    )
    result_table = table(rounds)
    print(header)
    print(result_table)
    if args.write:
        command = "python -m bench.crowd " + " ".join(argv if argv is not None else sys.argv[1:])
        write_benchmarks(f".venv/bin/{command.strip()}", header, result_table, (MARK_START, MARK_END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
