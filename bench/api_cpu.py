"""Server CPU time per API request, in-process: the measure that moves least on a busy machine.

    python -m bench.api_cpu                      # GET /sandbox/v1/jobs and POST /sandbox/v1/link_tokens
    python -m bench.api_cpu --jobs 20000 --requests 2000   # quicker

One thread calls the app's WSGI callable directly (no server, no socket) on a SQLite file seeded like
`bench.api` (300 keys, 100,000 jobs over 10,000 Link tokens), with the request log written as it goes
(the writer flushed every 100 requests, as its thread would). The CPU time (`process_time`) of 8 slices
of the requests is taken and the minimum reported: other work on the machine can only add to a slice.
Compare two versions of the code by running this on each, one right after the other.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.api import LINK_TOKEN_BODY, SECRET_KEY, VERSION, seed

SLICES = 8


def _environ(method: str, path: str, query: str, secret: str, body: bytes | None) -> dict:
    from werkzeug.test import EnvironBuilder

    headers = {"x-api-secret": secret, "Service-Version": VERSION}
    if body is not None:
        headers["Content-Type"] = "application/json"
    return EnvironBuilder(
        path=path, query_string=query, method=method, data=body, headers=headers
    ).get_environ()


def measure(app, environs: list[dict]) -> list[float]:
    """CPU ms per request for each slice of `environs` (each request must answer 2xx)."""
    writer = app.extensions["requestlog_writer"]

    def call(environ: dict) -> None:
        environ["wsgi.input"].seek(0)
        status: list[str] = []
        out = app.wsgi_app(dict(environ), lambda s, _h, _e=None: status.append(s))
        b"".join(out)
        getattr(out, "close", lambda: None)()
        if not status[0].startswith("2"):
            raise RuntimeError(f"answered {status[0]}")

    size = len(environs) // SLICES
    per_request = []
    for n in range(SLICES):
        started = time.process_time()
        for i, environ in enumerate(environs[n * size : (n + 1) * size]):
            call(environ)
            if i % 100 == 99:
                writer.flush()
        writer.flush()
        per_request.append((time.process_time() - started) / size * 1000)
    return per_request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=4000, help="measured requests per endpoint")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-api-cpu-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'console.db'}"
        data = seed(url, keys=300, jobs=args.jobs, jobs_per_token=10)
        from console import create_app
        from console.config import DEFAULTS

        # Flushed by hand (every 100 requests) so its cost lands in the slice that caused it.
        config = {**DEFAULTS, "SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": SECRET_KEY}
        config.update(REQUEST_LOG_FLUSH_SECONDS=3600, RATELIMIT_STORAGE_URI=f"mmap://{tmp}/limits.mmap")
        app = create_app(config)
        secrets = data.secrets
        body = json.dumps(LINK_TOKEN_BODY).encode()
        total = args.requests + 300  # the first 300 warm up
        gets = [
            _environ("GET", "/sandbox/v1/jobs", f"link_token_id={data.link_token_ids[i % len(data.link_token_ids)]}",
                     secrets[i % len(secrets)], None)
            for i in range(total)
        ]  # fmt: skip
        posts = [
            _environ("POST", "/sandbox/v1/link_tokens", "", secrets[i % len(secrets)], body)
            for i in range(total)
        ]
        print(
            f"CPU ms per request, min (median) of {SLICES} slices of {args.requests // SLICES}, {args.jobs:,} jobs:"
        )
        for label, environs in (
            ("GET /sandbox/v1/jobs?link_token_id=", gets),
            ("POST /sandbox/v1/link_tokens", posts),
        ):
            measure(app, environs[:300])
            slices = sorted(measure(app, environs[300:]))
            print(f"  {label:40} {slices[0]:.3f} ms ({slices[len(slices) // 2]:.3f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
