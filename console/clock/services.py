"""The workspace clock: real time plus the workspace's offset.

Everything time-dependent (token expiry, retries, business days, webhook
schedules) asks `now(workspace)` so that advancing the clock moves it all.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from console.core.timeutil import utcnow
from console.workspaces.models import Workspace


def now(workspace: Workspace) -> datetime:
    return utcnow() + timedelta(seconds=workspace.clock_offset_seconds or 0.0)
