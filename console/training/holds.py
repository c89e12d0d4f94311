"""Exercise 5's missed webhook: holding one Link token's deliveries back, and noticing its recovery.

Both facts live on the workspace row (`held_link_token_id`, `held_link_token_found_at`), which the
webhook fan-out and the API's authentication already load: telling whether a delivery is held, or
whether a jobs search is the recovery, costs no extra query on the hot paths.
"""

from __future__ import annotations

import uuid

from console.core.timeutil import utcnow
from console.db.rows import Snapshot
from console.workspaces.models import Workspace


def recovered(workspace: Workspace) -> bool:
    """Whether the exercise is done: the held token's jobs were found. Done stays done: a trainer's grid
    and export must not lose a tick because the trainee pressed the button again."""
    return workspace.held_link_token_found_at is not None


def hold(workspace: Workspace, link_token_id: str | uuid.UUID) -> None:
    """From now on this token's events skip the workspace's own endpoints (the console's inbox still
    gets them). One token at a time, until it is `recovered`. The caller commits."""
    if recovered(workspace):
        raise ValueError("the missed-webhook exercise is done; nothing more is held back")
    workspace.held_link_token_id = uuid.UUID(str(link_token_id))
    workspace.held_link_token_found_at = None


def finds_held_token(workspace: Workspace | Snapshot, link_token_id: str | None, *, by_console: bool) -> bool:
    """Whether a jobs search is the first one for the held token's jobs by a request not the console's own.

    Reads only (the API's snapshot of the workspace will do); `note_held_token_found` records it.
    """
    held = workspace.held_link_token_id
    if by_console or held is None or workspace.held_link_token_found_at is not None or not link_token_id:
        return False
    return str(link_token_id).strip().lower() == str(held)


def note_held_token_found(workspace: Workspace) -> None:
    """Record that the held token's jobs were searched for (the caller commits)."""
    workspace.held_link_token_found_at = utcnow()
