"""Kept-alive connections of the search service (issue 49): a request that asks for it keeps its
connection for the next one; an idle one is closed quietly after ``read_timeout_s``, a half-sent
next request gets 408, an error answer closes, pipelined requests are answered in order, and
``stop()`` does not wait for idle connections. Raw sockets and ``http.client`` on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import socket
import time

import pytest
from opentelemetry.trace import SpanKind

from jaxparadigm.retrieval.service.http_handler import _keeps_alive
from tests.retrieval.service.hash_service import hash_service

TIMEOUT_S = 0.5


@pytest.fixture(scope="module")
def service(tmp_path_factory, minilm_tokenizer):
    """A service whose requests, and kept connections left idle, time out after TIMEOUT_S."""
    root = tmp_path_factory.mktemp("kept")
    svc = hash_service(root, minilm_tokenizer, read_timeout_s=TIMEOUT_S)
    try:
        yield svc
    finally:
        svc.stop()


def _port(svc) -> int:
    """The port of ``svc.url`` (``http://127.0.0.1:PORT/search``)."""
    return int(svc.url.rsplit(":", 1)[1].split("/")[0])


def _request(body: dict | bytes, connection: str | None, version: str = "HTTP/1.1") -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = [f"POST /search {version}", "Host: x", f"Content-Length: {len(data)}"]
    if connection is not None:
        head.append(f"Connection: {connection}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def _read_answer(sock: socket.socket, buffered: bytearray) -> tuple[int, dict, bytes]:
    """One answer (status, lower-cased headers, body) read by its Content-Length; bytes past it
    stay in ``buffered``."""
    while b"\r\n\r\n" not in buffered:
        data = sock.recv(65536)
        assert data, f"the connection closed before an answer: {bytes(buffered)!r}"
        buffered += data
    head, _, rest = bytes(buffered).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
    length = int(headers["content-length"])
    while len(rest) < length:
        data = sock.recv(65536)
        assert data, "the connection closed inside an answer's body"
        rest += data
    buffered[:] = rest[length:]
    return int(lines[0].split(" ", 2)[1]), headers, rest[:length]


def _eof_after(sock: socket.socket, limit_s: float) -> tuple[bytes, float]:
    """What the server still sends before closing, and how long it took."""
    start, got = time.perf_counter(), b""
    sock.settimeout(limit_s)
    while data := sock.recv(65536):
        got += data
    return got, time.perf_counter() - start


@pytest.mark.parametrize(
    "options, kept",
    [
        (["keep-alive"], True),
        (["Keep-Alive"], True),
        (["TE, keep-alive"], True),
        (["keep-alive, close"], False),
        (["keep-alive", "close"], False),
        (["close"], False),
        ([], False),
        (["keepalive"], False),
    ],
)
def test_keeps_alive_reads_every_connection_option(options, kept):
    message = http.client.HTTPMessage()
    for value in options:
        message["Connection"] = value
    assert _keeps_alive(message) is kept


def test_http_client_posts_twice_on_one_kept_alive_connection(service):
    conn = http.client.HTTPConnection("127.0.0.1", _port(service), timeout=10)
    try:
        socks = []
        for query in ("open a file", "logging handler"):
            body = json.dumps({"query": query, "k": 2}).encode()
            conn.request("POST", "/search", body, {"Connection": "keep-alive"})
            resp = conn.getresponse()
            payload = json.loads(resp.read())
            assert resp.status == 200 and len(payload["hits"]) == 2
            assert resp.getheader("Connection") == "keep-alive"
            assert resp.getheader("Keep-Alive") == f"timeout={int(TIMEOUT_S)}"
            socks.append(conn.sock)
        assert socks[0] is not None and socks[0] is socks[1]  # not reopened
    finally:
        conn.close()


@pytest.mark.parametrize("version", ["HTTP/1.0", "HTTP/1.1"])
def test_an_idle_kept_alive_connection_is_closed_quietly_after_the_read_timeout(service, version):
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        buffered = bytearray()
        sock.sendall(_request({"query": "open a file", "k": 1}, "keep-alive", version))
        status, headers, _ = _read_answer(sock, buffered)
        assert status == 200 and headers["connection"] == "keep-alive"
        rest, seconds = _eof_after(sock, 10)
    assert rest == b"" and not buffered  # no 408: there was no request
    assert 0.8 * TIMEOUT_S <= seconds < TIMEOUT_S + 2


@pytest.mark.parametrize("connection", [None, "close", "keep-alive, close"])
def test_without_keep_alive_the_answer_closes_the_connection(service, connection):
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        buffered = bytearray()
        sock.sendall(_request({"query": "open a file", "k": 1}, connection))
        status, headers, _ = _read_answer(sock, buffered)
        assert status == 200 and headers["connection"] == "close"
        rest, seconds = _eof_after(sock, 10)
    assert rest == b"" and seconds < TIMEOUT_S / 2  # closed at once, not after the timeout


def test_a_half_sent_next_request_on_a_kept_connection_gets_408(service):
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        buffered = bytearray()
        sock.sendall(_request({"query": "open a file", "k": 1}, "keep-alive"))
        assert _read_answer(sock, buffered)[0] == 200
        sock.sendall(b"POST /search HTTP/1.1\r\nHo")  # and nothing more
        start = time.perf_counter()
        status, headers, body = _read_answer(sock, buffered)
        seconds = time.perf_counter() - start
        assert _eof_after(sock, 10)[0] == b""
    assert status == 408 and headers["connection"] == "close"
    assert "timed out" in json.loads(body)["error"]
    assert seconds < TIMEOUT_S + 2


def test_a_half_sent_request_pipelined_behind_a_kept_one_gets_408(service):
    """Its bytes came with the first request's (already in the server's read buffer when the
    first answer left): they are bytes of a next request, so a 408, not a quiet close."""
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        buffered = bytearray()
        first = _request({"query": "open a file", "k": 1}, "keep-alive")
        sock.sendall(first + b"POST /search HTTP/1.1\r\nHo")  # one send, the second cut short
        assert _read_answer(sock, buffered)[0] == 200
        status, headers, body = _read_answer(sock, buffered)
    assert status == 408 and headers["connection"] == "close"
    assert "timed out" in json.loads(body)["error"]


def test_an_error_answer_closes_a_kept_alive_connection(service):
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        buffered = bytearray()
        sock.sendall(_request(b"{not json", "keep-alive"))
        status, headers, _ = _read_answer(sock, buffered)
        rest, seconds = _eof_after(sock, 10)
    assert status == 400 and headers["connection"] == "close"
    assert rest == b"" and seconds < TIMEOUT_S / 2


def test_pipelined_requests_are_answered_in_order_then_closed(service):
    queries = ["open a file", "logging handler", "sleep seconds"]
    data = b"".join(
        _request({"query": q, "k": 1}, "keep-alive" if i < 2 else None)
        for i, q in enumerate(queries)
    )
    alone = {}
    for q in queries:  # each query's answer on a connection of its own
        with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
            sock.sendall(_request({"query": q, "k": 1}, None))
            alone[q] = json.loads(_read_answer(sock, bytearray())[2])["hits"]
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        buffered = bytearray()
        sock.sendall(data)  # all three in one send
        answers = [_read_answer(sock, buffered) for _ in queries]
        assert _eof_after(sock, 10)[0] == b""
    assert [a[0] for a in answers] == [200, 200, 200]
    assert [a[1]["connection"] for a in answers] == ["keep-alive", "keep-alive", "close"]
    assert [json.loads(a[2])["hits"] for a in answers] == [alone[q] for q in queries]


def test_stop_does_not_wait_for_an_idle_kept_alive_connection(tmp_path, minilm_tokenizer):
    svc = hash_service(tmp_path, minilm_tokenizer, read_timeout_s=30)
    try:
        sock = socket.create_connection(("127.0.0.1", _port(svc)), timeout=10)
        sock.sendall(_request({"query": "open a file", "k": 1}, "keep-alive"))
        assert _read_answer(sock, bytearray())[0] == 200
        start = time.perf_counter()
        svc.stop(grace_s=5.0)
        seconds = time.perf_counter() - start
        assert _eof_after(sock, 10)[0] == b""  # woken and closed by stop()
        sock.close()
    finally:
        svc.stop()
    assert seconds < 2.5  # not the 5 s grace: the idle connection had no request in flight
    servers = [s for s in svc.exported_spans() if s.kind == SpanKind.SERVER]
    assert [s.attributes["http.status_code"] for s in servers] == [200]


def test_each_request_on_a_kept_connection_has_its_own_deadline(service):
    """Three requests 0.6 read timeouts apart: together past the connection's first deadline,
    each within its own (counted from the answer before it)."""
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        buffered, statuses = bytearray(), []
        for q in ("open a file", "logging handler", "sleep seconds"):
            sock.sendall(_request({"query": q, "k": 1}, "keep-alive"))
            statuses.append(_read_answer(sock, buffered)[0])
            time.sleep(0.6 * TIMEOUT_S)
    assert statuses == [200, 200, 200]


def test_stop_waits_for_a_request_in_flight_on_a_kept_connection(tmp_path, minilm_tokenizer):
    """The second request on a kept connection is busy, not idle: stop() gives it its grace."""
    svc = hash_service(tmp_path, minilm_tokenizer, read_timeout_s=30, fault_injection=True)
    try:
        with socket.create_connection(("127.0.0.1", _port(svc)), timeout=10) as sock:
            buffered = bytearray()
            sock.sendall(_request({"query": "open a file", "k": 1}, "keep-alive"))
            assert _read_answer(sock, buffered)[0] == 200
            sock.sendall(_request({"query": "open a file", "k": 1, "delay_s": 1.0}, "keep-alive"))
            time.sleep(0.3)  # read and delaying
            start = time.perf_counter()
            svc.stop(grace_s=5.0)
            seconds = time.perf_counter() - start
            status, _, _ = _read_answer(sock, buffered)
    finally:
        svc.stop()
    assert status == 200
    assert 0.4 <= seconds < 2.5  # waited for the delay's end (about 0.7 s), not cut, not 5 s


class _GoneWriter:
    """A handler's ``wfile`` whose client is gone: writes are buffered, the send fails."""

    def __init__(self, wfile):
        self.wfile, self.closed = wfile, False

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def close(self) -> None:
        self.closed = True
        self.wfile.close()


def test_the_answer_is_sent_inside_its_span(service, monkeypatch):
    """The answer's one send happens in the request's span: a client gone at that send is
    marked there (``client.disconnected``), and the service goes on answering others."""
    from jaxparadigm.retrieval.service import http_handler

    setup = http_handler._Handler.setup

    def gone_setup(self):
        setup(self)
        self.wfile = _GoneWriter(self.wfile)

    before = len(service.exported_spans())
    with monkeypatch.context() as patch:
        patch.setattr(http_handler._Handler, "setup", gone_setup)
        with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
            sock.sendall(_request({"query": "open a file", "k": 1}, "keep-alive"))
            assert _eof_after(sock, 10)[0] == b""  # nothing was sent
    spans = [s for s in service.exported_spans()[before:] if s.name == "POST /search"]
    assert [s.attributes.get("client.disconnected") for s in spans] == [True]
    with socket.create_connection(("127.0.0.1", _port(service)), timeout=10) as sock:
        sock.sendall(_request({"query": "open a file", "k": 1}, None))
        assert _read_answer(sock, bytearray())[0] == 200
