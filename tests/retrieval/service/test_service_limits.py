"""SearchService under malformed, slow and hostile requests (issue 24 #4, #17): every request gets
an HTTP answer, 200 or 4xx, within a bounded time; stop() is bounded while a client holds a socket.
Requests are written on raw sockets, so nothing in a client library tidies them up."""

import json
import re
import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import SemanticIndex
from jaxparadigm.retrieval.service.http_service import MAX_JSON_DEPTH, SearchService, json_depth

DOCS = ["index design guide", "python memory management", "sql execution plan analysis"]
TIMEOUT_S = 0.3


@pytest.fixture(scope="module")
def service(encoder):
    svc = SearchService(SemanticIndex(encoder).add(DOCS), read_timeout_s=TIMEOUT_S).start()
    yield svc
    svc.stop()


def _port(svc) -> int:
    return int(svc.url.split(":")[2].split("/")[0])


def _exchange(svc, data: bytes, hold_open: bool = True) -> tuple[int | None, dict | None, float]:
    """Send ``data``; return (status, JSON body, seconds) of the answer, (None, None, s) if the
    connection closed without one. ``hold_open``: the client does not close its side (a slow or
    stalled client); otherwise it half-closes after sending."""
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", _port(svc)), timeout=10) as sock:
        try:
            sock.sendall(data)
            if not hold_open:
                sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed before taking everything
            pass
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
    raw = b"".join(chunks)
    seconds = time.perf_counter() - start
    if not raw.startswith(b"HTTP/1."):
        return None, None, seconds
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    is_json = b"application/json" in head.lower()  # GET / answers the search page (HTML)
    return status, json.loads(body) if body and is_json else None, seconds


def _post(body: bytes, length: str | None = None, method: str = "POST", path="/search") -> bytes:
    length = str(len(body)) if length is None else length
    return (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode() + body
    )


@pytest.mark.parametrize(
    "request_bytes, status, match",
    [
        (_post(b'{"query": "x"}', "-1"), 400, "Content-Length: got '-1'"),
        (_post(b'{"query": "x"}', "abc"), 400, "Content-Length: got 'abc'"),
        (b"POST /search HTTP/1.1\r\nHost: x\r\n\r\n", 411, "Content-Length: required"),
        (_post(b"x" * (1 << 20)), 413, "body: 1048576 bytes, expected at most 65536"),
        (_post(b'{"query": "x"}', method="GET"), 405, "method 'GET'"),
        (_post(b'{"query": "x"}', method="BREW"), 405, "method 'BREW'"),
        (_post(b'{"query": "x"}', path="/other"), 404, "path: got '/other'"),
        (_post(b"[" * 100_000 + b"]" * 100_000, "200000"), 413, "body: 200000 bytes"),
        (_post(b'{"q": ' * 5000 + b"1" + b"}" * 5000), 400, "nested deeper than"),
        (_post(b'{"query": "\\ud800"}'), 400, r"query\[0\] '\\ud800': not UTF-8 text"),
        (_post(b'{"query": "x", "k": ' + b"9" * 5000 + b"}"), 400, "body: not a JSON object"),
    ],
)
def test_malformed_requests_get_a_4xx_answer(service, request_bytes, status, match):
    """Before: `Content-Length: abc`, a lone surrogate or deep nesting closed the connection with no
    answer (a server traceback); -1 was never answered; 1 MB got 400 'Unterminated string'."""
    got, payload, seconds = _exchange(service, request_bytes, hold_open=False)
    assert got == status and seconds < 5
    assert re.search(match, payload["error"]), payload


def test_a_query_the_cli_refuses_is_refused_with_the_cli_message(service, encoder):
    """U+200B alone was served (a meaningless embedding); the CLI refuses it."""
    query = "\u200b\u200b"
    with pytest.raises(InputError) as cli:
        encoder.check_texts([query], "query")
    got, payload, _ = _exchange(service, _post(json.dumps({"query": query}).encode()))
    assert (got, payload) == (400, {"error": str(cli.value)})
    got, payload, _ = _exchange(service, _post(b'{"query": "memory", "k": 1}'))
    assert got == 200 and payload["hits"][0][0] == 1  # "python memory management"


def test_half_sent_requests_time_out_with_408(service):
    """Before: a half-sent body was never answered (no read timeout)."""
    got, payload, seconds = _exchange(service, _post(b'{"query": "x"}', "100"))
    assert got == 408 and "body: not received within 0.3 s" in payload["error"]
    assert TIMEOUT_S <= seconds < TIMEOUT_S + 3
    got, payload, seconds = _exchange(service, b"POST /search HTTP/1.1\r\nHost: x\r\n")
    assert got == 408 and "headers timed out" in payload["error"] and seconds < TIMEOUT_S + 3


def test_stop_is_bounded_while_a_client_holds_its_socket(encoder):
    """Before: stop() blocked as long as a client held a half-sent request open."""
    svc = SearchService(SemanticIndex(encoder).add(DOCS), read_timeout_s=600).start()
    port = _port(svc)
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    held[0].sendall(_post(b'{"query"', "50"))  # a half-sent body
    held[1].sendall(b"POST /search HTTP/1.1\r\n")  # half-sent headers
    time.sleep(0.2)
    start = time.perf_counter()
    svc.stop()
    assert time.perf_counter() - start < 3.0
    held[0].settimeout(5)
    assert held[0].recv(100).startswith(b"HTTP/1.0 400")  # the client is still answered
    for sock in held:
        sock.close()
    spans = svc.exported_spans()  # both requests ended and were traced (answered 400 and 411)
    assert sorted(s.attributes["http.status_code"] for s in spans) == [400, 411]


def test_json_depth_counts_outside_strings():
    assert json_depth(b'{"a": [1, {"b": "[[[{{"}]}', 10) == 3
    assert json_depth(b'"\\"[["', 10) == 0
    assert json_depth(b"[" * 1000, MAX_JSON_DEPTH) == MAX_JSON_DEPTH + 1  # stops counting


# --- generated requests --------------------------------------------------------------------------

_methods = st.one_of(st.sampled_from(["POST", "GET", "PUT", "DELETE", "HEAD", "OPTIONS"]),
                     st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=8))  # fmt: skip
_header_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
_headers = st.dictionaries(
    st.sampled_from(["X-Request-Id", "traceparent", "Content-Type", "Accept", "X-Junk"]),
    _header_values,
    max_size=3,
)
_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 200), st.floats(), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner,
                                                                          max_size=3)),
    max_leaves=10,
)  # fmt: skip
_queries = st.one_of(
    st.sampled_from(["memory", "sql plan", "index"]),
    st.text(max_size=12),  # any unicode, incl. lone surrogates, U+2028, U+200B
)
_bodies = st.one_of(
    st.builds(lambda q, k: {"query": q, "k": k}, _queries, st.integers(-2, 120)),
    st.builds(lambda q: {"query": q}, _queries),
    _json_values,
).map(lambda v: json.dumps(v).encode())
_nested = st.integers(1, 3000).map(lambda n: b'{"query": ' + b"[" * n + b"]" * n + b"}")
_raw_bodies = st.one_of(_bodies, _nested, st.binary(max_size=64))


@st.composite
def _requests(draw) -> bytes:
    body = draw(_raw_bodies)
    length = draw(st.one_of(
        st.just(str(len(body))),  # mostly right
        st.just(str(len(body))),
        st.integers(-5, len(body)).map(str),  # short or negative
        st.text("0123456789abc -+x", min_size=0, max_size=6),
        st.none(),  # missing
    ))  # fmt: skip
    lines = [f"{draw(_methods)} {draw(st.sampled_from(['/search', '/', '/x?y']))} HTTP/1.1",
             "Host: 127.0.0.1"]  # fmt: skip
    lines += [f"{k}: {v}" for k, v in draw(_headers).items()]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request_bytes=_requests(), hold_open=st.booleans())
def test_every_generated_request_gets_200_or_4xx_in_bounded_time(service, request_bytes, hold_open):
    status, payload, seconds = _exchange(service, request_bytes, hold_open)
    assert status is not None, "the connection closed without an answer"
    assert status == 200 or 400 <= status < 500, (status, payload)
    assert seconds < TIMEOUT_S + 5
    assert payload is None or ("hits" in payload) == (status == 200)
