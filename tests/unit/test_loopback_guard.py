"""The suite's own guard (tests/loopback.py): a test that points anything at another machine fails at once."""

import errno
import socket

import pytest
import requests

from tests.loopback import is_local


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("app.localhost", True),
        ("10.255.255.53", False),
        ("192.168.1.10", False),
        ("8.8.8.8", False),
        ("example.com", False),
    ],
)
def test_what_counts_as_this_machine(host, local):
    assert is_local(host) is local


def test_a_connection_to_another_machine_is_refused_before_any_packet():
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError, match=r"192\.168\.1\.10"):
        sock.connect(("192.168.1.10", 5000))


def test_connect_ex_answers_refused_for_another_machine():

    with socket.socket() as sock:
        assert sock.connect_ex(("10.0.0.5", 80)) == errno.ECONNREFUSED


def test_a_public_name_is_not_looked_up():
    with pytest.raises(socket.gaierror, match=r"example\.com"):
        socket.getaddrinfo("example.com", 443)


def test_an_http_client_meets_the_guard_too():
    with pytest.raises(requests.ConnectionError):
        requests.get("http://192.168.1.10:5000/", timeout=5)


def test_loopback_still_works():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    assert socket.getaddrinfo("localhost", 80)


def test_a_binding_s_any_address_needs_no_lookup():
    assert socket.getaddrinfo(None, 8000, flags=socket.AI_PASSIVE)
