"""`console run` start-up: CPU time and seconds from the command to a ready server, and to its stop.

    python -m bench.startup              # 5 starts, the default serving processes (one per core)
    python -m bench.startup --starts 9 --processes 1

Each start runs `console run` on a fresh instance folder (its own SQLite file, so the schema is migrated
and the world seeded every time, as on a first run), waits until `/healthz` says the worker is up, then
stops it with SIGTERM. The CPU time is that of the whole process tree (master, serving processes, worker),
read once it has exited. Baseline, measured in the same run: a bare `python -c pass`, so that a table made
on a busy hour can be compared with one made on a quiet one (report ratios, not seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.error import URLError
from urllib.request import ProxyHandler, build_opener

ROOT = Path(__file__).resolve().parent.parent
READY_BACKSTOP_SECONDS = 120  # a start that takes this long is broken, not slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_LOCAL = build_opener(ProxyHandler({}))  # straight to 127.0.0.1, whatever proxy the environment names


def _worker_up(port: int) -> bool:
    try:
        with _LOCAL.open(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return bool(json.load(response)["worker"]["ok"])
    except (URLError, OSError, ValueError, KeyError):
        return False


def measure(*, processes: int | None = None) -> dict:
    """One start: {"ready": seconds to a ready server, "total": seconds to its exit, "cpu": CPU seconds}."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        port = _free_port()
        args = [sys.executable, "-m", "console.cli", "run", "--host", "127.0.0.1", "--port", str(port)]
        if processes:
            args += ["--processes", str(processes)]
        env = {**os.environ, "CONSOLE_INSTANCE_DIR": folder, "SECRET_KEY": "bench-only"}
        for name in (
            "DATABASE_URL",
            "RUN_WORKER",
            "RATELIMIT_STORAGE_URI",
        ):  # the defaults: the instance's own files
            env.pop(name, None)
        cpu_before = _children_cpu()
        started = time.monotonic()
        with open(Path(folder) / "console.log", "w") as log:
            process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                while not _worker_up(port):
                    if process.poll() is not None or time.monotonic() - started > READY_BACKSTOP_SECONDS:
                        raise RuntimeError(
                            f"console run did not start: {(Path(folder) / 'console.log').read_text()}"
                        )
                    time.sleep(0.05)
                ready = time.monotonic() - started
                process.send_signal(signal.SIGTERM)
                process.wait(60)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        return {"ready": ready, "total": time.monotonic() - started, "cpu": _children_cpu() - cpu_before}


def baseline_cpu() -> float:
    """CPU seconds of a bare interpreter's start and exit."""
    before = _children_cpu()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return _children_cpu() - before


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument(
        "--processes", type=int, default=None, help="serving processes (default: one per core)"
    )
    options = parser.parse_args(argv)
    runs, baselines = [], []
    for _ in range(options.starts):
        baselines.append(baseline_cpu())
        runs.append(measure(processes=options.processes))
    summary = {
        "starts": options.starts,
        "ready_s": statistics.median(r["ready"] for r in runs),
        "total_s": statistics.median(r["total"] for r in runs),
        "cpu_s": statistics.median(r["cpu"] for r in runs),
        "baseline_cpu_s": statistics.median(baselines),
    }
    summary["cpu_ratio"] = summary["cpu_s"] / summary["baseline_cpu_s"]
    print(
        "| starts | ready (median) | start to exit | CPU of the process tree | bare `python -c pass` | ratio |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {summary['starts']} | {summary['ready_s']:.2f} s | {summary['total_s']:.2f} s | {summary['cpu_s']:.2f} s "
        f"| {summary['baseline_cpu_s'] * 1000:.0f} ms | {summary['cpu_ratio']:.0f} x |"
    )
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
