"""`console run`: the app on every core (Granian, WSGI) and one supervised worker process.

One master process (Granian's) owns everything:
- `processes` serving processes (Granian's "workers"), each forked from the master and building its own app with
  `serving_app()` after the fork (no engine, connection or lock is shared across a fork), each
  running requests on up to `threads` Python threads. They never run worker loops.
- one `console worker` process (a fresh interpreter) for the scheduler and webhook delivery loops,
  started with the server, restarted with a backoff if it dies, stopped with the server (a thread of
  the master watches it).

Why Granian: its HTTP work (accepting, parsing, keep-alive, slow clients, writing responses) runs in
Rust outside the GIL, and a Python thread is taken only to run the app. Under gunicorn's threaded
worker the same work ran in Python and competed with the requests for the GIL: measured with the API
benchmark (`python -m bench.api`), GET /v1/jobs +25% and POST /v1/link_tokens +15% on the same machine.

SIGTERM and SIGINT stop gracefully: requests in flight finish, then the worker finishes its task in
flight.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from flask import Flask

from console.core.orphans import MASTER_PID_ENV, stop_when_orphaned

log = logging.getLogger(__name__)

WORKER_COMMAND = (sys.executable, "-m", "console.cli", "worker")
WORKER_STOP_SECONDS = 35  # the worker waits up to 30 s for its loops' in-flight work
SERVING_STOP_SECONDS = 30  # requests in flight at a stop get this long before their process is killed
SUPERVISE_EVERY = 0.25  # seconds between the master's looks at the worker process
PROCESS_NAME = "console serving"  # `ps` shows "console serving worker-1", ...

# Held while the worker process is being started, and by every fork of this process (at-fork hooks):
# Popen reads a pipe until its child has exec'd, and a serving process forked meanwhile (Granian forks
# them from its main thread; the worker is started from the supervision thread) inherited the pipe's
# other end and kept it open for good, so Popen never returned and the worker was never restarted.
FORK_GUARD = threading.Lock()
os.register_at_fork(
    before=FORK_GUARD.acquire,
    after_in_parent=FORK_GUARD.release,
    after_in_child=FORK_GUARD.release,
)


def default_processes() -> int:
    """One serving process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def serving_app() -> Flask:
    """The app of one serving process (Granian's factory; the scale-out command in docs/operations.md names it too)."""
    from console import create_app
    from console.requestlog.writer import close_at_process_exit
    from console.runslots import RunSlots, RunSlotsMiddleware

    remember_a_stop_while_starting()  # again, for Granian's own command line (no fork hooks of ours)
    app = create_app()
    refuse_another_secret_key(app)
    close_at_process_exit()  # the request log's last rows, at a stop
    if app.config["RUN_CONCURRENCY"]:
        from console.web.shared.throttle import environ_address, page_rate

        throttle = getattr(app, "extensions", {}).get("console_throttle")
        app.wsgi_app = RunSlotsMiddleware(
            app.wsgi_app,
            RunSlots(app.config["RUN_CONCURRENCY"]),
            environ_address(throttle.proxies if throttle else ()),
            page_rate(throttle),
        )
    settle_heap()
    batch_scheduling()
    keep_to_one_cpu()
    leave_ctrl_c_to_the_master()
    stop_when_orphaned(os.getppid())  # the master that forked this process (Granian's, under `console run`)
    if _stop_asked_while_starting:
        log.info("Serving process %d stopped while starting (asked to before it served)", os.getpid())
        os._exit(0)  # nothing served yet, nothing to finish; the master is waiting for this exit
    return app


# A serving process that cannot read the stored API secrets exits with this status before it serves.
SECRET_KEY_REFUSED = 4


def refuse_another_secret_key(app: Flask) -> None:
    """Exit, saying why, when the stored API secrets were encrypted with another `SECRET_KEY` than this one.

    `console run` and `console worker` refuse such a key at start; serving processes started by Granian's own
    command line (docs/operations.md's scale-out form) did not, and served anyway: a trainee's page and a
    key's Reveal answered 500, and a replayed Idempotency-Key said its response was never stored. The master
    is asked to stop too (SIGTERM, as Ctrl-C would): with `--respawn-failed-workers` Granian otherwise
    replaced each refusing process for good (two processes building their apps in turn stayed under its
    crash-loop detection), so the server neither served nor stopped. A database that cannot be asked (down,
    no schema yet) is left to /healthz and the 503s, as documented.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from console.bootstrap import secret_key_mismatch

    with app.app_context():
        try:
            refusal = secret_key_mismatch()
        except SQLAlchemyError:
            return
    if refusal:
        sys.stderr.write(f"Error: {refusal}\n")
        sys.stderr.flush()
        master = _granian_master()
        if master is not None:
            os.kill(master, signal.SIGTERM)
        os._exit(SECRET_KEY_REFUSED)  # nothing served yet; no thread of this process has work to finish


def _granian_master() -> int | None:
    """The pid of the Granian master that started this serving process, while it lives; else None.

    Granian starts its serving processes with `multiprocessing`, which knows the parent and whether it still
    lives. Not `os.getppid()`: in a container Granian is often pid 1, which the old "orphaned, adopted by init"
    test (`!= 1`) took for no master, leaving the stop to Granian's crash-loop detection (tried under
    `unshare -pf`: four refusals, then exit 1); and a process some other program started (a shell, a
    supervisor, `python -c`) got that program SIGTERMed, which it must not."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is None or parent.pid is None or not parent.is_alive():
        return None
    return parent.pid


# Set by `remember_a_stop_while_starting`'s handler: a SIGTERM came before Granian's own handler was set.
_stop_asked_while_starting = False


def remember_a_stop_while_starting() -> None:
    """Until Granian sets its own SIGTERM handler, remember a SIGTERM so that `serving_app` can act on it.

    Why: a serving process is forked from the master with the master's handlers, and the master's
    SIGTERM handler only sets a flag on the master's objects (copies, in the child). A stop that came
    while the serving process was still starting (building its app takes seconds on a busy machine) was
    swallowed by it; the process then served as if nothing happened, and the master waited out its 30 s
    kill timeout (seen in CI, and reproduced: Ctrl-C just as `console run` answered, under load, 1 time
    in 8 took 30 s). Granian replaces this handler with its own right after `serving_app` returns.
    """

    def note(_signum: int, _frame: Any) -> None:
        global _stop_asked_while_starting
        _stop_asked_while_starting = True

    signal.signal(signal.SIGTERM, note)


def guard_serving_forks() -> None:
    """From now on, a process this one forks (Granian's serving processes) starts with SIGINT blocked, and
    remembers a SIGTERM that comes before it serves (`remember_a_stop_while_starting`).

    `leave_ctrl_c_to_the_master` blocks SIGINT too, but only once the app is built, seconds after the fork:
    a Ctrl-C in between reached a starting serving process, which then missed its shutdown, and `console
    run` waited out the 30 s kill timeout (measured: Ctrl-C 1.5 s after start, 30.4 s to stop). Blocked in
    the forking thread around the fork, the child inherits the mask from its first instruction; the
    parent's mask is restored at once (a Ctrl-C meanwhile stays pending for it). The SIGTERM handler is
    set in the child right after the fork, before Granian's start-up and the app's. `subprocess` does not
    run these hooks, so the worker process keeps its own signal handling.
    """
    saved: list[set] = []

    def before() -> None:
        saved.append(signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}))

    def after_in_parent() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved.pop())

    os.register_at_fork(
        before=before, after_in_parent=after_in_parent, after_in_child=remember_a_stop_while_starting
    )


def leave_ctrl_c_to_the_master() -> None:
    """Block SIGINT in this serving process (the threads it starts later inherit the mask).

    Ctrl-C sends SIGINT to the whole process group: the serving processes got it at the same moment as the
    master's SIGTERM, and Granian's worker then missed its shutdown (measured: every serving process waited
    out the 30 s kill timeout). Blocked, the master alone reacts to Ctrl-C and stops them with SIGTERM, as
    for any other stop.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def batch_scheduling() -> None:
    """Put every thread of this process (and so the threads it starts later) in Linux's SCHED_BATCH.

    Why: the threads of a serving process hand the GIL (and run slots, and the write gate) to one another
    all the time, and by default the kernel lets a thread it wakes preempt the one running, which still
    holds the GIL: the woken thread finds the GIL taken and sleeps again, two context switches for
    nothing. SCHED_BATCH (for CPU-bound work; no priority change) lets the running thread go on until it
    lets go of the GIL. Measured with `console run` under `wrk -c16` (3 alternated runs each): GET
    2,080 → 2,304 req/s, POST 1,318 → 1,554; the API's p99 under 48 page clients rose from 34-43 to 68-86
    ms (a customer's call, woken, no longer jumps ahead of the running page), well within its 500 ms.
    A no-op where the policy does not exist (not Linux) or cannot be set.
    """
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None:
        return
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        with contextlib.suppress(OSError):  # a thread gone meanwhile, or not allowed: it keeps the default
            os.sched_setscheduler(tid, policy, os.sched_param(0))


# `serve` tells its serving processes (through their environment) which CPUs to keep to, one each, as a
# comma-separated list ("0,1"); unset or empty: the kernel places them. Granian's command line may set it
# too, with `--process-name` (the worker number comes from the process title).
CPUS_ENV = "SERVING_CPUS"
_WORKER_TITLE = re.compile(r" worker-(\d+)$")


def cpus_to_keep_to(processes: int) -> list[int]:
    """The CPUs for `processes` serving processes to keep to, one each, or [] (more processes than CPUs, or no
    affinity on this platform: the kernel places them)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return []
    return cpus[:processes] if processes <= len(cpus) else []


def keep_to_one_cpu() -> int | None:
    """Keep every thread of this serving process (and those it starts later) on one CPU: the N-th listed in
    `SERVING_CPUS` for worker-N. Returns the CPU, or None when there is none to keep to.

    Why: measured under `wrk -t2 -c16` on 2 cores, the app spent ~1.5 ms of CPU per GET in a serving
    process against ~0.9 ms for the same requests called in a loop: the kernel moved each process's
    threads between the cores, and each request started with the other interpreter's data in the core's
    caches (a loop that sleeps 0.5 ms, or sweeps 8 MB of memory, between its calls costs the same 1.3-1.6
    ms). Kept to one core each: GET 1,347-1,451 → 1,672-1,688 req/s, p99 43 → 27-30 ms; POST +5-9%
    (alternated runs, one session). The worker process and the master are not pinned.
    """
    listed = [int(cpu) for cpu in os.environ.get(CPUS_ENV, "").split(",") if cpu.strip().isdigit()]
    found = _WORKER_TITLE.search(_process_title())
    if not listed or found is None:
        return None
    cpu = listed[(int(found.group(1)) - 1) % len(listed)]
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        with contextlib.suppress(OSError):  # a thread gone meanwhile, or a CPU not allowed: left as it is
            os.sched_setaffinity(tid, {cpu})
    return cpu


def _process_title() -> str:
    try:
        import setproctitle
    except ImportError:  # Granian names its processes only with it
        return ""
    return setproctitle.getproctitle()


def settle_heap() -> None:
    """Move everything alive now (the app, its routes, schema, templates, imported modules) out of the
    garbage collector's reach; called once a serving process has built its app (`serving_app`).

    Why: those objects live as long as the process, yet every full collection walked all of them, with
    the GIL held, so every request in flight in that process stopped meanwhile. Measured under
    `wrk -t2 -c16` with 100,000 jobs: GET /v1/jobs p99 174 ms → 44 ms (p50 unchanged, 8 ms).
    Garbage made by requests is still collected as before.
    """
    gc.collect()
    gc.freeze()


class WorkerSupervisor:
    """Keeps one worker process running: start, notice its exit, restart it after a backoff, stop it.

    The backoff doubles from `min_backoff` to `max_backoff` while the worker keeps dying soon after its
    start, and goes back to `min_backoff` once a run lasted `stable_after` seconds.
    """

    def __init__(
        self,
        command: tuple[str, ...] | list[str] = WORKER_COMMAND,
        *,
        min_backoff: float = 1.0,
        max_backoff: float = 30.0,
        stable_after: float = 60.0,
    ) -> None:
        self.command = list(command)
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self._backoff = min_backoff
        self._started_at = 0.0
        self._start_after = 0.0
        self._stopping = False

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> None:
        with FORK_GUARD:  # see FORK_GUARD
            # The worker stops itself if this master is ever gone without stopping it (console.core.orphans).
            self.process = subprocess.Popen(
                self.command, env={**os.environ, MASTER_PID_ENV: str(os.getpid())}
            )
        self._started_at = time.monotonic()
        log.info("Started the worker process (pid %s)", self.process.pid)

    def poll(self) -> None:
        """Notice that the worker exited (and reap it) and schedule its restart."""
        if self.process is None or self.process.poll() is None:
            return
        code, pid = self.process.returncode, self.process.pid
        self.process = None
        if self._stopping:
            return
        ran = time.monotonic() - self._started_at
        self._backoff = self.min_backoff if ran >= self.stable_after else self._backoff
        self._start_after = time.monotonic() + self._backoff
        how = f"signal {-code}" if code < 0 else f"status {code}"
        log.warning(
            "The worker process (pid %s) exited with %s; restarting it in %g s", pid, how, self._backoff
        )
        self._backoff = min(self._backoff * 2, self.max_backoff)

    def keep_running(self) -> None:
        """Called often by the master: restart the worker once its backoff has passed."""
        self.poll()
        if self.process is None and not self._stopping and time.monotonic() >= self._start_after:
            if self._started_at:
                self.restarts += 1
            self.start()

    def terminate(self) -> None:
        """Ask the worker to stop (SIGTERM: it finishes its in-flight work); no restart after this."""
        self._stopping = True
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def stop(self, timeout: float = WORKER_STOP_SECONDS) -> None:
        """Stop the worker and reap it, killing it if it does not stop within `timeout` seconds."""
        self.terminate()
        if self.process is None:
            return
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning(
                "The worker process (pid %s) did not stop in %s s; killing it", self.process.pid, timeout
            )
            self.process.kill()
            self.process.wait()
        self.process = None


class Supervision:
    """A thread of the master that keeps the worker process running until the server stops."""

    def __init__(self, supervisor: WorkerSupervisor, every: float = SUPERVISE_EVERY) -> None:
        self.supervisor = supervisor
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-supervision", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.supervisor.keep_running()
            except OSError:  # could not start it (e.g. out of processes): try again at the next look
                log.exception("Could not start the worker process")
            self._stop.wait(self.every)

    def stopping(self) -> None:
        """No restart from now on; the worker is asked to stop (it finishes its task in flight)."""
        self.supervisor.terminate()

    def stop(self) -> None:
        self.stopping()
        self._stop.set()
        self._thread.join(5)
        self.supervisor.stop()


def serve(
    *, host: str, port: int, processes: int, threads: int, run_worker: bool, pin_cpus: bool = True
) -> None:
    """Serve until SIGTERM/SIGINT; with `run_worker`, also keep one worker process running; with `pin_cpus`,
    each serving process keeps to a CPU of its own when there are enough (`keep_to_one_cpu`)."""
    from granian import Granian
    from granian.constants import Interfaces

    # force: the migrations that just ran configured logging their own way.
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    cpus = cpus_to_keep_to(processes) if pin_cpus else []
    os.environ[CPUS_ENV] = ",".join(str(cpu) for cpu in cpus)  # read by each serving process it forks
    if cpus:
        log.info("Serving processes keep to CPUs %s, one each", ", ".join(map(str, cpus)))
    server = Granian(
        "console.serving:serving_app",
        factory=True,
        interface=Interfaces.WSGI,
        address=host,
        port=port,
        workers=processes,
        blocking_threads=threads,
        respawn_failed_workers=True,  # a serving process that dies is replaced
        workers_kill_timeout=SERVING_STOP_SECONDS,
        process_name=PROCESS_NAME,
        websockets=False,  # WSGI has none (Granian says so at every start otherwise)
    )
    # Granian warns at every start when a process may run more Python threads than 2 x cores + 1; ours
    # do, on purpose: only RUN_CONCURRENCY of them run at once (console.runslots), the rest wait.
    logging.getLogger("_granian").addFilter(
        lambda record: not record.getMessage().startswith("Configuration allows spawning up to")
    )
    guard_serving_forks()
    supervision = Supervision(WorkerSupervisor()) if run_worker else None
    if supervision is not None:
        # Granian's master installs this method as its SIGTERM/SIGINT handler when it starts: the worker
        # is asked to stop at the same moment as the serving processes (and is never restarted after).
        interrupt = server.signal_handler_interrupt

        def stop_both(*args: Any, **kwargs: Any) -> None:
            supervision.stopping()
            interrupt(*args, **kwargs)

        server.signal_handler_interrupt = stop_both
        server.on_startup(supervision.start)
        server.on_shutdown(supervision.stop)
    freeze_before_forking()
    server.serve()


def freeze_before_forking() -> None:
    """Put what the master has built so far (imported modules, the app it prepared the database with) out of
    the garbage collector's reach before Granian forks the serving processes from it.

    Why: a forked process shares the master's memory until it writes to it, and a collection writes to every
    object it walks. Unfrozen, each serving process's first full collection (`settle_heap`) walked all the
    master's objects: measured with py-spy, ~13 % of the CPU time of a `console run` start, the pages it
    touched then copied into each process.
    """
    gc.collect()
    gc.freeze()
