"""Concurrent search requests served in batches: one encode, one search per ``(k, nprobe, approx)``
(C5.2).

Rule. A request thread calls :meth:`RequestBatcher.submit` and blocks. A worker thread (one by
default, ``workers``; each runs this rule on its own batches, so two batches can run at once) takes
the oldest waiting request, then keeps collecting until the batch holds ``max_batch`` requests or
``max_wait_ms`` have passed since that first request arrived (a lone request waits at most that
long). The batch's texts are embedded by ONE ``encoder.encode(texts, normalize=True)`` call (or
``encoder.encode_token_ids(ids)`` when each request brought its query's token ids, tokenized on its
own thread: then the worker runs only the model, and a batch of several queries is packed, several
queries a row: ``pack=True``, :mod:`~jaxparadigm.retrieval.encoder.sequence_packing`; each query's
embedding is the one it gets alone up to float32 rounding, as in a padded batch, whose rows also
differ from a lone query's in the last bits. Measured, ``bench serve`` on the pydoc index, 2-core
AMD EPYC, 3 runs each: 16 clients 275-292 -> 328-342 q/s, one client unchanged; :func:`embed`);
the rows are then searched per group of equal ``(k, nprobe, approx)``, one ``search(Q, k)`` call
per group (plus ``nprobe=P`` and ``approx=True`` when the group has them), in order of first
arrival. Different ``k`` are never merged (the exact engine's top-k prefix is not guaranteed
bitwise equal to a smaller k's top-k). A group of ``n`` rows is padded with zero rows to::

    padded_size(n) = min(2 ** ceil(log2 n), max_batch),

so the search is compiled for ``log2(max_batch) + 1`` shapes per ``k`` (one more when ``max_batch``
is not a power of two; :func:`padded_sizes`); the padded rows' results are dropped. Each request
gets its own row back (:class:`BatchResult`) with the times (``time.time_ns()``) its batch's encode
and its group's search started and ended.

Failures: an exception of ``encode`` is raised in every request of the batch, one of a group's
search in every request of that group. :meth:`RequestBatcher.close` lets the batch in hand finish,
then every request still queued (and any submitted later) gets :class:`ServiceUnavailable`; so
does every waiting request if the worker itself stops on an error. No request waits forever.

Idle hook: with ``on_idle``, the worker calls ``on_idle()`` each time ``idle_s`` seconds pass with
no request (e.g. to keep a multi-process group alive); an exception in it stops the batcher.
This module imports no JAX (the CLI reads its defaults).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxparadigm.common.numbers import check_float, check_int
from jaxparadigm.errors import require_int

__all__ = [
    "DEFAULT_IDLE_S",
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_WAIT_MS",
    "DEFAULT_WORKERS",
    "MAX_BATCH_LIMIT",
    "MAX_WAIT_MS_LIMIT",
    "BatchResult",
    "RequestBatcher",
    "ServiceUnavailable",
    "check_batching",
    "embed",
    "padded_size",
    "padded_sizes",
    "serve_alone",
]

#: the most requests one batch holds (``serve --batch-size``): one encode call for all of them
DEFAULT_MAX_BATCH = 16
#: how long a batch waits for more requests after its first one arrived (``serve --batch-wait-ms``):
#: none; a batch takes what queued while the previous one ran. Measured (`bench serve`, pydoc
#: index, 2-core Xeon): 0 ms and 2 ms both gave 186-192 q/s at 16 clients (mean batch 8.6), but
#: one client 129 q/s (p50 7.5 ms) at 0 ms against 99 q/s (p50 9.7 ms) at 2 ms.
DEFAULT_MAX_WAIT_MS = 0.0
#: the largest ``max_batch`` accepted
MAX_BATCH_LIMIT = 1024
#: the largest ``max_wait_ms`` accepted (one second)
MAX_WAIT_MS_LIMIT = 1000.0
#: worker threads. Measured (`bench serve --full --clients 1,16`, 2-core Xeon, twice each,
#: interleaved): 16 clients on the 1,173-passage pydoc index (encode-bound) 179-187 q/s with 1
#: worker, 227 with 2 (two batches of ~6 encoded at once); on 1,000,000 rows (search-bound)
#: 40-48 q/s with 1 (batches of ~13), 31-37 with 2 (batches of ~7). 1: large batches.
DEFAULT_WORKERS = 1
#: seconds without a request after which the worker calls ``on_idle`` (when one is given)
DEFAULT_IDLE_S = 1.0


class ServiceUnavailable(RuntimeError):
    """The batcher is closed or stopped: the request was not served (HTTP 503)."""


class BatchResult(NamedTuple):
    """One request's answer: its own row of the top-k and the facts of the batch that served it.

    ``scores`` float32 ``[k']`` and ``ids`` ``[k']`` (best first, as the search returned them);
    ``batch_size``: the requests encoded together; ``*_ns``: ``time.time_ns()`` when the batch's
    encode and this request's group search started and ended.
    """

    scores: np.ndarray
    ids: np.ndarray
    batch_size: int
    encode_start_ns: int
    encode_end_ns: int
    search_start_ns: int
    search_end_ns: int


def check_batching(
    max_batch: object, max_wait_ms: object, names: tuple[str, str] = ("max_batch", "max_wait_ms")
) -> tuple[int, float]:
    """``(max_batch, max_wait_ms)`` as an int in ``[1, MAX_BATCH_LIMIT]`` and a number of
    milliseconds in ``[0, MAX_WAIT_MS_LIMIT]``; else :class:`InputError` naming the argument
    (``names``: e.g. the CLI's options), the value and what was expected."""
    return (
        check_int(names[0], max_batch, 1, MAX_BATCH_LIMIT),
        check_float(names[1], max_wait_ms, 0, MAX_WAIT_MS_LIMIT, expected="milliseconds"),
    )


def padded_size(n: int, max_batch: int) -> int:
    """The rows a group of ``n`` queries is searched with: the next power of two, at most
    ``max_batch`` (``n <= max_batch``)."""
    return min(1 << (n - 1).bit_length(), max_batch)


def padded_sizes(max_batch: int) -> list[int]:
    """Every :func:`padded_size` of groups of 1 to ``max_batch`` rows: 1, 2, 4, ..., max_batch."""
    return [1 << i for i in range(max_batch.bit_length()) if 1 << i < max_batch] + [max_batch]


class _Request:
    """A submitted request: its fields, when it arrived (monotonic) and its answer."""

    __slots__ = ("approx", "arrived", "done", "error", "k", "nprobe", "query", "result", "tokens")

    def __init__(
        self,
        query: str,
        k: int,
        nprobe: int | None,
        approx: bool = False,
        tokens: Sequence[int] | None = None,
    ) -> None:
        self.query, self.k, self.nprobe, self.approx = query, k, nprobe, approx
        self.tokens = tokens
        self.arrived = time.monotonic()
        self.done = threading.Event()
        self.result: BatchResult | None = None
        self.error: BaseException | None = None

    def fail(self, error: BaseException) -> None:
        if not self.done.is_set():
            self.error = error
            self.done.set()


class RequestBatcher:
    """Serves :meth:`submit` calls of many threads in batches on ``workers`` threads (rule above;
    with 2, one batch is encoded while the one before is searched or answered).

    ``encoder``: an object with ``encode(texts: list[str], normalize=True) -> [n, dim]``;
    ``search``: ``search(Q [n, dim] float32, k)`` (and ``nprobe=P``, ``approx=True`` when a
    request has them)
    returning ``.scores`` and ``.ids`` ``[n, k']`` (e.g. ``IndexSearcher.search_vectors``).
    ``on_idle``: called on a worker after every ``idle_s`` seconds without a request.
    The workers start at once; :meth:`close` stops them.
    """

    def __init__(
        self,
        encoder: Any,
        search: Callable[..., Any],
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_wait_ms: float = DEFAULT_MAX_WAIT_MS,
        on_idle: Callable[[], object] | None = None,
        idle_s: float = DEFAULT_IDLE_S,
        workers: int = DEFAULT_WORKERS,
    ) -> None:
        max_batch, max_wait_ms = check_batching(max_batch, max_wait_ms)
        workers = require_int("workers", workers, 1, 64)
        idle_s = check_float("idle_s", idle_s, 0, lo_open=True, finite=False, expected="seconds")
        self.encoder, self.search = encoder, search
        self.max_batch, self.max_wait_s = max_batch, max_wait_ms / 1000.0
        self.on_idle, self.idle_s = on_idle, float(idle_s)
        self._queue: collections.deque[_Request] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._reason = "the search service is stopping"
        self._threads = [
            threading.Thread(target=self._run, name=f"request-batcher-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(
        self,
        query: str,
        k: int,
        nprobe: int | None = None,
        timeout_s: float | None = None,
        *,
        approx: bool = False,
        tokens: Sequence[int] | None = None,
    ) -> BatchResult:
        """Block until the batch holding this request is served; return its own row. Raises the
        batch's encode or search exception, or :class:`ServiceUnavailable` once closed or when
        no answer came within ``timeout_s`` seconds (None: no limit; e.g. a process of a
        search group stopped answering). ``tokens``: the query's word-piece ids, tokenized on
        the caller's thread (``encoder.token_ids``), so the batch's encode runs only the model."""
        request = _Request(query, k, nprobe, approx, tokens)
        with self._cond:
            if self._closed:
                raise ServiceUnavailable(self._reason)
            self._queue.append(request)
            self._cond.notify()
        if not request.done.wait(timeout_s):
            request.fail(ServiceUnavailable(f"no answer within {timeout_s:g} s; the search hangs"))
        if request.error is not None:
            raise request.error
        assert request.result is not None  # done without an error: answered
        return request.result

    def close(self, timeout: float | None = None) -> None:
        """Stop the workers after the batches in hand; every request still queued gets
        :class:`ServiceUnavailable`. Waits for each worker at most ``timeout`` seconds."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            if threading.current_thread() is not thread:
                thread.join(timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    def _run(self) -> None:
        """The worker: batches until closed; whatever ends it fails every waiting request."""
        batch: list[_Request] | None = []
        try:
            while (batch := self._next_batch()) is not None:
                if batch:
                    self._serve(batch)
                elif self.on_idle is not None:
                    self.on_idle()
        except BaseException as exc:
            self._reason = f"the request batcher stopped on {type(exc).__name__}: {exc}"
            raise
        finally:
            with self._cond:
                self._closed = True
                waiting = [*(batch or ()), *self._queue]
                self._queue.clear()
                self._cond.notify_all()  # the other workers stop too
            for request in waiting:
                request.fail(ServiceUnavailable(self._reason))

    def _next_batch(self) -> list[_Request] | None:
        """The next batch (rule above); ``[]`` after ``idle_s`` without a request (with
        ``on_idle``); ``None`` once closed."""
        idle_s = self.idle_s if self.on_idle is not None else None
        with self._cond:
            if not self._queue and not self._closed:
                self._cond.wait(idle_s)
                if not self._queue and not self._closed:
                    return []
            if self._closed:
                return None
            deadline = self._queue[0].arrived + self.max_wait_s
            while len(self._queue) < self.max_batch and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            if self._closed:
                return None
            return [self._queue.popleft() for _ in range(min(len(self._queue), self.max_batch))]

    def _serve(self, batch: list[_Request]) -> None:
        _serve_batch(self.encoder, self.search, batch, self.max_batch)


def serve_alone(
    encoder: Any,
    search: Callable[..., Any],
    query: str,
    k: int,
    nprobe: int | None = None,
    *,
    approx: bool = False,
    tokens: Sequence[int] | None = None,
) -> BatchResult:
    """One request served on the calling thread as a batch of one (a service that was not
    started answers a direct ``handle`` call so); raises its encode or search exception."""
    request = _Request(query, k, nprobe, approx, tokens)
    _serve_batch(encoder, search, [request], 1)
    if request.error is not None:
        raise request.error
    assert request.result is not None  # answered when no error was recorded
    return request.result


def embed(
    encoder: Any, queries: Sequence[str], tokens: Sequence[Sequence[int] | None]
) -> np.ndarray:
    """A batch's query rows, float32 ``[n, dim]``, by one encode (module docstring): of the
    token ids when every query has them and the encoder takes them (``encode_token_ids``,
    packed when ``n > 1``), else of the texts."""
    if hasattr(encoder, "encode_token_ids") and all(t is not None for t in tokens):
        packed = {"pack": True} if len(tokens) > 1 else {}
        q = encoder.encode_token_ids(tokens, normalize=True, **packed)
    else:
        q = encoder.encode(list(queries), normalize=True)
    return np.asarray(q, np.float32).reshape(len(queries), -1)


def _serve_batch(
    encoder: Any, search: Callable[..., Any], batch: list[_Request], max_batch: int
) -> None:
    """One encode for the batch (:func:`embed`), then one search per ``(k, nprobe, approx)``
    group."""
    start = time.time_ns()
    try:
        q = embed(encoder, [r.query for r in batch], [r.tokens for r in batch])
    except Exception as exc:
        for request in batch:
            request.fail(exc)
        return
    encoded = (start, time.time_ns())
    groups: dict[tuple[int, int | None, bool], list[int]] = {}
    for i, request in enumerate(batch):
        groups.setdefault((request.k, request.nprobe, request.approx), []).append(i)
    for key, rows in groups.items():
        _search_group(search, max_batch, batch, q, rows, key, encoded)


def _search_group(
    search: Callable[..., Any],
    max_batch: int,
    batch: Sequence[_Request],
    q: np.ndarray,
    rows: list[int],
    key: tuple[int, int | None, bool],
    encoded: tuple[int, int],
) -> None:
    """Search ``q[rows]`` padded with zero rows to :func:`padded_size`; answer each request
    of the group with its own row (the padded rows' results are dropped)."""
    k, nprobe, approx = key
    extra: dict[str, object] = {} if nprobe is None else {"nprobe": nprobe}
    if approx:
        extra["approx"] = True
    members = [batch[i] for i in rows]
    n = len(rows)
    padded = np.zeros((padded_size(n, max_batch), q.shape[1]), np.float32)
    padded[:n] = q[rows]
    start = time.time_ns()
    try:
        top = search(padded, k, **extra)
        scores, ids = np.asarray(top.scores)[:n], np.asarray(top.ids)[:n]
    except Exception as exc:
        for request in members:
            request.fail(exc)
        return
    end = time.time_ns()
    for j, request in enumerate(members):
        request.result = BatchResult(scores[j], ids[j], len(batch), *encoded, start, end)
        request.done.set()
