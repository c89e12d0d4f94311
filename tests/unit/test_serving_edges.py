"""What `console run` (Granian) answers at the edges of HTTP: chunked bodies over the cap, control characters
in headers. Raw sockets on 127.0.0.1: HTTP client libraries refuse to send a control character in a header.
"""

from __future__ import annotations

import json
import socket
import uuid

import pytest
import sqlalchemy

from tests.factories import LINK_TOKEN
from tests.unit.test_serving import Console

# One worker under xdist (--dist loadgroup): the tests share one module-scoped `console run`; spread over four
# workers, each worker started one (~5-10 s of starting processes each).
pytestmark = pytest.mark.xdist_group("serving_edges")

CAP = 1024 * 1024


def exchange(console: Console, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send one request as bytes (Connection: close); the status, headers and body of the answer."""
    with socket.create_connection(("127.0.0.1", console.port), timeout=30) as sock:
        sock.sendall(raw)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def request(secret: str, path: str, headers: list[bytes], body: bytes = b"", *, chunks=None) -> bytes:
    lines = [
        f"POST /sandbox/v1{path} HTTP/1.1".encode(),
        b"Host: 127.0.0.1",
        b"Connection: close",
        b"Content-Type: application/json",
        b"Service-Version: 2023-11-22",
        b"x-api-secret: " + secret.encode(),
        *headers,
    ]
    if chunks is None:
        lines.append(b"Content-Length: %d" % len(body))
        payload = body
    else:
        lines.append(b"Transfer-Encoding: chunked")
        payload = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    return b"\r\n".join(lines) + b"\r\n\r\n" + payload


def pieces(data: bytes, size: int = 64 * 1024) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("edges")
    database = f"sqlite:///{tmp_path / 'console.db'}"
    console = Console(tmp_path, database, "--processes", "1", "--threads", "4")
    try:
        console.wait_until_ready()
        secret = json.loads(console.cli("keys", "create", "--mode", "sandbox", "--json"))["secret"]
        engine = sqlalchemy.create_engine(database)
        yield console, secret, engine
        engine.dispose()
    finally:
        status = console.stop()
        assert status == 0, console.output()


def link_tokens(engine) -> int:
    with engine.connect() as connection:
        return connection.scalar(sqlalchemy.text("SELECT count(*) FROM link_tokens"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [json.dumps(LINK_TOKEN).encode() + b" " * (2 * CAP), b'"' + b"x" * (2 * CAP) + b'"'],
    ids=["valid-then-2MiB-of-spaces", "2MiB-string"],
)
def test_console_run_answers_a_chunked_body_over_the_cap_with_413(served, body):
    console, secret, engine = served
    before = link_tokens(engine)
    status, headers, answer = exchange(console, request(secret, "/link_tokens", [], chunks=pieces(body)))
    assert status == 413, answer
    assert json.loads(answer)["error"]["code"] == "BODY_TOO_LARGE"
    assert uuid.UUID(headers["x-service-request-id"])
    assert link_tokens(engine) == before


@pytest.mark.slow
def test_console_run_reads_a_chunked_body_of_exactly_the_cap(served):
    console, secret, engine = served
    before = link_tokens(engine)
    body = json.dumps(LINK_TOKEN).encode()
    body += b" " * (CAP - len(body))
    status, _, answer = exchange(console, request(secret, "/link_tokens", [], chunks=pieces(body)))
    assert status == 200, answer
    assert json.loads(answer)["data"]["mode"] == "sandbox"
    assert link_tokens(engine) == before + 1


@pytest.mark.slow
@pytest.mark.parametrize("byte", [0x00, 0x01, 0x08, 0x0B, 0x0D, 0x1B, 0x1F, 0x7F])
def test_granian_refuses_a_control_character_in_a_header_before_the_app(served, byte):
    """The server-level answer docs/api.md describes: a bare 400, no body, no request id, connection closed.
    Granian's HTTP parser refuses any header value holding a control character other than a tab; the app
    never sees the request (so it is not logged or counted)."""
    console, secret, _ = served
    key = b"Idempotency-Key: abc" + bytes([byte]) + b"def"
    status, headers, answer = exchange(
        console, request(secret, "/link_tokens", [key], json.dumps(LINK_TOKEN).encode())
    )
    assert (status, answer) == (400, b"")
    assert headers.get("content-length") == "0" and headers.get("connection") == "close"
    assert "x-service-request-id" not in headers


@pytest.mark.slow
@pytest.mark.parametrize("value", [b"abc\tdef", b"abc\xe9def"], ids=["tab", "non-ascii"])
def test_a_tab_or_a_non_ascii_key_reaches_the_app_and_gets_its_error(served, value):
    console, secret, _ = served
    key = b"Idempotency-Key: " + value
    status, headers, answer = exchange(
        console, request(secret, "/link_tokens", [key], json.dumps(LINK_TOKEN).encode())
    )
    assert status == 400, answer
    assert json.loads(answer)["error"]["code"] == "INVALID_IDEMPOTENCY_KEY"
    assert uuid.UUID(headers["x-service-request-id"])
