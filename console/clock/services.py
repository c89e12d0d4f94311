"""The workspace clock: real time plus the workspace's offset.

Everything time-dependent (token expiry, retries, business days, webhook
schedules) asks `now(workspace)` so that advancing the clock moves it all.
Moving a clock (and running what became due) is `console.clock.moves`, which
builds on the scheduler; the scheduler builds on this module.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from console.core.timeutil import utcnow
from console.workspaces.models import Workspace


def now(workspace: Workspace) -> datetime:
    """The workspace's current time: real time plus its offset."""
    return utcnow() + timedelta(seconds=workspace.clock_offset_seconds or 0.0)


def real_time_of(workspace: Workspace, due_at: datetime) -> datetime:
    """The real moment at which `due_at` on this workspace's clock arrives."""
    return due_at - timedelta(seconds=workspace.clock_offset_seconds or 0.0)
