"""serve at its edges (issue 39): a header value in another case, and a client gone before its
answer, recorded on the request's span.

Each test names the boundary it pins; each killed a one-line mutant of ``http_handler.py`` that
the earlier tests let through (``make mutation MODULE=retrieval.service``).
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from jaxparadigm.retrieval.service import http_handler
from tests.retrieval.service.hash_service import hash_service


@pytest.fixture(scope="module")
def service(tmp_path_factory, minilm_tokenizer):
    svc = hash_service(tmp_path_factory.mktemp("svc"), minilm_tokenizer)
    yield svc
    svc.stop()


def _raw(svc, request: bytes) -> bytes:
    port = int(svc.url.split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        out = []
        while data := sock.recv(65536):
            out.append(data)
    return b"".join(out)


@pytest.mark.parametrize("value", ["chunked", "Chunked", "CHUNKED", "gzip, chunked"])
def test_a_chunked_body_is_refused_whatever_the_case(service, value):
    """Boundary: header values are case-insensitive (RFC 9110): ``Chunked`` is chunked."""
    head = f"POST /search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {value}\r\n\r\n"
    raw = _raw(service, head.encode() + b"5\r\nhello\r\n0\r\n\r\n")
    status_line, _, rest = raw.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.0 411") or status_line.startswith(b"HTTP/1.1 411")
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert body == {"error": "Content-Length: required (chunked bodies are not accepted)"}


def test_a_client_gone_before_its_answer_is_marked_on_the_span(service, monkeypatch):
    """The write of the answer fails (the client gave up): the request's span says so, and the
    service goes on answering others."""

    def gone(self, status, payload, extra=None):
        raise BrokenPipeError(32, "Broken pipe")

    before = len(service.exported_spans())
    with monkeypatch.context() as patch:
        patch.setattr(http_handler._Handler, "_reply", gone)
        body = json.dumps({"query": "open a file", "k": 1}).encode()
        head = f"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
        assert _raw(service, head.encode() + body) == b""  # no answer was written
    spans = [s for s in service.exported_spans()[before:] if s.name == "POST /search"]
    assert len(spans) == 1
    assert spans[0].attributes["client.disconnected"] is True
    assert spans[0].attributes["http.status_code"] == 200
    head = f"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    assert _raw(service, head.encode() + body).startswith(b"HTTP/1.")


def test_stop_after_answered_requests_does_not_wait_out_the_grace(tmp_path, minilm_tokenizer):
    """Each answered connection leaves the server's open set when it is closed: ``stop`` then
    has nothing in flight to wait for (a connection kept in the set would hold it the whole
    ``grace_s``)."""
    svc = hash_service(tmp_path, minilm_tokenizer)
    body = json.dumps({"query": "open a file", "k": 1}).encode()
    head = f"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    for _ in range(3):
        assert _raw(svc, head.encode() + body).startswith(b"HTTP/1.0 200")
    start = time.monotonic()
    svc.stop(grace_s=30.0)
    assert time.monotonic() - start < 10.0
