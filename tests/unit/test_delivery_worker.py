"""The delivery loop: concurrent sends, isolation from a hanging endpoint, clean stop, expired leases."""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from bench.webhooks import Receiver
from console.clock.services import now
from console.events.services import record_event
from console.extensions import db
from console.keys.models import ApiKey
from console.webhooks import services
from console.webhooks.delivery_loop import Claimer, DeliveryLoop, deliver_due
from console.webhooks.fairness import Slot
from console.webhooks.models import WebhookDelivery
from console.workspaces.models import Workspace

pytestmark = [pytest.mark.committing, pytest.mark.both_backends]


@pytest.fixture
def ctx(app, workspace):
    app.config.update(WEBHOOK_TIMEOUT_SECONDS=3, WEBHOOK_POLL_INTERVAL_SECONDS=0.01)
    with app.app_context():
        ws = db.session.get(Workspace, uuid.UUID(workspace.id))
        key = db.session.get(ApiKey, uuid.UUID(workspace.key_ids["sandbox"]))
        yield ws, key


def make_hook(key, url, events=("account.added",)):
    hook = services.create_webhook(
        key, {"url": url, "status": "active", "enabled_events": list(events), "version": "2023-11-22"}
    )
    db.session.commit()
    return hook.id


def emit(ws, type_="account.added"):
    event = record_event(workspace_id=ws.id, mode="sandbox", type=type_, payload={}, at=now(ws))
    db.session.commit()
    return str(event.id)


class Running:
    """A DeliveryLoop on a thread, stopped (and joined) on exit."""

    def __init__(self, app) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=DeliveryLoop(app).run_forever, args=(self.stop,))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive()


def wait_for(predicate, timeout=60.0):
    """Poll until `predicate()`; the timeout is a backstop against a hang, never what a test measures."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def statuses():
    db.session.expire_all()
    return sorted(db.session.scalars(select(WebhookDelivery.status)))


def test_loop_delivers_what_is_written(app, ctx):
    ws, key = ctx
    with Receiver() as rx, Running(app):
        make_hook(key, rx.url)
        ids = [emit(ws) for _ in range(50)]
        wait_for(lambda: len(rx.requests) >= 50)
        wait_for(lambda: statuses() == ["delivered"] * 50)
    assert sorted(rx.event_ids()) == sorted(ids)


def test_a_hanging_endpoint_does_not_delay_the_others(app, ctx):
    """The caps are on attempts in flight: a webhook (and its destination) holds at most 24 senders at once.

    The hanging attempts must not end by themselves before the release, or each that times out frees its
    slot for one of the queued deliveries (before the fair-delivery caps, a loaded machine reached 80
    requests that way, 64 at a time, with the 3 s timeout): so the timeout here outlasts any wait of the test.
    """
    ws, key = ctx
    app.config.update(WEBHOOK_TIMEOUT_SECONDS=120)
    with Receiver(lambda r: (hang.released.wait(), (200, b""))[1]) as hang, Receiver() as fine:
        make_hook(key, hang.url, events=["income.added"])
        make_hook(key, fine.url, events=["account.added"])
        with Running(app):
            try:
                for _ in range(80):  # more hanging deliveries than one webhook may hold threads
                    emit(ws, "income.added")
                wait_for(lambda: len(hang.requests) >= 24)
                written = [emit(ws) for _ in range(30)]
                wait_for(lambda: len(fine.requests) >= 30)
                # Counted while all 24 still hang: none can end before the release, so no 25th can be sent.
                held = len(hang.requests)
            finally:
                hang.release()  # before the loop stops: it waits for the attempts in flight
            wait_for(lambda: len(hang.requests) >= 80)  # once released, the queued ones follow
        # Every one of the 30 arrived while the hanging webhook held its 24 threads: none waited for them.
        assert sorted(fine.event_ids()) == sorted(written)
        assert held == 24  # capped per destination and webhook: 24 of the 128 senders (the workspace: 32)
        assert len(hang.requests) == 80 and len(set(hang.event_ids())) == 80


def test_stop_finishes_the_attempt_in_flight(app, ctx):
    ws, key = ctx
    app.config.update(WEBHOOK_TIMEOUT_SECONDS=120)  # the attempt ends at the release, not by a timeout
    with Receiver(lambda r: (rx.released.wait(), (200, b"ok"))[1]) as rx:
        make_hook(key, rx.url)
        running = Running(app).__enter__()
        event_id = emit(ws)
        wait_for(lambda: rx.requests)
        running.stop.set()  # while the attempt is in flight: it cannot end before the release
        running.thread.join(0.2)
        assert running.thread.is_alive()  # the loop waits for it
        rx.release()
        running.thread.join(60)
        assert not running.thread.is_alive()
    assert statuses() == ["delivered"] and rx.event_ids() == [event_id]


def test_an_expired_lease_is_sent_again_with_the_same_event_id(app, ctx):
    ws, key = ctx
    with Receiver() as rx:
        make_hook(key, rx.url)
        event_id = emit(ws)
        (job,) = Claimer(lease_seconds=600).claim(10)  # a worker that claims, then dies
        db.session.commit()
        assert statuses() == ["delivering"]
        assert deliver_due(app) == 0  # the lease still holds: nobody sends it twice at once
        # The lease runs out (as 600 s later), without the test waiting for it.
        claimed = db.session.scalars(select(WebhookDelivery)).one()
        claimed.claimed_until -= timedelta(seconds=601)
        db.session.commit()
        assert deliver_due(app) == 1
    assert rx.event_ids() == [event_id] and statuses() == ["delivered"]
    assert job.event_id == uuid.UUID(event_id)


def test_an_idle_loop_slows_its_poll_down_and_speeds_up_with_work(app):
    app.config.update(
        WEBHOOK_POLL_INTERVAL_SECONDS=0.01, WEBHOOK_IDLE_POLL_SECONDS=0.1, WEBHOOK_CLAIM_BATCH=4
    )
    loop = DeliveryLoop(app)
    waits, wait = [], 0.0
    for _ in range(6):  # nothing claimed, nothing in flight
        wait = loop._next_wait(0, wait)
        waits.append(wait)
    assert waits == [0.01, 0.02, 0.04, 0.08, 0.1, 0.1]
    assert loop._next_wait(1, wait) == 0.01  # work found: back to the normal poll at once
    assert loop._next_wait(4, wait) == 0.0  # a full claim: poll again without waiting
    loop.inflight.acquire([Slot(uuid.uuid4(), ("http", "h", 80), uuid.uuid4())])
    assert loop._next_wait(0, 0.1) == 0.01  # attempts in flight: their results are collected promptly


def test_a_sender_that_gave_up_is_no_traceback_in_the_receiver(capsys):
    """A sender whose timeout ran out has closed its connection when the answer comes: nothing to answer."""
    handlers: list[threading.Thread] = []
    with Receiver(
        lambda r: (handlers.append(threading.current_thread()), rx.released.wait(), (200, b"ok"))[2]
    ) as rx:
        sender = socket.create_connection(("127.0.0.1", rx.server.server_address[1]))
        sender.sendall(b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        wait_for(lambda: handlers)
        sender.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # gone, with a reset
        sender.close()
        rx.release()
        handlers[0].join(60)
        assert not handlers[0].is_alive()
    assert len(rx.requests) == 1
    assert capsys.readouterr().err == ""


def test_the_tls_settings_are_made_at_the_first_https_connection_and_shared(app, monkeypatch):
    """Loading the system's CA certificates costs ~35 ms of CPU: a transport that only delivers over http never
    pays it, and the https connections share one context."""
    import ssl

    from console.webhooks import delivery

    made = []
    real = ssl.create_default_context
    monkeypatch.setattr(ssl, "create_default_context", lambda *a, **k: made.append(1) or real(*a, **k))
    with socket.socket() as closed:  # a port nothing listens on: each connection is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    transport = delivery.Transport(app)
    try:
        with Receiver(lambda r: (200, b"")) as rx:
            transport.exchange(rx.url, b"{}", {}, timeout=2, mode="sandbox")
        assert made == []  # http only so far
        for _ in range(2):
            with pytest.raises(OSError):
                transport.exchange(f"https://127.0.0.1:{port}/hook", b"{}", {}, timeout=2, mode="sandbox")
        assert made == [1]
    finally:
        transport.close()
