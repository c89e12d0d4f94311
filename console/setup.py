"""First-run and every-run preparation: schema, world seed, demo workspace and key."""

from __future__ import annotations

from flask import current_app
from flask_migrate import upgrade
from sqlalchemy import select

from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import create_key, secret_of
from console.modes import MODES, SANDBOX, base_url
from console.workspaces.services import demo_workspace


def prepare_database() -> None:
    """Upgrade the schema to the newest migration and seed the world; idempotent."""
    from console.world.seed import seed_world

    upgrade(directory=current_app.extensions["migrate"].directory)
    seed_world(db.session)
    db.session.commit()


def demo_sandbox_secret() -> str:
    """The demo workspace's sandbox secret, creating the key on first run."""
    workspace = demo_workspace()
    key = db.session.scalars(
        select(ApiKey)
        .where(ApiKey.workspace_id == workspace.id, ApiKey.mode == SANDBOX, ApiKey.revoked_at.is_(None))
        .order_by(ApiKey.created_at)
    ).first()
    secret = secret_of(key) if key else create_key(workspace.id, SANDBOX, "demo").secret
    db.session.commit()
    return secret


def startup_banner(root: str) -> str:
    lines = [
        "",
        f"  Console:          {root}/",
        *(f"  {mode + ' API:':<17} {base_url(root, mode)}/v1" for mode in MODES),
        f"  Sandbox secret:   {demo_sandbox_secret()}   (demo workspace)",
        "",
        "  Try it:",
        f"    curl -s {base_url(root, SANDBOX)}/v1/link_tokens \\",
        "      -H 'x-api-secret: <the sandbox secret>' -H 'Service-Version: 2023-11-22' \\",
        "      -H 'Content-Type: application/json' \\",
        '      -d \'{"org_name": "Acme", "end_user_id": "user-1", "required_jobs": ["direct_deposit_switch"],',
        '           "allocation": {"targets": [{"type": "checking", "routing_number": "011000015",',
        '           "account_number": "1234567890"}]}}\'',
        "",
    ]
    return "\n".join(lines)
