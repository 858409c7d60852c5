"""A traced HTTP search service over a :class:`SemanticIndex` on 127.0.0.1 (C5.2).

``SearchService(index)`` serves ``POST /search`` with a JSON body ``{"query": str, "k": int}`` and answers
``{"hits": [[doc, score], ...]}`` (the top ``min(k, len(index))``; 200) or ``{"error": ...}`` (400 for a malformed request). It runs a
stdlib ``ThreadingHTTPServer`` on a free port (``start()`` / ``stop()``, or ``with``), one thread per
request. Every request is traced with the OpenTelemetry SDK into an in-memory exporter:

    server span "POST /search" (child of the caller's span when a W3C ``traceparent`` header is sent;
    attributes request.id from ``X-Request-Id``, http.status_code)
      ├─ "parse"           JSON body -> (query, k); records the error of a malformed request
      ├─ "injected_delay"  only with ``fault_injection=True`` and ``"delay_s"`` in the body
      ├─ "tokenize"        word pieces of the query (attribute tokens)
      ├─ "encode"          the MiniLM forward (L2-normalised embedding)
      └─ "search"          exact top-k over the index: argsort of ``D @ q``

``stop()`` joins every request thread, so when it returns every span has ended and been exported
(``SimpleSpanProcessor`` exports on span end). ``exported_spans()`` returns them.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.semantic_index import SemanticIndex

__all__ = ["SearchService", "parse_search_request"]

HOST = "127.0.0.1"
MAX_BODY_BYTES = 64 * 1024
MAX_K = 100


def parse_search_request(
    body: bytes, fault_injection: bool = False, max_k: int = MAX_K
) -> tuple[str, int, float]:
    """``(query, k, delay_s)`` from a request body; :class:`InputError` naming the field otherwise.

    ``delay_s`` (default 0) is accepted only when ``fault_injection`` is on (used by load tests to
    make requests time out); ``k`` defaults to 5 and must be an int in ``[1, max_k]``.
    """
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"body: not a JSON object ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"body: got {type(data).__name__}, expected a JSON object")
    unknown = sorted(set(data) - {"query", "k", "delay_s"})
    if unknown or ("delay_s" in data and not fault_injection):
        bad = unknown[0] if unknown else "delay_s"
        raise InputError(f"body key {bad!r}: unknown; expected query, k")
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InputError(f"query: got {query!r}, expected a non-empty string")
    k = data.get("k", 5)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_k:
        raise InputError(f"k: got {k!r}, expected an int in [1, {max_k}]")
    delay = data.get("delay_s", 0.0)
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 60:
        raise InputError(f"delay_s: got {delay!r}, expected a number of seconds in [0, 60]")
    return query, k, float(delay)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        del format, args  # the spans are the log

    def do_POST(self):
        svc = self.server.service
        ctx = TraceContextTextMapPropagator().extract(
            {k.lower(): v for k, v in self.headers.items()}
        )
        with svc.tracer.start_as_current_span(
            "POST /search", context=ctx, kind=SpanKind.SERVER
        ) as span:
            span.set_attribute("request.id", self.headers.get("X-Request-Id", ""))
            status, payload = svc.handle(self.path, self._body())
            span.set_attribute("http.status_code", status)
            if status != 200:
                span.set_status(Status(StatusCode.ERROR, payload["error"]))
            try:
                self._reply(status, payload)
            except OSError:  # the client gave up (timed out) before the answer
                span.set_attribute("client.disconnected", True)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(min(length, MAX_BODY_BYTES))

    def _reply(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the request threads: every span has ended
    block_on_close = True
    service: SearchService


class SearchService:
    """``POST /search`` over ``index`` on ``127.0.0.1:port`` (0: a free port), traced (C5.2)."""

    def __init__(self, index: SemanticIndex, port: int = 0, fault_injection: bool = False):
        if not isinstance(index, SemanticIndex):
            raise TypeError(f"index: got {type(index).__name__}, expected a SemanticIndex")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InputError(f"port: got {port!r}, expected an int in [0, 65535]")
        if not len(index):
            raise InputError("index: empty; add documents before serving it")
        self.index = index
        self.port = port
        self.fault_injection = fault_injection
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("jaxparadigm.retrieval.service")
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("SearchService: not started")
        return f"http://{HOST}:{self._server.server_address[1]}/search"

    def start(self) -> SearchService:
        """Bind 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            raise RuntimeError("SearchService: already started")
        self._server = _Server((HOST, self.port), _Handler)
        self._server.service = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, wait for every in-flight request (their spans end), close the socket."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> SearchService:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def exported_spans(self) -> tuple[ReadableSpan, ...]:
        """Every span exported so far (all of them once :meth:`stop` has returned)."""
        return self.exporter.get_finished_spans()

    def handle(self, path: str, body: bytes) -> tuple[int, dict]:
        """One request: (HTTP status, JSON payload), each step in its child span."""
        with self.tracer.start_as_current_span("parse") as span:
            try:
                if path != "/search":
                    raise InputError(f"path: got {path!r}, expected /search")
                query, k, delay = parse_search_request(body, self.fault_injection)
            except InputError as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                return 400, {"error": str(exc)}
        if delay:
            with self.tracer.start_as_current_span("injected_delay") as span:
                span.set_attribute("delay_s", delay)
                time.sleep(delay)
        encoder = self.index.encoder
        with self.tracer.start_as_current_span("tokenize") as span:
            span.set_attribute("tokens", int(encoder.tokenize([query])["attention_mask"].sum()))
        with self.tracer.start_as_current_span("encode"):
            q = encoder.encode(query, normalize=True)
        with self.tracer.start_as_current_span("search") as span:
            scores = self.index.embeddings @ q
            top = np.argsort(-scores, kind="stable")[: min(k, len(scores))]
            span.set_attribute("k", k)
        return 200, {"hits": [[int(i), float(scores[i])] for i in top]}
