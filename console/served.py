"""Where people reach this server: the one root URL every `console` command prints or calls.

`console run` records, in the instance folder, the root its banner shows. A command run later from another
shell (`console keys create --json`, `console keys roll --json`, `console listen`, `console trigger`) has none of
the server's environment: without the record it printed `PORT`'s default, 5000, for a server started with
`make run PORT=5001`. The order, the same for every command:

1. `PUBLIC_URL` of this command's environment (set on purpose: the address people use);
2. the root recorded by the `console run` of this instance folder, while that process still runs;
3. `HOST` and `PORT` of this command's environment (unset: 127.0.0.1 and 5000).

Only the standard library and `console.config`: `listen` and `trigger` never import Flask.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path

from console.config import DEFAULTS, _number, default_instance_dir, local_root, make_private_dir

RECORD_NAME = "served-at.json"
# Held (flock) by the `console run` that serves this instance folder, for as long as it runs; the kernel drops it
# when that process ends, however it ends (kill -9 included), so a stale lock never stops the next start.
LOCK_NAME = "console-run.lock"
# Below this much free space where the instance folder is, a start is refused: every write would fail.
MIN_FREE_BYTES = 1 << 20


class InstanceUnusable(RuntimeError):
    """`console run` cannot use this instance folder: another one serves it, or it cannot be written."""


def hold_instance(folder: Path | None = None) -> int:
    """Take this instance folder for this `console run` (the lock's descriptor, kept open while it serves), or
    raise InstanceUnusable with one line naming the problem and what to do.

    A second `console run` on the same folder (another port) used to start and serve the same database: its
    record of where it serves replaced the first one's and went with it at its stop, so `console listen`,
    `trigger` and `keys create` pointed at a port nobody served; a read-only or full folder came out as a
    traceback from deep inside the start (the rate-limit file's `os.open`).
    """
    folder = folder or instance_dir()
    try:
        make_private_dir(folder)
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise InstanceUnusable(_unwritable(folder, exc)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InstanceUnusable(_in_use(folder)) from None
    try:
        free = os.statvfs(folder)
        if free.f_bavail * free.f_frsize < MIN_FREE_BYTES:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as exc:
        os.close(fd)
        raise InstanceUnusable(_unwritable(folder, exc)) from None
    return fd


def _unwritable(folder: Path, exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"The disk holding the instance folder {folder} is full: free some space there (the database grows "
            "as it is used), or set CONSOLE_INSTANCE_DIR to a folder on another disk."
        )
    return (
        f"Cannot write to the instance folder {folder} ({exc.strerror}): the database, its lock files and the "
        "rate-limit counters live there. Make it writable, or set CONSOLE_INSTANCE_DIR to a folder that is."
    )


def _in_use(folder: Path) -> str:
    noted = _read(folder / RECORD_NAME) or {}
    pid, root = noted.get("pid"), noted.get("root")
    where = f", pid {pid} at {root}" if isinstance(pid, int) and isinstance(root, str) else ""
    return (
        f"Another `console run` already serves this instance folder ({folder}{where}): stop it first (Ctrl-C "
        "in its terminal), or start this one with its own CONSOLE_INSTANCE_DIR."
    )


def instance_dir() -> Path:
    """The instance folder of this process's environment (read now: `config.INSTANCE_DIR` is fixed at import)."""
    return Path(os.environ.get("CONSOLE_INSTANCE_DIR") or default_instance_dir()).absolute()


def record(root: str, *, folder: Path | None = None, pid: int | None = None) -> Path:
    """Note that this process (`console run`'s master) serves at `root`; the file is replaced atomically."""
    folder = folder or instance_dir()
    make_private_dir(folder)
    pid = pid or os.getpid()
    path = folder / RECORD_NAME
    partial = path.with_suffix(f".{pid}.tmp")
    partial.write_text(json.dumps({"root": root.rstrip("/"), "pid": pid, "started": _started(pid)}))
    partial.replace(path)
    return path


def forget(*, folder: Path | None = None, pid: int | None = None) -> None:
    """Remove the record if this process wrote it (a clean stop); another server's record is left alone."""
    path = (folder or instance_dir()) / RECORD_NAME
    noted = _read(path)
    if noted is not None and noted.get("pid") == (pid or os.getpid()):
        path.unlink(missing_ok=True)


def recorded_root(*, folder: Path | None = None) -> str | None:
    """The root a running `console run` of this instance folder recorded; None when none runs."""
    noted = _read((folder or instance_dir()) / RECORD_NAME)
    if not noted or not isinstance(noted.get("root"), str) or not isinstance(noted.get("pid"), int):
        return None
    if not _alive(noted["pid"], noted.get("started")):
        return None  # a server that stopped without cleaning up (killed): its port says nothing now
    return noted["root"]


def root(config: Mapping | None = None, *, folder: Path | None = None) -> str:
    """The root URL to print or call, in the order of the module's docstring.

    `config`: an app's settings (their `PUBLIC_URL`, `LISTEN_HOST`, `LISTEN_PORT`, read from the same
    environment); without one, the environment is read directly (the client commands build no app).
    """
    if config is not None:
        public, host, port = config.get("PUBLIC_URL"), config["LISTEN_HOST"], config["LISTEN_PORT"]
    else:
        public = os.environ.get("PUBLIC_URL")
        host = os.environ.get("HOST") or DEFAULTS["LISTEN_HOST"]
        port = _number("PORT", DEFAULTS["LISTEN_PORT"])
    if public:
        return public.rstrip("/")
    return recorded_root(folder=folder) or local_root(host, port)


def _read(path: Path) -> dict | None:
    try:
        noted = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return noted if isinstance(noted, dict) else None


def _alive(pid: int, started: object) -> bool:
    """Whether `pid` still runs and is the process that wrote the record (a reused pid is another process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # runs, as another user
    except OSError:
        return False
    now = _started(pid)
    return started is None or now is None or now == started


def _started(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux's /proc); None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces and parentheses, so count from its closing one.
    fields = stat[stat.rindex(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def running_root() -> str | None:
    """`root()` when a `console run` of this instance folder runs, else None: the default of a client command's
    `--api` (`listen`, `trigger`), which must not guess a server that is not there."""
    if recorded_root() is None:
        return None
    return root()
