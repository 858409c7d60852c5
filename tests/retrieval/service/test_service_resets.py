"""Issue 47: clients that reset their connection (SO_LINGER 0) made ``serve`` print a
socketserver traceback for each (100 for 150 such clients); a reset now ends that request
quietly, and the service goes on answering. Failed on 9942837."""

from __future__ import annotations

import json
import socket
import struct
import sys
import time
import urllib.request

import pytest

from jaxparadigm.retrieval.service.http_handler import _Server
from tests.retrieval.service.hash_service import hash_service

PARTIAL = [
    b"",  # connected, nothing sent
    b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Le",  # cut in the headers
    b'POST /search HTTP/1.1\r\nContent-Length: 40\r\n\r\n{"query": ',  # cut in the body
    b"GET / HTTP/1.1\r\n\r\n",  # a whole request, reset before the page is read
]


def _reset(port: int, data: bytes) -> None:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if data:
        sock.sendall(data)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # linger 0: an RST, not a FIN


def test_clients_that_reset_leave_no_traceback_and_service_keeps_answering(
    tmp_path, minilm_tokenizer, capfd
):
    svc = hash_service(tmp_path, minilm_tokenizer, read_timeout_s=2.0)
    port = int(svc.url.split(":")[2].split("/")[0])
    try:
        capfd.readouterr()
        for _ in range(10):
            for data in PARTIAL:
                _reset(port, data)
        time.sleep(0.3)  # the request threads meet the resets
        body = json.dumps({"query": "cats", "k": 1}).encode()
        request = urllib.request.Request(svc.url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200 and len(json.load(answer)["hits"]) == 1
    finally:
        svc.stop()  # joins every request thread: their output is written by now
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err[:2000]


@pytest.mark.parametrize("exc", [ConnectionResetError, BrokenPipeError, ConnectionAbortedError])
def test_only_a_client_gone_away_is_quiet_a_bug_keeps_its_traceback(exc, capsys):
    server = _Server.__new__(_Server)  # handle_error reads no state
    try:
        raise exc(104, "gone")
    except OSError:
        server.handle_error(None, ("127.0.0.1", 1))
    assert capsys.readouterr().err == ""
    try:
        raise RuntimeError("a bug in a handler")
    except RuntimeError:
        server.handle_error(None, ("127.0.0.1", 1))
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug in a handler" in err
    assert sys.exc_info() == (None, None, None)
