"""Configuration from the environment, with embedded defaults for `make run`."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def default_instance_dir() -> Path:
    """The checkout's `instance/` (where `make run` keeps it), whatever directory a command runs from.

    Installed as a package (no source checkout around it), the current directory's `instance/`.
    """
    if (ROOT / "pyproject.toml").is_file() and (ROOT / "Makefile").is_file():
        return ROOT / "instance"
    return Path.cwd() / "instance"


INSTANCE_DIR = Path(os.environ.get("CONSOLE_INSTANCE_DIR") or default_instance_dir()).absolute()


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


def from_environment() -> dict:
    """The settings `create_app` uses when no explicit config is given."""
    return {
        "SQLALCHEMY_DATABASE_URI": database_url(),
        "SECRET_KEY": secret_key(),
        "RATELIMIT_STORAGE_URI": os.environ.get("RATELIMIT_STORAGE_URI", "memory://"),
        "RUN_WORKER": os.environ.get("RUN_WORKER", "1") not in ("0", "false", "no"),
        "PUBLIC_URL": os.environ.get("PUBLIC_URL"),
        "CONSOLE_API_TRANSPORT": os.environ.get("CONSOLE_API_TRANSPORT"),
        "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": os.environ.get("SANDBOX_ALLOW_LOOPBACK_WEBHOOKS", "0").lower()
        in ("1", "true", "yes", "on"),
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
    "MAX_CONTENT_LENGTH": 1024 * 1024,
    "JSON_SORT_KEYS": False,
}
