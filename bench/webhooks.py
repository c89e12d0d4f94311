"""Webhook delivery benchmarks, and the local receivers they (and the tests) deliver to.

    python -m bench.webhooks            # throughput, latency at 200 events/s, isolation
    python -m bench.webhooks throughput # one of them

Everything runs on 127.0.0.1: a throwaway SQLite database (or $BENCH_DATABASE_URL), receivers on
free ports, and one `python -m console.webhooks.delivery_loop` process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# Receivers ----------------------------------------------------------------------------------


class Receiver:
    """A threaded HTTP server on 127.0.0.1 and a free port that records every request.

    `respond(record) -> (status, body[, headers])` decides the answer; it may block (a hanging endpoint):
    `release()` wakes anything waiting on `receiver.released`.
    """

    def __init__(self, respond: Callable[[dict], tuple] | None = None) -> None:
        self.respond = respond or (lambda record: (200, b"ok"))
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.released = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Without it, Nagle and delayed ACKs add 40 ms to every keep-alive response.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def handle(self) -> None:
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    # The sender went away first (its timeout ran out while `respond` blocked): the request
                    # is recorded, and there is nobody left to answer.
                    self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if len(body) < length:  # the sender died mid-request (the crash tests kill it)
                    self.close_connection = True
                    return
                record = {
                    "path": self.path,
                    "headers": dict(self.headers.items()),
                    "body": body,
                    "at": time.time(),
                }
                with receiver.lock:
                    receiver.requests.append(record)
                status, answer, *extra = receiver.respond(record)
                self.send_response(status)
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024  # the default 5 drops connections when 128+ senders connect at once

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def event_ids(self) -> list[str]:
        with self.lock:
            return [json.loads(r["body"])["event_id"] for r in self.requests]

    def release(self) -> None:
        self.released.set()

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


FAST_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


def fast_receiver_main(port_file: str, log_file: str, hang: bool = False, delay: float = 0.0) -> None:
    """An asyncio HTTP/1.1 receiver (a separate process): logs `event_id receive_time` lines; may hang, or
    answer each request `delay` seconds after it arrived (a slow endpoint)."""

    class Protocol(asyncio.Protocol):
        def connection_made(self, transport) -> None:
            self.transport, self.buffer = transport, b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
                length = 0
                for line in self.buffer[:end].split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if len(self.buffer) < end + 4 + length:
                    return
                body, self.buffer = self.buffer[end + 4 : end + 4 + length], self.buffer[end + 4 + length :]
                marker = body.find(b'"event_id":"')
                if marker >= 0:
                    log.write(f"{body[marker + 12 : marker + 48].decode()} {time.time():.6f}\n")
                if hang:
                    continue
                if delay:
                    asyncio.get_running_loop().call_later(delay, self._answer)
                else:
                    self.transport.write(FAST_RESPONSE)

        def _answer(self) -> None:
            if not self.transport.is_closing():
                self.transport.write(FAST_RESPONSE)

    async def serve() -> None:
        server = await asyncio.get_running_loop().create_server(Protocol, "127.0.0.1", 0, backlog=1024)
        Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
        async with server:
            await server.serve_forever()

    with open(log_file, "a", buffering=1) as log:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        asyncio.run(serve())


def start_receiver(
    directory: Path, name: str, *, hang: bool = False, delay: float = 0.0
) -> tuple[str, Path, subprocess.Popen]:
    """`fast_receiver_main` in a process of its own: its URL, its log of `event_id time` lines, the process."""
    port_file, log_file = directory / f"{name}.port", directory / f"{name}.log"
    code = (
        "from bench.webhooks import fast_receiver_main; "
        f"fast_receiver_main({str(port_file)!r}, {str(log_file)!r}, {hang}, {float(delay)})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    while not (port_file.exists() and port_file.read_text()):
        if proc.poll() is not None:
            raise RuntimeError(f"receiver {name} did not start")
        time.sleep(0.02)
    return f"http://127.0.0.1:{port_file.read_text()}/hook", log_file, proc


# Harness ------------------------------------------------------------------------------------


class Bench:
    """A throwaway database with one workspace and sandbox key, receivers and worker processes."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-webhooks-")
        self.dir = Path(self.tmp.name)
        self.url = os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{self.dir / 'bench.db'}"
        self.secret_key = os.urandom(24).hex()
        self.procs: list[subprocess.Popen] = []
        self.write_rates: list[float] = []  # events/s the paced writer achieved

    def __enter__(self) -> Bench:
        from console import create_app
        from console.extensions import db
        from console.keys.services import create_key
        from console.workspaces.services import create_workspace

        self.app = create_app({"SQLALCHEMY_DATABASE_URI": self.url, "SECRET_KEY": self.secret_key})
        self.ctx = self.app.app_context()
        self.ctx.push()
        db.drop_all()  # BENCH_DATABASE_URL must name a database the benchmark may wipe
        db.create_all()
        self.workspace = create_workspace("bench")
        self.key = create_key(self.workspace.id, "sandbox", "bench").key
        db.session.commit()
        return self

    def __exit__(self, *exc) -> None:
        from console.extensions import db

        for proc in reversed(list(self.procs)):  # workers before the receivers they send to
            self.stop(proc)
        db.session.remove()
        db.drop_all()
        self.ctx.pop()
        self.tmp.cleanup()

    def _spawn(self, args: list[str], env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env={**os.environ, **(env or {})})
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc in self.procs:
            self.procs.remove(proc)

    def receiver(
        self, name: str, hang: bool = False, delay: float = 0.0
    ) -> tuple[str, Path, subprocess.Popen]:
        """A fast receiver process: its URL, its log of `event_id time` lines, the process."""
        url, log_file, proc = start_receiver(self.dir, name, hang=hang, delay=delay)
        self.procs.append(proc)
        return url, log_file, proc

    def worker(self) -> subprocess.Popen:
        env = {"DATABASE_URL": self.url, "SECRET_KEY": self.secret_key, "CONSOLE_INSTANCE_DIR": str(self.dir)}
        return self._spawn(["-m", "console.webhooks.delivery_loop"], env)

    def webhook(self, url: str) -> None:
        from console.extensions import db
        from console.webhooks import services

        body = {"url": url, "status": "active", "enabled_events": ["account.added"], "version": "2023-11-22"}
        services.create_webhook(self.key, body)
        db.session.commit()

    def emit(self, count: int = 1) -> list[str]:
        """Write `count` events in one transaction (the real record_event path); returns their ids."""
        from console.clock.services import now
        from console.events.services import record_event
        from console.extensions import db

        ids = [
            str(
                record_event(
                    workspace_id=self.workspace.id,
                    mode="sandbox",
                    type="account.added",
                    payload={"n": i},
                    at=now(self.workspace),
                ).id
            )
            for i in range(count)
        ]
        db.session.commit()
        return ids


# Baseline requests carry no event_id, so the receivers do not log them.
BASELINE_BODY = b'{"event":"account.added","payload":{"n":1}}'


def received(log_file: Path) -> dict[str, float]:
    """First receive time per event_id."""
    seen: dict[str, float] = {}
    if log_file.exists():
        for line in log_file.read_text().splitlines():
            event_id, _, at = line.partition(" ")
            seen.setdefault(event_id, float(at))
    return seen


def wait_until(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("benchmark timed out")
        time.sleep(0.05)


def requests_baseline(url: str, count: int, threads: int = 32) -> float:
    """Requests per second a plain `requests` loop (a Session per thread) gets from the receiver."""
    import requests

    local = threading.local()
    body = BASELINE_BODY

    def post(_: int) -> None:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.trust_env = False  # never a proxy: 127.0.0.1 only
        local.session.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=15)

    from concurrent.futures import ThreadPoolExecutor

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(post, range(count)))
    return count / (time.perf_counter() - started)


def paced(bench: Bench, rate: float, seconds: float) -> dict[str, float]:
    """Write one event every 1/rate s for `seconds`; returns event_id -> commit time."""
    written: dict[str, float] = {}
    start = time.time()
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.time()
        if delay > 0:
            time.sleep(delay)
        (event_id,) = bench.emit()
        written[event_id] = time.time()
    bench.write_rates.append(len(written) / (time.time() - start))
    return written


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50": pick(0.50) * 1000, "p99": pick(0.99) * 1000, "max": ordered[-1] * 1000}


def latencies(written: dict[str, float], log_file: Path, timeout: float = 60) -> list[float]:
    wait_until(lambda: set(written) <= set(received(log_file)), timeout)
    seen = received(log_file)
    return [seen[e] - t for e, t in written.items()]


# Benchmarks ---------------------------------------------------------------------------------


def throughput(runs: int = 3, events: int = 5000) -> dict:
    """Deliveries/s with one worker process draining a backlog, vs a plain requests loop."""
    rates, baselines = [], []
    for run in range(runs):
        with Bench() as bench:
            url, log_file, _ = bench.receiver(f"rx{run}")
            baselines.append(requests_baseline(url, events // 2))
            bench.webhook(url)
            for _ in range(events // 500):
                bench.emit(500)
            started = time.time()
            bench.worker()
            wait_until(lambda log=log_file: len(received(log)) >= events, 120)
            times = sorted(received(log_file).values())
            rates.append(events / (times[-1] - times[0]))
            print(
                f"  run {run + 1}: {rates[-1]:.0f} deliveries/s, baseline {baselines[-1]:.0f} req/s, "
                f"first delivery {times[0] - started:.2f} s after start"
            )
    median, base = statistics.median(rates), statistics.median(baselines)
    return {"deliveries_per_s": median, "baseline_req_per_s": base, "ratio": median / base, "runs": rates}


def latency(runs: int = 3, rate: float = 200, seconds: float = 10) -> dict:
    """Event committed -> first attempt received, at a steady rate, vs a plain POST round trip."""
    p99s, p50s, base_p99s = [], [], []
    with Bench() as bench:
        url, log_file, _ = bench.receiver("rx")
        bench.webhook(url)
        bench.worker()
        latencies(dict.fromkeys(bench.emit(), time.time()), log_file)  # worker warmed up
        for run in range(runs):
            stats = percentiles(latencies(paced(bench, rate, seconds), log_file))
            base = percentiles(_post_latencies(url, rate, seconds / 2))
            p99s.append(stats["p99"])
            p50s.append(stats["p50"])
            base_p99s.append(base["p99"])
            print(
                f"  run {run + 1}: p50 {stats['p50']:.1f} ms, p99 {stats['p99']:.1f} ms, max {stats['max']:.1f} ms; "
                f"plain POST p99 {base['p99']:.1f} ms"
            )
        write_rate = statistics.median(bench.write_rates)
    p99, base = statistics.median(p99s), statistics.median(base_p99s)
    return {
        "p50_ms": statistics.median(p50s),
        "p99_ms": p99,
        "baseline_p99_ms": base,
        "ratio": p99 / base,
        "events_per_s_written": write_rate,
    }


def _post_latencies(url: str, rate: float, seconds: float) -> list[float]:
    """Round trips of single POSTs at `rate` with one keep-alive requests.Session."""
    import requests

    session = requests.Session()
    session.trust_env = False
    body = BASELINE_BODY
    result, start = [], time.time()
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.time()
        if delay > 0:
            time.sleep(delay)
        t = time.time()
        session.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=15)
        result.append(time.time() - t)
    session.close()
    return result


def isolation(rate: float = 200, seconds: float = 10) -> dict:
    """Latency to a healthy receiver while another webhook hangs (15 s timeout), vs without it."""
    results = {}
    for case in ("alone", "with_hanging"):
        with Bench() as bench:
            url, log_file, _ = bench.receiver("fine")
            bench.webhook(url)
            if case == "with_hanging":
                hang_url, hang_log, hang_proc = bench.receiver("hang", hang=True)
                bench.webhook(hang_url)  # every event goes to both
            bench.worker()
            latencies(dict.fromkeys(bench.emit(), time.time()), log_file)
            results[case] = percentiles(latencies(paced(bench, rate, seconds), log_file))
            results[case]["events_per_s_written"] = bench.write_rates[-1]
            if case == "with_hanging":
                # Each holds a sender thread until the 15 s timeout; at most 64 at a time.
                results["hanging_attempts_started"] = len(received(hang_log))
                bench.stop(hang_proc)  # its connections drop, so the worker's SIGTERM is quick
            shown = ", ".join(f"{k} {results[case][k]:.1f} ms" for k in ("p50", "p99", "max"))
            print(f"  {case}: {shown}; {results[case]['events_per_s_written']:.0f} events/s written")
    results["ratio_p99"] = results["with_hanging"]["p99"] / results["alone"]["p99"]
    return results


def machine() -> str:
    import platform
    import sqlite3

    with open("/proc/cpuinfo") as info:
        cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "?")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPU ({cpu}), Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"database {'BENCH_DATABASE_URL' if os.environ.get('BENCH_DATABASE_URL') else 'SQLite file (WAL)'}, "
        f"load average at start {load}"
    )


BENCHMARKS = {"throughput": throughput, "latency": latency, "isolation": isolation}


def main(argv: list[str] | None = None) -> dict:
    names = (argv if argv is not None else sys.argv[1:]) or list(BENCHMARKS)
    print(f"machine: {machine()}")
    results = {}
    for name in names:
        print(f"{name}:")
        results[name] = BENCHMARKS[name]()
        print(f"  => {json.dumps(results[name], default=lambda v: round(v, 1))}")
    return results


if __name__ == "__main__":
    main()
