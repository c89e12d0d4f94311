"""First-run and every-run preparation: schema, world seed, demo workspace and key."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from flask import current_app
from sqlalchemy import inspect, select, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from console import config as settings
from console.db.schema import upgrade_to_head
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.secrets import PREFIXES
from console.keys.services import create_key, secret_of
from console.modes import MODES, SANDBOX, base_url
from console.workspaces.services import demo_workspace


@dataclass(frozen=True)
class Prepared:
    """What `prepare_database` did, to say it honestly."""

    database: str  # the URL, password hidden
    before: str | None  # the schema revision found (None: no schema yet)
    after: str | None
    world_rows: int  # world rows inserted by the seed (0: it was already there)

    def describe(self) -> str:
        if self.before is None:
            schema = f"Created the schema (revision {self.after})"
        elif self.before != self.after:
            schema = f"Upgraded the schema from revision {self.before} to {self.after}"
        else:
            schema = f"The schema was already up to date (revision {self.after})"
        world = (
            f"seeded the simulated world ({self.world_rows} rows)"
            if self.world_rows
            else "the simulated world was already seeded"
        )
        return f"Database {self.database}:\n  {schema};\n  {world}."


def _revision() -> str | None:
    from alembic.migration import MigrationContext  # only here: see console/db/schema.py

    with db.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def prepare_database() -> Prepared:
    """Upgrade the schema to the newest migration and seed the world; idempotent."""
    from console.world.seed import seed_world

    url = db.engine.url
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        settings.make_private_dir(Path(url.database).parent)  # a fresh instance folder, owner only
    before = _revision()
    upgrade_to_head()
    inserted = seed_world(db.session)
    db.session.commit()
    return Prepared(
        db.engine.url.render_as_string(hide_password=True), before, _revision(), sum(inserted.values())
    )


def unreachable_database() -> str | None:
    """Why the database cannot be reached at all (a server that is down, a wrong host, port, user or database
    name), or None when it answers. SQLite is never "unreachable": its file is created on first use."""
    url = db.engine.url
    if url.get_backend_name() == "sqlite":
        return _unreadable_sqlite_file(url.database)
    try:
        with db.engine.connect():
            return None
    except OperationalError as exc:
        # libpq's own first line (it names the host, port and database, never the password).
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return (
            f"Cannot connect to the database {url.render_as_string(hide_password=True)}: {reason}. "
            "Check DATABASE_URL (host, port, user, database name; the database must exist: `createdb NAME`) "
            "and that the server is running."
        )


def _unreadable_sqlite_file(path: str | None) -> str | None:
    """Why an existing SQLite file cannot be used (not a database, damaged, unreadable), or None. A missing file
    is fine: it is created on first use. Every command used to stop here with a driver traceback ending in
    `file is not a database` or `database disk image is malformed`."""
    if not path or path == ":memory:" or not Path(path).exists():
        return None
    # The driver itself, not the engine: its connect hook's pragmas are where a damaged file first fails, and a
    # test app's engine keeps to the test's one connection.
    try:
        connection = sqlite3.connect(path, timeout=1)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            connection.close()
        return None
    except sqlite3.Error as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "locked" in reason or "busy" in reason:
            return None  # busy, not broken: the command itself waits its turn (or says so)
        return (
            f"The database file {path} cannot be used ({reason}). Restore it from a backup (docs/operations.md, "
            "Backups and restore), or move it aside (with its -wal and -shm files) to start with an empty one."
        )


def missing_schema() -> str | None:
    """Why the database cannot serve commands yet (unreachable, or no schema: never upgraded), or None when it
    can."""
    unreachable = unreachable_database()
    if unreachable:
        return unreachable
    try:
        if inspect(db.engine).has_table("api_keys"):
            return schema_behind()
    except OperationalError:
        pass  # e.g. SQLite whose folder does not exist: the same advice applies
    return (
        f"The database {db.engine.url.render_as_string(hide_password=True)} has no tables yet. "
        "Run `console db upgrade` first (or `make run`), or point DATABASE_URL / CONSOLE_INSTANCE_DIR "
        "at the database you meant."
    )


class SecretKeyMismatch(RuntimeError):
    """The stored API secrets were encrypted with another `SECRET_KEY` than this process has."""


def _secret_key_advice() -> str:
    generated = settings.INSTANCE_DIR / "secret_key"
    # Point at the generated key only where there is one: with SECRET_KEY set explicitly (a scale-out setup)
    # no file was ever written, and naming one sent the operator looking for it.
    where = (
        f"; a key `make run` generated is in {generated}: SECRET_KEY=$(cat {generated})"
        if generated.exists()
        else ""
    )
    return (
        "The API secrets stored in this database were encrypted with a different SECRET_KEY than this "
        "process has, so webhooks cannot be signed and the console cannot call the API. Set SECRET_KEY to the "
        f"value the database was used with (every process the same{where})."
    )


def secret_key_mismatch() -> str | None:
    """Why this process cannot read the API secrets stored in the database (they were encrypted with another
    `SECRET_KEY`), or None when it can (or none is stored yet). One key is tried: they share the one key."""
    from cryptography.fernet import InvalidToken

    key = db.session.scalars(select(ApiKey).order_by(ApiKey.created_at.desc()).limit(1)).first()
    try:
        if key is not None:
            secret_of(key)
    except InvalidToken:
        return _secret_key_advice()
    finally:
        db.session.rollback()
    return None


_REVISION_LINE = re.compile(r"""^(down_revision|revision)\s*=\s*(.+)$""", re.MULTILINE)


def head_revisions() -> set[str]:
    """The newest migration(s) this code ships, read from the migration files' `revision` / `down_revision`
    lines (no Alembic import: ~0.3 s a start, see console/db/schema.py)."""
    revisions: set[str] = set()
    replaced: set[str] = set()
    for path in (settings.ROOT / "console" / "migrations" / "versions").glob("*.py"):
        for name, value in _REVISION_LINE.findall(path.read_text()):
            found = set(re.findall(r"""['"]([0-9a-zA-Z_]+)['"]""", value))
            (revisions if name == "revision" else replaced).update(found)
    return revisions - replaced


def schema_behind() -> str | None:
    """Why the database's schema is older than this code (a migration not run yet), or None when it is up to
    date. A schema newer than the code (an older release on a database upgraded since) is left to run."""
    try:
        with db.engine.connect() as connection:
            found = {row[0] for row in connection.execute(text("SELECT version_num FROM alembic_version"))}
    except (OperationalError, ProgrammingError):
        found = set()
    heads = head_revisions()
    if not found or not heads or found & heads:
        return None  # no Alembic bookkeeping (tables made by `create_all`): nothing to compare
    if not found <= _known_revisions():
        return None  # upgraded by a newer release than this one
    url = db.engine.url.render_as_string(hide_password=True)
    return (
        f"The database {url} is at schema revision {', '.join(sorted(found))}, older than this code's "
        f"({', '.join(sorted(heads))}): a migration has not run. Run `console db upgrade` first."
    )


def _known_revisions() -> set[str]:
    known: set[str] = set()
    for path in (settings.ROOT / "console" / "migrations" / "versions").glob("*.py"):
        for name, value in _REVISION_LINE.findall(path.read_text()):
            if name == "revision":
                known.update(re.findall(r"""['"]([0-9a-zA-Z_]+)['"]""", value))
    return known


def demo_sandbox_secret() -> str:
    """The demo workspace's sandbox secret, creating the key on first run.

    `SecretKeyMismatch` (saying what to do) when the stored secret was sealed with another `SECRET_KEY`.
    """
    from cryptography.fernet import InvalidToken

    workspace = demo_workspace()
    key = db.session.scalars(
        select(ApiKey)
        .where(ApiKey.workspace_id == workspace.id, ApiKey.mode == SANDBOX, ApiKey.revoked_at.is_(None))
        .order_by(ApiKey.created_at)
    ).first()
    try:
        secret = secret_of(key) if key else create_key(workspace.id, SANDBOX, "demo").secret
    except InvalidToken:
        db.session.rollback()
        raise SecretKeyMismatch(_secret_key_advice()) from None
    db.session.commit()
    return secret


def startup_banner(listen_root: str, *, show_secret: bool = True) -> str:
    """What `console run` prints: the URLs people use (`PUBLIC_URL` when set) and the demo secret.

    `show_secret=False` (the output is not a terminal: a service manager's log, a file) prints the secret
    masked, and how to get one: whatever keeps that output would keep a working API secret.
    """
    public = (current_app.config.get("PUBLIC_URL") or "").rstrip("/")
    root = public or listen_root
    secret = demo_sandbox_secret()
    if show_secret:
        secret_lines = [f"  Sandbox secret:   {secret}   (demo workspace)"]
    else:
        secret_lines = [
            f"  Sandbox secret:   {PREFIXES[SANDBOX]}****{secret[-4:]}   (demo workspace)",
            "                    (not printed in full: this output is not a terminal and may be kept;",
            "                    `console keys create --mode sandbox` prints a new sandbox secret of the demo workspace)",
        ]
    lines = [
        "",
        f"  Console:          {root}/",
        *([f"  Listening on:     {listen_root}/   (PUBLIC_URL is the address above)"] if public else []),
        *(f"  {mode + ' API:':<17} {base_url(root, mode)}/v1" for mode in MODES),
        *secret_lines,
        '  To see this secret\'s calls in the console, paste it into "Open its workspace"',
        "  (on the Requests page): each browser shows its own workspace until then.",
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
