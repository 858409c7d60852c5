"""The HTTP side of a search service: socket, request reading and answers (C5.2).

The service is :class:`~jaxparadigm.retrieval.service.http_service.SearchService`. Every request
gets an HTTP answer, 200 or 4xx, never a dropped connection or a 5xx for what the client sent; a
service that cannot serve (its request batcher closed,
:class:`~jaxparadigm.retrieval.service.request_batcher.ServiceUnavailable`) answers 503, a bug 500:

* the listening socket has a real backlog (:data:`LISTEN_BACKLOG` = 128 pending connections; the
  standard library's 5 reset clients at 16 concurrent ones) and is bound by :func:`bind_listener`,
  which a caller can run *before* loading a model: a port in use is one :class:`InputError`;
* the whole request (request line, headers and body) must arrive within ``read_timeout_s`` of the
  connection's start: each socket read waits at most the time left::

      timeout(read) = deadline - now,   deadline = accepted_at + read_timeout_s,

  so a client sending one byte every 2 s cannot hold a request open (408, then close);
* ``Content-Length`` missing or the body chunked: 411; not one decimal integer (``abc``, ``-1``):
  400; over ``max_body_bytes``: 413, answered before reading the body;
* the body itself is read by :mod:`~jaxparadigm.retrieval.service.search_request`: not UTF-8
  JSON, nested deeper than ``MAX_JSON_DEPTH``, or a bad field: 400;
* a protocol version other than HTTP/1.x (``HTTP/9.9``, the HTTP/2 preface ``PRI * HTTP/2.0``) is
  400, not the standard library's 505; an HTTP/0.9 request line is answered with a status line;
* ``GET /`` is the search page (:mod:`~jaxparadigm.retrieval.service.search_page`), served with a
  Content-Security-Policy that allows no request but to this server; ``POST /search`` is the
  JSON API; any other method is 405 (the stdlib answers 501), any other path 404.

A client that resets its connection (or closes it before reading the answer) ends that request
quietly: a :class:`ConnectionError` is no server error, and prints no traceback.

Connections. An answer is one write (headers and body leave together). A request that asks for it
(``Connection: keep-alive``, as browsers and ``requests`` send it) and is answered 200 keeps its
connection open for the next one (the answer says ``Connection: keep-alive``, ``Keep-Alive:
timeout=T``; the status line stays ``HTTP/1.0``, whose keep-alive extension this is): each later
request must arrive within ``read_timeout_s`` of the previous answer, and a connection on which no
byte of one arrives by then is closed without an answer. Every other answer, and any answer that
is not 200, says ``Connection: close``; the connection is then closed gracefully (the server stops
sending, then discards what the client still sends for at most ``LINGER_S``), so a refused upload
still reads its 413. Measured (``bench serve --keep-alive`` against one connection per request,
pydoc index, 2-core AMD EPYC): see benchmarks/RESULTS.md, issue 49.
"""

from __future__ import annotations

import errno
import io
import json
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from jaxparadigm.errors import GroupFailed, InputError, require_int
from jaxparadigm.retrieval.service.request_batcher import ServiceUnavailable
from jaxparadigm.retrieval.service.search_page import PAGE_CSP, SEARCH_PAGE
from jaxparadigm.retrieval.service.search_request import short_repr


class _Service(Protocol):
    """What the handler uses of a
    :class:`~jaxparadigm.retrieval.service.http_service.SearchService`."""

    tracer: Tracer
    read_timeout_s: float
    max_body_bytes: int

    def handle(self, path: str, body: bytes) -> tuple[int, dict]: ...


__all__ = ["HOST", "LINGER_S", "LISTEN_BACKLOG", "bind_listener"]

#: the only address the service binds (loopback)
HOST = "127.0.0.1"
#: after answering: at most this long discarding what the client still sends
LINGER_S = 1.0
#: the least time an answer's write may wait for the client to read it
WRITE_TIMEOUT_S = 5.0
#: pending connections the kernel queues before the server accepts them
LISTEN_BACKLOG = 128


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening (backlog :data:`LISTEN_BACKLOG`).

    ``port`` 0 picks a free port. A port in use (or not permitted) is one :class:`InputError`
    naming it, raised before anything slow (a model load) has happened.
    """
    port = require_int("port", port, 0, 65535)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"--port {port}: already in use on {host} (another serve?); pick another "
                "--port, or --port 0 for a free one"
            ) from None
        raise InputError(f"--port {port}: cannot listen on {host} ({exc.strerror})") from None
    return sock


class _DeadlineSocketReader(io.RawIOBase):
    """A socket's read side whose every read waits at most until ``deadline`` (monotonic);
    ``received``: the bytes read since it was last set."""

    def __init__(self, sock: socket.socket, deadline: float):
        super().__init__()
        self.sock, self.deadline, self.received = sock, deadline, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request deadline passed")
        self.sock.settimeout(left)
        got = self.sock.recv_into(buffer)
        self.received += got
        return got


class _Refused(Exception):
    """An HTTP status other than 200 for a request, with its message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _keeps_alive(headers) -> bool:
    """Whether the request's ``Connection`` options hold ``keep-alive`` and not ``close``."""
    options = {o.strip().lower() for h in headers.get_all("Connection") or [] for o in h.split(",")}
    return "keep-alive" in options and "close" not in options


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    wbufsize = -1  # buffered: an answer's headers and body leave in one send (_send flushes)
    disable_nagle_algorithm = True  # no answer waits for the ACK of the one before

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        del format, args  # the spans are the log

    def setup(self):
        super().setup()
        deadline = time.monotonic() + self.server.service.read_timeout_s
        self.reader = _DeadlineSocketReader(self.connection, deadline)
        self.rfile = self.read_buffer = io.BufferedReader(self.reader)
        self.answered = 0  # requests answered on this connection

    def handle_one_request(self):
        """The stdlib's, except that a timed-out read is answered (408) instead of dropped (a
        kept-alive connection with no byte of a next request is closed quietly), ``GET /`` is the
        page and every other method but POST gets 405 (stdlib: 501)."""
        # None until parsed, as in the stdlib's own parse_request (typeshed types it str).
        self.command = None  # type: ignore[assignment]
        self.request_version, self.requestline = "HTTP/1.0", ""
        if self.answered:  # kept alive: the next request has read_timeout_s from now
            self.reader.received = self._buffered()
            self.reader.deadline = time.monotonic() + self.server.service.read_timeout_s
            self.server.set_idle(self.connection, True)
        try:
            try:
                self.raw_requestline = self.rfile.readline(65537)
            finally:
                self.server.set_idle(self.connection, False)
            if len(self.raw_requestline) > 65536:
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            version_1x = self.request_version.startswith("HTTP/1.")
            self.close_connection = not (version_1x and _keeps_alive(self.headers))
            if self.command in ("GET", "HEAD") and self.path.split("?")[0] == "/":
                self._page()
            elif self.command != "POST":
                self.send_error(HTTPStatus.METHOD_NOT_ALLOWED, f"method {short_repr(self.command)}")
                return
            else:
                self.do_POST()
            self.wfile.flush()
            self.answered += 1
        except TimeoutError:
            if self.answered and not self.reader.received:  # an idle kept-alive connection
                self.close_connection = True
                return
            self.send_error(HTTPStatus.REQUEST_TIMEOUT, "request line or headers timed out")

    def _buffered(self) -> int:
        """Bytes of the next request read already (with the one before, pipelined), without
        waiting: the peek's socket read, needed only when none are, times out at once."""
        self.reader.deadline = time.monotonic()
        try:
            return len(self.read_buffer.peek(1))
        except TimeoutError:
            return 0

    def send_error(self, code, message=None, explain=None):
        """A JSON error answer ``{"error": ...}``; the connection is closed after it. The stdlib's
        505 for an unknown HTTP version is a client error here: 400 naming the version."""
        del explain
        self.close_connection = True
        if code == HTTPStatus.HTTP_VERSION_NOT_SUPPORTED:
            version = self.requestline.split()[-1] if self.requestline.split() else ""
            code = HTTPStatus.BAD_REQUEST
            message = f"version: got {short_repr(version)}, expected HTTP/1.0 or HTTP/1.1"
        text = message or HTTPStatus(code).phrase
        try:
            allow = "GET, HEAD" if getattr(self, "path", None) == "/" else "POST"
            self._reply(code, {"error": text}, extra={"Allow": allow} if code == 405 else {})
        except OSError:
            pass

    def _page(self) -> None:
        """The search page (``GET /``; ``HEAD /`` its headers), traced as a server span."""
        with self.server.service.tracer.start_as_current_span(
            "GET /", kind=SpanKind.SERVER
        ) as span:
            span.set_attribute("http.status_code", 200)
            data = SEARCH_PAGE.encode()
            body = b"" if self.command == "HEAD" else data
            headers = {"Content-Security-Policy": PAGE_CSP}
            self._send(200, body, "text/html; charset=utf-8", headers, length=len(data))

    def do_POST(self):
        svc = self.server.service
        ctx = TraceContextTextMapPropagator().extract(
            {k.lower(): v for k, v in self.headers.items()}
        )
        with svc.tracer.start_as_current_span(
            "POST /search", context=ctx, kind=SpanKind.SERVER
        ) as span:
            span.set_attribute("request.id", self.headers.get("X-Request-Id", ""))
            try:
                status, payload = svc.handle(self.path, self._body(svc))
            except _Refused as exc:  # a 4xx: closed below, as every answer but 200
                status, payload = exc.status, {"error": str(exc)}
            except (ServiceUnavailable, GroupFailed) as exc:  # not served: the client may retry
                span.record_exception(exc)
                status, payload = 503, {"error": str(exc)}
            except Exception as exc:  # a bug: still an answer, recorded on the span
                span.record_exception(exc)
                status, payload = 500, {"error": f"internal error ({type(exc).__name__})"}
            span.set_attribute("http.status_code", status)
            if status != 200:
                self.close_connection = True
                span.set_status(Status(StatusCode.ERROR, payload["error"]))
            try:
                self._reply(status, payload)
            except OSError:  # the client gave up (timed out) before the answer
                span.set_attribute("client.disconnected", True)

    def _body(self, svc: _Service) -> bytes:
        """The request body, read only when its declared length is a number within the limit."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise _Refused(411, "Content-Length: required (chunked bodies are not accepted)")
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            raise _Refused(411, "Content-Length: required")
        text = lengths[0].strip()
        if len(set(lengths)) > 1 or not text.isascii() or not text.isdigit():
            raise _Refused(
                400,
                f"Content-Length: got {short_repr(', '.join(lengths))}, expected one integer >= 0",
            )
        length = int(text)
        if length > svc.max_body_bytes:
            raise _Refused(413, f"body: {length} bytes, expected at most {svc.max_body_bytes}")
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            raise _Refused(
                408, f"body: not received within {svc.read_timeout_s:g} s ({length} bytes declared)"
            ) from None
        if len(body) < length:
            raise _Refused(400, f"body: got {len(body)} of the {length} bytes declared")
        return body

    def _reply(self, status: int, payload: dict, extra: dict | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", extra or {})

    def _send(
        self, status: int, data: bytes, content_type: str, extra: dict, length: int | None = None
    ) -> None:
        if self.request_version in ("HTTP/0.9", "", None):  # an answer with a status line
            self.request_version = "HTTP/1.0"
        # the reads may have left a tiny timeout on the socket: writing gets its own bound
        self.connection.settimeout(max(self.server.service.read_timeout_s, WRITE_TIMEOUT_S))
        self.send_response(status)
        for key, value in extra.items():
            self.send_header(key, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data) if length is None else length))
        if self.close_connection:
            self.send_header("Connection", "close")
        else:
            self.send_header("Connection", "keep-alive")
            self.send_header("Keep-Alive", f"timeout={int(self.server.service.read_timeout_s)}")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()  # one send; a client gone shows here, inside the caller's span


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the request threads: every span has ended
    block_on_close = True
    request_queue_size = LISTEN_BACKLOG
    service: _Service

    def __init__(self, listener: socket.socket, service: _Service):
        self.open_requests: set[socket.socket] = set()  # every open connection
        self.idle: set[socket.socket] = set()  # those kept alive, waiting for a next request
        self.requests_lock = threading.Lock()
        self.service = service
        super().__init__(listener.getsockname(), _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = listener  # bound and listening already (bind_listener)
        self.server_address = listener.getsockname()

    def handle_error(self, request, client_address):
        """A client that went away (reset, broken pipe, aborted: :class:`ConnectionError`) while
        its request was read or answered ends its connection quietly -- there is no one to
        answer and nothing wrong with the server; any other exception is a bug and keeps the
        standard library's traceback on stderr."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def process_request(self, request, client_address):
        with self.requests_lock:
            self.open_requests.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        """Close gracefully: stop sending, then discard what the client still sends (at most
        ``LINGER_S``), so closing never resets a connection whose answer is unread."""
        try:
            request.shutdown(socket.SHUT_WR)
            request.settimeout(0.1)
            deadline = time.monotonic() + LINGER_S
            while time.monotonic() < deadline and request.recv(65536):
                pass
        except OSError:
            pass
        with self.requests_lock:
            self.open_requests.discard(request)
            self.idle.discard(request)
        self.close_request(request)

    def set_idle(self, request: socket.socket, idle: bool) -> None:
        """Mark a connection as waiting for its next request (or not)."""
        with self.requests_lock:
            (self.idle.add if idle else self.idle.discard)(request)

    def busy(self) -> bool:
        """Whether a connection is reading or answering a request (not idle between two)."""
        with self.requests_lock:
            return bool(self.open_requests - self.idle)

    def wake_readers(self) -> None:
        """Shut the read side of every open connection: a blocked read returns EOF at once."""
        with self.requests_lock:
            requests = list(self.open_requests)
        for request in requests:
            try:
                request.shutdown(socket.SHUT_RD)
            except OSError:
                pass
