"""A webhook host's DNS lookup (console.webhooks.dns): a deadline, a share per workspace, the run slot given back."""

from __future__ import annotations

import socket
import threading

import pytest

from console.runslots import RunSlots, RunSlotsMiddleware
from console.webhooks import dns
from tests.waiting import wait_for


def test_a_lookup_answers_or_fails_as_the_resolver_does():
    assert dns.lookup(lambda: ["93.184.216.34"], "ws-a", 60) == ["93.184.216.34"]

    def no_such_name():
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(socket.gaierror):
        dns.lookup(no_such_name, "ws-a", 60)
    assert dns.running("ws-a") == 0


def test_a_lookup_past_its_deadline_is_refused_and_keeps_its_workspace_s_share_until_the_resolver_gives_up():
    answers = threading.Event()  # the tenant's DNS servers: silent until the test lets them answer

    def silent():
        answers.wait(60)
        return ["93.184.216.34"]

    try:
        for _ in range(dns.PER_OWNER):
            with pytest.raises(dns.TooSlow):
                dns.lookup(silent, "ws-slow", 0.01)
        assert dns.running("ws-slow") == dns.PER_OWNER  # given up on, still running
        with pytest.raises(dns.TooMany):  # refused at once, not queued behind them
            dns.lookup(lambda: ["93.184.216.34"], "ws-slow", 60)
        # Another workspace looks its hosts up as usual meanwhile.
        assert dns.lookup(lambda: ["93.184.216.34"], "ws-quiet", 60) == ["93.184.216.34"]
    finally:
        answers.set()
    assert wait_for(lambda: dns.running("ws-slow") == 0)
    assert dns.lookup(lambda: ["93.184.216.34"], "ws-slow", 60) == ["93.184.216.34"]


def test_a_request_waiting_for_a_lookup_gives_its_run_slot_back_meanwhile():
    slots = RunSlots(1)
    other_ran = threading.Event()
    answered = []

    def registering(environ, start_response):  # a webhook's registration, its host's DNS slow to answer
        def slow():
            assert other_ran.wait(60)  # another request ran on the one slot meanwhile
            return ["93.184.216.34"]

        answered.append(dns.lookup(slow, "ws-a", 60))
        start_response("200 OK", [])
        return [b""]

    def quick(environ, start_response):
        other_ran.set()
        start_response("200 OK", [])
        return [b""]

    first = threading.Thread(
        target=RunSlotsMiddleware(registering, slots),
        args=({"PATH_INFO": "/sandbox/v1/webhooks"}, lambda *_: None),
    )
    first.start()
    assert wait_for(lambda: dns.running("ws-a") == 1)
    RunSlotsMiddleware(quick, slots)({"PATH_INFO": "/sandbox/v1/jobs"}, lambda *_: None)
    first.join(60)
    assert answered == [["93.184.216.34"]] and slots.in_use() == 0


def test_a_delivery_connects_to_the_name_looked_up_under_the_deadline_and_refuses_a_silent_zone(monkeypatch):
    """http.client looked the name up again itself, with no deadline: a zone gone silent held a sender."""
    from console.webhooks import delivery, urls

    policy = urls.Policy.from_config({"SANDBOX_ALLOW_LOOPBACK_WEBHOOKS": True, "WEBHOOK_DNS_SECONDS": 0.05})
    answers = threading.Event()
    looked_up = []

    def lookup(host, port):
        looked_up.append(host)
        if host == "silent.example":
            answers.wait(60)
        return ["127.0.0.1"]

    monkeypatch.setattr(urls, "connect_lookup", lookup)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    connect = delivery._guarded_connect("sandbox", policy)
    try:
        with pytest.raises(urls.UrlRefused, match=r"'silent\.example' did not resolve within 0\.05 s"):
            connect(("silent.example", port), 5)
        sock = connect(("hooks.example", port), 5)  # the address its lookup gave
        assert sock.getpeername() == ("127.0.0.1", port)
        sock.close()
        assert looked_up == ["silent.example", "hooks.example"]
        literal = connect(("127.0.0.1", port), 5)  # a literal address is not looked up
        literal.close()
        assert looked_up == ["silent.example", "hooks.example"]
        with pytest.raises(delivery.AddressRefused, match=r"127\.0\.0\.1"):  # still judged once connected
            delivery._guarded_connect("live", policy)(("hooks.example", port), 5)
    finally:
        answers.set()
        listener.close()
