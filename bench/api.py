"""API throughput and latency under a real HTTP load generator (wrk), against a bare Flask app in the same run.

    python -m bench.api                                  # 3 rounds of `wrk -t2 -c16 -d10s` per row
    python -m bench.api --duration 3 --runs 1 --jobs 20000   # a quick smoke run
    BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1/bench_db BENCH_REDIS_URL=redis://127.0.0.1:6379/2 \\
        python -m bench.api --write                      # adds the scale-out rows; --write updates BENCHMARKS.md

Rows (each a server started for the row and stopped after it, on 127.0.0.1 and a free port):
- `bare`: a Flask app answering `{"ok": true}`, gunicorn with 2 sync workers: the baseline (ratio 1.00).
- `naive`: a textbook Flask-SQLAlchemy + SQLite insert, gunicorn with 2 sync workers.
- `run`: the real `console run` command with its defaults (SQLite in a temp CONSOLE_INSTANCE_DIR, in-process
  worker): `POST /sandbox/v1/link_tokens` and `GET /sandbox/v1/jobs?link_token_id=`.
- `granian`: `granian --interface wsgi --factory --workers 2 --blocking-threads 32 console.serving:serving_app` (the
  scale-out line in docs/operations.md) on the same SQLite file, with one
  `console worker` process: the multi-process form on the default database.
- `scale-out`: the same Granian form on PostgreSQL ($BENCH_DATABASE_URL; its tables are dropped) with the
  rate limiter on Redis ($BENCH_REDIS_URL), and one `console worker`. Skipped when $BENCH_DATABASE_URL is unset.

Every request carries one of 1,000 sandbox secrets in turn, so the per-key limit (10/s) binds only from about
10,000 requests/s; with the 300 keys of earlier rounds a fast machine's GET row (2,700 req/s) drew 429s: each
of wrk's two threads rotates on its own, and a key got about 9 requests in some seconds and more in others.
The GET names one of many Link tokens in turn (100,000 jobs spread over them). The baseline gets the same
headers from the same wrk script, so the load generator costs the same everywhere. Throughput counts 2xx
answers only; anything else is counted and shown (a flood of 429s or 500s is not throughput).
Each round runs every row once; we report medians over rounds and the ratio to the baseline's median.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
SECRET_KEY = "bench-api-only-secret-key"
VERSION = "2023-11-22"
BATCH = 10_000
LINK_TOKEN_BODY = {
    "org_name": "Acme",
    "end_user_id": "user-1",
    "required_jobs": ["direct_deposit_switch"],
    "allocation": {
        "targets": [{"type": "checking", "routing_number": "011000015", "account_number": "1234567890"}]
    },
}
# Targets from issue 9: (minimum ratio to the baseline, maximum p99 in ms).
TARGETS = {"POST": (0.25, 50.0), "GET": (0.30, 30.0)}
MARK_START, MARK_END = "<!-- bench.api:start -->", "<!-- bench.api:end -->"


# wrk ----------------------------------------------------------------------------------------

LUA = r"""
local secrets = {%(secrets)s}
local paths = {%(paths)s}
local method = "%(method)s"
local body = %(body)s
local version = "%(version)s"
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  -- Threads start apart in the rotation, so no two connections share a key by construction.
  counter = id * 7919
  n2, n3, n4, n5, n429 = 0, 0, 0, 0, 0
end

function request()
  counter = counter + 1
  local headers = {
    ["x-api-secret"] = secrets[(counter %% #secrets) + 1],
    ["Service-Version"] = version,
    ["Content-Type"] = "application/json",
  }
  return wrk.format(method, paths[(counter %% #paths) + 1], headers, body)
end

function response(status, headers, body)
  if status < 300 then n2 = n2 + 1
  elseif status < 400 then n3 = n3 + 1
  elseif status == 429 then n429 = n429 + 1
  elseif status < 500 then n4 = n4 + 1
  else n5 = n5 + 1 end
end

function done(summary, latency, requests)
  local c = {n2 = 0, n3 = 0, n4 = 0, n5 = 0, n429 = 0}
  for _, t in ipairs(threads) do
    for k, _ in pairs(c) do c[k] = c[k] + t:get(k) end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %%d, "duration_us": %%d, "p50_us": %%d, "p99_us": %%d, "max_us": %%d, ' ..
    '"n2xx": %%d, "n3xx": %%d, "n4xx": %%d, "n429": %%d, "n5xx": %%d, "socket_errors": %%d, "timeouts": %%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    c.n2, c.n3, c.n4, c.n429, c.n5, e.connect + e.read + e.write, e.timeout))
end
"""


def _lua_strings(values: list[str]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def write_script(path: Path, *, method: str, paths: list[str], secrets: list[str], body: str | None) -> Path:
    path.write_text(
        LUA
        % {
            "secrets": _lua_strings(secrets),
            "paths": _lua_strings(paths),
            "method": method,
            "body": json.dumps(body) if body is not None else "nil",
            "version": VERSION,
        }
    )
    return path


@dataclass
class Run:
    rps: float  # 2xx answers per second
    p50_ms: float
    p99_ms: float
    non_2xx: int
    detail: dict


def wrk(url: str, script: Path, *, threads: int, connections: int, duration: float, nice: int = 0) -> Run:
    """wrk's run; `nice` > 0 runs it at that niceness (a load generator standing for clients on other machines)."""
    command = [
        *(["nice", "-n", str(nice)] if nice > 0 else []),
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{duration:g}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        url,
    ]
    out = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60, check=True).stdout
    line = next((x for x in out.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{out}")
    d = json.loads(line[len("BENCH ") :])
    non_2xx = d["n3xx"] + d["n4xx"] + d["n429"] + d["n5xx"] + d["socket_errors"] + d["timeouts"]
    return Run(d["n2xx"] / (d["duration_us"] / 1e6), d["p50_us"] / 1000, d["p99_us"] / 1000, non_2xx, d)


# Servers ------------------------------------------------------------------------------------


# Below Linux's ephemeral range (32768-60999), where port 0 and outgoing connections take theirs: a port the
# kernel handed out with bind(0) was taken again by the test suite's live servers in the moment between
# its release here and the benchmark's server binding it (`console run` then refused to start).
PORTS = range(20000, 32000)


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now, outside the ephemeral range."""
    for port in random.sample(PORTS, 50):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # the range all taken: whatever the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """Processes serving one row: started by `start`, stopped (process groups) by `stop`."""

    name: str
    commands: list[list[str]]
    env: dict[str, str]
    ready_path: str
    log: Path
    port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen] = field(default_factory=list)
    wait_for_worker: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90) -> None:
        env = {**os.environ, **self.env, "PORT": str(self.port), "HOST": "127.0.0.1"}
        with self.log.open("ab") as log:
            for command in self.commands:
                command = [part.replace("{port}", str(self.port)) for part in command]
                self.procs.append(
                    subprocess.Popen(
                        command, env=env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True
                    )
                )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                break
            try:
                with urllib.request.urlopen(self.url + self.ready_path, timeout=2) as response:
                    if response.status == 200 and self._worker_is_up():
                        return
            except urllib.error.HTTPError:
                if not self.wait_for_worker:
                    return  # an answer of any status: the server is up
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        tail = self.log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{self.name} did not start on {self.url}:\n{tail}")

    def _worker_is_up(self) -> bool:
        """The console's worker has started (its heartbeat is from one of our processes).

        The worker process imports the app for a few seconds after the serving processes answer; measured
        during that time, its start-up took a quarter of a core from the row.
        """
        if not self.wait_for_worker:
            return True
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                worker = json.load(response).get("worker") or {}
        except (OSError, ValueError):
            return False
        pid = worker.get("pid")
        ours = {p.pid for p in self.procs}
        try:
            return bool(worker.get("ok")) and pid is not None and os.getpgid(int(pid)) in ours
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs = []


def gunicorn(app: str, *, workers: int = 2) -> list[str]:
    """The baselines' server: gunicorn's sync workers."""
    command = [str(BIN / "gunicorn"), "-w", str(workers), "-b", "127.0.0.1:{port}", "--chdir", str(ROOT)]
    # gunicorn's default access log is off; keep its error log quiet but present.
    return [*command, "--log-level", "warning", app]


def granian(*, workers: int = 2, threads: int = 32) -> list[str]:
    """The scale-out command of docs/operations.md (the server `console run` embeds), without a worker of its own."""
    return [str(BIN / "granian"), "--interface", "wsgi", "--factory", "--host", "127.0.0.1", "--port", "{port}",
            "--workers", str(workers), "--blocking-threads", str(threads), "--log-level", "warning",
            "console.serving:serving_app"]  # fmt: skip


# Data ---------------------------------------------------------------------------------------


def normalise_url(url: str) -> str:
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def wipe_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@dataclass
class Dataset:
    secrets: list[str]
    link_token_ids: list[str]


def seed(database_url: str, *, keys: int, jobs: int, jobs_per_token: int) -> Dataset:
    """Migrate `database_url`, then add a workspace with `keys` sandbox keys and `jobs` jobs (bulk insert)."""
    from sqlalchemy import insert

    from console import create_app
    from console.accounts.models import Account
    from console.bootstrap import prepare_database
    from console.core.timeutil import utcnow
    from console.extensions import db
    from console.jobs.models import Job
    from console.keys.services import create_key
    from console.link_tokens.models import LinkToken
    from console.workspaces.services import create_workspace
    from console.world.seed_data import PLATFORM_IDS

    # The bench spreads its load over `keys` keys of one workspace (a key's rate limit would bind otherwise),
    # more than the per-mode cap on active keys a visitor gets.
    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": database_url, "SECRET_KEY": SECRET_KEY, "API_KEYS_PER_MODE": keys}
    )
    with app.app_context():
        prepare_database()
        workspace = create_workspace("API bench")
        created = [create_key(workspace.id, "sandbox", f"bench {i}") for i in range(keys)]
        secrets = [c.secret for c in created]
        key_id = created[0].key.id
        db.session.commit()
        now = utcnow()
        n_tokens = max(1, jobs // jobs_per_token)
        common = {"workspace_id": workspace.id, "mode": "sandbox"}
        tokens, accounts, job_rows = [], [], []
        for t in range(n_tokens):
            at = now - timedelta(seconds=jobs - t * jobs_per_token)
            token_id, account_id = uuid.uuid4(), uuid.uuid4()
            tokens.append({**common, "id": token_id, "api_key_id": key_id, "token_hash": uuid.uuid4().hex * 2,
                           "org_name": "Bench", "end_user_id": f"user_{t}", "required_jobs": ["direct_deposit_switch"],
                           "targets": [], "created_at": at, "expires_at": at + timedelta(hours=1)})  # fmt: skip
            accounts.append({**common, "id": account_id, "end_user_id": f"user_{t}", "link_token_id": token_id,
                             "platform_id": PLATFORM_IDS["paycrest"], "platform_name": "Paycrest",
                             "created_at": at})  # fmt: skip
        for i in range(jobs):
            t = i % n_tokens  # each token's jobs are spread over the whole history, as a real token's are
            at = now - timedelta(seconds=jobs - i)
            params = {"action": "full_switch", "allocation": {"target": {"account_type": "checking"}}}
            job_rows.append({**common, "id": uuid.uuid4(), "account_id": accounts[t]["id"], "link_token_id": tokens[t]["id"],
                             "end_user_id": f"user_{t}", "outcome": "success", "params": params, "scenario": "success",
                             "timestamp": at, "first_attempt_at": at, "created_at": at})  # fmt: skip
        for table, rows in ((LinkToken, tokens), (Account, accounts), (Job, job_rows)):
            for start in range(0, len(rows), BATCH):
                db.session.execute(insert(table), rows[start : start + BATCH])
        db.session.commit()
        if db.engine.dialect.name == "postgresql":
            from sqlalchemy import text

            db.session.execute(text("ANALYZE"))
            db.session.commit()
    with app.app_context():
        db.engine.dispose()
    return Dataset(secrets, [str(t["id"]) for t in tokens])


# Rows ---------------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    server: str  # key of the Server this row runs against
    method: str
    path: str  # for the table
    script: Path
    url_path: str
    kind: str | None = None  # "POST" / "GET" for rows with a target
    runs: list[Run] = field(default_factory=list)

    def median(self, attribute: str) -> float:
        return statistics.median(getattr(r, attribute) for r in self.runs)


def build(args, tmp: Path, data: dict[str, Dataset]) -> tuple[dict[str, Server], list[Row]]:
    instance = tmp / "instance"
    sqlite_env = {"CONSOLE_INSTANCE_DIR": str(instance), "SECRET_KEY": SECRET_KEY}
    for name in ("DATABASE_URL", "RATELIMIT_STORAGE_URI", "RUN_WORKER", "PUBLIC_URL"):
        os.environ.pop(name, None)
    post_body = json.dumps(LINK_TOKEN_BODY)
    servers = {
        "bare": Server("bare", [gunicorn("bench.api_apps:bare")], {}, "/", tmp / "bare.log"),
        "naive": Server(
            "naive",
            [gunicorn("bench.api_apps:naive")],
            {"BENCH_NAIVE_DB": str(tmp / "naive.db")},
            "/nothing-404",
            tmp / "naive.log",
        ),
        "run": Server(
            "run",
            [
                [
                    str(BIN / "console"),
                    "run",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "{port}",
                    *shlex.split(args.run_args),
                ]
            ],
            sqlite_env,
            "/sandbox/v1/openapi.json",
            tmp / "run.log",
            wait_for_worker=True,
        ),
        "granian": Server(
            "granian",
            [granian(), [str(BIN / "console"), "worker"]],
            sqlite_env,
            "/sandbox/v1/openapi.json",
            tmp / "granian.log",
            wait_for_worker=True,
        ),
    }
    if "pg" in data:
        servers["scale-out"] = Server(
            "scale-out",
            [granian(), [str(BIN / "console"), "worker"]],
            {
                **sqlite_env,
                "DATABASE_URL": args.pg_url,
                "RATELIMIT_STORAGE_URI": args.redis_url or "memory://",
            },
            "/sandbox/v1/openapi.json",
            tmp / "scale-out.log",
            wait_for_worker=True,
        )
    s = data["sqlite"].secrets

    def script(name: str, method: str, paths: list[str], secrets: list[str], body: str | None) -> Path:
        return write_script(tmp / f"{name}.lua", method=method, paths=paths, secrets=secrets, body=body)

    def jobs_paths(dataset: Dataset) -> list[str]:
        return [f"/sandbox/v1/jobs?link_token_id={t}" for t in dataset.link_token_ids]

    post = "/sandbox/v1/link_tokens"
    rows = [
        Row(
            "bare Flask JSON, gunicorn 2 sync workers",
            "bare",
            "GET",
            "/",
            script("bare", "GET", ["/"], s, None),
            "/",
        ),
        Row(
            "naive Flask-SQLAlchemy + SQLite insert, gunicorn 2 sync workers",
            "naive",
            "POST",
            "/items",
            script("naive", "POST", ["/items"], s, post_body),
            "/items",
        ),
    ]
    forms = [
        ("run", "`console run` defaults (SQLite)"),
        ("granian", "granian --workers 2 --blocking-threads 32, SQLite"),
    ]
    if "pg" in data:
        limiter = "Redis limiter" if args.redis_url else "in-memory limiter"
        forms.append(
            ("scale-out", f"scale-out: granian --workers 2 --blocking-threads 32, PostgreSQL, {limiter}")
        )
    for server, label in forms:
        dataset = data["pg" if server == "scale-out" else "sqlite"]
        rows.append(
            Row(
                f"`POST {post}`, {label}",
                server,
                "POST",
                post,
                script(f"{server}-post", "POST", [post], dataset.secrets, post_body),
                post,
                kind="POST",
            )
        )
        rows.append(
            Row(
                f"`GET /sandbox/v1/jobs?link_token_id=`, {args.jobs:,} jobs, {label}",
                server,
                "GET",
                "/sandbox/v1/jobs",
                script(f"{server}-get", "GET", jobs_paths(dataset), dataset.secrets, None),
                "/sandbox/v1/jobs",
                kind="GET",
            )
        )
    return servers, rows


def measure(args, servers: dict[str, Server], rows: list[Row]) -> None:
    from bench.api_apps import create_naive_schema

    os.environ["BENCH_NAIVE_DB"] = servers["naive"].env["BENCH_NAIVE_DB"]
    create_naive_schema()
    wanted = [r for r in rows if not args.only or r.server in args.only]
    for round_ in range(args.runs):
        for name, server in servers.items():
            mine = [r for r in wanted if r.server == name]
            if not mine:
                continue
            server.start()
            try:
                for row in mine:
                    url = server.url + row.url_path
                    wrk(
                        url,
                        row.script,
                        threads=args.threads,
                        connections=args.connections,
                        duration=args.warmup,
                    )
                    run = wrk(
                        url,
                        row.script,
                        threads=args.threads,
                        connections=args.connections,
                        duration=args.duration,
                    )
                    row.runs.append(run)
                    print(
                        f"  round {round_ + 1} {name:9} {row.method} {row.path}: {run.rps:,.0f} req/s 2xx, "
                        f"p50 {run.p50_ms:.1f} ms, p99 {run.p99_ms:.1f} ms, non-2xx {run.non_2xx}",
                        flush=True,
                    )
            finally:
                server.stop()


def table(rows: list[Row]) -> str:
    base = next(r for r in rows if r.server == "bare")
    base_rps = base.median("rps") if base.runs else float("nan")
    lines = [
        "| what | req/s (2xx, median) | runs | p50 ms | p99 ms | non-2xx | ratio to bare | target |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        if not row.runs:
            continue
        rps, p99 = row.median("rps"), row.median("p99_ms")
        ratio = rps / base_rps
        target = ""
        if row.kind:
            min_ratio, max_p99 = TARGETS[row.kind]
            met = ratio >= min_ratio and p99 <= max_p99 and sum(r.non_2xx for r in row.runs) == 0
            target = f"≥ {min_ratio:.2f}x, p99 ≤ {max_p99:.0f} ms: {'**met**' if met else 'not met'}"
        lines.append(
            f"| {row.label} | {rps:,.0f} | {' / '.join(f'{r.rps:,.0f}' for r in row.runs)} | "
            f"{row.median('p50_ms'):.1f} | {p99:.1f} | {sum(r.non_2xx for r in row.runs)} | {ratio:.2f} | {target} |"
        )
    return "\n".join(lines)


def write_benchmarks(
    command: str, header: str, result: str, marks: tuple[str, str] = (MARK_START, MARK_END)
) -> None:
    """Put the result between its markers in BENCHMARKS.md (appended the first time)."""
    start, end = marks
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    block = f"{start}\n{header}\n\n```sh\n{command}\n```\n\n{result}\n{end}"
    if start in text:
        before, rest = text.split(start, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds; every row runs once per round")
    parser.add_argument("--duration", type=float, default=10, help="seconds per wrk run")
    parser.add_argument("--warmup", type=float, default=2, help="seconds of untimed load before each run")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument("--keys", type=int, default=1000, help="sandbox keys the requests rotate over")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--jobs-per-token", type=int, default=10)
    parser.add_argument("--only", nargs="*", help="servers to run: bare naive run granian scale-out")
    parser.add_argument("--run-args", default="", help="extra options for `console run`, e.g. '--threads 4'")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_DATABASE_URL"))
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL"))
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("bench.api: wrk is not installed (apt-get install wrk, or `make bench`); skipped")
        return 0
    if args.pg_url:
        args.pg_url = normalise_url(args.pg_url)
    if args.only and "bare" not in args.only:
        args.only.append("bare")  # ratios need the baseline of the same run
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "instance").mkdir()
        started = time.perf_counter()
        data = {
            "sqlite": seed(
                f"sqlite:///{tmp / 'instance' / 'console.db'}",
                keys=args.keys,
                jobs=args.jobs,
                jobs_per_token=args.jobs_per_token,
            )
        }
        if args.pg_url:
            wipe_postgres(args.pg_url)
            data["pg"] = seed(args.pg_url, keys=args.keys, jobs=args.jobs, jobs_per_token=args.jobs_per_token)
        print(
            f"seeded {args.jobs:,} jobs and {args.keys} keys in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        servers, rows = build(args, tmp, data)
        measure(args, servers, rows)
    result = table(rows)
    command = "python -m bench.api " + " ".join(argv if argv is not None else sys.argv[1:])
    header = (
        f"`wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s`, {args.runs} round(s), "
        f"{os.cpu_count()} CPUs, load average at start {load}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
    )
    print(header)
    print(result)
    if args.write:
        env = " ".join(f"{k}=…" for k in ("BENCH_DATABASE_URL", "BENCH_REDIS_URL") if os.environ.get(k))
        write_benchmarks(f"{env} .venv/bin/{command.strip()}".strip(), header, result)
    return 0


if __name__ == "__main__":
    main()
