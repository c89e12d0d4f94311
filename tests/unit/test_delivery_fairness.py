"""Fair delivery: a workspace whose endpoints never answer holds its share of the senders and no more.

Bounds come from the loop's guarantees, not from the machine's speed: the never-answering endpoint's
attempts can only end at the delivery timeout (long here) or when the test closes them, so "the other
workspace's delivery arrived while every one of them was still hanging" means it was claimed in the
first claim round after it was due, not after a sender was freed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid
from collections import Counter

import pytest
from sqlalchemy import select

from bench.webhooks import Receiver
from console.clock.services import now
from console.events.services import record_event
from console.extensions import db
from console.keys.models import ApiKey
from console.keys.services import create_key
from console.webhooks import services
from console.webhooks.delivery_loop import Claimer, DeliveryLoop
from console.webhooks.fairness import Caps, Ledger, Slot, destination, round_robin
from console.webhooks.models import WebhookDelivery
from console.workspaces.models import Workspace
from console.workspaces.services import create_workspace
from tests.unit.test_delivery_worker import Running
from tests.waiting import wait_for

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]

TIMEOUT = 60.0  # an attempt at the silent endpoint ends only when the test closes it


class Tally:
    """Requests held at once over several endpoints, and the most at any moment."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held = 0
        self.most = 0

    def add(self, n: int) -> None:
        with self.lock:
            self.held += n
            self.most = max(self.most, self.held)


class Silent:
    """A 127.0.0.1 endpoint that accepts connections, reads, and never answers.

    Counts the requests it holds at once (a connection carries one request: it is never answered) and
    the most it held; closing it (on exit) ends every attempt still waiting.
    """

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        self.held = 0
        self.most = 0
        self.ended = 0  # attempts the sender gave up on (it closed the connection)
        self.closing = threading.Event()

    def __enter__(self) -> Silent:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        counted = False
        with self.lock:
            self.open.append(conn)
            if self.closing.is_set():  # accepted while closing: ended like the others
                conn.close()
                return
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                if not counted:
                    counted = True
                    with self.lock:
                        self.held += 1
                        self.most = max(self.most, self.held)
                    self.tally.add(1)
        except OSError:
            pass
        finally:
            with self.lock:
                if counted:
                    self.held -= 1
                    if not self.closing.is_set():
                        self.ended += 1
            if counted:
                self.tally.add(-1)

    def __exit__(self, *exc) -> None:
        self.closing.set()
        self.server.close()
        with self.lock:
            for conn in self.open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()


def hook(key, url, events=("account.added",)):
    created = services.create_webhook(
        key, {"url": url, "status": "active", "enabled_events": list(events), "version": "2023-11-22"}
    )
    db.session.commit()
    return created


def emit(ws, type_="account.added"):
    record_event(workspace_id=ws.id, mode="sandbox", type=type_, payload={}, at=now(ws))


def second_workspace():
    ws = create_workspace("Quiet neighbour")
    key = create_key(ws.id, "sandbox").key
    db.session.commit()
    return ws, key


def test_a_silent_workspace_cannot_delay_another_beyond_its_first_claim(app, workspace):
    # Few senders, so that without caps the silent workspace would hold every one of them.
    app.config.update(
        WEBHOOK_TIMEOUT_SECONDS=TIMEOUT,
        WEBHOOK_THREADS=8,
        WEBHOOK_MAX_IN_FLIGHT_PER_WORKSPACE=4,
        WEBHOOK_MAX_IN_FLIGHT_PER_HOST=3,
        WEBHOOK_RESERVED_SENDERS=2,
        WEBHOOK_RESERVED_SHARE=1,
    )
    tally = Tally()
    with app.app_context(), Silent(tally) as silent_one, Silent(tally) as silent_two, Receiver() as fine:
        noisy = db.session.get(Workspace, uuid.UUID(workspace.id))
        noisy_key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        quiet, quiet_key = second_workspace()
        for url in (silent_one.url, silent_two.url):
            for _ in range(3):  # several webhooks per destination: the host cap spans them
                hook(noisy_key, url)
        hook(quiet_key, fine.url)
        for _ in range(40):  # 240 deliveries to endpoints that never answer, due before the quiet one
            emit(noisy)
        db.session.commit()
        emit(quiet)
        db.session.commit()
        with Running(app):
            assert wait_for(lambda: len(fine.requests) == 1, TIMEOUT / 2)
            # No silent attempt had ended: the quiet delivery did not wait for a sender to come free.
            assert silent_one.ended == silent_two.ended == 0
            # The noisy workspace uses its share (4 of the 8 senders) and no more, 3 at most per destination.
            assert wait_for(lambda: tally.held == 4, TIMEOUT / 2)
            # Later work of the quiet workspace goes at once too, while the noisy one holds its share.
            emit(quiet)
            db.session.commit()
            assert wait_for(lambda: len(fine.requests) == 2, TIMEOUT / 2)
            assert silent_one.ended == silent_two.ended == 0
            assert tally.most == 4 and silent_one.most <= 3 and silent_two.most <= 3
            for silent in (
                silent_one,
                silent_two,
            ):  # both at once: an attempt freed at one may go to the other
                silent.closing.set()
            silent_one.__exit__()
            silent_two.__exit__()  # end the hanging attempts, so the loop stops at once


def test_a_backlog_does_not_hide_another_workspace_from_the_claim(app, workspace):
    """One claim round: the quiet workspace's one due delivery is claimed although 300 older ones fill the poll."""
    with app.app_context():
        noisy = db.session.get(Workspace, uuid.UUID(workspace.id))
        noisy_key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        quiet, quiet_key = second_workspace()
        hook(noisy_key, "http://127.0.0.1:9/a")
        hook(quiet_key, "http://127.0.0.1:9/b")
        for _ in range(300):
            emit(noisy)
        db.session.commit()
        emit(quiet)
        db.session.commit()
        caps = Caps(threads=64, per_workspace=8, per_host=64, per_webhook=64, reserve=0)
        jobs = Claimer(lease_seconds=30).claim(32, fair=Ledger(caps).round())
        db.session.commit()
        by_workspace = Counter(job.workspace_id for job in jobs)
        assert by_workspace == {noisy.id: 8, quiet.id: 1}


def test_round_robin_and_the_reserve():
    assert round_robin(["a1", "a2", "a3", "b1", "c1", "c2"], key=lambda s: s[0]) == [
        "a1",
        "b1",
        "c1",
        "a2",
        "c2",
        "a3",
    ]
    a, b = uuid.uuid4(), uuid.uuid4()
    ledger = Ledger(
        Caps(threads=10, per_workspace=10, per_host=10, per_webhook=10, reserve=3, reserve_share=1)
    )
    fair = ledger.round()
    taken = sum(fair.take(Slot(a, ("http", f"h{i}", 80), uuid.uuid4())) for i in range(10))
    assert taken == 7  # the last 3 senders are kept for workspaces holding none
    assert fair.take(Slot(b, ("http", "x", 80), uuid.uuid4()))
    assert not fair.take(Slot(b, ("http", "x", 80), uuid.uuid4()))  # b holds its reserve share now


def test_the_own_inbox_is_a_destination_per_workspace():
    a, b = uuid.uuid4(), uuid.uuid4()
    url = "http://127.0.0.1:5000/inbox/x"
    assert destination(url, a, own_inbox=True) != destination(url, b, own_inbox=True)
    assert destination("HTTPS://Example.com/a", a, own_inbox=False) == ("https", "example.com", 443)


# committing: the delivery loop runs on a thread of its own and reads what the test committed
def test_deliveries_claimed_ahead_wait_for_a_sender_of_their_webhook_within_its_cap(app, workspace):
    """A turn claims ahead of the senders (so a busy webhook's senders never idle between turns), but what is
    in flight stays within the caps; a stop hands what waits back at once."""
    app.config.update(
        WEBHOOK_TIMEOUT_SECONDS=TIMEOUT, WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK=1, WEBHOOK_MAX_IN_FLIGHT_PER_HOST=1
    )
    gate = threading.Event()
    at_once = Tally()

    def respond(record):
        at_once.add(1)
        gate.wait(TIMEOUT)
        at_once.add(-1)
        return 200, b"ok"

    with app.app_context(), Receiver(respond) as rx:
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        hook(db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"])), rx.url)
        for _ in range(5):
            emit(ws)
        db.session.commit()
        loop = DeliveryLoop(app)
        waiting = lambda: sum(len(jobs) for jobs in loop.waiting.values())  # noqa: E731
        stop = threading.Event()
        thread = threading.Thread(target=loop.run_forever, args=(stop,))
        thread.start()
        try:
            assert (
                loop.ahead >= 1
            )  # as many as the lease covers (each waits for an attempt's timeout at most)
            # One attempt in flight (the cap) and the next claimed, waiting for its sender.
            assert wait_for(lambda: len(rx.requests) == 1 and waiting() == loop.ahead, TIMEOUT / 2)
            gate.set()
            assert wait_for(lambda: len(rx.requests) == 5, TIMEOUT / 2)
            assert at_once.most == 1
            gate.clear()
            for _ in range(3):
                emit(ws)
            db.session.commit()
            assert wait_for(lambda: len(rx.requests) == 6 and waiting() == loop.ahead, TIMEOUT / 2)
            stop.set()
            assert wait_for(lambda: loop._stopping, TIMEOUT / 2)
        finally:
            stop.set()
            gate.set()
            thread.join(TIMEOUT)
        assert not thread.is_alive() and len(rx.requests) == 6 and at_once.most == 1
        db.session.expire_all()
        counts = Counter(db.session.scalars(select(WebhookDelivery.status)))
        assert counts == {"delivered": 6, "pending": 2}  # handed back at the stop, not left to their lease
