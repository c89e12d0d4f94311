"""`console run`: the app on every core (gunicorn, `gthread` workers) and one supervised worker process.

One master process (gunicorn's arbiter, extended here) owns everything:
- `workers` serving processes, each forked from the master and building its own app with
  `create_app()` after the fork (no engine, connection or lock is shared across a fork), each
  serving requests on `threads` threads. They never run worker loops.
- one `console worker` process (a fresh interpreter) for the scheduler and webhook delivery loops,
  started with the server, restarted with a backoff if it dies, stopped with the server.

SIGTERM stops gracefully (requests in flight finish, the worker finishes its task in flight);
SIGINT is gunicorn's quick stop for the serving processes and still a graceful one for the worker.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.workers.gthread import ThreadWorker

from console.modes import is_api_path

log = logging.getLogger(__name__)

WORKER_COMMAND = (sys.executable, "-m", "console.cli", "worker")
WORKER_STOP_SECONDS = 35  # the worker waits up to 30 s for its loops' in-flight work
# Threads per serving process kept for API calls when the others are busy (see BalancedThreadWorker).
API_LANE_THREADS = 2
PEEK_BYTES = 256  # enough for the method and the path of a request line


def default_workers() -> int:
    """One serving process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def settle_heap() -> None:
    """Move everything alive now (the app, its routes, schema, templates, imported modules) out of the
    garbage collector's reach; called once a serving process has built its app
    (`BalancedThreadWorker`, under `console run` and the README's gunicorn command alike).

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
        self.process = subprocess.Popen(self.command)
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


class BalancedThreadWorker(ThreadWorker):
    """gunicorn's `gthread` worker, fair across processes and keeping a lane open for API calls.

    Accepting only with a free thread: the stock worker accepts whatever the listening socket offers
    and queues it for its threads. Every serving process waits on the same socket, so a burst of new
    connections (a load balancer's pool, a classroom opening the console, wrk's 16) is taken by whichever
    process wakes first: measured, one process served all 16 keep-alive connections at 100% of a core
    while the other idled at 1%, and the GIL capped the whole server at one core. Accepting only with a
    free thread leaves the rest of the burst to the other processes; a connection kept alive stays where
    it is and needs no thread while idle.

    The API lane: `API_LANE_THREADS` more threads per process that only API requests (`/v1` paths) use,
    and only when the `threads` are all busy. A room loading console pages as fast as it can kept every
    thread busy, and a customer's API call queued behind the pages (measured: p99 2.3 s under 48 page
    clients); with the lane it waits for no page. The path is read with `MSG_PEEK` from the socket
    before a thread is chosen (a request not readable yet counts as a page).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.in_flight = 0  # requests on the `threads` (running or queued)
        self.lane_in_flight = 0  # requests on the API lane
        super().__init__(*args, **kwargs)

    def init_process(self) -> None:
        self.lane = ThreadPoolExecutor(max_workers=API_LANE_THREADS, thread_name_prefix="api-lane")
        super().init_process()  # runs the worker until it stops

    def load_wsgi(self) -> None:
        super().load_wsgi()  # the app, built in this process
        settle_heap()

    def run(self) -> None:
        try:
            super().run()
        finally:
            self.lane.shutdown(wait=False)

    def handle_quit(self, sig: Any, frame: Any) -> None:
        self.lane.shutdown(wait=False)
        super().handle_quit(sig, frame)

    @property
    def worker_connections(self) -> int:
        # The run loop accepts while `nr_conns < worker_connections`: a free thread (or, for an API call,
        # a free lane) is the extra condition.
        if self.in_flight >= self.cfg.threads and self.lane_in_flight >= API_LANE_THREADS:
            return 0
        return self._max_connections

    @worker_connections.setter
    def worker_connections(self, value: int) -> None:
        self._max_connections = value

    def enqueue_req(self, conn: Any) -> None:
        if (
            self.in_flight >= self.cfg.threads
            and self.lane_in_flight < API_LANE_THREADS
            and _is_api_call(conn)
        ):
            self.lane_in_flight += 1
            future = self.lane.submit(self.handle, conn)
            future.add_done_callback(lambda done: self.method_queue.defer(self._finish_lane, conn, done))
            return
        self.in_flight += 1
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        self.in_flight -= 1
        super().finish_request(conn, fs)

    def _finish_lane(self, conn: Any, fs: Any) -> None:
        self.lane_in_flight -= 1
        super().finish_request(conn, fs)


def _is_api_call(conn: Any) -> bool:
    """Whether the request waiting on this connection is an API call, from its request line (peeked)."""
    if conn.parser is not None and conn.parser.unreader.buf.getvalue():
        return False  # read ahead already (a pipelined request): not on the socket to peek at
    try:
        head = conn.sock.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:  # nothing to read yet, or TLS: treated as a page
        return False
    parts = head.split(b" ", 2)
    if len(parts) < 3:
        return False
    return is_api_path(parts[1].split(b"?", 1)[0].decode("latin-1"))


class ConsoleArbiter(Arbiter):
    """Gunicorn's master, also supervising the worker process."""

    def __init__(self, app: BaseApplication, supervisor: WorkerSupervisor | None) -> None:
        self.supervisor = supervisor
        super().__init__(app)

    def handle_chld(self) -> None:
        # Reap our worker first: gunicorn's reaping (waitpid(-1)) would take its exit status too.
        if self.supervisor:
            self.supervisor.poll()
        super().handle_chld()

    # gunicorn dispatches SIGCHLD as "chld" or "cld" (aliases); both must reach the override.
    handle_cld = handle_chld

    def manage_workers(self) -> None:
        super().manage_workers()
        if self.supervisor:
            self.supervisor.keep_running()

    def stop(self, graceful: bool = True) -> None:
        # Both stop at once: the worker finishes its task while the serving processes finish requests.
        if self.supervisor:
            self.supervisor.terminate()
        super().stop(graceful)
        if self.supervisor:
            self.supervisor.stop()


class ConsoleServer(BaseApplication):
    """The app under gunicorn, configured in code (no config file, no command-line parsing)."""

    def __init__(self, options: dict[str, Any], supervisor: WorkerSupervisor | None) -> None:
        self.options = options
        self.supervisor = supervisor
        super().__init__()

    def load_config(self) -> None:
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self):
        # Runs in each serving process after the fork: its own app, engine and limiter.
        from console import create_app

        return create_app()

    def run(self) -> None:
        ConsoleArbiter(self, self.supervisor).run()


def serve(*, host: str, port: int, workers: int, threads: int, run_worker: bool) -> None:
    """Serve until SIGTERM/SIGINT; with `run_worker`, also keep one worker process running."""
    # force: the migrations that just ran configured logging their own way.
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    options = {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers,
        "threads": threads,
        "worker_class": "console.serving.BalancedThreadWorker",
        "proc_name": "console",
        # Each `console run` is self-contained: no control socket file shared between instances.
        "control_socket_disable": True,
    }

    ConsoleServer(options, WorkerSupervisor() if run_worker else None).run()
