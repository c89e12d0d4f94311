"""What every per-workspace cap shares (`console.db.capping.Cap`): the request log, the built-in inbox and the
event log. Each table's own rules (what outlives its cap, batches, cascades) are tested beside it:
tests/unit/test_requestlog_pruning.py, tests/web/test_inbox_pruning.py, tests/unit/test_event_pruning.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from types import ModuleType

import pytest

from console import config
from console.core.timeutil import utcnow
from console.events import pruning as event_pruning
from console.events.models import Event
from console.requestlog import pruning as requestlog_pruning
from console.web.webhooks import inbox_pruning
from tests import caps
from tests.unit import test_event_pruning, test_requestlog_pruning
from tests.web import test_inbox_pruning


@dataclass(frozen=True)
class Capped:
    module: ModuleType  # declares CAP and the loop
    loop: str  # the loop's dotted name in console.worker.LOOPS
    add: Callable  # (app, workspace, count) -> the new rows' ids, oldest first
    ids: Callable  # (app, workspace) -> the workspace's row ids

    @property
    def setting(self) -> str:
        return self.module.CAP.setting


CAPS = [
    pytest.param(
        Capped(
            requestlog_pruning,
            "console.requestlog.pruning.PruneLoop",
            lambda app, ws, n: test_requestlog_pruning._add_rows(
                app, ws.id, n, start=utcnow() - timedelta(hours=1)
            ),
            lambda app, ws: test_requestlog_pruning._ids(app, ws.id),
        ),
        id="request log",
    ),
    pytest.param(
        Capped(
            inbox_pruning,
            "console.web.webhooks.inbox_pruning.InboxPruneLoop",
            lambda app, ws, n: test_inbox_pruning._add(app, ws.id, n, start=utcnow() - timedelta(hours=1)),
            lambda app, ws: test_inbox_pruning._ids(app, ws.id),
        ),
        id="inbox",
    ),
    pytest.param(
        Capped(
            event_pruning,
            "console.events.pruning.EventPruneLoop",
            lambda app, ws, n: test_event_pruning._add_events(app, ws, n),
            lambda app, ws: caps.row_ids(app, Event, ws.id),
        ),
        id="events",
    ),
]


@pytest.mark.parametrize("capped", CAPS)
def test_no_cap_when_the_setting_is_zero(app, workspace, capped):
    app.config[capped.setting] = 0
    rows = capped.add(app, workspace, 6)
    assert caps.prune(app, capped.module.CAP) == 0
    assert capped.ids(app, workspace) == set(rows)


@pytest.mark.parametrize("capped", CAPS)
def test_the_worker_runs_the_caps_loop_with_its_default(app, workspace, capped):
    from console.worker import LOOPS, load_loop

    assert capped.loop in LOOPS
    loop = load_loop(capped.loop)
    assert loop.cap is capped.module.CAP
    assert app.config[capped.setting] == capped.module.DEFAULT_KEEP == capped.module.CAP.default
    app.config[capped.setting] = 2
    rows = capped.add(app, workspace, 5)
    assert loop(app).run_once() == 3
    assert capped.ids(app, workspace) == set(rows[-2:])


@pytest.mark.parametrize("capped", CAPS)
def test_the_setting_is_read_from_the_environment(monkeypatch, capped):
    monkeypatch.setenv("SECRET_KEY", "test-secret")
    monkeypatch.setenv(capped.setting, "250")
    assert config.from_environment()[capped.setting] == 250
    monkeypatch.setenv(capped.setting, "")
    assert config.from_environment()[capped.setting] == config.DEFAULTS[capped.setting]
