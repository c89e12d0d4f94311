"""`console listen` / `console trigger` and the training room's pcc.py never send the API secret on to a redirect:
requests (session headers) and urllib (every header) would both repeat x-api-secret to whatever host a
redirect names, so an --api answered by a proxy or a moved host handed the key to it."""

from __future__ import annotations

import importlib.util
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from console import listener
from console.listener import Fatal, Service

PCC = listener.__file__.replace("listener.py", "training/client/pcc.py")
SECRET = "sk_sandbox_" + "r" * 43


class _Recorder(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})
        if self.server.location:
            self.send_response(self.server.code)
            self.send_header("Location", self.server.location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b'{"data": {}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


def _server(location: str | None = None, code: int = 307) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen, server.location, server.code = [], location, code
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def elsewhere():
    server = _server()
    yield server
    server.shutdown()
    server.server_close()


def _url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize("code", [302, 307, 308])
def test_the_listener_does_not_follow_a_redirect_with_the_key(elsewhere, code):
    moved = _server(_url(elsewhere) + "/sandbox/v1/sandbox/listen", code)
    try:
        with pytest.raises(Fatal, match=f"answered {code}, a redirect to http://127.0.0.1"):
            Service(_url(moved), SECRET).post("/sandbox/listen")
        assert moved.seen[0]["x-api-secret"] == SECRET  # the service named by --api gets it, as it should
        assert elsewhere.seen == []
    finally:
        moved.shutdown()
        moved.server_close()


@pytest.mark.parametrize("code", [302, 307])
def test_pcc_does_not_follow_a_redirect_with_the_key(elsewhere, code):
    spec = importlib.util.spec_from_file_location("pcc_under_test", PCC)
    pcc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pcc)
    moved = _server(_url(elsewhere) + "/sandbox/v1/sandbox/listen", code)
    try:
        with pytest.raises(pcc.Problem, match=f"answered {code}, a redirect to http://127.0.0.1"):
            pcc.call(_url(moved) + "/sandbox/v1", SECRET, "/sandbox/listen", {})
        assert moved.seen[0]["x-api-secret"] == SECRET
        assert elsewhere.seen == []
    finally:
        moved.shutdown()
        moved.server_close()


class _Busy(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = (
            b'{"error": {"code": "SERVICE_UNAVAILABLE", "message": "The service cannot save changes right now. '
            b'Try again later.", "type": "SERVICE_UNAVAILABLE", "status_code": 503, "fields": []}}'
        )
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", "2")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_a_5xx_with_the_services_words_passes_them_on():
    """`console trigger` against a server whose disk was full said only "the service answered 503"."""
    from console.listener import Unavailable

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(Unavailable) as raised:
            Service(_url(server), SECRET).post("/sandbox/v1/link_tokens")
    finally:
        server.shutdown()
        server.server_close()
    assert str(raised.value) == (
        "the service answered 503: SERVICE_UNAVAILABLE: The service cannot save changes right now. Try again later."
    )
    assert raised.value.retry_after == 2.0
