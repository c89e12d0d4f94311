"""Importing a module changes nothing: hooks, registries and routes exist only once `create_app` runs.

Each check runs in a fresh interpreter that imports every module of the app first, then looks at the
places where import-time registration used to happen: the session's commit hooks, the scheduler's task
kinds and agenda sources, the blueprints' routes. Only after `create_app` are they filled.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import importlib, json, pkgutil, sys
import console

for info in pkgutil.walk_packages(console.__path__, "console."):
    if ".migrations" in info.name or info.name.endswith("__main__"):
        continue
    importlib.import_module(info.name)

from sqlalchemy import event
from console.api import idempotency
from console.extensions import db


def state(app=None):
    from flask import Flask
    probe = app or Flask("probe")
    with probe.app_context():
        from console.scheduler import agenda
        from console.scheduler import services as scheduler
        return {
            "session_hooks": [
                event.contains(db.session, "before_commit", idempotency._mark_applied),
                event.contains(db.session, "after_commit", idempotency._applied),
            ],
            "task_kinds": sorted(scheduler._kinds()),
            "agenda_sources": len(agenda._sources()),
            "routes": sorted(r.endpoint for r in probe.url_map.iter_rules() if r.endpoint != "static"),
            "unavailable_pages": sorted(probe.extensions.get("unavailable_pages", {})),
        }


imported = len([m for m in sys.modules if m.startswith("console.")])
before = state()
from console import create_app
app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "probe",
                  "RATELIMIT_STORAGE_URI": "memory://", "RUN_WORKER": False})
after = state(app)
print(json.dumps({"imported": imported, "before": before, "after": after}))
"""


def _probe() -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_every_module_registers_nothing_until_create_app_runs():
    found = _probe()
    assert found["imported"] > 150  # every module of the app really was imported
    before, after = found["before"], found["after"]
    assert before == {
        "session_hooks": [False, False],
        "task_kinds": [],
        "agenda_sources": 0,
        "routes": [],
        "unavailable_pages": [],
    }
    assert after["session_hooks"] == [True, True]
    assert {"job.retry", "job.federal_review", "link_token.expire"} <= set(after["task_kinds"])
    assert after["agenda_sources"] == 1
    assert "console.walkthrough" in after["routes"]
    assert "api_sandbox.create_link_token" in after["routes"]
    # The stage's own page for a step the database could not take: the app's, set by its wiring (it was a
    # module-level dict the presenter's views filled as they were imported, shared by every app).
    assert after["unavailable_pages"] == ["console.present_step"]
