"""``jaxparadigm serve --index DIR``: the traced HTTP search service over a persistent index (C5.2).

The index directory built by ``jaxparadigm index build`` is opened once by an
:class:`~jaxparadigm.retrieval.index.searcher.IndexSearcher` (the folder checked by
:class:`~jaxparadigm.retrieval.index.reader.Index`: checksums, unit rows), whose
:class:`~jaxparadigm.retrieval.dense.vector_search.VectorSearcher` -- the engine of
``search --index``, so the same hits, scores and tie rule -- answers every request of the
:class:`~jaxparadigm.retrieval.service.http_service.SearchService` on 127.0.0.1 until Ctrl-C
(SIGINT) or SIGTERM. No passage is copied: a hit's passage is read from its shard. The model loads
and the query encoder and the search (for the default ``k = 5``, in ``SearchService.start``) compile
once, before the "serving" line, so each request then costs an encode plus one search
(milliseconds), instead of the CLI ``search``'s start-up, model load and compile per query; a
request with another ``k`` compiles the search for that ``k`` once.

Split over a ``jax.distributed`` group (``serve --num-processes N``): process 0 binds the
socket, encodes and leads each batch's search step
(:class:`~jaxparadigm.retrieval.index.process_search.ProcessGroupSearch`); every other process runs
:func:`follow_index`. Process 0 sends an empty step every :data:`HEARTBEAT_S` seconds; when a
process has died (a step fails), every request that needs the group gets 503 JSON at once, and
after :data:`DRAIN_S` seconds serve stops with :class:`~jaxparadigm.errors.GroupFailed` (exit 3).
A process that hangs without dying (no step fails) holds the step: each waiting request gets 503
after :data:`~jaxparadigm.retrieval.service.http_service.ANSWER_TIMEOUT_S` seconds, and JAX's
coordination service ends the whole group after ``heartbeat_timeout_s`` (100 s; the launcher then
names the processes).

``POST /search`` with ``{"query": "...", "k": 5}`` (and any other field of
:class:`~jaxparadigm.retrieval.search_options.SearchOptions` by its name: ``mode``, ``nprobe``,
``depth``, ``approx``, ``excerpts``, ``excerpt_chars``, ``dtype``, ``stream``; left out: serve's own
options, from its flags, hybrid by default as ``search --index``) answers ``{"mode", "score",
"hits": [[row, score], ...], "passages": [{"source", "start", "end", "text", "excerpt"}, ...]}``
(``row``: the passage's row in the index, in build order; ``score``: the fused rank score in mode
hybrid, the cosine in mode dense; ``passages``: per hit, the file and its character offsets, as
``search --index`` prints them): the same hits as ``search --index --json`` with the same options.
``GET /`` is the search page (:mod:`~jaxparadigm.retrieval.service.search_page`): a box, a ranking
control, Enter, the hits with their excerpts.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from opentelemetry.trace import SpanKind

from jaxparadigm.errors import GroupFailed, InputError
from jaxparadigm.retrieval.index.process_search import ProcessGroupSearch
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.service.http_service import HOST, SearchService, bind_listener
from jaxparadigm.retrieval.service.index_service import index_service

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = ["DRAIN_S", "HEARTBEAT_S", "follow_index", "serve_index"]

#: A group's process 0 checks the others every HEARTBEAT_S seconds (an empty step) ...
HEARTBEAT_S = 0.5
#: ... and, when one has died, answers 503 for DRAIN_S seconds, then stops.
DRAIN_S = 3.0


def _server_spans(service: SearchService) -> int:
    """How many requests finished since the last call; empties the span store (so a long-lived
    service does not keep every span in memory)."""
    spans = service.exported_spans()
    service.exporter.clear()
    return sum(1 for s in spans if s.kind == SpanKind.SERVER)


def serve_index(
    index_dir: str | os.PathLike,
    *,
    host: str = HOST,
    port: int = 0,
    encoder: SentenceEncoder | None = None,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
    **search: Any,
) -> int:
    """Serve ``index_dir`` until Ctrl-C, SIGTERM or ``stop`` is set; returns the request count.

    Binds ``port`` first (a port in use is one :class:`InputError`, before the model loads), then
    prints a line before the model loads, one when it serves (with the API's URL and the search
    page's) and one when it stops.
    ``host`` must be 127.0.0.1 (or ``localhost``): the service binds the loopback address only.
    ``search``: :func:`index_service`'s options (``options``: the service's ``SearchOptions``;
    devices, ..., max_batch, max_wait_ms).
    """
    out = sys.stdout if out is None else out
    if host not in (HOST, "localhost"):
        raise InputError(f"--host: got {host!r}, expected {HOST} (the service binds loopback only)")
    listener = bind_listener(HOST, port)  # before the slow part: a port in use fails at once
    print(f"loading {index_dir} and the model ...", file=out, flush=True)
    t0 = time.perf_counter()
    try:
        service = index_service(index_dir, encoder=encoder, listener=listener, **search)
    except BaseException:
        listener.close()
        raise
    stop = stop if stop is not None else threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        # a graceful stop instead of main's KeyboardInterrupt (jaxparadigm.app.interrupts, put
        # back on the way out), for SIGTERM too
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    group = getattr(service.index, "group", None)  # a search split over processes
    count = [0]
    try:
        service.start()  # compiles the encoder and the search for each batch size
        _print_serving(service, index_dir, time.perf_counter() - t0, out)
        _serve_until(service, stop, group, count)
    except KeyboardInterrupt:
        pass
    finally:
        service.stop()
        count[0] += _server_spans(service)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if group is not None and group.broken is None:
            group.stop()  # the other processes leave their follow()
    print(f"stopped after {count[0]} request(s)", file=out, flush=True)
    if group is not None and group.broken is not None:
        raise GroupFailed(f"{group.broken}; requests since were answered 503 and serve stopped")
    return count[0]


def _print_serving(service: SearchService, index_dir, ready_s: float, out: TextIO) -> None:
    lists = getattr(service.index, "lists", None)  # an IndexSearcher with IVF lists
    ivf = "" if service.nprobe is None else f" (IVF: nprobe {service.nprobe} of {lists} lists)"
    print(
        f"serving {len(service.index)} passages of {index_dir}{ivf} at {service.url} "
        f'(ready in {ready_s:.1f} s; mode {service.options.mode}); POST {{"query": "...", '
        f'"k": {service.options.k}}}; '
        f"search page: {service.url.removesuffix('search')}; Ctrl-C stops",
        file=out,
        flush=True,
    )
    assignment = getattr(service.index, "assignment", None)
    if assignment is not None:
        print(f"serve: {assignment}", file=out, flush=True)


def _serve_until(
    service: SearchService, stop: threading.Event, group: ProcessGroupSearch | None, count: list
) -> None:
    """Count finished requests into ``count[0]`` until ``stop`` is set, or until :data:`DRAIN_S`
    after the search group broke (requests answered 503 meanwhile)."""
    broken_at = None
    while not stop.wait(HEARTBEAT_S):
        count[0] += _server_spans(service)
        if not _group_alive(group):
            broken_at = broken_at or time.monotonic()
            if time.monotonic() - broken_at >= DRAIN_S:
                return


def _group_alive(group: ProcessGroupSearch | None) -> bool:
    """Whether the search group still answers (a heartbeat step when it seems to); True for one
    process."""
    if group is None:
        return True
    if group.broken is None:
        try:
            group.heartbeat()
        except GroupFailed:
            pass
    return group.broken is None


def follow_index(index_dir: str | os.PathLike, *, out: TextIO | None = None, **search: Any) -> int:
    """``serve`` on a process other than 0 of a group: open this process's shards and
    take part in process 0's searches until it stops; returns how many searches it took part in.
    ``search``: the :class:`IndexSearcher` options (``options``: how to open it, devices, ...)."""
    out = sys.stdout if out is None else out
    searcher = IndexSearcher(index_dir, **search)
    if searcher.group is None:
        raise InputError("follow_index: this process is not one of a jax.distributed group")
    print(f"serve: {searcher.assignment}", file=out, flush=True)
    steps = searcher.group.follow()
    print(f"process {searcher.group.process}: stopped after {steps} search(es)", file=out)
    return steps
