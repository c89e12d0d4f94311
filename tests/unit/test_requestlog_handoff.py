"""Request-log batches handed from a serving process to the worker: written there, and never lost.

The serving side is the app's writer with `REQUEST_LOG_SOCKET` set; the worker side is the handoff's
`ReceiveLoop` on a second app (a worker process has an app of its own), run as a thread.
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import socket
import stat
import tempfile
import threading
import uuid

import pytest
from sqlalchemy import select

from console import create_app
from console.extensions import db
from console.requestlog import handoff
from console.requestlog.models import KeyUsageDay
from console.requestlog.writer import Writer
from console.web.models import ConsoleRequest
from tests.conftest import Api, base_config
from tests.waiting import wait_for


@pytest.fixture
def socket_path():
    # Not under tmp_path: a Unix socket's path must stay under ~107 bytes.
    directory = tempfile.mkdtemp(prefix="rl-")
    yield os.path.join(directory, handoff.SOCKET_NAME)
    shutil.rmtree(directory, ignore_errors=True)


class Receiver:
    """The worker's end on an app of its own, its loop in a thread; counts the batches it wrote."""

    def __init__(self, database_url: str, path: str) -> None:
        self.app = create_app({**base_config(database_url), "REQUEST_LOG_SOCKET": path})
        self.loop = handoff.ReceiveLoop(self.app)
        self.batches: list[int] = []
        writer = self.loop.writer
        real = writer.write_batch

        def counting(rows, usage, last_used):
            self.batches.append(len(rows))
            real(rows, usage, last_used)

        writer.write_batch = counting
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_forever, args=(self.stop,), daemon=True)
        self.thread.start()
        assert wait_for(lambda: os.path.exists(path), 5)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()
        self.loop.writer.close()
        with self.app.app_context():
            db.engine.dispose()


@pytest.fixture
def receiver(database_url, socket_path):
    receiver = Receiver(database_url, socket_path)
    yield receiver
    receiver.close()


def _serving_writer(app, path: str) -> Writer:
    """The serving process's writer, handing its batches to `path` (the thread never flushes on its own)."""
    app.config["REQUEST_LOG_SOCKET"] = path
    writer = Writer(app, interval=3600, capacity=100)
    app.extensions["requestlog_writer"] = writer
    return writer


def _logged(app, workspace_id: str) -> list[ConsoleRequest]:
    with app.app_context():
        return list(
            db.session.scalars(
                select(ConsoleRequest).where(ConsoleRequest.workspace_id == uuid.UUID(workspace_id))
            )
        )


def _calls(client, workspace, n: int) -> None:
    api = Api(client, workspace.secrets["sandbox"])
    for _ in range(n):
        assert api.get("/jobs", query_string={"link_token_id": str(uuid.uuid4())}).status_code == 200


def test_a_flush_is_written_by_the_worker_not_by_the_serving_process(
    app, client, workspace, receiver, socket_path, monkeypatch
):
    writer = _serving_writer(app, socket_path)
    written_here = []
    monkeypatch.setattr(writer, "write_batch", lambda *batch: written_here.append(batch))
    _calls(client, workspace, 3)
    assert _logged(app, workspace.id) == []
    assert writer.flush()
    assert written_here == [] and receiver.batches == [3]
    rows = _logged(app, workspace.id)  # in the database once the flush returns (the worker answered)
    assert len(rows) == 3
    assert all(r.path == "/sandbox/v1/jobs" and r.status == 200 and r.request_id for r in rows)
    # Shaped and redacted as the serving process would have: no secret in clear.
    assert all(
        {k.lower(): v for k, v in r.request_headers.items()}["x-api-secret"] == "<API_SECRET>" for r in rows
    )
    with app.app_context():
        usage = db.session.scalars(
            select(KeyUsageDay).where(KeyUsageDay.api_key_id == uuid.UUID(workspace.key_ids["sandbox"]))
        ).one()
        assert (usage.requests, usage.status_2xx) == (3, 3)
    # The connection is kept: a second batch goes the same way.
    _calls(client, workspace, 2)
    assert writer.flush() and receiver.batches == [3, 2] and len(_logged(app, workspace.id)) == 5
    writer.close()


def test_a_body_is_cut_to_what_the_log_keeps_before_it_is_sent(app, client, workspace, receiver, socket_path):
    from console.requestlog.capture import MAX_BODY_CHARS

    writer = _serving_writer(app, socket_path)
    api = Api(client, workspace.secrets["sandbox"])
    big = {"org_name": "x" * (3 * MAX_BODY_CHARS)}
    assert api.post("/link_tokens", json=big).status_code == 400
    sent = []
    real = writer.sender.send
    writer.sender.send = lambda batch: sent.append(batch) or real(batch)
    assert writer.flush()
    (rows, _usage, _last_used) = sent[0]
    assert len(rows[0]["request_body"]) == MAX_BODY_CHARS
    (logged,) = _logged(app, workspace.id)
    assert len(logged.request_body) == MAX_BODY_CHARS
    writer.close()


def test_with_no_worker_listening_the_serving_process_writes_its_own(
    app, client, workspace, socket_path, caplog
):
    writer = _serving_writer(app, socket_path)  # nothing listens there
    _calls(client, workspace, 2)
    with caplog.at_level(logging.WARNING, logger="console.requestlog.handoff"):
        assert writer.flush()
        _calls(client, workspace, 1)
        assert writer.flush()
    assert len(_logged(app, workspace.id)) == 3
    warnings = [r for r in caplog.records if "could not hand a batch to the worker" in r.getMessage()]
    assert len(warnings) == 1  # said once, not at every flush
    writer.close()


def test_a_worker_that_stops_leaves_the_batches_to_the_serving_process(
    app, client, workspace, database_url, socket_path
):
    receiver = Receiver(database_url, socket_path)
    writer = _serving_writer(app, socket_path)
    _calls(client, workspace, 1)
    assert writer.flush() and receiver.batches == [1]
    receiver.close()
    assert not os.path.exists(socket_path)  # the worker removes its socket as it stops
    _calls(client, workspace, 2)
    assert writer.flush()
    assert receiver.batches == [1] and len(_logged(app, workspace.id)) == 3
    # A worker started again (the supervisor restarts it) takes the next batch.
    again = Receiver(database_url, socket_path)
    try:
        _calls(client, workspace, 1)
        assert writer.flush() and again.batches == [1] and len(_logged(app, workspace.id)) == 4
    finally:
        writer.close()
        again.close()


def test_the_socket_is_for_this_user_only(receiver, socket_path):
    mode = os.stat(socket_path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


class Boom:
    def __reduce__(self):
        return (os.getpid, ())


def _frame(payload: bytes) -> bytes:
    return handoff.HEADER.pack(len(payload)) + payload


def _exchange(path: str, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(path)
        sock.sendall(data)
        return sock.recv(1)


@pytest.mark.parametrize(
    "payload, reason",
    [
        (pickle.dumps(([{"x": Boom()}], {}, {})), "may not hold posix.getpid"),
        (pickle.dumps(["rows", "usage"]), "not a (rows, usage, last_used) batch"),
        (b"\x80\x05not a pickle", "not a pickled batch"),
    ],
)
def test_a_frame_that_is_not_a_batch_is_refused_and_the_worker_goes_on(
    receiver, socket_path, caplog, payload, reason
):
    with caplog.at_level(logging.WARNING, logger="console.requestlog.handoff"):
        assert _exchange(socket_path, _frame(payload)) == b""  # closed, nothing answered
    assert reason in caplog.text
    assert receiver.batches == []
    # Another connection is still served.
    assert _exchange(socket_path, _frame(handoff.encode(([], {}, {})))) == handoff.WRITTEN
    assert receiver.batches == [0]


def test_a_frame_over_the_limit_is_refused_before_it_is_read(receiver, socket_path, caplog):
    with caplog.at_level(logging.WARNING, logger="console.requestlog.handoff"):
        assert _exchange(socket_path, handoff.HEADER.pack(handoff.MAX_FRAME_BYTES + 1)) == b""
    assert "is over" in caplog.text and receiver.batches == []


def test_a_worker_that_cannot_listen_waits_for_its_stop_instead_of_dying(database_url, caplog):
    app = create_app({**base_config(database_url), "REQUEST_LOG_SOCKET": "/nonexistent-dir/request-log.sock"})
    loop = handoff.ReceiveLoop(app)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run_forever, args=(stop,), daemon=True)
    with caplog.at_level(logging.ERROR, logger="console.requestlog.handoff"):
        thread.start()
        assert wait_for(lambda: "cannot listen on /nonexistent-dir/request-log.sock" in caplog.text, 5)
    assert thread.is_alive()  # a loop that returns reads as dead and the worker is restarted
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def test_without_a_socket_the_loop_only_waits_and_the_writer_writes_its_own(app, client, workspace):
    assert not app.config["REQUEST_LOG_SOCKET"]
    writer = Writer(app, interval=3600, capacity=100)
    assert writer.sender is None
    app.extensions["requestlog_writer"] = writer
    _calls(client, workspace, 1)
    writer.close()
    assert len(_logged(app, workspace.id)) == 1


def test_a_flush_goes_in_frames_with_usage_in_the_last(
    app, client, workspace, receiver, socket_path, monkeypatch
):
    monkeypatch.setattr(handoff, "FRAME_ROWS", 2)
    writer = _serving_writer(app, socket_path)
    frames = []
    real = writer.sender.send
    writer.sender.send = lambda batch: frames.append(batch) or real(batch)
    _calls(client, workspace, 5)
    assert writer.flush()
    assert [len(rows) for rows, _, _ in frames] == [2, 2, 1] == receiver.batches
    assert [bool(usage) for _, usage, _ in frames] == [False, False, True]
    assert [bool(last_used) for _, _, last_used in frames] == [False, False, True]
    assert len(_logged(app, workspace.id)) == 5
    writer.close()


def test_a_worker_that_stops_between_frames_leaves_the_rest_to_the_serving_process(
    app, client, workspace, database_url, socket_path, monkeypatch
):
    monkeypatch.setattr(handoff, "FRAME_ROWS", 2)
    receiver = Receiver(database_url, socket_path)
    counting = receiver.loop.writer.write_batch

    def stop_after_this(rows, usage, last_used):
        receiver.stop.set()  # the worker is asked to stop while it writes the first frame
        counting(rows, usage, last_used)

    receiver.loop.writer.write_batch = stop_after_this
    writer = _serving_writer(app, socket_path)
    written_here = []
    real = writer.write_batch
    writer.write_batch = lambda rows, usage, last_used: (
        written_here.append(len(rows)) or real(rows, usage, last_used)
    )
    _calls(client, workspace, 5)
    try:
        assert writer.flush()
    finally:
        receiver.close()
    assert receiver.batches == [2] and written_here == [3]
    rows = _logged(app, workspace.id)
    assert len(rows) == 5 and len({r.request_id for r in rows}) == 5  # all of them, once each
    with app.app_context():
        usage = db.session.scalars(
            select(KeyUsageDay).where(KeyUsageDay.api_key_id == uuid.UUID(workspace.key_ids["sandbox"]))
        ).one()
        assert usage.requests == 5
    writer.close()


def test_a_worker_stopping_leaves_the_socket_of_a_worker_that_listens_there_since(database_url, socket_path):
    first = Receiver(database_url, socket_path)
    second = Receiver(database_url, socket_path)  # replaces the first one's file
    first.close()
    try:
        assert os.path.exists(socket_path)
        assert _exchange(socket_path, _frame(handoff.encode(([], {}, {})))) == handoff.WRITTEN
        assert second.batches == [0]
    finally:
        second.close()
    assert not os.path.exists(socket_path)
