"""A traced HTTP search service over an in-memory or a folder index on 127.0.0.1 (C5.2).

``SearchService(index)`` (a :class:`SemanticIndex`, or an
:class:`~jaxparadigm.retrieval.index_searcher.IndexSearcher` with ``encoder=``) serves ``POST /search`` with a JSON body ``{"query": str, "k": int}`` and
answers ``{"hits": [[doc, score], ...]}`` (the top ``min(k, len(index))``; 200) or ``{"error": ...}``
(4xx). It runs a stdlib ``ThreadingHTTPServer`` on a free port (``start()`` / ``stop()``, or
``with``), one thread per request. Every request is traced with the OpenTelemetry SDK into an
in-memory exporter:

    server span "POST /search" (child of the caller's span when a W3C ``traceparent`` header is sent;
    attributes request.id from ``X-Request-Id``, http.status_code)
      ├─ "parse"           JSON body -> (query, k); records the error of a malformed request
      ├─ "injected_delay"  only with ``fault_injection=True`` and ``"delay_s"`` in the body
      ├─ "tokenize"        word pieces of the query (attribute tokens)
      ├─ "encode"          the MiniLM forward (L2-normalised embedding)
      └─ "search"          exact top-k: ``index.search_vectors``, the package's one engine
                           (:class:`~jaxparadigm.retrieval.vector_search.VectorSearcher`)

Limits (issue 24): every request gets an HTTP answer, 200 or 4xx, never a dropped connection --

* a client silent for ``read_timeout_s`` (half-sent request line, headers or body): 408;
* ``Content-Length`` missing or chunked: 411; not a decimal integer (``abc``, ``-1``): 400; over
  ``max_body_bytes``: 413, answered before reading the body;
* a method other than POST: 405; a path other than ``/search``: 404;
* a body that is not UTF-8 JSON, is nested deeper than ``MAX_JSON_DEPTH``, or has a bad field: 400;
  the query is checked by the CLI's own validator (``SentenceEncoder.check_texts``): a query the
  tokenizer sees as nothing (whitespace, U+200B ...) or holding a lone surrogate is refused (400).

After the answer the connection is closed gracefully (the server stops sending, then discards what
the client still sends for at most ``LINGER_S``), so a refused upload still reads its 413.

``stop()`` is bounded: it stops accepting, gives in-flight requests ``grace_s`` to finish, then
shuts the read side of every connection still open (a client holding its socket gets EOF) and ends
any injected delay, and joins every request thread -- so when it returns every span has ended and
been exported (``SimpleSpanProcessor`` exports on span end). ``exported_spans()`` returns them.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.index_searcher import IndexSearcher
from jaxparadigm.retrieval.memory_index import SemanticIndex
from jaxparadigm.retrieval.search_request import (
    DEFAULT_K,
    MAX_BODY_BYTES,
    MAX_JSON_DEPTH,
    MAX_K,
    json_depth,
    parse_search_request,
    short_repr,
)
from jaxparadigm.retrieval.sentence_encoder import SentenceEncoder

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_K",
    "SearchService",
    "json_depth",
    "parse_search_request",
]

HOST = "127.0.0.1"
READ_TIMEOUT_S = 5.0
LINGER_S = 1.0  # after answering: at most this long discarding what the client still sends
_CHECK_LOCK = threading.Lock()  # warnings.catch_warnings is process-wide


class _Refused(Exception):
    """An HTTP status other than 200 for a request, with its message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        del format, args  # the spans are the log

    def setup(self):
        # typeshed declares StreamRequestHandler.timeout a ClassVar, but setup() reads it per
        # instance: one handler's value is the socket timeout of every read.
        self.timeout = self.server.service.read_timeout_s  # type: ignore[misc]
        super().setup()

    def handle_one_request(self):
        """The stdlib's, except that a timed-out read is answered (408) instead of dropped and
        every method but POST gets 405 (the stdlib answers 501, a server error)."""
        # None until parsed, as in the stdlib's own parse_request (typeshed types it str).
        self.command = None  # type: ignore[assignment]
        self.request_version, self.requestline = "HTTP/1.0", ""
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            if self.command != "POST":
                self.send_error(HTTPStatus.METHOD_NOT_ALLOWED, f"method {short_repr(self.command)}")
                return
            self.do_POST()
            self.wfile.flush()
        except TimeoutError:
            self.send_error(HTTPStatus.REQUEST_TIMEOUT, "request line or headers timed out")

    def send_error(self, code, message=None, explain=None):
        """A JSON error answer ``{"error": ...}``; the connection is closed after it."""
        del explain
        self.close_connection = True
        if self.request_version in ("HTTP/0.9", "", None):  # an answer with a status line
            self.request_version = "HTTP/1.0"
        text = message or HTTPStatus(code).phrase
        try:
            self._reply(code, {"error": text}, extra={"Allow": "POST"} if code == 405 else {})
        except OSError:
            pass

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
            except _Refused as exc:
                status, payload = exc.status, {"error": str(exc)}
                self.close_connection = True
            except Exception as exc:  # a bug: still an answer, recorded on the span
                span.record_exception(exc)
                status, payload = 500, {"error": f"internal error ({type(exc).__name__})"}
            span.set_attribute("http.status_code", status)
            if status != 200:
                span.set_status(Status(StatusCode.ERROR, payload["error"]))
            try:
                self._reply(status, payload)
            except OSError:  # the client gave up (timed out) before the answer
                span.set_attribute("client.disconnected", True)

    def _body(self, svc: SearchService) -> bytes:
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
        data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the request threads: every span has ended
    block_on_close = True
    service: SearchService

    def __init__(self, *args, **kwargs):
        self.open_requests: set[socket.socket] = set()
        self.requests_lock = threading.Lock()
        super().__init__(*args, **kwargs)

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
        self.close_request(request)

    def wake_readers(self) -> None:
        """Shut the read side of every open connection: a blocked read returns EOF at once."""
        with self.requests_lock:
            requests = list(self.open_requests)
        for request in requests:
            try:
                request.shutdown(socket.SHUT_RD)
            except OSError:
                pass


class SearchService:
    """``POST /search`` over ``index`` on ``127.0.0.1:port`` (0: a free port), traced (C5.2).

    ``index``: a :class:`SemanticIndex` (its own encoder), or an :class:`IndexSearcher` with the
    ``encoder`` it was built with (``IndexSearcher.check_encoder``); both answer through
    ``search_vectors`` (the one search engine, ties to the lower row).
    ``read_timeout_s``: how long a read of the request may wait for the client (408 after);
    ``max_body_bytes``: the largest accepted body (413 beyond, unread); ``passage_of``: when given,
    ``row -> {"source", "start", "end", "text"}``, and each answer also carries ``"passages"``,
    one per hit (what ``jaxparadigm serve --index`` shows of a persistent index).
    """

    def __init__(
        self,
        index: SemanticIndex | IndexSearcher,
        port: int = 0,
        fault_injection: bool = False,
        *,
        read_timeout_s: float = READ_TIMEOUT_S,
        max_body_bytes: int = MAX_BODY_BYTES,
        passage_of: Callable[[int], Mapping[str, object]] | None = None,
        encoder: SentenceEncoder | None = None,
    ) -> None:
        if isinstance(index, SemanticIndex):
            if encoder is not None and encoder is not index.encoder:
                raise TypeError(
                    "encoder: got another encoder, expected None (a SemanticIndex has its own)"
                )
            encoder = index.encoder
        elif isinstance(index, IndexSearcher):
            if not isinstance(encoder, SentenceEncoder):
                raise TypeError(
                    f"encoder: got {type(encoder).__name__}, expected the SentenceEncoder the "
                    "index was built with (an IndexSearcher holds no encoder)"
                )
            index.check_encoder(encoder)
        else:
            raise TypeError(
                f"index: got {type(index).__name__}, expected a SemanticIndex or an IndexSearcher"
            )
        require_int("port", port, 0, 65535)
        if (
            isinstance(read_timeout_s, bool)
            or not isinstance(read_timeout_s, (int, float))
            or not (0 < read_timeout_s <= 3600)
        ):
            raise InputError(
                f"read_timeout_s: got {read_timeout_s!r}, expected seconds in (0, 3600]"
            )
        require_int("max_body_bytes", max_body_bytes, 1)
        if not len(index):
            raise InputError("index: empty; add documents before serving it")
        self.index = index
        self.encoder: SentenceEncoder = encoder
        self.port = port
        self.fault_injection = fault_injection
        self.read_timeout_s = float(read_timeout_s)
        self.max_body_bytes = max_body_bytes
        self.passage_of = passage_of
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("jaxparadigm.retrieval.http_service")
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("SearchService: not started")
        return f"http://{HOST}:{self._server.server_address[1]}/search"

    def start(self) -> SearchService:
        """Compile the search for ``k = DEFAULT_K``, bind 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            raise RuntimeError("SearchService: already started")
        # compile the search for the default k now: a request's client would wait for it
        self.index.search_vectors(np.zeros((1, self.encoder.dim), np.float32), DEFAULT_K)
        self._stopping.clear()
        self._server = _Server((HOST, self.port), _Handler)
        self._server.service = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop accepting; give in-flight requests ``grace_s``; then wake every read still waiting
        on a client (EOF) and end injected delays; join every request thread (their spans end) and
        close the socket. Bounded: about ``grace_s + LINGER_S`` plus one query's compute."""
        if self._server is None:
            return
        server = self._server
        server.shutdown()
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and server.open_requests:
            time.sleep(0.01)
        self._stopping.set()
        server.wake_readers()
        server.server_close()
        assert self._thread is not None  # start() set it together with _server
        self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> SearchService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def exported_spans(self) -> tuple[ReadableSpan, ...]:
        """Every span exported so far (all of them once :meth:`stop` has returned)."""
        return self.exporter.get_finished_spans()

    def _check_query(self, query: str) -> None:
        """The CLI's query check (``check_texts``): refuse what the tokenizer sees as nothing or
        what is not UTF-8; an all-[UNK] query is served (its warning is not printed here)."""
        with _CHECK_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.encoder.check_texts([query], "query")

    def handle(self, path: str, body: bytes) -> tuple[int, dict]:
        """One request: (HTTP status, JSON payload), each step in its child span."""
        with self.tracer.start_as_current_span("parse") as span:
            try:
                if path != "/search":
                    span.set_status(Status(StatusCode.ERROR, "unknown path"))
                    return 404, {"error": f"path: got {short_repr(path)}, expected /search"}
                query, k, delay = parse_search_request(body, self.fault_injection)
                self._check_query(query)
            except InputError as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                return 400, {"error": str(exc)}
        if delay:
            with self.tracer.start_as_current_span("injected_delay") as span:
                span.set_attribute("delay_s", delay)
                self._stopping.wait(delay)  # stop() ends it
        encoder = self.encoder
        with self.tracer.start_as_current_span("tokenize") as span:
            span.set_attribute("tokens", int(encoder.tokenize([query])["attention_mask"].sum()))
        with self.tracer.start_as_current_span("encode"):
            q = encoder.encode(query, normalize=True)
        with self.tracer.start_as_current_span("search") as span:
            top = self.index.search_vectors(np.asarray(q, np.float32).reshape(1, -1), k)
            ids, scores = top.ids[0].tolist(), top.scores[0].tolist()
            span.set_attribute("k", k)
        payload: dict = {"hits": [[i, s] for i, s in zip(ids, scores, strict=True)]}
        if self.passage_of is not None:
            payload["passages"] = [dict(self.passage_of(i)) for i in ids]
        return 200, payload
