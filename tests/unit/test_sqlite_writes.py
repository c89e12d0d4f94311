"""SQLite connections: their pragmas, and the write gate that makes writers of one process queue, not poll."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import uuid

import pytest
from sqlalchemy import event, text

from console import create_app
from console.db.sqlite import CheckpointLoop, FileLock
from console.extensions import db
from console.workspaces.models import Workspace
from tests.conftest import base_config
from tests.factories import LINK_TOKEN
from tests.waiting import wait_for


@pytest.fixture
def sqlite_app(tmp_path):
    app = create_app(base_config(f"sqlite:///{tmp_path / 'gate.db'}"))
    with app.app_context():
        db.create_all()
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


def _add_workspace(name: str) -> None:
    db.session.add(Workspace(id=uuid.uuid4(), name=name))


def test_every_connection_gets_wal_normal_sync_a_busy_timeout_and_foreign_keys(sqlite_app):
    with sqlite_app.app_context():
        pragma = lambda name: db.session.execute(text(f"PRAGMA {name}")).scalar()  # noqa: E731
        assert pragma("journal_mode") == "wal"
        assert pragma("synchronous") == 1  # NORMAL
        assert pragma("busy_timeout") == 5000
        assert pragma("foreign_keys") == 1
        assert pragma("wal_autocheckpoint") == 10000  # checkpoints are the worker's (CheckpointLoop)


def test_the_checkpoint_loop_copies_the_wal_into_the_database_every_second(sqlite_app):
    database = sqlite_app.extensions["sqlite_write_gate"].file_lock.path.removesuffix("-writelock")
    with sqlite_app.app_context():
        for i in range(50):
            _add_workspace(f"w{i}")
            db.session.commit()
        db.session.remove()
    before = os.path.getsize(database)
    assert os.path.getsize(database + "-wal") > before  # the commits stayed in the WAL: no checkpoint yet
    stop = threading.Event()
    loop = threading.Thread(target=CheckpointLoop(sqlite_app).run_forever, args=(stop,))
    loop.start()
    try:
        wait_for(lambda: os.path.getsize(database) != before, 60, 0.1)  # a backstop: it runs every second
    finally:
        stop.set()
        loop.join(60)
    assert not loop.is_alive()
    assert os.path.getsize(database) > before  # the pages were copied into the database file
    with sqlite_app.app_context():
        assert db.session.execute(text("SELECT count(*) FROM workspaces")).scalar() == 50


# committing: a second sqlite3 connection reads an older snapshot while the app's connections write and commit
def test_a_wal_past_its_bound_is_truncated_even_while_a_reader_holds_an_old_snapshot(sqlite_app, monkeypatch):
    """A PASSIVE checkpoint never shrinks the WAL; under steady reads it may never restart either (issue 31:
    +35 MB in 20 s). Past WAL_TRUNCATE_FRAMES the loop empties it, under the write gate."""
    from console.db import sqlite as sqlite_module

    database = sqlite_app.extensions["sqlite_write_gate"].file_lock.path.removesuffix("-writelock")
    gate = sqlite_app.extensions["sqlite_write_gate"]
    loop = CheckpointLoop(sqlite_app)

    def write(n: int) -> None:
        with sqlite_app.app_context():
            for _ in range(n):
                _add_workspace(f"w{uuid.uuid4()}")
                db.session.commit()
            db.session.remove()

    write(30)
    # A reader of an older snapshot (another connection, in a read transaction) keeps the WAL in use.
    reader = sqlite3.connect(database, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM workspaces").fetchone()
    write(30)
    wal_size = os.path.getsize(database + "-wal")
    monkeypatch.setattr(sqlite_module, "WAL_TRUNCATE_FRAMES", 10**9)
    loop.checkpoint()  # PASSIVE only: the file keeps its size
    assert os.path.getsize(database + "-wal") == wal_size > 0
    monkeypatch.setattr(sqlite_module, "WAL_TRUNCATE_FRAMES", 1)
    monkeypatch.setattr(sqlite_module, "TRUNCATE_WAIT_MS", 10)
    loop.checkpoint()  # the reader still reads its snapshot: the truncation gives up, and lets go of the gate
    assert os.path.getsize(database + "-wal") == wal_size
    assert not gate.lock.locked() and not gate.holders
    reader.execute("COMMIT")
    reader.close()
    loop.checkpoint()
    assert os.path.getsize(database + "-wal") == 0  # emptied: it grows again from nothing
    assert not gate.lock.locked() and not gate.holders
    write(1)  # writers go on as before
    with sqlite_app.app_context():
        assert db.session.execute(text("SELECT count(*) FROM workspaces")).scalar() == 61
        assert db.session.execute(text("PRAGMA busy_timeout")).scalar() == 5000


def test_the_gate_is_held_from_the_first_write_to_the_commit_and_never_for_reads(sqlite_app):
    gate = sqlite_app.extensions["sqlite_write_gate"]
    with sqlite_app.app_context():
        db.session.execute(text("SELECT count(*) FROM workspaces")).scalar()
        assert not gate.lock.locked()
        _add_workspace("one")
        db.session.flush()
        assert gate.lock.locked()
        db.session.execute(text("SELECT count(*) FROM workspaces")).scalar()  # still the same transaction
        assert gate.lock.locked()
        db.session.commit()
        assert not gate.lock.locked()


def test_a_failed_write_releases_the_gate(sqlite_app):
    gate = sqlite_app.extensions["sqlite_write_gate"]
    with sqlite_app.app_context():
        ident = uuid.uuid4()
        db.session.add(Workspace(id=ident, name="first"))
        db.session.commit()
        db.session.add(Workspace(id=ident, name="duplicate"))
        with pytest.raises(Exception, match="UNIQUE"):
            db.session.commit()
        db.session.rollback()
        assert not gate.lock.locked()
        _add_workspace("after the failure")
        db.session.commit()
        assert db.session.execute(text("SELECT count(*) FROM workspaces")).scalar() == 2


def test_a_detached_connection_that_wrote_releases_the_gate_when_its_transaction_ends(sqlite_app):
    """The request log's writer keeps a connection out of the pool between flushes: no checkin ever comes."""
    gate = sqlite_app.extensions["sqlite_write_gate"]
    with sqlite_app.app_context():
        with db.engine.connect() as conn:
            conn.detach()
            with conn.begin():
                conn.execute(text("UPDATE workspaces SET name = 'detached'"))
                assert gate.lock.locked()
            assert not gate.lock.locked()  # committed: free, though the connection stays open
            with conn.begin():
                conn.execute(text("UPDATE workspaces SET name = 'again'"))
                assert gate.lock.locked()
                conn.rollback()
            assert not gate.lock.locked()
        assert not gate.holders


def test_the_gate_is_free_before_the_session_finishes_its_commit(sqlite_app):
    """Writers waiting do not wait for what a Session does after the database committed."""
    gate = sqlite_app.extensions["sqlite_write_gate"]
    seen = []
    with sqlite_app.app_context():
        session = db.session()
        event.listen(session, "after_commit", lambda _s: seen.append(gate.lock.locked()))
        _add_workspace("one")
        db.session.commit()
    assert seen == [False]


def test_a_second_writer_waits_on_the_gate_and_writes_as_soon_as_the_first_commits(sqlite_app):
    """The second INSERT reaches SQLite only after the first transaction committed (no busy polling)."""
    gate = sqlite_app.extensions["sqlite_write_gate"]
    database = gate.file_lock.path.removesuffix("-writelock")
    committed_first_when_second_reached: list[int] = []
    first_holds = threading.Event()

    def committed_rows_named(name: str) -> int:
        with contextlib.closing(sqlite3.connect(database)) as reader:  # sees committed rows only
            return reader.execute("SELECT count(*) FROM workspaces WHERE name = ?", (name,)).fetchone()[0]

    def statement(_conn, _cursor, sql, *_args):
        # Registered after the gate's own listener, so it runs once the gate let the statement through.
        if sql.startswith("INSERT") and threading.current_thread().name == "second":
            committed_first_when_second_reached.append(committed_rows_named("first"))

    with sqlite_app.app_context():
        event.listen(db.engine, "before_cursor_execute", statement)

    def first() -> None:
        with sqlite_app.app_context():
            _add_workspace("first")
            db.session.flush()
            first_holds.set()
            # Commits only once the second writer waits at the gate (a backstop: the test fails below if not).
            wait_for(lambda: gate.lock._waiting[False], 60, 0.01)
            db.session.commit()

    def second() -> None:
        first_holds.wait(60)
        with sqlite_app.app_context():
            _add_workspace("second")
            db.session.commit()

    threads = [threading.Thread(target=first, name="first"), threading.Thread(target=second, name="second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # Without the gate the second INSERT would reach SQLite at once, before the first committed, and sleep in
    # SQLite's busy handler; through the gate it reaches SQLite after the commit, with nothing to wait for.
    assert committed_first_when_second_reached == [1]
    assert not gate.lock.locked()


def test_many_concurrent_writers_all_succeed(sqlite_app):
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                with sqlite_app.app_context():
                    _add_workspace(f"w{n}-{i}")
                    db.session.commit()
        except BaseException as exc:  # collected: a thread's exception would otherwise be lost
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    with sqlite_app.app_context():
        assert db.session.execute(text("SELECT count(*) FROM workspaces")).scalar() == 160


def test_the_file_lock_passes_between_holders_at_once_and_times_out_cleanly(tmp_path):
    """Two FileLocks on one path conflict like two processes do (flock is per open file)."""
    path = str(tmp_path / "db-writelock")
    first, second, third = FileLock(path), FileLock(path), FileLock(path)
    assert first.acquire(1)
    started = time.monotonic()
    assert not second.acquire(0.2)  # held elsewhere: gives up after its timeout
    assert time.monotonic() - started > 0.15

    got = []
    waiting = threading.Thread(target=lambda: got.append(second.acquire(60)))
    waiting.start()
    # Its helper thread waits in the kernel (flock), and is what hands it the lock once released.
    assert wait_for(lambda: second._wanted.is_set() and second._waiter_busy, 60, 0.01)
    first.release()
    waiting.join(60)
    assert got == [True]
    assert not third.acquire(0.05)
    second.release()
    assert third.acquire(1)  # nobody left holding it: the abandoned wait handed it back
    third.release()


def test_preferred_writers_go_first_at_the_gate():
    """A customer's API write waiting with console writes gets the gate before them."""
    from console.db.sqlite import PriorityLock

    lock = PriorityLock()
    assert lock.acquire(1.0)
    order: list[str] = []

    def waiter(name: str, preferred: bool) -> None:
        assert lock.acquire(60.0, preferred)
        order.append(name)
        time.sleep(0.01)
        lock.release()

    console_writers = [threading.Thread(target=waiter, args=(f"page{i}", False)) for i in range(3)]
    for thread in console_writers:
        thread.start()
    assert wait_for(lambda: lock._waiting[False] == 3, 60, 0.01)  # the pages are waiting first
    customer = threading.Thread(target=waiter, args=("api", True))
    customer.start()
    assert wait_for(lambda: lock._waiting[True] == 1, 60, 0.01)
    lock.release()
    for thread in [*console_writers, customer]:
        thread.join(60)
    assert order[0] == "api" and sorted(order[1:]) == ["page0", "page1", "page2"]


def test_a_release_wakes_one_waiter_not_all_of_them():
    """Five threads queued: five waits in all (waking every waiter at each release made fifteen)."""
    from console.db.sqlite import PriorityLock

    lock = PriorityLock()
    waits = []
    condition = lock._turns[False]
    real_wait = condition.wait

    def counted_wait(timeout=None):
        waits.append(threading.current_thread().name)
        return real_wait(timeout)

    condition.wait = counted_wait
    assert lock.acquire(1.0)
    done = []

    def waiter() -> None:
        assert lock.acquire(60.0)
        done.append(threading.current_thread().name)
        time.sleep(0.005)
        lock.release()

    threads = [threading.Thread(target=waiter, name=f"w{i}") for i in range(5)]
    for thread in threads:
        thread.start()
    assert wait_for(lambda: len(waits) >= 5, 60, 0.01)  # all five queued before the first release
    lock.release()
    for thread in threads:
        thread.join(60)
    assert sorted(done) == ["w0", "w1", "w2", "w3", "w4"]
    assert len(waits) == 5 and not lock.locked()


def test_a_waiter_that_gave_up_leaves_the_queue_and_the_next_one_is_woken():
    """Releases wake one waiter each: one that timed out must not be the one a release wakes."""
    from console.db.sqlite import PriorityLock

    lock = PriorityLock()
    assert lock.acquire(1.0)
    got = []
    quitter = threading.Thread(target=lambda: got.append(("quitter", lock.acquire(0.3))))
    quitter.start()
    wait_for(lambda: lock._waiting[False] == 1 or not quitter.is_alive(), 60, 0.001)  # queued first
    patient = threading.Thread(target=lambda: got.append(("patient", lock.acquire(60.0))))
    patient.start()
    quitter.join(60)  # gave up while the lock was still held
    assert wait_for(lambda: lock._waiting[False] == 1, 60, 0.01)  # the patient one queued
    lock.release()  # wakes the patient one (the quitter is gone from the queue)
    patient.join(60)
    assert got == [("quitter", False), ("patient", True)]
    lock.release()


def test_a_waiter_gives_up_at_its_timeout_and_the_lock_stays_usable():
    from console.db.sqlite import PriorityLock

    lock = PriorityLock()
    assert lock.acquire(1.0)
    started = time.monotonic()
    assert not lock.acquire(0.2)
    assert not lock.acquire(0.2, preferred=True)
    # Two waits of at least 0.2 s each; far under 30 s: it gave up at its timeout, not later.
    assert 0.35 < time.monotonic() - started < 30
    lock.release()
    assert lock.acquire(0.1) and lock.locked()
    lock.release()
    assert not lock.locked()


def test_api_requests_of_outside_callers_are_preferred_writers(app, api):
    """Set for the request's writes, and gone once it ends (the thread's next request starts without it)."""
    from console.db import sqlite

    flags = []

    def statement(_conn, _cursor, sql, *_args):
        if sql.startswith("INSERT INTO link_tokens"):
            flags.append(sqlite._preferred.get())

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", statement)
    try:
        response = api.post("/link_tokens", json=LINK_TOKEN)
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    assert response.status_code == 200 and flags == [True]
    assert sqlite._preferred.get() is False


# committing: two threads write through their own connections; the second waits for the first's commit
def test_an_api_call_waiting_at_the_write_gate_gives_its_run_slot_back(sqlite_app):
    """Waiting for another writer is not running: meanwhile the process's slot serves someone else (a read)."""
    from console import runslots
    from console.runslots import RunSlots, RunSlotsMiddleware

    slots = RunSlots(1)
    first_writing, first_may_commit, read_ran = threading.Event(), threading.Event(), threading.Event()
    gate = sqlite_app.extensions["sqlite_write_gate"]

    def writer(hold: bool):
        def app(environ, start_response):
            with sqlite_app.app_context():
                _add_workspace(environ["PATH_INFO"])
                db.session.flush()  # the first write: takes the gate
                if hold:
                    first_writing.set()
                    # Held until the second writer is queued at the gate and a read ran on the slot it gave back.
                    with runslots.released():
                        assert first_may_commit.wait(60)
                db.session.commit()
                db.session.remove()
            start_response("200 OK", [])
            return [b""]

        return RunSlotsMiddleware(app, slots)

    def reader(environ, start_response):
        read_ran.set()
        start_response("200 OK", [])
        return [b""]

    call = lambda app, path: threading.Thread(target=app, args=({"PATH_INFO": path}, lambda *_: None))  # noqa: E731
    first = call(writer(hold=True), "/sandbox/v1/link_tokens?first")
    first.start()
    assert first_writing.wait(60)
    second = call(writer(hold=False), "/sandbox/v1/link_tokens?second")
    second.start()
    assert wait_for(lambda: gate.lock._waiting[False] == 1, 60, 0.005)  # the second waits at the gate
    read = call(RunSlotsMiddleware(reader, slots), "/sandbox/v1/jobs")
    read.start()
    assert read_ran.wait(60)  # the only slot was free: neither writer holds it while it waits
    first_may_commit.set()
    for thread in (first, second, read):
        thread.join(60)
    assert slots.in_use() == 0 and not gate.lock.locked()
    with sqlite_app.app_context():
        assert db.session.execute(text("SELECT count(*) FROM workspaces")).scalar() == 2


# committing: threads write through their own connections; the writer that waited must see the gate free
def test_the_gate_s_holder_never_queues_for_a_run_slot(sqlite_app):
    """An API call that waited at the gate runs its write to the commit without queueing for its slot again.

    `bench.neighbours` stalls (tenant B's calls stopped for seconds): a serving process's requests all queued for
    its 2 run slots while the thread holding the write gate (and the file lock every process's writers wait for)
    queued among them, behind the others, for the slot it had given back. The fact checked: once the gate is
    the waiting call's, it is not in the slot's queue while it holds the gate; it queues only after leaving it.
    """
    from console.runslots import RunSlots, RunSlotsMiddleware

    slots = RunSlots(1)
    gate = sqlite_app.extensions["sqlite_write_gate"]
    wrote, may_commit, slot_taken, may_finish = (threading.Event() for _ in range(4))
    seen_while_holding: list[tuple[int, bool]] = []  # (threads queued for a slot, gate held) at the write

    def writer(environ, start_response):
        with sqlite_app.app_context():
            _add_workspace("waited at the gate")
            db.session.flush()  # its first write: waits for the gate, held below by another writer
            seen_while_holding.append((slots.queued(), gate.lock.locked()))
            wrote.set()
            assert may_commit.wait(60)
            db.session.commit()  # leaves the gate; only then queues for its slot (held by `other`)
            db.session.remove()
        start_response("200 OK", [])
        return [b""]

    def other(environ, start_response):  # an API call that takes the slot the writer gave back
        slot_taken.set()
        assert may_finish.wait(60)
        start_response("200 OK", [])
        return [b""]

    def call(app, path):
        return threading.Thread(
            target=RunSlotsMiddleware(app, slots), args=({"PATH_INFO": path}, lambda *_: None)
        )

    assert gate.lock.try_acquire()  # another writer holds the gate
    first = call(writer, "/sandbox/v1/link_tokens")
    first.start()
    # It waits at the gate, its slot given back.
    assert wait_for(lambda: gate.lock._waiting[False] == 1, 60, 0.005)
    second = call(other, "/sandbox/v1/jobs")
    second.start()
    assert slot_taken.wait(60)  # the only slot is the other call's now
    gate.lock.release()  # the other writer commits: the gate is the waiting writer's
    # Either it writes (the fix), or it holds the gate and queues for the slot (the stall): wait for whichever.
    assert wait_for(lambda: wrote.is_set() or (slots.queued() == 1 and gate.lock.locked()), 60, 0.005)
    assert wrote.is_set(), "the gate's holder queued for a run slot"
    assert seen_while_holding == [(0, True)]  # it wrote holding the gate, nobody queued for a slot
    assert slots.in_use() == 1  # running without a slot: one thread above the process's slots, no more
    may_commit.set()
    assert wait_for(lambda: slots.queued() == 1, 60, 0.005)  # after its commit it queues for its slot...
    assert not gate.lock.locked() and not gate.holders and not gate.owed  # ...holding no gate
    may_finish.set()
    for thread in (first, second):
        thread.join(60)
    assert slots.in_use() == 0 and slots.queued() == 0  # every slot back, none released twice
    with sqlite_app.app_context():
        assert db.session.execute(text("SELECT count(*) FROM workspaces")).scalar() == 1
