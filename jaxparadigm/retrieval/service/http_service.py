"""A traced HTTP search service over an in-memory or a folder index on 127.0.0.1 (C5.2).

:class:`SearchService` serves ``POST /search`` over ``index``: a :class:`SemanticIndex`, or an
:class:`~jaxparadigm.retrieval.index.searcher.IndexSearcher` with ``encoder=``. The body is
``{"query": str, ...}`` whose other keys are the fields of
:class:`~jaxparadigm.retrieval.search_options.SearchOptions` (``mode``, ``k``, ``nprobe``,
``depth``, ``approx``, ``excerpts``, ``excerpt_chars``, ``dtype``, ``stream``; a key left out
takes the service's ``options``), read by :mod:`~jaxparadigm.retrieval.service.search_request`.
The query is checked by the CLI's own validator (``SentenceEncoder.check_texts``): a query the
tokenizer sees as nothing (whitespace, U+200B ...) or holding a lone surrogate is refused (400).
The answer is ``{"mode": ..., "score": ..., "hits": [[doc, score], ...]}`` (the top
``min(k, len(index))``; 200) or ``{"error": ...}`` (4xx). Mode "dense": score = cosine; mode
"hybrid": the batch's dense top ``min(depth, len(index))`` fused with the BM25 top ``depth`` on
the request's thread (the ranking of ``search --index``,
:func:`~jaxparadigm.retrieval.ranking.hybrid_search.fused_ranking`), score = sum of
1/(60 + rank). With ``excerpts`` each passage gets ``"excerpt": {"start", "end", "text",
"marks"}``: the passage's best segment for the query
(:func:`~jaxparadigm.retrieval.ranking.excerpt.best_excerpt`, ``excerpt_chars`` characters at
most), every offset a character offset in the passage's file (``marks``: the query words in it).

The server is a stdlib ``ThreadingHTTPServer`` on a free port (``start()`` / ``stop()``, or
``with``), one thread per connection (kept alive when a request asks for it:
:mod:`~jaxparadigm.retrieval.service.http_handler`). Parsing, an injected delay and tokenizing
stay on the request's thread (a delay holds up no one); the encode and the search of concurrent
requests are batched by one :class:`~jaxparadigm.retrieval.service.request_batcher.RequestBatcher`
(the rule: :mod:`~jaxparadigm.retrieval.service.request_batcher`). The socket, the reading of
requests and the 4xx answers are :mod:`~jaxparadigm.retrieval.service.http_handler`'s; ``GET /``
is the page of :mod:`~jaxparadigm.retrieval.service.search_page`.

Every request is traced with the OpenTelemetry SDK into an in-memory exporter::

    server span "POST /search" (child of the caller's span when a W3C traceparent header is sent;
    attributes request.id from X-Request-Id, http.status_code)
      ├─ "parse"           JSON body -> (query, SearchOptions); records a malformed request's error
      ├─ "injected_delay"  only with fault_injection=True and "delay_s" in the body
      ├─ "tokenize"        word pieces of the query (attribute tokens), handed to the batch
      ├─ "queue"           from the submit to its batch's encode start (attribute batch.size)
      ├─ "encode"          its batch's MiniLM forward (L2-normalised embeddings; batch.size)
      ├─ "search"          its group's top-k: index.search_vectors, the package's one engine
      │                    (VectorSearcher; exact, or IVF with nprobe; attributes batch.size,
      │                    k, nprobe)
      ├─ "fuse"            mode hybrid: the dense and BM25 rankings fused
      └─ "excerpts"        with excerpts: each passage's best excerpt

"queue", "encode" and "search" are recorded on the request's thread with the batch's real start
and end times, so the spans of a batch's requests overlap exactly.

``stop()`` is bounded (:meth:`SearchService.stop`): when it returns every request thread has
ended and every span has been exported (``SimpleSpanProcessor`` exports on span end);
``exported_spans()`` returns them. A request the batcher can no longer serve gets 503
(:class:`~jaxparadigm.retrieval.service.request_batcher.ServiceUnavailable`). A service not
started answers a direct :meth:`SearchService.handle` call on the calling thread, unbatched
(:func:`~jaxparadigm.retrieval.service.request_batcher.serve_alone`).
"""

from __future__ import annotations

import socket
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from typing import cast

import numpy as np
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from jaxparadigm.common.numbers import check_float
from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder
from jaxparadigm.retrieval.index.memory_index import SemanticIndex
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.search_options import SearchOptions
from jaxparadigm.retrieval.service.http_handler import (
    HOST,
    LINGER_S,
    LISTEN_BACKLOG,
    _Server,
    bind_listener,
)
from jaxparadigm.retrieval.service.request_batcher import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_WAIT_MS,
    BatchResult,
    RequestBatcher,
    check_batching,
    embed,
    padded_sizes,
    serve_alone,
)
from jaxparadigm.retrieval.service.search_request import (
    DEFAULT_K,
    MAX_BODY_BYTES,
    MAX_JSON_DEPTH,
    MAX_K,
    json_depth,
    parse_search_request,
    read_search_request,
    short_repr,
)
from jaxparadigm.retrieval.service.served_search import SERVICE_DEFAULTS, ServedSearch

__all__ = [
    "ANSWER_TIMEOUT_S",
    "HOST",
    "LINGER_S",
    "LISTEN_BACKLOG",
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_K",
    "SERVICE_DEFAULTS",
    "SearchService",
    "bind_listener",
    "json_depth",
    "parse_search_request",
]

_ENCODER_API = ("encode", "tokenize", "check_texts", "dim", "max_seq_length")
#: A request whose batch has no answer after this many seconds gets 503 (a hung search group).
ANSWER_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 5.0  # the whole request (line, headers, body) must arrive within this
_CHECK_LOCK = threading.Lock()  # warnings.catch_warnings is process-wide


class SearchService:
    """``POST /search`` over ``index`` on ``127.0.0.1:port`` (0: a free port), traced (C5.2).

    ``index``: a :class:`SemanticIndex` (its own encoder), or an :class:`IndexSearcher` with the
    ``encoder`` it was built with (``IndexSearcher.check_encoder``); both answer through
    ``search_vectors`` (the one search engine, ties to the lower row).
    ``read_timeout_s``: how long the whole request may take to arrive (408 after);
    ``max_body_bytes``: the largest accepted body (413 beyond, unread); ``passage_of``: when given,
    ``row -> {"source", "start", "end", "text"}``, and each answer also carries ``"passages"``,
    one per hit (what ``jaxparadigm serve --index`` shows of a persistent index).
    ``listener``: a socket from :func:`bind_listener` to serve on (then ``port`` is ignored); by
    default :meth:`start` binds ``port``. ``encoder``: a :class:`SentenceEncoder`, or an object
    with the same ``encode``, ``tokenize``, ``check_texts``, ``dim`` and ``max_seq_length``.
    ``options``: what a request's missing keys take (:class:`SearchOptions`; its ``dtype`` and
    ``stream`` must be how ``index`` was opened; ``nprobe="default"`` is resolved here, once);
    None: :data:`SERVICE_DEFAULTS`. ``nprobe``: the keyword form of ``options.nprobe`` (the
    inverted lists a request without ``"nprobe"`` scans; ``None``: exact), not with ``options``.
    ``max_batch`` (an int in [1, 1024]) and ``max_wait_ms`` (in [0, 1000]): the batching of
    concurrent requests (:mod:`~jaxparadigm.retrieval.service.request_batcher`).
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
        listener: socket.socket | None = None,
        nprobe: int | str | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        options: SearchOptions | None = None,
        max_wait_ms: float = DEFAULT_MAX_WAIT_MS,
    ) -> None:
        encoder = _serving_encoder(index, encoder)
        port = require_int("port", port, 0, 65535)
        check_float("read_timeout_s", read_timeout_s, 0, 3600, lo_open=True, expected="seconds")
        max_body_bytes = require_int("max_body_bytes", max_body_bytes, 1)
        max_batch, max_wait_ms = check_batching(max_batch, max_wait_ms)
        if not len(index):
            raise InputError("index: empty; add documents before serving it")
        self.index = index
        #: The options, the nprobe resolution, the hybrid fusion and the answer of each request.
        self.served = ServedSearch(index, options, nprobe, passage_of)
        self.encoder: SentenceEncoder = encoder
        self.port = port
        if listener is not None and not isinstance(listener, socket.socket):
            raise TypeError(f"listener: got {type(listener).__name__}, expected a socket.socket")
        self._listener = listener
        self.fault_injection = fault_injection
        self.read_timeout_s = float(read_timeout_s)
        self.max_body_bytes = max_body_bytes
        self.passage_of = passage_of
        self.max_batch, self.max_wait_ms = max_batch, float(max_wait_ms)
        self._batcher: RequestBatcher | None = None
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("jaxparadigm.retrieval.service.http_service")
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def options(self) -> SearchOptions:
        """The options of a request that sends only its query (:class:`ServedSearch`)."""
        return self.served.options

    @property
    def nprobe(self) -> int | None:
        """The inverted lists a request without ``"nprobe"`` scans (None: exact)."""
        return self.served.nprobe

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("SearchService: not started")
        return f"http://{HOST}:{self._server.server_address[1]}/search"

    def start(self) -> SearchService:
        """Compile the search for ``k = DEFAULT_K`` and the default options' dense ``k`` at every
        padded batch size (and build the BM25 index when the default mode is hybrid), start the
        request batcher, bind 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            raise RuntimeError("SearchService: already started")
        # compile the search for the default k now: a request's client would wait for it
        for rows in padded_sizes(self.max_batch):
            texts = ["warm-up query"] * rows  # a batch's shape, tokenized and encoded as requests
            embed(self.encoder, texts, [self._token_ids(text)[1] for text in texts])
            warm = np.zeros((rows, self.encoder.dim), np.float32)
            for k in sorted({DEFAULT_K, self.served.dense_k(self.options)}):
                self.index.search_vectors(warm, k)
                if self.nprobe is not None:
                    self.index.search_vectors(warm, k, nprobe=self.nprobe)  # type: ignore[call-arg]
        if self.options.mode == "hybrid":
            self.served.keyword_index()
        self._batcher = RequestBatcher(
            self.encoder,
            self.index.search_vectors,
            max_batch=self.max_batch,
            max_wait_ms=self.max_wait_ms,
        )
        self._stopping.clear()
        listener, self._listener = self._listener, None  # a socket serves once
        self._server = _Server(listener or bind_listener(HOST, self.port), self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop accepting; give in-flight requests ``grace_s`` (a kept-alive connection waiting for
        its next request is not waited for); then wake every read still waiting on a client (EOF)
        and end injected delays; join every request thread (their spans end), close the socket
        and the batcher. Bounded: about ``grace_s + LINGER_S`` plus the compute of
        the batches still queued."""
        if self._server is None:
            return
        server = self._server
        server.shutdown()
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and server.busy():
            time.sleep(0.01)
        self._stopping.set()
        server.wake_readers()
        server.server_close()
        assert self._thread is not None  # start() set it together with _server
        self._thread.join()
        if self._batcher is not None:
            self._batcher.close()
        self._server = self._thread = self._batcher = None

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

    def _token_ids(self, query: str) -> tuple[int, list[int] | None]:
        """``(word pieces, ids)`` of the query, on the request's thread: ``encoder.token_ids``
        (the batch then encodes only the ids); an encoder with only ``tokenize``: its count and
        None (the batch encodes the text)."""
        token_ids = getattr(self.encoder, "token_ids", None)
        if token_ids is None:
            return int(self.encoder.tokenize([query])["attention_mask"].sum()), None
        ids = list(token_ids([query])[0])
        return len(ids), ids

    def _batch_spans(self, submitted: int, top: BatchResult, k: int, nprobe: int | None) -> None:
        """The request's "queue", "encode" and "search" spans (children of the current, server
        span) at its batch's real times."""
        times = (
            ("queue", submitted, top.encode_start_ns),
            ("encode", top.encode_start_ns, top.encode_end_ns),
            ("search", top.search_start_ns, top.search_end_ns),
        )
        for name, start, end in times:
            span = self.tracer.start_span(name, start_time=start)
            span.set_attribute("batch.size", top.batch_size)
            if name == "search":
                span.set_attribute("k", k)
                if nprobe is not None:
                    span.set_attribute("nprobe", nprobe)
            span.end(end_time=max(start, end))

    def handle(self, path: str, body: bytes) -> tuple[int, dict]:
        """One request: (HTTP status, JSON payload), each step in its child span."""
        with self.tracer.start_as_current_span("parse") as span:
            try:
                if path != "/search":
                    span.set_status(Status(StatusCode.ERROR, "unknown path"))
                    return 404, {"error": f"path: got {short_repr(path)}, expected /search"}
                request = read_search_request(body, self.fault_injection, defaults=self.options)
                query, options, delay = request
                nprobe = self.served.request_nprobe(options)
                self._check_query(query)
            except InputError as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                return 400, {"error": str(exc)}
        if delay:
            with self.tracer.start_as_current_span("injected_delay") as span:
                span.set_attribute("delay_s", delay)
                self._stopping.wait(delay)  # stop() ends it
        with self.tracer.start_as_current_span("tokenize") as span:
            count, tokens = self._token_ids(query)
            span.set_attribute("tokens", count)
        batcher, submitted, k = self._batcher, time.time_ns(), self.served.dense_k(options)
        search, approx = self.index.search_vectors, options.approx
        if batcher is None:  # not started (a direct call): this request alone, unbatched
            top = serve_alone(self.encoder, search, query, k, nprobe, approx=approx, tokens=tokens)
        else:  # its batch's encode/search error is raised here; a hung search answers 503
            top = batcher.submit(
                query, k, nprobe, timeout_s=ANSWER_TIMEOUT_S, approx=approx, tokens=tokens
            )
        self._batch_spans(submitted, top, k, nprobe)
        return 200, self.served.answer(query, options, top, self.tracer)


def _serving_encoder(
    index: SemanticIndex | IndexSearcher, encoder: SentenceEncoder | None
) -> SentenceEncoder:
    """The encoder a service over ``index`` uses: a SemanticIndex's own, or the ``encoder`` an
    IndexSearcher was built with (a SentenceEncoder or an object with its API); TypeError else."""
    if isinstance(index, SemanticIndex):
        if encoder is not None and encoder is not index.encoder:
            raise TypeError(
                "encoder: got another encoder, expected None (a SemanticIndex has its own)"
            )
        return index.encoder
    if isinstance(index, IndexSearcher):
        if not isinstance(encoder, SentenceEncoder) and not all(
            hasattr(encoder, name) for name in _ENCODER_API
        ):
            raise TypeError(
                f"encoder: got {type(encoder).__name__}, expected the SentenceEncoder the "
                "index was built with (an IndexSearcher holds no encoder)"
            )
        encoder = cast(SentenceEncoder, encoder)  # or an object with its API (checked above)
        index.check_encoder(encoder)
        return encoder
    raise TypeError(
        f"index: got {type(index).__name__}, expected a SemanticIndex or an IndexSearcher"
    )
