"""Request-log batches handed from the serving processes to the worker process, which writes them.

Why: a serving process's writer thread shaped, redacted and inserted its batch (~1,000 rows a second
under load) as a third Python thread beside the requests. Every request then waited for the GIL after
each of its SQLite calls, some while holding the write gate that every other writer waits for, and the
slowest POSTs were nearly all those sent during a flush (measured with `bench.api`; BENCHMARKS.md). Handed
over, a flush costs the serving process one pickling and one `sendall`; the worker process, which runs no
requests, does the rest.

The wire: a Unix stream socket at `REQUEST_LOG_SOCKET` (`console run` makes one in a fresh private
directory; unset, every process writes its own batches). A serving process keeps one connection; each
batch is one frame, an 8-byte big-endian length and a pickle of `(rows, usage, last_used)` as
`Writer._take` returns them; the worker answers one byte once the batch is in the database. Pickle,
because rows hold datetimes, UUIDs and bytes; it is loaded by an unpickler that knows only those classes,
from a socket that only this user may open.

The failure mode: a serving process that cannot connect, send, or get the answer within
`ANSWER_SECONDS` writes the batch itself, as with no worker at all (a worker restarting, stopping, or not
started: `console run --no-worker`, tests). Nothing is lost; the one duplicate possible is a batch the
worker wrote and then died before answering.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import logging
import os
import pickle
import socket
import struct
import threading
import time
import uuid
from typing import Any

from flask import Flask

log = logging.getLogger(__name__)

SOCKET_NAME = "request-log.sock"
HEADER = struct.Struct(">Q")
WRITTEN = b"\x01"
CONNECT_SECONDS = 1.0
# A batch of a full queue takes the worker well under a second to write; waiting longer than this means
# the worker is stuck, and the serving process writes the batch itself.
ANSWER_SECONDS = 10.0
# The largest frame the worker reads: a full queue (REQUEST_LOG_QUEUE_SIZE rows) with bodies cut to what
# the log keeps (capture.MAX_BODY_CHARS bytes each) fits many times over.
MAX_FRAME_BYTES = 512 * 1024 * 1024
# Rows per frame: pickling holds the GIL (~12 us a row), and the request threads get it back between
# frames, while this thread waits for the worker's answer; a frame is also one insert transaction there.
FRAME_ROWS = 100
# How often a connection's thread in the worker looks up from an idle socket to see whether to stop.
POLL_SECONDS = 0.5
# A serving process says that it cannot hand over at most this often (the next batch is tried again).
WARN_EVERY_SECONDS = 60.0
# The classes a batch may hold besides builtins (rows: created_at, ids; usage: the day).
_ALLOWED = {
    ("uuid", "UUID"): uuid.UUID,
    ("uuid", "SafeUUID"): uuid.SafeUUID,
    ("datetime", "datetime"): datetime.datetime,
    ("datetime", "date"): datetime.date,
    ("datetime", "timezone"): datetime.timezone,
    ("datetime", "timedelta"): datetime.timedelta,
}


class RefusedFrame(Exception):
    """A frame that is not a request-log batch."""


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise RefusedFrame(f"a request-log batch may not hold {module}.{name}") from None


def encode(batch: tuple[list, dict, dict]) -> bytes:
    return pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)


def decode(payload: bytes) -> tuple[list, dict, dict]:
    """The batch in a frame, or RefusedFrame (a class outside the list, or not the batch's shape)."""
    try:
        batch = _BatchUnpickler(io.BytesIO(payload)).load()
    except RefusedFrame:
        raise
    except Exception as exc:
        raise RefusedFrame(f"not a pickled batch: {exc.__class__.__name__}") from None
    if not (
        isinstance(batch, tuple)
        and len(batch) == 3
        and isinstance(batch[0], list)
        and isinstance(batch[1], dict)
        and isinstance(batch[2], dict)
        and all(isinstance(row, dict) for row in batch[0])
    ):
        raise RefusedFrame("not a (rows, usage, last_used) batch")
    return batch


class Sender:
    """A serving process's end: one connection to the worker, a frame per batch, the answer awaited."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._sock: socket.socket | None = None
        self._warned_at = -WARN_EVERY_SECONDS

    def hand_over(self, rows: list, usage: dict, last_used: dict) -> tuple[list, dict, dict]:
        """Send a flush's batch in frames of `FRAME_ROWS` rows (usage and last use with the last one);
        returns what the worker did not take, for the caller to write (nothing, normally)."""
        start = 0
        while True:
            chunk = rows[start : start + FRAME_ROWS]
            last = start + FRAME_ROWS >= len(rows)
            if not self.send((chunk, usage if last else {}, last_used if last else {})):
                return rows[start:], usage, last_used
            if last:
                return [], {}, {}
            start += FRAME_ROWS

    def send(self, batch: tuple[list, dict, dict]) -> bool:
        """True once the worker has written the batch; False if the caller must write it."""
        try:
            payload = encode(batch)
            sock = self._connection()
            sock.settimeout(ANSWER_SECONDS)
            sock.sendall(HEADER.pack(len(payload)))
            sock.sendall(payload)
            if sock.recv(1) != WRITTEN:
                raise ConnectionError("the worker closed the connection without writing the batch")
            return True
        except Exception as exc:  # the worker away, stopping or stuck: the caller writes the batch
            self.close()
            now = time.monotonic()
            if now - self._warned_at >= WARN_EVERY_SECONDS:
                self._warned_at = now
                log.warning(
                    "Request log: could not hand a batch to the worker (%s); this process writes its own",
                    exc,
                )
            return False

    def _connection(self) -> socket.socket:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_SECONDS)
            try:
                sock.connect(self.path)
            except BaseException:
                sock.close()
                raise
            self._sock = sock
        return self._sock

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()


class ReceiveLoop:
    """The worker's end (a worker loop): accepts serving processes' connections and writes their batches.

    With `REQUEST_LOG_SOCKET` unset it only waits for the stop, like any loop with nothing to do. A socket
    it cannot listen on is logged, and the serving processes then write their own batches.
    """

    def __init__(self, app: Flask) -> None:
        self.path = app.config["REQUEST_LOG_SOCKET"]
        self.writer = app.extensions["requestlog_writer"]  # console.requestlog.writer
        if self.path:
            # This process receives: its own few rows (usage of in-process calls) are not sent to itself.
            self.writer.sender = None
        self._connections: list[threading.Thread] = []

    def run_forever(self, stop: threading.Event) -> None:
        if not self.path:
            stop.wait()
            return
        try:
            listener = listen(self.path)
            listener_inode = os.stat(self.path).st_ino
        except OSError:
            log.exception(
                "Request log: cannot listen on %s; serving processes write their own batches", self.path
            )
            stop.wait()
            return
        listener.settimeout(POLL_SECONDS)
        try:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                thread = threading.Thread(
                    target=self._serve, args=(conn, stop), name="request-log-receiver", daemon=True
                )
                thread.start()
                self._connections = [t for t in self._connections if t.is_alive()] + [thread]
        finally:
            listener.close()
            _unlink_if_ours(self.path, listener_inode)
            for thread in self._connections:  # a batch being written is finished and answered
                thread.join(ANSWER_SECONDS)

    def _serve(self, conn: socket.socket, stop: threading.Event) -> None:
        with conn:
            while not stop.is_set():
                conn.settimeout(POLL_SECONDS)
                try:
                    header = _read_exactly(conn, HEADER.size, idle_ok=True)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if header is None:  # the serving process closed its end
                    return
                (size,) = HEADER.unpack(header)
                try:
                    if size > MAX_FRAME_BYTES:
                        raise RefusedFrame(f"a frame of {size} bytes is over {MAX_FRAME_BYTES}")
                    conn.settimeout(ANSWER_SECONDS)
                    payload = _read_exactly(conn, size)
                    if payload is None:
                        return
                    rows, usage, last_used = decode(payload)
                except RefusedFrame as exc:
                    log.warning("Request log: refused a frame on %s (%s); closing it", self.path, exc)
                    return
                except OSError:
                    return
                self.writer.write_batch(rows, usage, last_used)
                try:
                    conn.sendall(WRITTEN)
                except OSError:
                    return


def _read_exactly(conn: socket.socket, size: int, *, idle_ok: bool = False) -> bytes | None:
    """`size` bytes, or None at a clean end of stream before the first byte.

    With `idle_ok`, a timeout before the first byte is raised (the caller polls); once a frame has begun,
    the rest must follow within the socket's timeout.
    """
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        try:
            n = conn.recv_into(view[got:])
        except TimeoutError:
            if got == 0 and idle_ok:
                raise
            raise ConnectionError("a frame stopped halfway") from None
        if n == 0:
            if got == 0:
                return None
            raise ConnectionError("a frame stopped halfway")
        got += n
    return bytes(buffer)


def _unlink_if_ours(path: str, inode: int) -> None:
    """Remove the socket file, unless another worker has listened there since (its file, not ours)."""
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            os.unlink(path)


def listen(path: str) -> socket.socket:
    """A listening socket at `path` that only this user may connect to (a stale one is replaced)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old_umask = os.umask(0o177)  # created 0600: no window in which another user could connect
        try:
            listener.bind(path)
        finally:
            os.umask(old_umask)
        listener.listen(64)
    except BaseException:
        listener.close()
        raise
    return listener
