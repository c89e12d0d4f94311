"""The `console` command: serve, run the worker, manage workspaces, keys and the database."""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from console.config import DEFAULT_THREADS
from console.modes import MODES, base_url

if TYPE_CHECKING:  # the client commands (listen, trigger) never build an app: Flask is not imported for them
    from flask import Flask


def _app() -> Flask:
    from console import create_app
    from console.config import SettingError

    try:
        return create_app()
    except SettingError as exc:  # e.g. RUN_CONCURRENCY=two: one line naming the variable, not a traceback
        raise click.ClickException(str(exc)) from None


def _env_port() -> int:
    from console.config import SettingError, _number

    try:
        return _number("PORT", 5000)
    except SettingError as exc:
        raise click.ClickException(str(exc)) from None


def _ready_app() -> Flask:
    """The app for a command that reads or writes data: a database without a schema is a clear error."""
    from console.bootstrap import missing_schema

    return _checked_app(missing_schema)


def _reachable_app() -> Flask:
    """The app for a command that creates the schema (`db upgrade`, `run`): a database it cannot reach is a
    one-line error saying what to check, not a driver's traceback."""
    from console.bootstrap import unreachable_database

    return _checked_app(unreachable_database)


def _checked_app(problem_of) -> Flask:
    """The app, once `problem_of()` (in its context) finds nothing wrong; else its one line, as the error."""
    app = _app()
    with app.app_context():
        problem = problem_of()
    if problem:
        raise click.ClickException(problem)
    return app


def _commit():
    from console.extensions import db

    db.session.commit()


@click.group()
def main() -> None:
    """Payroll connectivity service and developer console."""


@main.command()
@click.option("--host", default=lambda: os.environ.get("HOST", "127.0.0.1"), show_default="HOST or 127.0.0.1")
@click.option("--port", default=_env_port, type=int, show_default="PORT or 5000")
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=None,
    help="Serving processes (Granian calls them workers; here the worker is the background process).  "
    "[default: one per core]",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=DEFAULT_THREADS,
    show_default=True,
    help="Python threads per serving process; RUN_CONCURRENCY of them run at once, the rest wait for a turn.",
)
@click.option(
    "--pin-cpus/--no-pin-cpus",
    default=True,
    show_default=True,
    help="Keep each serving process on a CPU of its own (when there are no more processes than CPUs).",
)
def run(host: str, port: int, processes: int | None, threads: int, pin_cpus: bool) -> None:
    """Upgrade the database, then serve the API, Link and the console on every core, plus the worker."""
    from console.serving import default_processes, serve

    _check_free(host, port)
    from console import served

    try:
        # Kept open (and locked) for as long as this process serves; the kernel releases it when it ends.
        lock = served.hold_instance()
    except served.InstanceUnusable as exc:
        raise click.ClickException(str(exc)) from None
    try:
        # The app reads where it listens from the environment (each serving process builds its own app).
        os.environ["HOST"], os.environ["PORT"], os.environ["THREADS"] = host, str(port), str(threads)
        app = _reachable_app()
        with app.app_context():
            from console.bootstrap import SecretKeyMismatch, prepare_database, startup_banner
            from console.extensions import db

            prepare_database()
            try:
                # In full only on a terminal: a service manager's log or a file would keep a working secret.
                banner = startup_banner(f"http://{host}:{port}", show_secret=sys.stdout.isatty())
            except (
                SecretKeyMismatch
            ) as exc:  # a database restored or moved, SECRET_KEY newly set: say which to set
                raise click.ClickException(str(exc)) from None
            click.echo(banner)
            from console.config import public_root

            served.record(public_root(app.config))  # what later commands print (console.served)
            # Nothing opened here may be shared with the processes forked next.
            db.session.remove()
            db.engine.dispose()
        try:
            serve(
                host=host,
                port=port,
                processes=processes or default_processes(),
                threads=threads,
                run_worker=app.config["RUN_WORKER"],
                pin_cpus=pin_cpus,
            )
        finally:
            served.forget()
    finally:
        os.close(lock)  # the kernel would at exit; a test calling `run` in its own process goes on


def _check_free(host: str, port: int) -> None:
    """A clear error, before anything starts, when another server listens where we would (the server's own
    refusal comes later, as a Python and Rust traceback)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.ClickException(f"Cannot listen on {host}:{port}: {exc.strerror}.") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise click.ClickException(
                    f"Port {port} on {host} is already in use (another server, maybe an earlier `console run`): "
                    "stop it, or pass --port (or set PORT)."
                ) from None
            raise click.ClickException(f"Cannot listen on {host}:{port}: {exc.strerror}.") from None


@main.command()
def worker() -> None:
    """Run the scheduler and webhook delivery worker in the foreground (SIGTERM stops it cleanly)."""
    from console.core.orphans import master_from_environment, stop_when_orphaned
    from console.worker import run_forever

    master = master_from_environment()
    if master is not None:  # started by `console run`: stop if that master is ever gone without stopping us
        stop_when_orphaned(master)
    # A database without the schema (or one it cannot reach) is one clear line, not a traceback from every
    # loop at every poll (thousands of lines a second, none saying to run `console db upgrade`).
    app = _ready_app()
    with app.app_context():
        from console.bootstrap import secret_key_mismatch

        # Another SECRET_KEY than the servers': every delivery would stay pending, a traceback at every poll,
        # while its heartbeat told /healthz all was well.
        problem = secret_key_mismatch()
    if problem:
        raise click.ClickException(problem)
    sys.exit(run_forever(app))


@main.group()
def world() -> None:
    """The simulated world."""


@world.command("person")
@click.argument("person_id", metavar="ID_OR_SLUG")
@click.option("--workspace", "workspace_id", default=None, help="Show this workspace's payroll record.")
@click.option("--mode", type=click.Choice(MODES), default=None)
def world_person(person_id: str, workspace_id: str | None, mode: str | None) -> None:
    """Show a person: identity, employments, credentials and current deposit allocations."""
    from console.world.services import person_summary

    app = _ready_app()
    with app.app_context():
        try:
            summary = person_summary(person_id, workspace_id=workspace_id, mode=mode)
        except (ValueError, LookupError) as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(json.dumps(summary, indent=2, default=str))


@main.group()
def stories() -> None:
    """Presenter story files."""


@stories.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def stories_check(paths: tuple[Path, ...]) -> None:
    """Read story files as the stage will, and name each mistake with its step (the stories folder when no
    file is given: PRESENTER_STORIES_DIR, else the built-in stories). Exits 1 if any file is broken."""
    from console.presenter import stories as story_files

    app = _app()
    with app.app_context():
        if paths:
            results = [(path.name, *story_files.check_file(path)) for path in paths]
        else:
            good, broken = story_files.all_stories()
            results = [(f"{story.key}.json", story, None) for story in good]
            results += [(b.file_name, None, b.problem) for b in broken]
    for name, story, problem in results:
        if story is not None:
            count = len(story.steps)
            click.echo(f"ok      {name}: {story.title} ({count} step{'' if count == 1 else 's'})")
        else:
            click.echo(f"broken  {name}: {problem}")
    if not results:
        click.echo("no story files found")
    if any(story is None for _, story, _ in results):
        raise SystemExit(1)


@main.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Create or upgrade the schema to the latest migration, and seed the world."""
    app = _reachable_app()
    with app.app_context():
        from console.bootstrap import prepare_database

        click.echo(prepare_database().describe())


@main.group()
def workspaces() -> None:
    """Workspaces (one customer each)."""


@workspaces.command("create")
@click.option("--name", default="Workspace")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def workspaces_create(name: str, as_json: bool) -> None:
    """Create a workspace."""
    from console.workspaces.services import create_workspace

    app = _ready_app()
    with app.app_context():
        workspace = create_workspace(name)
        _commit()
        if as_json:
            click.echo(json.dumps({"id": str(workspace.id), "name": workspace.name}))
        else:
            click.echo(f"Created workspace {workspace.id} ({workspace.name}).")


@workspaces.command("list")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object a line.")
def workspaces_list(limit: int, as_json: bool) -> None:
    """The workspaces holding the most rows (Link tokens, accounts, jobs, events, request log), most first."""
    from console.workspaces.services import largest_workspaces

    app = _ready_app()
    with app.app_context():
        sizes = largest_workspaces(limit)
        for size in sizes:
            workspace = size.workspace
            kind = (
                "demo"
                if workspace.is_demo
                else "named"
                if workspace.named_in_console
                else "kept"
                if workspace.kept
                else "visitor"
            )
            if as_json:
                click.echo(
                    json.dumps(
                        {
                            "id": str(workspace.id),
                            "name": workspace.name,
                            "kind": kind,
                            "last_active_at": workspace.last_active_at.isoformat(),
                            "rows": size.counts,
                        }
                    )
                )
            else:
                rows = ", ".join(f"{n} {label.replace('_', ' ')}" for label, n in size.counts.items())
                click.echo(f"{workspace.id}  {kind:<7}  {workspace.name}  ({rows})")
        if not sizes and not as_json:
            click.echo("No workspace holds any rows yet.")


@workspaces.command("delete")
@click.argument("workspace_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def workspaces_delete(workspace_id: str, yes: bool) -> None:
    """Delete a workspace with everything it owns (its keys stop working at once)."""
    from console.core.errors import ServiceError
    from console.workspaces.services import delete_workspace, get_workspace

    app = _ready_app()
    with app.app_context():
        try:
            workspace = get_workspace(workspace_id)
        except ServiceError as exc:
            raise click.ClickException(exc.message) from None
        if not yes:
            click.confirm(
                f"Delete workspace {workspace.id} ({workspace.name}) with its keys, tokens, jobs and events?",
                abort=True,
            )
        delete_workspace(workspace.id)
        _commit()
        click.echo(f"Deleted workspace {workspace_id}.")


@main.group()
def keys() -> None:
    """API keys (one workspace and one mode each)."""


@keys.command("create")
@click.option("--mode", type=click.Choice(MODES), required=True)
@click.option("--workspace", "workspace_id", default=None, help="Workspace id; default: the demo workspace.")
@click.option("--label", default="")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def keys_create(mode: str, workspace_id: str | None, label: str, as_json: bool) -> None:
    """Create an API key. Its secret is printed once and cannot be shown again."""
    from console.core.errors import ServiceError
    from console.keys.services import create_key
    from console.workspaces.services import demo_workspace, get_workspace

    app = _ready_app()
    with app.app_context():
        try:
            workspace = get_workspace(workspace_id) if workspace_id else demo_workspace()
        except ServiceError as exc:
            raise click.ClickException(exc.message) from exc
        try:
            created = create_key(workspace.id, mode, label)
        except ServiceError as exc:  # API_KEYS_PER_MODE reached
            raise click.ClickException(exc.message) from exc
        _commit()
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "id": str(created.key.id),
                        "workspace_id": str(workspace.id),
                        "mode": mode,
                        "secret": created.secret,
                        "base_url": base_url(_root_url(), mode),
                    }
                )
            )
        else:
            click.echo(f"Created {mode} key {created.key.id} in workspace {workspace.id}.")
            click.echo(f"Secret (shown once, store it now): {created.secret}")


def _root_url() -> str:
    """The root printed in base URLs: PUBLIC_URL, else the running server's, else HOST and PORT
    (`console.served`, the order every command shares)."""
    from flask import current_app

    from console import served

    return served.root(current_app.config)


@keys.command("list")
@click.option("--workspace", "workspace_id", default=None, help="Only this workspace's keys.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def keys_list(workspace_id: str | None, as_json: bool) -> None:
    """List keys (never their secrets)."""
    from console.core.errors import ServiceError
    from console.core.timeutil import isoformat
    from console.keys.services import list_keys
    from console.workspaces.services import get_workspace

    app = _ready_app()
    with app.app_context():
        import uuid

        try:
            scope = uuid.UUID(workspace_id) if workspace_id else None
        except ValueError as exc:
            raise click.ClickException(f"--workspace {workspace_id!r} is not a UUID.") from exc
        rows = [
            {
                "id": str(k.id),
                "workspace_id": str(k.workspace_id),
                "mode": k.mode,
                "label": k.label,
                "secret_last4": k.secret_last4,
                "created_at": isoformat(k.created_at),
                "revoked_at": isoformat(k.revoked_at),
                "expires_at": isoformat(k.expires_at),
            }
            for k in list_keys(scope)
        ]
        if as_json:
            click.echo(json.dumps(rows))
            return
        for r in rows:
            state = "revoked" if r["revoked_at"] else ("rolled" if r["expires_at"] else "active")
            click.echo(
                f"{r['id']}  {r['mode']:<11} {state:<7} ...{r['secret_last4']}  workspace {r['workspace_id']}"
            )
        if not rows:
            if scope is not None:
                try:
                    get_workspace(scope)
                except ServiceError as exc:
                    raise click.ClickException(exc.message) from exc
            scope_option = f" --workspace {scope}" if scope else ""
            click.echo(f"No keys yet: console keys create --mode sandbox{scope_option}")


@keys.command("revoke")
@click.argument("key_id")
def keys_revoke(key_id: str) -> None:
    """Revoke a key: requests with its secret get 401 from now on."""
    from console.core.errors import ServiceError
    from console.keys.services import get_key, revoke_key

    app = _ready_app()
    with app.app_context():
        try:
            key = get_key(key_id)
        except ServiceError as exc:
            raise click.ClickException(exc.message) from exc
        revoke_key(key)
        _commit()
        click.echo(f"Revoked key {key.id}.")


@keys.command("roll")
@click.argument("key_id")
@click.option(
    "--grace",
    type=click.Choice(["none", "1h", "24h", "7d"]),
    default="none",
    show_default=True,
    help="How long the old secret keeps working (real time).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def keys_roll(key_id: str, grace: str, as_json: bool) -> None:
    """Replace a key: its webhooks move to the new one now, the old secret stops working after --grace.

    The new secret is printed once."""
    from console.core.errors import ServiceError
    from console.core.timeutil import isoformat
    from console.keys.services import get_key, grace_period, roll_key
    from console.webhooks.services import owned_count

    app = _ready_app()
    with app.app_context():
        try:
            old = get_key(key_id)
        except ServiceError as exc:
            raise click.ClickException(exc.message) from exc
        was_revoked = old.revoked_at is not None
        created = roll_key(old, grace_period(grace))
        moved = owned_count(created.key.id)
        _commit()
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "id": str(created.key.id),
                        "replaces": str(old.id),
                        "workspace_id": str(created.key.workspace_id),
                        "mode": created.key.mode,
                        "secret": created.secret,
                        "webhooks_moved": moved,
                        "replaced_key_expires_at": isoformat(old.expires_at),
                        "base_url": base_url(_root_url(), created.key.mode),
                    }
                )
            )
            return
        if was_revoked:
            state = "was already revoked"
        elif old.expires_at is not None:
            state = f"works until {isoformat(old.expires_at)}"
        else:
            state = "is revoked now"
        click.echo(f"Rolled key {old.id} ({state}): new {created.key.mode} key {created.key.id}.")
        click.echo(f"{moved} webhook(s) moved to the new key: they are signed with its secret from now on.")
        click.echo(f"Secret (shown once, store it now): {created.secret}")


def _running_root() -> str | None:
    from console import served

    return served.running_root()


API_OPTION = click.option(
    "--api",
    envvar="CONSOLE_API",
    default=_running_root,
    show_default="the `console run` of this instance folder, while it runs",
    help="The service's root URL (or its sandbox base URL), e.g. http://192.168.1.10:5000. Env: CONSOLE_API.",
)
KEY_OPTION = click.option(
    "--key",
    envvar="CONSOLE_API_SECRET",
    required=False,
    help="A sandbox API secret of the workspace. Env: CONSOLE_API_SECRET (keeps it out of shell history).",
)


@main.command()
@API_OPTION
@KEY_OPTION
@click.option(
    "--forward-to",
    required=True,
    help="Your local endpoint, e.g. http://localhost:3000/webhooks: each delivery is posted there.",
)
@click.option("--events", default=None, help="Comma-separated event types to receive; default: all.")
@click.option(
    "--version", "version", default=None, help="Payload version (Service-Version); default: latest."
)
def listen(
    api: str | None, key: str | None, forward_to: str, events: str | None, version: str | None
) -> None:
    """Relay the workspace's sandbox webhook deliveries to a local endpoint (the server need not reach it)."""
    from console.listener import Fatal, Listener, Service

    if not api or not key:
        raise click.UsageError("Give --api and --key (or set CONSOLE_API and CONSOLE_API_SECRET).")
    if not forward_to.startswith(("http://", "https://")):
        raise click.UsageError("--forward-to must be an http:// or https:// URL.")
    chosen = [e.strip() for e in events.split(",") if e.strip()] if events else None
    try:
        service = Service(api, key)
    except Fatal as exc:
        raise click.ClickException(str(exc)) from None
    listener = Listener(
        service, forward_to, events=chosen, version=version, echo=lambda line: click.echo(line)
    )
    from console.core.stopsignals import stop_on_signals

    stop = stop_on_signals()  # Ctrl-C or SIGTERM: the current request finishes and the loop ends cleanly
    try:
        listener.run(stop)
    except Fatal as exc:
        raise click.ClickException(str(exc)) from None
    click.echo("Stopped.")


@main.command()
@click.argument("scenario", required=False)
@API_OPTION
@KEY_OPTION
@click.option("--list", "show_list", is_flag=True, help="List the scenarios and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def trigger(scenario: str | None, api: str | None, key: str | None, show_list: bool, as_json: bool) -> None:
    """Run a sandbox scenario headlessly (Link token, completion): prints the job and its outcome."""
    from console.listener import Fatal, Service, Unavailable
    from console.trigger import listing, resolve, run_scenario

    if show_list:
        for line in listing():
            click.echo(line)
        return
    if not scenario:
        raise click.UsageError("Name a SCENARIO (console trigger --list shows them).")
    if not api or not key:
        raise click.UsageError("Give --api and --key (or set CONSOLE_API and CONSOLE_API_SECRET).")
    try:
        resolve(scenario)
        result = run_scenario(Service(api, key), scenario)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    except (Fatal, Unavailable) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        from dataclasses import asdict

        click.echo(json.dumps(asdict(result)))
    else:
        click.echo(result.describe())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
