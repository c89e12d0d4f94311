"""Configuration from the environment, with embedded defaults for `make run`."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

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
    if url.startswith("postgresql+psycopg://") and not urlsplit(url).path.strip("/"):
        # libpq would pick a database itself (one named after the OS user): the schema was created there unasked.
        raise SettingError(
            "DATABASE_URL names no database: add its name, e.g. postgresql://user@host:5432/console "
            "(create it first with `createdb console`)"
        )
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
    make_private_dir(INSTANCE_DIR)
    return _write_new_secret_key(path)


def make_private_dir(path: Path) -> None:
    """Create the instance folder (if missing) readable by its owner only: it holds the SQLite database (every
    workspace's data, with personal data in events and payloads), created with the umask's mode (0644 usually),
    beside the secret key. A folder that exists is left as it is."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def _write_new_secret_key(path: Path) -> str:
    """A new key in `path`, readable by its owner only from its first byte, or the one another process wrote.

    Written to a private temporary file (mkstemp: mode 0600) and linked into place: `write_text` then `chmod`
    left the key world-readable under the usual umask until the chmod, and two processes starting together
    could each write (and use) a key of their own, the second overwriting the first.
    """
    value = secrets.token_urlsafe(48)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(value)
        try:
            os.link(temporary, path)
        except FileExistsError:  # another process was first: use its key
            return path.read_text().strip()
    finally:
        os.unlink(temporary)
    return value


class SettingError(ValueError):
    """A setting in the environment that is not what it must be; its message names the variable."""


_KINDS = {int: "a whole number", float: "a number"}


def _parse(name: str, raw: str, kind=int):
    try:
        return kind(raw.strip())
    except ValueError:
        raise SettingError(f"{name} must be {_KINDS.get(kind, kind.__name__)}, not {raw!r}") from None


def _number(name: str, default, kind=int):
    """The environment variable `name` as a number of `kind`, else `default`; a `SettingError` naming it when
    it is not one (the bare `int()` error said "invalid literal ... 'two'" and not which setting)."""
    raw = os.environ.get(name)
    return _parse(name, raw, kind) if raw not in (None, "") else default


_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _flag(name: str, default: bool) -> bool:
    """The environment variable `name` as a yes/no setting, in any case, else `default`; a `SettingError`
    naming it for anything else (each flag had its own reading: `RUN_WORKER=False` or `off` ran a worker)."""
    raw = (os.environ.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in _YES or raw in _NO:
        return raw in _YES
    raise SettingError(f"{name} must be one of {', '.join(_YES)} or {', '.join(_NO)}, not {raw!r}")


def serving_threads() -> int:
    """Request threads per serving process: `THREADS` (set by `console run --threads`), else the default."""
    return _number("THREADS", DEFAULT_THREADS)


def days(name: str, default: float) -> float:
    """A number of days from the environment (fractions allowed), refusing what is not one."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{name} must be a number of days, not {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise SettingError(f"{name} must be a finite number of days >= 0, not {raw!r}")
    return value


def from_environment() -> dict:
    """The settings `create_app` uses when no explicit config is given."""
    return {
        "SQLALCHEMY_DATABASE_URI": database_url(),
        "SECRET_KEY": secret_key(),
        # Unset: counters in a memory-mapped file in the instance folder, shared by this machine's processes.
        "RATELIMIT_STORAGE_URI": os.environ.get("RATELIMIT_STORAGE_URI") or "mmap://",
        "RUN_WORKER": _flag("RUN_WORKER", True),
        "PUBLIC_URL": os.environ.get("PUBLIC_URL"),
        "LISTEN_HOST": os.environ.get("HOST") or DEFAULTS["LISTEN_HOST"],
        "LISTEN_PORT": _number("PORT", DEFAULTS["LISTEN_PORT"]),
        "DB_POOL_SIZE": _number("DB_POOL_SIZE", serving_threads() + POOL_HEADROOM),
        "DB_POOL_TIMEOUT": _number("DB_POOL_TIMEOUT", DEFAULTS["DB_POOL_TIMEOUT"], float),
        "DB_CONNECT_TIMEOUT": _number("DB_CONNECT_TIMEOUT", DEFAULTS["DB_CONNECT_TIMEOUT"]),
        "DB_STATEMENT_TIMEOUT": _number("DB_STATEMENT_TIMEOUT", DEFAULTS["DB_STATEMENT_TIMEOUT"]),
        "SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": _flag("SANDBOX_ALLOW_LOOPBACK_WEBHOOKS", False),
        "CONSOLE_SESSION_IDLE_DAYS": days("CONSOLE_SESSION_IDLE_DAYS", 30),
        "WORKSPACE_IDLE_DAYS": days("WORKSPACE_IDLE_DAYS", 30),
        "WORKSPACE_NAMED_IDLE_DAYS": days("WORKSPACE_NAMED_IDLE_DAYS", 365),
        "VISITOR_WORKSPACES_PER_ADDRESS": max(
            0, _number("VISITOR_WORKSPACES_PER_ADDRESS", DEFAULTS["VISITOR_WORKSPACES_PER_ADDRESS"])
        ),
        # Comma-separated CIDRs sandbox webhooks may reach directly (a training room's LAN); empty: none.
        "SANDBOX_WEBHOOK_NETWORKS": os.environ.get("SANDBOX_WEBHOOK_NETWORKS", ""),
        "REQUEST_LOG_FLUSH_SECONDS": _number(
            "REQUEST_LOG_FLUSH_SECONDS", DEFAULTS["REQUEST_LOG_FLUSH_SECONDS"], float
        ),
        "REQUEST_LOG_QUEUE_SIZE": _number("REQUEST_LOG_QUEUE_SIZE", DEFAULTS["REQUEST_LOG_QUEUE_SIZE"]),
        "REQUEST_LOG_KEEP": max(0, _number("REQUEST_LOG_KEEP", DEFAULTS["REQUEST_LOG_KEEP"])),
        "INBOX_KEEP": max(0, _number("INBOX_KEEP", DEFAULTS["INBOX_KEEP"])),
        "EVENTS_KEEP": max(0, _number("EVENTS_KEEP", DEFAULTS["EVENTS_KEEP"])),
        "PRESENTER_STORIES_DIR": os.environ.get("PRESENTER_STORIES_DIR", ""),
        "LINK_MATCHING_DELAY_MS": max(
            0, _number("LINK_MATCHING_DELAY_MS", DEFAULTS["LINK_MATCHING_DELAY_MS"])
        ),
        "RUN_CONCURRENCY": max(0, _number("RUN_CONCURRENCY", DEFAULTS["RUN_CONCURRENCY"])),
        "CONSOLE_PAGE_CONCURRENCY": max(
            1, _number("CONSOLE_PAGE_CONCURRENCY", DEFAULTS["CONSOLE_PAGE_CONCURRENCY"])
        ),
        "PRESENTER_WAIT_SECONDS": _number(
            "PRESENTER_WAIT_SECONDS", DEFAULTS["PRESENTER_WAIT_SECONDS"], float
        ),
        "PRESENTER_MAX_PROFILES": _number("PRESENTER_MAX_PROFILES", DEFAULTS["PRESENTER_MAX_PROFILES"]),
        # Quotas per owner (see the README's "Running a shared server").
        "PRESENTER_PROFILES_PER_BROWSER": _number(
            "PRESENTER_PROFILES_PER_BROWSER", DEFAULTS["PRESENTER_PROFILES_PER_BROWSER"]
        ),
        "TRAINING_COHORTS_PER_TRAINER": _number(
            "TRAINING_COHORTS_PER_TRAINER", DEFAULTS["TRAINING_COHORTS_PER_TRAINER"]
        ),
        "TRAINING_TRAINEES_PER_COHORT": _number(
            "TRAINING_TRAINEES_PER_COHORT", DEFAULTS["TRAINING_TRAINEES_PER_COHORT"]
        ),
        "TRAINING_JOINS_PER_MINUTE": _number(
            "TRAINING_JOINS_PER_MINUTE", DEFAULTS["TRAINING_JOINS_PER_MINUTE"]
        ),
        "CONSOLE_CREATES_PER_MINUTE": _number(
            "CONSOLE_CREATES_PER_MINUTE", DEFAULTS["CONSOLE_CREATES_PER_MINUTE"]
        ),
        # On for a server (`console run`, Granian's factory); off in an app built from an explicit config.
        "CONSOLE_PAGES_PER_SECOND": _number("CONSOLE_PAGES_PER_SECOND", SERVER_PAGES_PER_SECOND),
        "API_KEYS_PER_MODE": _number("API_KEYS_PER_MODE", DEFAULTS["API_KEYS_PER_MODE"]),
        "WEBHOOKS_PER_KEY": _number("WEBHOOKS_PER_KEY", DEFAULTS["WEBHOOKS_PER_KEY"]),
        # Comma-separated addresses or CIDRs of proxies whose X-Forwarded-For names the client; empty: none.
        "TRUSTED_PROXIES": os.environ.get("TRUSTED_PROXIES", ""),
        # Conformance runs (console.conformance.runs): active per workspace, executed at once per worker, and
        # the lease of a claimed run (unset: 2 x WEBHOOK_TIMEOUT_SECONDS + 30).
        "CONFORMANCE_RUNS_PER_WORKSPACE": _number(
            "CONFORMANCE_RUNS_PER_WORKSPACE", DEFAULTS["CONFORMANCE_RUNS_PER_WORKSPACE"]
        ),
        "CONFORMANCE_WORKER_RUNS": _number("CONFORMANCE_WORKER_RUNS", DEFAULTS["CONFORMANCE_WORKER_RUNS"]),
        "CONFORMANCE_LEASE_SECONDS": _number(
            "CONFORMANCE_LEASE_SECONDS", DEFAULTS["CONFORMANCE_LEASE_SECONDS"], float
        ),
        # The worker's fair sharing of its senders (console.webhooks.fairness); unset: the module's defaults.
        **_optional_numbers(
            WEBHOOK_TIMEOUT_SECONDS=(os.environ.get("WEBHOOK_TIMEOUT_SECONDS"), float),
            # How long a webhook host's DNS lookup may take (console.webhooks.dns); unset: its default.
            WEBHOOK_DNS_SECONDS=(os.environ.get("WEBHOOK_DNS_SECONDS"), float),
            WEBHOOK_THREADS=(os.environ.get("WEBHOOK_THREADS"), int),
            WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE=(os.environ.get("WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE"), int),
            WEBHOOK_MAX_IN_FLIGHT_PER_HOST=(os.environ.get("WEBHOOK_MAX_IN_FLIGHT_PER_HOST"), int),
            WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK=(os.environ.get("WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK"), int),
            WEBHOOK_RESERVED_SENDERS=(os.environ.get("WEBHOOK_RESERVED_SENDERS"), int),
            WEBHOOK_RESERVED_SHARE=(os.environ.get("WEBHOOK_RESERVED_SHARE"), int),
        ),
        **_webhook_lease(),
    }


# An attempt's timeout unless WEBHOOK_TIMEOUT_SECONDS says otherwise (console.webhooks.delivery's default,
# repeated here so that reading the settings imports nothing of the app).
_DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 15.0


def _webhook_lease() -> dict:
    """`WEBHOOK_LEASE_SECONDS`, when set: how long a worker's claim on a delivery lasts, so how soon another
    worker sends what a killed one had claimed. `console worker` read it only from app.config, so the
    operator who set it (operations.md names it for that) got the 60 s default without a word. A lease
    that does not outlast an attempt would let a live worker's claim run out mid-attempt and another
    worker send the delivery again: refused at start, naming both settings."""
    raw = os.environ.get("WEBHOOK_LEASE_SECONDS")
    if raw in (None, ""):
        return {}
    lease = _parse("WEBHOOK_LEASE_SECONDS", raw, float)
    timeout = _number("WEBHOOK_TIMEOUT_SECONDS", _DEFAULT_WEBHOOK_TIMEOUT_SECONDS, float)
    if not timeout < lease < float("inf"):
        raise SettingError(
            f"WEBHOOK_LEASE_SECONDS must be longer than an attempt's timeout (WEBHOOK_TIMEOUT_SECONDS,"
            f" {timeout:g} s), not {raw!r}: a claim that runs out mid-attempt is sent again by another worker"
        )
    return {"WEBHOOK_LEASE_SECONDS": lease}


def _optional_numbers(**given: tuple[str | None, type]) -> dict:
    """The settings of `given` (name=(raw value, kind)) that are set, as numbers; the others stay unset, so
    the code's own defaults apply (`cfg.get(name, default)`)."""
    return {name: _parse(name, raw, kind) for name, (raw, kind) in given.items() if raw not in (None, "")}


def local_root(host: str, port: int) -> str:
    """`http://host:port` for a listen address; a wildcard address is reached (and shown) as loopback."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def public_root(config) -> str:
    """The root URL shown to people (curl and Python snippets, the inbox URL): `PUBLIC_URL`, else where
    the server listens. Never derived from a request: a visitor's `Host` header must not steer it."""
    configured = config.get("PUBLIC_URL")
    if configured:
        return configured.rstrip("/")
    return local_root(config["LISTEN_HOST"], config["LISTEN_PORT"])


def engine_options(config) -> dict:
    """SQLAlchemy engine options: the pool sized to the serving threads, and every wait bounded.

    A request that cannot get a connection within `DB_POOL_TIMEOUT` fails fast (the API answers 503)
    instead of queueing behind a stalled pool; on PostgreSQL, `DB_CONNECT_TIMEOUT` bounds reaching the
    server and `DB_STATEMENT_TIMEOUT` (milliseconds, 0 = none) bounds each statement.
    """
    options = dict(config.get("SQLALCHEMY_ENGINE_OPTIONS") or {})
    url = config["SQLALCHEMY_DATABASE_URI"]
    in_memory = url.startswith("sqlite") and (
        url in ("sqlite://", "sqlite:///:memory:") or "mode=memory" in url
    )
    if url.startswith("sqlite"):
        # A connection to a local file cannot go stale: the ping (a SELECT 1 per checkout) is pure cost.
        options["pool_pre_ping"] = False
    if not in_memory:
        options.setdefault("pool_size", config["DB_POOL_SIZE"])
        # Sized to the threads, the pool is the whole budget: past it a request waits at most
        # DB_POOL_TIMEOUT for a connection, then gets a 503, instead of piling onto the database.
        options.setdefault("max_overflow", 0)
        options.setdefault("pool_timeout", config["DB_POOL_TIMEOUT"])
    if url.startswith("postgresql"):
        if url.startswith("postgresql+psycopg:"):
            # Pinged only after sitting idle (console.db.postgres), not at every checkout.
            options["pool_pre_ping"] = False
        connect_args = dict(options.get("connect_args") or {})
        connect_args.setdefault("connect_timeout", config["DB_CONNECT_TIMEOUT"])
        if config["DB_STATEMENT_TIMEOUT"]:
            timeout = f"-c statement_timeout={int(config['DB_STATEMENT_TIMEOUT'])}"
            # connect_args replace the URL's own `options` (e.g. a search_path), so keep those too.
            from sqlalchemy.engine import make_url

            in_url = make_url(url).query.get("options", "")
            in_url = " ".join(in_url) if isinstance(in_url, tuple) else in_url
            earlier = connect_args.get("options", in_url)
            connect_args["options"] = f"{earlier} {timeout}".strip()
        options["connect_args"] = connect_args
    return options


# The request threads of one serving process when `THREADS` is not set (`console run --threads`).
# Only `RUN_CONCURRENCY` of them run at once (console.runslots); the rest wait their turn, or wait on
# something outside the process (a webhook to arrive, a trainee's backend), without holding a turn.
# 32 is more than the connections a room of 48 visitors keeps open per process, so a customer's API call
# always finds a thread, and then the first free turn. Pooled connections open only when used.
DEFAULT_THREADS = 32
# Connections beyond one per request thread: the in-process worker threads, the request log's writer and
# the CLI, with room to spare.
POOL_HEADROOM = 6
# `CONSOLE_PAGES_PER_SECOND` when a server reads its settings from the environment.
SERVER_PAGES_PER_SECOND = 50

DEFAULTS = {
    "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True},
    # Where `console run` listens (env `HOST`/`PORT`); the displayed root when `PUBLIC_URL` is unset.
    "LISTEN_HOST": "127.0.0.1",
    "LISTEN_PORT": 5000,
    "PUBLIC_URL": None,
    "DB_POOL_SIZE": DEFAULT_THREADS + POOL_HEADROOM,
    "DB_POOL_TIMEOUT": 3.0,
    "DB_CONNECT_TIMEOUT": 3,
    "DB_STATEMENT_TIMEOUT": 5000,
    # Per-key request rates (spec, Limits). Strings in the `limits` library's notation.
    "RATE_LIMITS": {"sandbox": "10/second", "development": "10/second", "production": "50/second"},
    "RATELIMIT_STORAGE_URI": "memory://",
    "RUN_WORKER": False,
    "WTF_CSRF_TIME_LIMIT": None,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_HTTPONLY": True,
    # A console session ends after this many days without a visit (see console.web.shared.workspace_session).
    "CONSOLE_SESSION_IDLE_DAYS": 30,
    # A visitor workspace nobody named is deleted after this many idle days; 0 keeps every workspace.
    "WORKSPACE_IDLE_DAYS": 30,
    # One a visitor named ("Keep this workspace") after this many; 0 keeps named workspaces for good.
    "WORKSPACE_NAMED_IDLE_DAYS": 365,
    # Visitor workspaces one client address may hold; at the cap its least recently used go first; 0: no cap.
    "VISITOR_WORKSPACES_PER_ADDRESS": 200,
    "MAX_CONTENT_LENGTH": 1024 * 1024,
    "SANDBOX_WEBHOOK_NETWORKS": "",
    # The request log's background writer (console.requestlog.writer): seconds between batch writes,
    # and the most rows a serving process holds before counting further ones as "not logged".
    "REQUEST_LOG_FLUSH_SECONDS": 1.0,
    "REQUEST_LOG_QUEUE_SIZE": 2000,
    # Request log rows each workspace keeps, its newest (the worker deletes older ones, console.requestlog.pruning);
    # 0: no cap.
    "REQUEST_LOG_KEEP": 10_000,
    # Built-in inbox messages each workspace keeps, its newest (console.web.webhooks.inbox_pruning); 0: no cap.
    "INBOX_KEEP": 1000,
    # Events each workspace keeps, its newest, with their deliveries (console.events.pruning); 0: no cap.
    "EVENTS_KEEP": 5000,
    "JSON_SORT_KEYS": False,
    # Presenter mode: the folder of story files (empty: the stories shipped in console/presenter/stories),
    # and how many real seconds a wait_for_event step looks for a webhook before offering a retry.
    "PRESENTER_STORIES_DIR": "",
    "PRESENTER_WAIT_SECONDS": 8.0,
    # Link's platform-matching screen: how long its loading state shows before the matches (docs/link.md).
    "LINK_MATCHING_DELAY_MS": 2500,
    "CONSOLE_PAGE_CONCURRENCY": 2,
    # Requests running at once per serving process (console.runslots); 0 lets every thread run.
    "RUN_CONCURRENCY": 2,
    # Saved presenter profiles on this server (each logo at most 256 KB): at the cap, a new one evicts the
    # least recently used profile (never a refusal); and how many one browser may keep.
    "PRESENTER_MAX_PROFILES": 500,
    "PRESENTER_PROFILES_PER_BROWSER": 20,
    # Training: cohorts one browser (trainer) may keep, trainees per cohort, joins per cohort per minute.
    "TRAINING_COHORTS_PER_TRAINER": 20,
    "TRAINING_TRAINEES_PER_COHORT": 60,
    "TRAINING_JOINS_PER_MINUTE": 30,
    # The console's creating POSTs (workspaces, profiles, cohorts, joins) per client address per minute; 0: off.
    "CONSOLE_CREATES_PER_MINUTE": 60,
    # Console requests (pages, polls, actions; not the API) per client address per second; 0: off. Off here
    # (an app made from an explicit config: tests, in-process benchmarks); a server's default is below.
    "CONSOLE_PAGES_PER_SECOND": 0,
    # Active API keys per workspace and mode; live webhooks per API key.
    "API_KEYS_PER_MODE": 10,
    "WEBHOOKS_PER_KEY": 10,
    # Conformance runs: at most this many queued or running per workspace (429 past it), this many executed
    # at once by each worker; a claimed run's lease in seconds (None: 2 x the webhook timeout + 30).
    "CONFORMANCE_RUNS_PER_WORKSPACE": 2,
    "CONFORMANCE_WORKER_RUNS": 4,
    "CONFORMANCE_LEASE_SECONDS": None,
    # Proxies whose X-Forwarded-For is believed for the client's address (console.web.shared.throttle).
    "TRUSTED_PROXIES": "",
}
