"""Run slots: how many requests of a serving process run at once, in which order, and who waits without one."""

from __future__ import annotations

import re
import threading
import time

import pytest

from console import runslots
from console.runslots import RunSlots, RunSlotsMiddleware
from tests.waiting import wait_for


class Recorder:
    """A WSGI app that records how many requests run in it at once, and in which order they start."""

    def __init__(self, hold: float = 0.02) -> None:
        self.hold = hold
        self.running = 0
        self.most = 0
        self.started: list[str] = []
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, environ, start_response):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(environ["PATH_INFO"])
        self.gate.wait(60)
        time.sleep(self.hold)
        with self.lock:
            self.running -= 1
        start_response("200 OK", [])
        return [b"ok"]


def _queued(slots: RunSlots) -> int:
    """How many threads wait for a slot."""
    return slots.queued()


def _call(app, path: str) -> threading.Thread:
    thread = threading.Thread(target=app, args=({"PATH_INFO": path}, lambda *_: None))
    thread.start()
    return thread


def test_at_most_the_given_number_of_requests_run_at_once():
    inner = Recorder(hold=0.01)
    app = RunSlotsMiddleware(inner, RunSlots(3))
    threads = [_call(app, f"/sandbox/v1/jobs?{i}") for i in range(12)]
    for thread in threads:
        thread.join(60)
    assert len(inner.started) == 12
    assert inner.most == 3


def test_pages_never_hold_the_last_slot_so_an_api_call_never_waits_for_a_page():
    inner = Recorder(hold=0.0)
    inner.gate.clear()  # every request that starts holds its slot until the gate opens
    app = RunSlotsMiddleware(inner, RunSlots(2))
    pages = [_call(app, f"/page{i}") for i in range(3)]
    assert wait_for(lambda: len(inner.started) == 1 and _queued(app.slots) == 2)  # one page runs, two wait
    api = _call(app, "/sandbox/v1/jobs")
    assert wait_for(lambda: "/sandbox/v1/jobs" in inner.started)  # ran beside the page, not after it
    assert inner.running == 2 and _queued(app.slots) == 2
    inner.gate.set()
    for thread in [*pages, api]:
        thread.join(60)
    assert inner.most == 2 and len(inner.started) == 4 and app.slots.in_use() == 0


def test_waiting_pages_take_turns_across_client_addresses():
    """A room (or a bot) loading pages from one address cannot queue another visitor behind all of them."""
    inner = Recorder(hold=0.0)
    inner.gate.clear()
    app = RunSlotsMiddleware(inner, RunSlots(1), address_of=lambda environ: environ["PATH_INFO"][:2])
    first = _call(app, "/a0")
    assert wait_for(lambda: inner.started == ["/a0"])
    waiters = []
    for n, path in enumerate(["/a1", "/a2", "/a3", "/b1", "/a4", "/b2"], 1):
        waiters.append(_call(app, path))
        assert wait_for(lambda n=n: _queued(app.slots) == n, 60, 0.005)  # queued in this order
    inner.gate.set()
    for thread in [first, *waiters]:
        thread.join(60)
    assert inner.started == ["/a0", "/a1", "/b1", "/a2", "/b2", "/a3", "/a4"]


def test_the_serving_address_of_a_request_believes_x_forwarded_for_only_from_a_trusted_proxy():
    from console.web.shared.throttle import environ_address, parse_proxies

    address_of = environ_address(parse_proxies("127.0.0.1"))
    forwarded = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "198.51.100.7, 203.0.113.9"}
    assert address_of(forwarded) == "203.0.113.9"  # the nearest hop the proxy heard from
    assert address_of({**forwarded, "REMOTE_ADDR": "192.0.2.1"}) == "192.0.2.1"  # not our proxy: ignored
    assert address_of({"REMOTE_ADDR": "127.0.0.1"}) == "127.0.0.1"
    assert environ_address(())(forwarded) == "127.0.0.1"  # no trusted proxies: the peer


def test_waiting_requests_get_their_turn_in_order_of_arrival():
    inner = Recorder(hold=0.0)
    inner.gate.clear()  # the first request holds the only slot until the others are queued
    app = RunSlotsMiddleware(inner, RunSlots(1))
    first = _call(app, "/first")
    assert wait_for(lambda: inner.started == ["/first"])
    waiters = []
    for i in range(5):
        waiters.append(_call(app, f"/w{i}"))
        assert wait_for(lambda n=i + 1: _queued(app.slots) == n, 60, 0.005)  # arrive one after another
    inner.gate.set()
    for thread in [first, *waiters]:
        thread.join(60)
    assert inner.started == ["/first", "/w0", "/w1", "/w2", "/w3", "/w4"]


def test_api_calls_and_health_checks_are_handed_a_slot_before_waiting_pages():
    inner = Recorder(hold=0.0)
    inner.gate.clear()
    app = RunSlotsMiddleware(inner, RunSlots(1))
    first = _call(app, "/")
    assert wait_for(lambda: inner.started == ["/"])
    order = ["/timeline", "/events", "/sandbox/v1/link_tokens", "/healthz"]
    waiters = []
    for n, path in enumerate(order, 1):
        waiters.append(_call(app, path))
        assert wait_for(lambda n=n: _queued(app.slots) == n, 60, 0.005)  # queued in this order
    inner.gate.set()
    for thread in [first, *waiters]:
        thread.join(60)
    assert inner.started == ["/", "/sandbox/v1/link_tokens", "/healthz", "/timeline", "/events"]


def test_a_request_waiting_on_something_outside_gives_its_slot_back_meanwhile():
    slots = RunSlots(1)
    seen_in_use = []
    other_ran = threading.Event()

    def waiting_app(environ, start_response):
        with runslots.released():
            seen_in_use.append(slots.in_use())
            assert other_ran.wait(60)  # another request ran on the slot meanwhile
        seen_in_use.append(slots.in_use())  # its own again
        start_response("200 OK", [])
        return [b""]

    def quick_app(environ, start_response):
        other_ran.set()
        start_response("200 OK", [])
        return [b""]

    waiting = _call(RunSlotsMiddleware(waiting_app, slots), "/presenter/step")
    time.sleep(0.05)
    quick = _call(RunSlotsMiddleware(quick_app, slots), "/sandbox/v1/jobs")
    for thread in (waiting, quick):
        thread.join(60)
    assert not waiting.is_alive() and other_ran.is_set()
    assert seen_in_use == [0, 1]
    assert slots.in_use() == 0


def test_a_request_made_from_inside_a_running_one_runs_on_its_slot():
    """The console's in-process API calls: with one slot, waiting for a second would wait for good."""
    slots = RunSlots(1)
    answers = []

    def api(environ, start_response):
        start_response("200 OK", [])
        return [b"api"]

    api_app = RunSlotsMiddleware(api, slots)

    def page(environ, start_response):
        answers.append(b"".join(api_app({"PATH_INFO": "/sandbox/v1/jobs"}, lambda *_: None)))
        start_response("200 OK", [])
        return [b"page"]

    thread = _call(RunSlotsMiddleware(page, slots), "/")
    thread.join(60)
    assert not thread.is_alive() and answers == [b"api"] and slots.in_use() == 0


def test_a_failing_request_gives_its_slot_back():
    slots = RunSlots(1)

    def broken(environ, start_response):
        raise RuntimeError("boom")

    app = RunSlotsMiddleware(broken, slots)
    with pytest.raises(RuntimeError):
        app({"PATH_INFO": "/"}, lambda *_: None)
    assert slots.in_use() == 0
    with runslots.released():  # outside any request: nothing to give back
        assert slots.in_use() == 0


def test_serving_processes_run_their_app_under_the_configured_slots(monkeypatch):
    from console import serving

    monkeypatch.setattr(serving, "settle_heap", lambda: None)  # keeps this test process's heap as it is
    monkeypatch.setattr(serving, "batch_scheduling", lambda: None)  # and its threads' scheduling
    monkeypatch.setattr(serving, "leave_ctrl_c_to_the_master", lambda: None)  # and its signal mask
    monkeypatch.setattr(
        serving, "refuse_another_secret_key", lambda app: None
    )  # a stand-in app has no database

    class App:
        def __init__(self, size: int) -> None:
            self.config = {"RUN_CONCURRENCY": size}
            self.wsgi_app = object()

    for size in (2, 0):
        monkeypatch.setattr("console.create_app", lambda size=size: App(size))
        app = serving.serving_app()
        if size:
            assert isinstance(app.wsgi_app, RunSlotsMiddleware) and app.wsgi_app.slots.size == 2
        else:
            assert not isinstance(app.wsgi_app, RunSlotsMiddleware)


def test_a_page_over_its_address_rate_is_refused_at_once_without_waiting_for_a_turn():
    inner = Recorder(hold=0.0)
    inner.gate.clear()  # the only slot stays held by a page
    refused_addresses = {"/flood"}
    app = RunSlotsMiddleware(
        inner,
        RunSlots(1),
        address_of=lambda environ: environ["PATH_INFO"],
        refuse=lambda environ, address: 3 if address in refused_addresses else None,
    )
    first = _call(app, "/page")
    assert wait_for(lambda: inner.started == ["/page"])
    answers = []
    environ = {"PATH_INFO": "/flood"}
    body = app(environ, lambda status, headers: answers.append((status, dict(headers))))
    assert answers[0][0].startswith("429") and answers[0][1]["Retry-After"] == "3"  # while the slot is held
    assert b"Too many console requests" in b"".join(body) and environ[runslots.RATE_CHECKED]
    assert _queued(app.slots) == 0 and inner.started == ["/page"]
    # A browser loading a page (a stage on a projector) gets words and a page that loads again by itself.
    answers.clear()
    loading = {"PATH_INFO": "/flood", "HTTP_SEC_FETCH_DEST": "document", "SCRIPT_NAME": "/console"}
    page = b"".join(app(loading, lambda status, headers: answers.append((status, dict(headers))))).decode()
    assert answers[0][0].startswith("429") and answers[0][1]["Content-Type"].startswith("text/html")
    assert '<meta http-equiv="refresh" content="3">' in page and "loads again by itself in 3 s" in page
    assert 'href="/console/static/console.css"' in page
    assert int(answers[0][1]["Content-Length"]) == len(page.encode())
    inner.gate.set()
    first.join(60)
    assert app.slots.in_use() == 0


def test_an_answer_says_when_its_request_waited_for_a_turn_and_what_it_cost():
    """Server-Timing `runslot;desc="queued"` on an answer that waited for its slot, and on no other; every
    answer says its time in the app and the CPU it took."""
    inner = Recorder(hold=0.0)
    inner.gate.clear()  # the first request holds the only slot while the second arrives
    app = RunSlotsMiddleware(inner, RunSlots(1))
    answers: dict[str, list] = {}

    def call(path: str) -> threading.Thread:
        def start_response(status, headers, exc_info=None):
            answers[path] = headers

        thread = threading.Thread(target=lambda: list(app({"PATH_INFO": path}, start_response)))
        thread.start()
        return thread

    first = call("/first")
    assert wait_for(lambda: inner.started == ["/first"])
    second = call("/second")
    assert wait_for(lambda: _queued(app.slots) == 1)
    inner.gate.set()
    first.join(60)
    second.join(60)
    timings = {}
    for path in ("/first", "/second"):
        (timing,) = [v for k, v in answers[path] if k == "Server-Timing"]
        found = re.findall(r'(\w+)(?:;desc="[^"]*")?;dur=([\d.]+)', timing)
        timings[path] = {name: float(dur) for name, dur in found}
    assert set(timings["/first"]) == {"app", "cpu"}
    assert set(timings["/second"]) == {"runslot", "app", "cpu"}
    # The first held its slot until the gate opened, after the second had queued: its app time shows the wait,
    # its CPU does not (the recorder sleeps).
    assert timings["/first"]["app"] > timings["/first"]["cpu"]
    assert timings["/second"]["runslot"] > 0
