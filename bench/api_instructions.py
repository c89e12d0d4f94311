"""Instructions per API request, counted by cachegrind: a CPU cost that other work on the machine cannot move.

    python -m bench.api_instructions                      # GET /sandbox/v1/jobs and POST /sandbox/v1/link_tokens
    python -m bench.api_instructions --kinds GET
    python -m bench.api_instructions --code /path/to/other/checkout   # the same count for other code (e.g. a
                                                                         # `git worktree` of the commit before)

On a shared machine `bench.api` (wrk) and even `bench.api_cpu` (CPU time in-process) move by 10-25% between
identical runs, more than most single changes to the hot path are worth. Instructions do not: each count here
comes from a child process that calls the app's WSGI callable in one thread on a copy of one seeded SQLite file
(300 keys, 20,000 jobs), run under `valgrind --tool=cachegrind`, once with `--calls 100` and once with
`--calls 400` after the same 200 warm-up calls; the difference divided by 300 leaves out start-up, seeding and
warm-up. Repeated counts agree within about 2% (ids are random, and the garbage collector runs when it runs).
Slow (valgrind runs Python ~50x slower): about a minute per count, four counts per kind.

Needs Debian's `valgrind` (`make bench-deps` installs it); skipped without it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.api import LINK_TOKEN_BODY, SECRET_KEY, seed

ROOT = Path(__file__).resolve().parent.parent
WARMUP = 200
CALLS = (100, 400)
_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(output: str) -> int:
    """The `I refs` total cachegrind prints at exit."""
    found = _I_REFS.search(output)
    if found is None:
        raise RuntimeError(f"cachegrind printed no instruction count:\n{output[-2000:]}")
    return int(found.group(1).replace(",", ""))


def call_app(seeded: Path, kind: str, calls: int, warmup: int = WARMUP) -> None:
    """The measured work: `warmup + calls` API requests on a copy of the seeded database, log flushed as it goes."""
    from bench.api_cpu import _environ
    from console import create_app
    from console.config import DEFAULTS

    data = json.loads((seeded / "data.json").read_text())
    with tempfile.TemporaryDirectory(prefix="bench-instr-") as tmp:
        shutil.copy(seeded / "console.db", Path(tmp) / "console.db")
        config = {
            **DEFAULTS,
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp}/console.db",
            "SECRET_KEY": SECRET_KEY,
        }
        config.update(REQUEST_LOG_FLUSH_SECONDS=3600, RATELIMIT_STORAGE_URI=f"mmap://{tmp}/limits.mmap")
        app = create_app(config)
        secrets, tokens = data["secrets"], data["tokens"]
        body = json.dumps(LINK_TOKEN_BODY).encode()
        environs = [
            _environ("GET", "/sandbox/v1/jobs", f"link_token_id={tokens[i % len(tokens)]}", secrets[i % len(secrets)], None)
            if kind == "GET"
            else _environ("POST", "/sandbox/v1/link_tokens", "", secrets[i % len(secrets)], body)
            for i in range(warmup + calls)
        ]  # fmt: skip
        writer = app.extensions["requestlog_writer"]
        for i, environ in enumerate(environs):
            status: list[str] = []
            out = app.wsgi_app(environ, lambda s, _h, _e=None, got=status: got.append(s))
            b"".join(out)
            getattr(out, "close", lambda: None)()
            if not status[0].startswith("2"):
                raise RuntimeError(f"{kind} answered {status[0]}")
            if i % 100 == 99:
                writer.flush()
        writer.flush()


def count(seeded: Path, kind: str, calls: int, code: Path = ROOT) -> int:
    """Instructions of one child process calling the app of the checkout at `code` (its `console` package)."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, str(Path(__file__).resolve()), "--child", kind, str(calls), str(seeded)]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": os.pathsep.join((str(code), str(ROOT)))}
    done = subprocess.run(command, capture_output=True, text=True, cwd=code, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"the counted run failed:\n{done.stderr[-3000:]}")
    return instructions(done.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="*", default=["GET", "POST"], choices=["GET", "POST"])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose app is measured")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "CALLS", "SEEDED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, calls, seeded = args.child
        call_app(Path(seeded), kind, int(calls))
        return 0
    if shutil.which("valgrind") is None:
        print("bench.api_instructions: valgrind is not installed (apt-get install valgrind); skipped")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-instr-seed-") as tmp:
        seeded = Path(tmp)
        data = seed(f"sqlite:///{seeded / 'console.db'}", keys=300, jobs=args.jobs, jobs_per_token=10)
        (seeded / "data.json").write_text(
            json.dumps({"secrets": data.secrets, "tokens": data.link_token_ids})
        )
        print(f"Instructions per request (cachegrind), {args.jobs:,} jobs, code from {args.code}:")
        for kind in args.kinds:
            low, high = (count(seeded, kind, calls, args.code.resolve()) for calls in CALLS)
            per_request = (high - low) / (CALLS[1] - CALLS[0])
            print(f"  {kind:5} {per_request / 1e6:.2f} M", flush=True)
    return 0


if __name__ == "__main__":
    # Appended, not put first: a counted child must import the `console` of the checkout it measures
    # (first on its PYTHONPATH), not this one's.
    sys.path.append(str(ROOT))
    sys.exit(main())
