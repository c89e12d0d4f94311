"""Neighbours: what a quiet tenant sees while a noisy tenant in the same server misbehaves (issue 31).

    python -m bench.neighbours                  # 20 s quiet, then a 60 s storm; --write updates BENCHMARKS.md
    python -m bench.neighbours --seconds 20 --quiet-seconds 10   # a shorter run to iterate

`console run` with its defaults (SQLite in a temp instance folder, 2 serving processes and the worker) on a
free port of 127.0.0.1, plus `TRUSTED_PROXIES=127.0.0.1` so that each simulated visitor can have an address
of its own in `X-Forwarded-For`, as it would behind the proxy of a shared server (every client here really
connects from 127.0.0.1). All traffic stays on 127.0.0.1.

Tenant B (quiet) has its own workspace: a backend calling `GET /sandbox/v1/jobs` every 50 ms on one keep-alive
connection (each call timed), and sending itself a test webhook every 250 ms to a fast receiver (delivery
latency = the receiver's arrival time minus the event's `created_at`, taken before its transaction commits).
B is measured alone, then again while tenant A, at once:
- hammers 70 conformance runs (70 clients, one webhook each, over 8 workspaces) at a receiver that answers
  after 14 s: POST, poll the run until done, POST again; 409 / 429 answers are retried after a second;
- sends ~6 test events/s to 10 webhooks that never answer in time: 5 at its own built-in inbox set to
  "timeout", 5 at a receiver that never answers;
- floods the console's creating POSTs from a few addresses, dropping its cookie every time: a presenter
  profile, a training cohort, a join of one cohort, over and over;
- loads console pages with 40 clients as fast as they answer (`wrk -c40`: `/present`, a story's stage and
  summary, `/training`, a join page; no cookies).
Meanwhile a presenter (another visitor, another address) runs the standard-switch story through the stage's
HTTP actions (the POSTs the arrow key sends), again and again: each run must reach "The end.".

B runs in a process of its own (its timer never waits for another client's GIL), ahead of everything else
for a CPU (SCHED_FIFO where allowed): its backend would run on a machine of its own, so its timer measures the
server, not its own wait for a core; A's clients and wrk run at `--nice` (default 10): on a real server they
are on other machines, so here they get only the CPU the server and B leave. Each of B's calls is split by its
answer's `Server-Timing` (console.runslots) into its wait for a run slot, its time in the app, and the rest:
outside the app (the HTTP layer, the GIL before the app is called, the network) and B's own wait for a CPU
(from Linux's schedstat), so a slow p99 says where it was spent.

Targets (issue 31): B's API p99 during the storm <= 2x its quiet p99 and < 250 ms; no 5xx for anyone; B's
delivery p99 <= 1 s; the presenter's story reaches its end. The database's growth (bytes, with its WAL) is
reported, not judged.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bench.api import BIN, SECRET_KEY, VERSION, Server, write_benchmarks, write_script, wrk
from bench.webhooks import received, start_receiver

MARK_START, MARK_END = "<!-- bench.neighbours:start -->", "<!-- bench.neighbours:end -->"
API_INTERVAL = 0.05  # B's GET /v1/jobs
B_EVENT_INTERVAL = 0.25  # B's test webhooks
B_API_KEYS = 4  # B's GETs rotate over these (5 calls/s each, under the 10/s per key)
A_CONFORMANCE_CLIENTS = 70
A_CONFORMANCE_WORKSPACES = 8
SLOW_SECONDS = 14.0
A_TIMEOUT_WEBHOOKS = 10
A_EVENTS_PER_SECOND = 6.0
PAGE_CLIENTS = 40
FLOOD_ADDRESSES = 4
STORY = "10-standard-switch"
PRESENTER_PAUSE = 1.0  # seconds between two runs of the story
TARGET_RATIO, TARGET_API_P99_MS, TARGET_DELIVERY_P99_MS = 2.0, 250.0, 1000.0
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


# Seeding ------------------------------------------------------------------------------------


@dataclass
class Seeded:
    b_secrets: list[str]
    b_event_secret: str
    b_webhook: str
    a_conformance: list[tuple[str, str]]  # (secret, webhook id), one per client
    a_timeout_secret: str
    a_timeout_webhooks: list[str]
    join_token: str


def seed(database_url: str, port: int, urls: dict[str, str]) -> Seeded:
    from console import create_app
    from console.bootstrap import prepare_database
    from console.extensions import db
    from console.keys.services import create_key
    from console.training import cohorts
    from console.web.webhooks.models import InboxSetting
    from console.webhooks import own_inbox, services
    from console.workspaces.services import create_workspace

    app = create_app({"SQLALCHEMY_DATABASE_URI": database_url, "SECRET_KEY": SECRET_KEY})

    def webhook(key, url: str) -> str:
        body = {"url": url, "status": "active", "enabled_events": ["account.added"], "version": VERSION}
        return str(services.create_webhook(key, body).id)

    with app.app_context():
        prepare_database()
        b = create_workspace("tenant B")
        b_keys = [create_key(b.id, "sandbox", f"B {i}") for i in range(B_API_KEYS + 1)]
        b_webhook = webhook(b_keys[-1].key, urls["b"])
        a_conformance = []
        per_workspace = -(-A_CONFORMANCE_CLIENTS // A_CONFORMANCE_WORKSPACES)
        for w in range(A_CONFORMANCE_WORKSPACES):
            workspace = create_workspace(f"tenant A {w}")
            created = create_key(workspace.id, "sandbox", "A")
            for n in range(per_workspace):
                if len(a_conformance) < A_CONFORMANCE_CLIENTS:
                    hook = webhook(created.key, f"{urls['slow']}/{w}/{n}")
                    a_conformance.append((created.secret, hook))
        noisy = create_workspace("tenant A timeouts")
        noisy_key = create_key(noisy.id, "sandbox", "A timeouts")
        db.session.add(InboxSetting(workspace_id=noisy.id, behaviour="timeout"))
        inbox = f"http://127.0.0.1:{port}{own_inbox.PATH}{own_inbox.token_for(SECRET_KEY, noisy.id)}"
        timeout_hooks = [webhook(noisy_key.key, inbox) for _ in range(A_TIMEOUT_WEBHOOKS // 2)]
        timeout_hooks += [
            webhook(noisy_key.key, f"{urls['hang']}/{n}")
            for n in range(A_TIMEOUT_WEBHOOKS - len(timeout_hooks))
        ]
        cohort, _secret = cohorts.create_cohort("A's class", ["link_token"])
        db.session.commit()
        seeded = Seeded(
            b_secrets=[k.secret for k in b_keys[:-1]],
            b_event_secret=b_keys[-1].secret,
            b_webhook=b_webhook,
            a_conformance=a_conformance,
            a_timeout_secret=noisy_key.secret,
            a_timeout_webhooks=timeout_hooks,
            join_token=cohort.join_token,
        )
        db.engine.dispose()
    return seeded


# Clients ------------------------------------------------------------------------------------


def api_headers(secret: str) -> dict[str, str]:
    return {"x-api-secret": secret, "Service-Version": VERSION, "Content-Type": "application/json"}


class Connection:
    """One keep-alive connection that reconnects after an error; every answer's status is counted."""

    def __init__(self, port: int, statuses: Counter, timeout: float = 60) -> None:
        self.port, self.statuses, self.timeout = port, statuses, timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.server_timing = ""  # the last answer's Server-Timing header

    def request(self, method: str, path: str, body=None, headers=None) -> tuple[int, bytes]:
        self.server_timing = ""
        try:
            self.conn.request(method, path, body=body, headers=headers or {})
            response = self.conn.getresponse()
            self.server_timing = response.getheader("Server-Timing") or ""
            data = response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            status, data = 599, b""
        self.statuses[status] += 1
        return status, data


@dataclass
class TenantB:
    api_seconds: list[float] = field(default_factory=list)
    api_started: list[float] = field(
        default_factory=list
    )  # wall clock (time.time) of each call, to find stalls
    statuses: Counter = field(default_factory=Counter)
    # event id -> when the event was recorded (its `created_at`: B's workspace clock is never moved, so real time)
    events: dict[str, float] = field(default_factory=dict)
    # per call, in ms: (queued for a turn, in the app, the app's CPU, B's own wait for a CPU), see `split_call`
    api_parts: list[tuple[float, float, float, float]] = field(default_factory=list)
    priority: str = ""  # what `take_a_cpu_first` got


SERVER_TIMING = re.compile(r'(\w+)(?:;desc="[^"]*")?;dur=([\d.]+)')


def split_call(server_timing: str, client_wait_ms: float) -> tuple[float, float, float, float]:
    """A call's parts from its answer's `Server-Timing` (console.runslots): (queued for a run slot, in the app,
    the app's CPU, the client's own wait for a CPU). The rest of the call's time was outside the app: the
    server's HTTP layer (Granian) and its Python thread's wait for the GIL before the app is called, and
    the loopback network."""
    parts = {name: float(ms) for name, ms in SERVER_TIMING.findall(server_timing)}
    return parts.get("runslot", 0.0), parts.get("app", 0.0), parts.get("cpu", 0.0), client_wait_ms


def run_queue_ns() -> int | None:
    """The time this thread has spent waiting for a CPU (Linux's schedstat), or None where it is not known."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as stat:
            return int(stat.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def take_a_cpu_first() -> str:
    """Put tenant B's process ahead of everything else for a CPU (SCHED_FIFO, else nice -10), as if its backend
    ran on a machine of its own: its timer then measures the server, not its own wait for one of the 2
    cores the storm keeps busy (measured at nice 0: its own run-queue wait during a call reached p99 19-38 ms).
    Says what it got."""
    with contextlib.suppress(AttributeError, OSError, PermissionError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return "SCHED_FIFO"
    with contextlib.suppress(OSError, PermissionError):
        os.nice(-10)
        return "nice -10"
    return "nice 0 (no privilege for more)"


def tenant_b(port: int, seeded: Seeded, stop: threading.Event) -> TenantB:
    """B's backend until `stop`: a timed GET every 50 ms, a test webhook every 250 ms (two threads)."""
    result = TenantB()

    def calls() -> None:
        conn, n = Connection(port, result.statuses), 0
        while not stop.is_set():
            n += 1
            started, waited = time.monotonic(), run_queue_ns()
            result.api_started.append(time.time())
            conn.request(
                "GET", "/sandbox/v1/jobs", headers=api_headers(seeded.b_secrets[n % len(seeded.b_secrets)])
            )
            result.api_seconds.append(time.monotonic() - started)
            now_waited = run_queue_ns()
            own_wait = (now_waited - waited) / 1e6 if waited is not None and now_waited is not None else 0.0
            result.api_parts.append(split_call(conn.server_timing, own_wait))
            time.sleep(max(0.0, API_INTERVAL - (time.monotonic() - started)))

    def events() -> None:
        conn = Connection(port, result.statuses)
        path = f"/sandbox/v1/sandbox/webhooks/{seeded.b_webhook}/test"
        body = json.dumps({"event": "account.added"})
        while not stop.is_set():
            started = time.monotonic()
            status, data = conn.request("POST", path, body=body, headers=api_headers(seeded.b_event_secret))
            if status == 200:
                event = json.loads(data)["data"]
                result.events[event["id"]] = datetime.fromisoformat(
                    event["created_at"].replace("Z", "+00:00")
                ).timestamp()
            time.sleep(max(0.0, B_EVENT_INTERVAL - (time.monotonic() - started)))

    threads = [threading.Thread(target=calls), threading.Thread(target=events)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return result


class Browser:
    """A console visitor: cookies, its CSRF token, an address of its own (`X-Forwarded-For`)."""

    def __init__(self, port: int, address: str, statuses: Counter) -> None:
        import requests

        self.base, self.statuses = f"http://127.0.0.1:{port}", statuses
        self.session = requests.Session()
        self.session.trust_env = False  # never a proxy: 127.0.0.1 only
        self.session.headers["X-Forwarded-For"] = address
        self.csrf = ""
        self.timed = lambda seconds, what: None

    def get(self, path: str):
        response = self._send("GET", path)
        if response is not None and (found := CSRF.search(response.text)):
            self.csrf = found.group(1)
        return response

    def post(self, path: str, form: dict | None = None):
        return self._send("POST", path, data={**(form or {}), "csrf_token": self.csrf})

    def _send(self, method: str, path: str, **kwargs):
        import requests

        started = time.monotonic()
        try:
            response = self.session.request(
                method, self.base + path, allow_redirects=False, timeout=60, **kwargs
            )
        except requests.RequestException:
            self.statuses[599] += 1
            return None
        finally:
            self.timed(time.monotonic() - started, f"{method} {path}")
        self.statuses[response.status_code] += 1
        return response


@dataclass
class Presenter:
    runs: int = 0
    finished: int = 0
    failures: list[str] = field(default_factory=list)
    run_seconds: list[float] = field(default_factory=list)
    wait_seconds: list[float] = field(default_factory=list)  # the wait_for_event step's POST
    statuses: Counter = field(default_factory=Counter)
    slowest: tuple[float, str] = (0.0, "")  # the slowest request and what it was
    own_limit_waits: int = 0


def presenter(port: int, stop: threading.Event, steps: int) -> Presenter:
    """The presenter's story, step by step as the stage's keyboard sends it, again and again until `stop`."""
    result = Presenter()
    browser = Browser(port, "203.0.113.10", result.statuses)
    browser.timed = lambda seconds, what: setattr(  # type: ignore[attr-defined]
        result, "slowest", max(result.slowest, (seconds, what))
    )
    browser.get(f"/present/{STORY}")
    first = True
    while not stop.is_set():
        result.runs += 1
        started = time.monotonic()
        failed = None
        if not first:  # a fresh workspace for each run, as the stage's "r" does
            stop.wait(PRESENTER_PAUSE)  # a person between runs (at full speed it met its own creates limit)
            restart = browser.post(f"/present/{STORY}/restart")
            while restart is not None and restart.status_code == 429 and not stop.is_set():
                result.own_limit_waits += 1  # its own address's limit on creating, not a neighbour's doing
                stop.wait(float(restart.headers.get("Retry-After", 1)))
                restart = browser.post(f"/present/{STORY}/restart")
            if stop.is_set():
                result.runs -= 1  # not started
                break
            if restart is None or restart.status_code != 303:
                failed = f"restart answered {getattr(restart, 'status_code', 'no answer')}"
        first = False
        for number in range(1, steps + 1):
            if failed:
                break
            step_started = time.monotonic()
            response = browser.post(f"/present/{STORY}/steps/{number}")
            if number == steps - 1:
                result.wait_seconds.append(time.monotonic() - step_started)
            if response is None or response.status_code != 303:
                text = re.sub(r"\s+", " ", getattr(response, "text", ""))
                message = re.search(r"did not work[^<]*<[^>]*>([^<]*)", text)
                failed = f"step {number}: {getattr(response, 'status_code', 'no answer')} {message.group(1) if message else ''}"
                break
            browser.get(response.headers["Location"])  # the stage at that step, as the browser follows
        if not failed:
            page = browser.get(f"/present/{STORY}?step={steps}")
            if page is None or "The end." not in page.text:
                failed = "the last step's page has no end"
        if failed:
            result.failures.append(failed)
        else:
            result.finished += 1
            result.run_seconds.append(time.monotonic() - started)
    return result


STORM_PARTS = ("conformance", "events", "flood", "pages")


def tenant_a_main(
    port: int,
    seeded: Seeded,
    seconds: float,
    out_file: str,
    parts: tuple[str, ...] = STORM_PARTS,
    nice: int = 0,
) -> None:
    """Tenant A's storm (a process of its own, so its threads never share the measuring process's GIL)."""
    if nice > 0:
        os.nice(nice)  # a load generator standing for clients on other machines (see --nice)
    stop = threading.Event()
    statuses: dict[str, Counter] = {"conformance": Counter(), "test events": Counter(), "flood": Counter()}
    runs_done = Counter()

    def conformance(secret: str, webhook: str) -> None:
        conn = Connection(port, statuses["conformance"])
        path = f"/sandbox/v1/sandbox/webhooks/{webhook}/conformance"
        while not stop.is_set():
            status, data = conn.request("POST", path, body="{}", headers=api_headers(secret))
            if status != 202:
                stop.wait(1.0)
                continue
            run_id = json.loads(data)["data"]["id"]
            while not stop.wait(1.0):
                status, data = conn.request("GET", f"{path}/{run_id}", headers=api_headers(secret))
                if status == 200 and json.loads(data)["data"]["status"] == "done":
                    runs_done["done"] += 1
                    break

    def test_events() -> None:
        conn, n, started = Connection(port, statuses["test events"]), 0, time.monotonic()
        body = json.dumps({"event": "account.added"})
        while not stop.is_set():
            hook = seeded.a_timeout_webhooks[n % len(seeded.a_timeout_webhooks)]
            conn.request(
                "POST",
                f"/sandbox/v1/sandbox/webhooks/{hook}/test",
                body=body,
                headers=api_headers(seeded.a_timeout_secret),
            )
            n += 1
            stop.wait(max(0.0, started + n / A_EVENTS_PER_SECOND - time.monotonic()))

    def flood(address: str) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            bot = Browser(port, address, statuses["flood"])  # a new browser (no cookie) each time
            bot.get("/present")
            bot.post("/present/profiles", {"brand": f"Bot {n}"})
            bot = Browser(port, address, statuses["flood"])
            bot.get("/training")
            bot.post("/training/cohorts", {"name": f"Bot class {n}", "exercises": "link_token"})
            bot = Browser(port, address, statuses["flood"])
            bot.get(f"/training/join/{seeded.join_token}")
            bot.post(f"/training/join/{seeded.join_token}", {"name": f"Bot {n}"})

    threads = []
    if "conformance" in parts:
        threads += [
            threading.Thread(target=conformance, args=pair, daemon=True) for pair in seeded.a_conformance
        ]
    if "events" in parts:
        threads.append(threading.Thread(target=test_events, daemon=True))
    if "flood" in parts:
        threads += [
            threading.Thread(target=flood, args=(f"198.51.100.{i + 1}",), daemon=True)
            for i in range(FLOOD_ADDRESSES)
        ]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(20)
    Path(out_file).write_text(
        json.dumps(
            {
                "statuses": {k: dict(v) for k, v in statuses.items()},
                "conformance_runs_done": runs_done["done"],
            }
        )
    )


# The run ------------------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000 if ordered else float("nan")


def call_split(phase: TenantB) -> dict[str, dict[str, float]]:
    """Where B's calls spent their time, in ms: each part's p50 / p90 / p99 over the calls, and its mean over the
    slowest 1% of them (at least one), whose sum, less `cpu` (a part of `app`), is their mean total."""
    rows = [
        {"queued": q, "app": app, "cpu": cpu, "own_wait": own, "outside": max(0.0, s * 1000 - q - app - own)}
        for s, (q, app, cpu, own) in zip(phase.api_seconds, phase.api_parts, strict=True)
    ]
    if not rows:
        return {}
    by_time = sorted(zip(phase.api_seconds, range(len(rows)), strict=True))
    slowest = [rows[i] for _, i in by_time[-max(1, len(rows) // 100) :]]
    return {
        name: {
            "p50": percentile([row[name] / 1000 for row in rows], 0.5),
            "p90": percentile([row[name] / 1000 for row in rows], 0.9),
            "p99": percentile([row[name] / 1000 for row in rows], 0.99),
            "slowest_mean": statistics.fmean(row[name] for row in slowest),
        }
        for name in ("queued", "app", "cpu", "own_wait", "outside")
    }


def database_bytes(instance: Path) -> tuple[int, int]:
    """(the database file's size, its WAL's size)."""
    sizes = [
        (instance / name).stat().st_size if (instance / name).exists() else 0
        for name in ("console.db", "console.db-wal")
    ]
    return sizes[0], sizes[1]


def delivery_latencies(b: TenantB, log_file: Path, wait: float) -> tuple[list[float], int]:
    """Arrival minus the event's recording, per B event; and how many had not arrived after `wait` s."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not set(b.events) <= set(received(log_file)):
        time.sleep(0.2)
    seen = received(log_file)
    return [max(0.0, seen[e] - t) for e, t in b.events.items() if e in seen], sum(
        1 for e in b.events if e not in seen
    )


def fivexx(statuses) -> int:
    return sum(n for s, n in statuses.items() if int(s) >= 500)


def run(args) -> dict:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="bench-neighbours-") as tmp_name:
        tmp = Path(tmp_name)
        instance = tmp / "instance"
        instance.mkdir()
        for name in ("DATABASE_URL", "RATELIMIT_STORAGE_URI", "RUN_WORKER", "PUBLIC_URL", "TRUSTED_PROXIES"):
            os.environ.pop(name, None)
        server = Server(
            "run",
            [[str(BIN / "console"), "run", "--host", "127.0.0.1", "--port", "{port}"]],
            {"CONSOLE_INSTANCE_DIR": str(instance), "SECRET_KEY": SECRET_KEY, "TRUSTED_PROXIES": "127.0.0.1"},
            "/sandbox/v1/openapi.json",
            tmp / "run.log",
            wait_for_worker=True,
        )
        receivers = {name: start_receiver(tmp, name, hang=name == "hang", delay=SLOW_SECONDS if name == "slow" else 0)
                     for name in ("b", "slow", "hang")}  # fmt: skip
        try:
            seeded = seed(
                f"sqlite:///{instance / 'console.db'}", server.port, {k: v[0] for k, v in receivers.items()}
            )
            server.start()
            story = (
                Path(__file__).resolve().parent.parent / "console" / "presenter" / "stories" / f"{STORY}.json"
            )
            steps = len(json.loads(story.read_text())["steps"])
            result = measure(server, seeded, receivers["b"][1], tmp, instance, steps, args)
        finally:
            server.stop()
            for _url, _log, proc in receivers.values():
                proc.terminate()
                proc.wait(10)
        if args.keep:
            shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
        result["log_tail"] = [line for line in (tmp / "run.log").read_text(errors="replace").splitlines()
                              if "Traceback" in line or "ERROR" in line][-10:]  # fmt: skip
    result["load"] = load
    return result


def b_phase_main(port: int, seeded: Seeded, seconds: float, out_file: str) -> None:
    """Tenant B for `seconds`, in a process of its own: the presenter's page parsing (in the measuring process)
    or tenant A's threads never hold the GIL while one of B's answers waits to be timed."""
    priority = take_a_cpu_first()
    stop = threading.Event()
    out: list[TenantB] = []
    thread = threading.Thread(target=lambda: out.append(tenant_b(port, seeded, stop)))
    thread.start()
    time.sleep(seconds)
    stop.set()
    thread.join(90)
    b = out[0]
    Path(out_file).write_text(
        json.dumps(
            {
                "api_seconds": b.api_seconds,
                "api_started": b.api_started,
                "statuses": dict(b.statuses),
                "events": b.events,
                "api_parts": b.api_parts,
                "priority": priority,
            }
        )
    )


def b_phase(port: int, seeded: Seeded, seconds: float, tmp: Path) -> TenantB:
    out_file = tmp / "tenant_b.json"
    out_file.unlink(missing_ok=True)
    proc = multiprocessing.get_context("spawn").Process(
        target=b_phase_main, args=(port, seeded, seconds, str(out_file))
    )
    proc.start()
    proc.join(seconds + 120)
    d = json.loads(out_file.read_text())
    return TenantB(
        d["api_seconds"],
        d["api_started"],
        Counter({int(k): n for k, n in d["statuses"].items()}),
        d["events"],
        [tuple(part) for part in d["api_parts"]],
        d["priority"],
    )


def measure(server: Server, seeded: Seeded, b_log: Path, tmp: Path, instance: Path, steps: int, args) -> dict:
    port = server.port
    b_phase(port, seeded, 3.0, tmp)  # warm: connections, caches
    print(f"  quiet: tenant B alone for {args.quiet_seconds:g} s", flush=True)
    quiet = b_phase(port, seeded, args.quiet_seconds, tmp)
    quiet_latencies, quiet_lost = delivery_latencies(quiet, b_log, 30)
    size_before = database_bytes(instance)

    print(f"  storm: tenant A for {args.seconds:g} s, tenant B and a presenter meanwhile", flush=True)
    a_out = tmp / "tenant_a.json"
    a_proc = multiprocessing.get_context("spawn").Process(
        target=tenant_a_main, args=(port, seeded, args.seconds, str(a_out), args.storm, args.nice)
    )
    a_proc.start()
    pages_script = write_script(
        tmp / "pages.lua",
        method="GET",
        paths=[
            "/present",
            f"/present/{STORY}?step=2",
            f"/present/{STORY}/summary",
            "/training",
            f"/training/join/{seeded.join_token}",
        ],
        secrets=["none"],
        body=None,
    )
    pages: list = []
    pages_thread = threading.Thread(
        target=lambda: pages.append(
            wrk(
                server.url + "/",
                pages_script,
                threads=2,
                connections=PAGE_CLIENTS,
                duration=args.seconds,
                nice=args.nice,
            )
        )
    )
    if "pages" in args.storm:
        pages_thread.start()
    stop_presenter = threading.Event()
    shown: list[Presenter] = []
    presenter_thread = threading.Thread(target=lambda: shown.append(presenter(port, stop_presenter, steps)))
    presenter_thread.start()
    wal_high_water = [size_before[1]]
    watching = threading.Event()

    def watch_wal() -> None:
        while not watching.wait(0.5):
            wal_high_water.append(database_bytes(instance)[1])

    watcher = threading.Thread(target=watch_wal, daemon=True)
    watcher.start()
    storm = b_phase(port, seeded, args.seconds, tmp)
    watching.set()
    size_after = database_bytes(instance)
    wal_high = max(wal_high_water)
    stop_presenter.set()
    a_proc.join(60)
    if "pages" in args.storm:
        pages_thread.join(120)
    presenter_thread.join(120)
    storm_latencies, storm_lost = delivery_latencies(storm, b_log, 30)
    a = json.loads(a_out.read_text()) if a_out.exists() else {"statuses": {}, "conformance_runs_done": 0}
    page_run = pages[0] if pages else None
    show = shown[0] if shown else Presenter()

    def b_stats(phase: TenantB, latencies: list[float], lost: int) -> dict:
        return {
            "api_calls": len(phase.api_seconds),
            "api_p50_ms": percentile(phase.api_seconds, 0.5),
            "api_p99_ms": percentile(phase.api_seconds, 0.99),
            "api_max_ms": max(phase.api_seconds, default=0) * 1000,
            "api_p90_ms": percentile(phase.api_seconds, 0.9),
            "api_p95_ms": percentile(phase.api_seconds, 0.95),
            "api_split": call_split(phase),
            "b_priority": phase.priority,
            # every call (wall-clock start, ms, then its split in ms: queued, in the app, the app's CPU, B's own
            # wait for a CPU), for --json readers looking for what the slow ones share
            "api_samples": [
                (round(t, 3), round(s * 1000, 1), *(round(part, 1) for part in parts))
                for t, s, parts in zip(phase.api_started, phase.api_seconds, phase.api_parts, strict=True)
            ],
            # B's calls over 500 ms: (wall-clock start, seconds), to line up with stack dumps taken meanwhile
            "api_slow": [
                (round(t, 2), round(s, 3))
                for t, s in zip(phase.api_started, phase.api_seconds, strict=True)
                if s > 0.5
            ],
            "events": len(phase.events),
            "delivery_p50_ms": percentile(latencies, 0.5),
            "delivery_p99_ms": percentile(latencies, 0.99),
            "delivery_max_ms": max(latencies, default=0) * 1000,
            "not_delivered": lost,
            "statuses": dict(phase.statuses),
            "5xx": fivexx(phase.statuses),
        }

    return {
        "quiet": b_stats(quiet, quiet_latencies, quiet_lost),
        "storm": b_stats(storm, storm_latencies, storm_lost),
        "a": a,
        "pages": page_run.detail if page_run else None,
        "pages_per_s": page_run.rps if page_run else 0.0,
        "presenter": {
            "runs": show.runs,
            "finished": show.finished,
            "failures": show.failures[:5],
            "run_s_median": statistics.median(show.run_seconds) if show.run_seconds else None,
            "wait_step_s_max": max(show.wait_seconds, default=None),
            "statuses": dict(show.statuses),
            "slowest": show.slowest,
            "own_limit_waits": show.own_limit_waits,
        },
        "db_bytes_before": size_before[0],
        "db_bytes_after": size_after[0],
        "wal_bytes_before": size_before[1],
        "wal_bytes_after": size_after[1],
        "wal_bytes_most": wal_high,
        "seconds": args.seconds,
        "quiet_seconds": args.quiet_seconds,
    }


def verdicts(r: dict) -> dict[str, bool]:
    q, s = r["quiet"], r["storm"]
    pages_5xx = (r["pages"] or {}).get("n5xx", 0) + (r["pages"] or {}).get("socket_errors", 0)
    everyone_5xx = s["5xx"] + q["5xx"] + pages_5xx + fivexx(r["presenter"]["statuses"])
    everyone_5xx += sum(fivexx(v) for v in r["a"]["statuses"].values())
    return {
        "api_ratio": s["api_p99_ms"] <= TARGET_RATIO * q["api_p99_ms"],
        "api_p99": s["api_p99_ms"] < TARGET_API_P99_MS,
        "no_5xx": everyone_5xx == 0,
        "delivery_p99": s["delivery_p99_ms"] <= TARGET_DELIVERY_P99_MS and s["not_delivered"] == 0,
        "presenter": r["presenter"]["finished"] >= 1 and not r["presenter"]["failures"],
    }


def table(r: dict) -> str:
    q, s, v = r["quiet"], r["storm"], verdicts(r)
    ok = lambda met: "**met**" if met else "not met"  # noqa: E731
    pages = r["pages"] or {}
    a = r["a"]["statuses"]
    a_line = "; ".join(
        f"{name} " + ", ".join(f"{n:,}x{code}" for code, n in sorted(counts.items()))
        for name, counts in a.items()
    )
    growth = r["db_bytes_after"] - r["db_bytes_before"]
    lines = [
        "| tenant B | quiet | during A's storm | ratio storm / quiet | target |",
        "|---|---:|---:|---:|---|",
        f"| `GET /v1/jobs` calls | {q['api_calls']:,} | {s['api_calls']:,} | | |",
        f"| `GET /v1/jobs` p50 | {q['api_p50_ms']:.1f} ms | {s['api_p50_ms']:.1f} ms | "
        f"{s['api_p50_ms'] / q['api_p50_ms']:.2f}x | |",
        f"| `GET /v1/jobs` p99 | {q['api_p99_ms']:.1f} ms | {s['api_p99_ms']:.1f} ms | "
        f"{s['api_p99_ms'] / q['api_p99_ms']:.2f}x | ≤ 2x and < 250 ms: {ok(v['api_ratio'] and v['api_p99'])} |",
        f"| `GET /v1/jobs` max | {q['api_max_ms']:.0f} ms | {s['api_max_ms']:.0f} ms | | |",
        *split_rows(q.get("api_split") or {}, s.get("api_split") or {}),
        f"| webhook delivery p50 | {q['delivery_p50_ms']:.1f} ms | {s['delivery_p50_ms']:.1f} ms | "
        f"{s['delivery_p50_ms'] / q['delivery_p50_ms']:.2f}x | |",
        f"| webhook delivery p99 | {q['delivery_p99_ms']:.1f} ms | {s['delivery_p99_ms']:.1f} ms | "
        f"{s['delivery_p99_ms'] / q['delivery_p99_ms']:.2f}x | ≤ 1 s: {ok(v['delivery_p99'])} |",
        f"| webhook delivery max; events not delivered | {q['delivery_max_ms']:.0f} ms; {q['not_delivered']} | "
        f"{s['delivery_max_ms']:.0f} ms; {s['not_delivered']} | | |",
        f"| B's 5xx | {q['5xx']} | {s['5xx']} | | none: {ok(q['5xx'] + s['5xx'] == 0)} |",
    ]
    p = r["presenter"]
    notes = [
        f"- **Everyone's 5xx**: {ok(v['no_5xx'])}. Tenant A's answers: {a_line}; "
        f"{r['a']['conformance_runs_done']} conformance runs finished. Page clients (`wrk -c{PAGE_CLIENTS}`): "
        f"{r['pages_per_s']:,.0f} pages/s ({pages_total_rate(pages):,.0f} requests/s in all, the rest answered 429), "
        f"{pages.get('n5xx', '?')} 5xx, {pages.get('socket_errors', '?')} socket "
        f"errors, {pages.get('timeouts', '?')} timeouts, p99 {pages.get('p99_us', 0) / 1000:.0f} ms.",
        f"- **The presenter's story** ({STORY}, every step's POST as the stage sends it, then the stage page): "
        f"{p['finished']} of {p['runs']} runs reached the end ({ok(v['presenter'])}); a run took "
        f"{p['run_s_median'] or 0:.1f} s (median), its longest `wait_for_event` step {p['wait_step_s_max'] or 0:.1f} s"
        + (f"; failures: {'; '.join(p['failures'])}" if p["failures"] else "")
        + ".",
        f"- **The database**: the SQLite file {r['db_bytes_before'] / 1e6:.1f} MB before the storm, "
        f"{r['db_bytes_after'] / 1e6:.1f} MB after it: +{growth / 1e6:.1f} MB in {r['seconds']:g} s; its WAL "
        f"{r['wal_bytes_before'] / 1e6:.1f} MB before, at most {r['wal_bytes_most'] / 1e6:.1f} MB during the storm "
        f"(sampled every 0.5 s), {r['wal_bytes_after'] / 1e6:.1f} MB at its end.",
    ]
    return "\n".join(lines) + "\n\n" + "\n".join(notes)


SPLIT_NAMES = {
    "outside": "outside the app (HTTP layer, GIL, network)",
    "queued": "queued for a run slot",
    "app": "in the app",
    "own_wait": "B's own wait for a CPU",
}


def pages_total_rate(detail: dict) -> float:
    """wrk's requests a second, whatever their answer (most are the page rate's 429s)."""
    seconds = (detail.get("duration_us") or 0) / 1e6
    return detail.get("requests", 0) / seconds if seconds else 0.0


def split_rows(quiet: dict, storm: dict) -> list[str]:
    """The table's rows for where B's calls spent their time: p50 / p99 of each part, and its mean over the
    slowest 1% of the calls."""
    if not quiet or not storm:
        return []

    def cell(split: dict, name: str) -> str:
        part = split[name]
        return f"{part['p50']:.1f} / {part['p99']:.1f} / {part['slowest_mean']:.1f} ms"

    return [
        f"| … {label}: p50 / p99 / mean of the slowest 1% | {cell(quiet, name)} | {cell(storm, name)} | | |"
        for name, label in SPLIT_NAMES.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=60, help="the storm's length (tenant B measured throughout)"
    )
    parser.add_argument("--quiet-seconds", type=float, default=20, help="tenant B alone, before the storm")
    parser.add_argument(
        "--storm",
        type=lambda text: tuple(part for part in text.split(",") if part),
        default=STORM_PARTS,
        help=f"tenant A's parts, comma-separated (default all: {','.join(STORM_PARTS)}); to find which one hurts",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=10,
        help="tenant A's and the page clients' niceness (default 10): they stand for clients on other machines, "
        "so they take the CPU the server and tenant B leave; 0 shares the 2 cores equally",
    )
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    parser.add_argument("--json", help="also write the raw results to this file")
    parser.add_argument("--keep", help="copy the instance folder (database) and the server's log here")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("bench.neighbours: wrk is not installed (apt-get install wrk, or `make bench`); skipped")
        return 0
    result = run(args)
    header = (
        f"`console run` defaults (+ `TRUSTED_PROXIES=127.0.0.1`), {os.cpu_count()} CPUs, load average at start "
        f"{result['load']}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; tenant B alone for "
        f"{args.quiet_seconds:g} s, then during a {args.seconds:g} s storm; tenant A and the page clients "
        f"at nice {args.nice}, tenant B in a process of its own at {result['storm'].get('b_priority') or '?'}."
    )
    print(header)
    print(table(result))
    if result["log_tail"]:
        print("server log errors:\n  " + "\n  ".join(result["log_tail"]))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    if args.write:
        command = "python -m bench.neighbours " + " ".join(argv if argv is not None else sys.argv[1:])
        write_benchmarks(f".venv/bin/{command.strip()}", header, table(result), (MARK_START, MARK_END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
