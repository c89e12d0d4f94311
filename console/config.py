"""Configuration from the environment, with embedded defaults for `make run`."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

INSTANCE_DIR = Path(os.environ.get("CONSOLE_INSTANCE_DIR", Path.cwd() / "instance"))


def default_database_url() -> str:
    return f"sqlite:///{INSTANCE_DIR / 'console.db'}"


def database_url() -> str:
    """`DATABASE_URL`, normalised to the psycopg 3 driver, else the SQLite default."""
    url = os.environ.get("DATABASE_URL") or default_database_url()
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def secret_key() -> str:
    """`SECRET_KEY`, else one generated once and kept in the instance folder.

    Kept on disk (not regenerated per start) because it signs console sessions and
    encrypts stored API secrets; a new key would orphan both.
    """
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    path = INSTANCE_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(48)
    path.write_text(value)
    path.chmod(0o600)
    return value


def days(name: str, default: float) -> float:
    """A number of days from the environment (fractions allowed), refusing what is not one."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of days, not {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be a finite number of days >= 0, not {raw!r}")
    return value


def from_environment() -> dict:
    """The settings `create_app` uses when no explicit config is given."""
    return {
        "SQLALCHEMY_DATABASE_URI": database_url(),
        "SECRET_KEY": secret_key(),
        "RATELIMIT_STORAGE_URI": os.environ.get("RATELIMIT_STORAGE_URI", "memory://"),
        "RUN_WORKER": os.environ.get("RUN_WORKER", "1") not in ("0", "false", "no"),
        "PUBLIC_URL": os.environ.get("PUBLIC_URL"),
        "CONSOLE_API_TRANSPORT": os.environ.get("CONSOLE_API_TRANSPORT"),
        "CONSOLE_SESSION_IDLE_DAYS": days("CONSOLE_SESSION_IDLE_DAYS", 30),
        "WORKSPACE_IDLE_DAYS": days("WORKSPACE_IDLE_DAYS", 30),
    }


DEFAULTS = {
    "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True},
    # Per-key request rates (spec, Limits). Strings in the `limits` library's notation.
    "RATE_LIMITS": {"sandbox": "10/second", "development": "10/second", "production": "50/second"},
    "RATELIMIT_STORAGE_URI": "memory://",
    "RUN_WORKER": False,
    "WTF_CSRF_TIME_LIMIT": None,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_HTTPONLY": True,
    # A console session ends after this many days without a visit (see console.web.workspace_session).
    "CONSOLE_SESSION_IDLE_DAYS": 30,
    # A visitor workspace nobody named is deleted after this many idle days; 0 keeps every workspace.
    "WORKSPACE_IDLE_DAYS": 30,
    "MAX_CONTENT_LENGTH": 1024 * 1024,
    "JSON_SORT_KEYS": False,
}
