"""`run_python`: a snippet of Python run in a child process, for what must not touch the test process itself
(signal handlers and masks, scheduling policies, CPU affinity, fork hooks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_python(
    code: str, *, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """`python -c code` from the repository root (so `console` imports), output captured as text."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
