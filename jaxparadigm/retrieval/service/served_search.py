"""What a search service searches with: its options, each request's options checked against its
index, the hybrid fusion and the JSON answer of one request (C1.1, C5.2).

:class:`ServedSearch` holds the index of a
:class:`~jaxparadigm.retrieval.service.http_service.SearchService` and the service's
:class:`~jaxparadigm.retrieval.search_options.SearchOptions` (what a request's missing keys take;
``nprobe="default"`` resolved once). A request's options are refused when their ``dtype`` or
``stream`` differ from how the index was opened, or when a search split over processes cannot
run them (:meth:`SearchOptions.check_process_group`), each naming the body key. The dense rows a
request needs are ``k`` (mode "dense") or ``min(depth, rows)`` (mode "hybrid"); the answer fuses
those with the BM25 top ``depth`` exactly as ``search --index`` does
(:func:`~jaxparadigm.retrieval.ranking.hybrid_search.fused_ranking`):

    {"mode": mode, "score": what the score is, "hits": [[row, score], ...],
     "passages": [{"source", "start", "end", "text", "excerpt"?}, ...]}   (with ``passage_of``)
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index.memory_index import SemanticIndex
from jaxparadigm.retrieval.ranking.excerpt import best_excerpt
from jaxparadigm.retrieval.ranking.hybrid_search import fused_ranking, keyword_index
from jaxparadigm.retrieval.ranking.search_results import SCORE_MEANING
from jaxparadigm.retrieval.search_options import SearchOptions
from jaxparadigm.retrieval.service.search_request import BODY_KEYS
from jaxparadigm.retrieval.sparse.bm25 import BM25Index, bm25_index

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from jaxparadigm.retrieval.index.searcher import IndexSearcher
    from jaxparadigm.retrieval.service.request_batcher import BatchResult

__all__ = ["SERVICE_DEFAULTS", "ServedSearch"]

#: A service's options when given none: the engine's own answer (dense cosine, exact, no
#: excerpts); ``serve`` passes the CLI's (``SearchOptions()``: hybrid, excerpts).
SERVICE_DEFAULTS = SearchOptions(mode="dense", nprobe=None, excerpts=False)


class ServedSearch:
    """The search of a service over ``index`` (module docstring): ``options`` (None:
    :data:`SERVICE_DEFAULTS`) or the older keyword ``nprobe``, not both; ``passage_of``: row ->
    its passage record, for the answer's ``"passages"``."""

    def __init__(
        self,
        index: SemanticIndex | IndexSearcher,
        options: SearchOptions | None,
        nprobe: int | str | None,
        passage_of: Callable[[int], Mapping[str, object]] | None,
    ) -> None:
        self.index, self.passage_of = index, passage_of
        opened = getattr(index, "opened", SearchOptions()).opening()
        base = dataclasses.replace(SERVICE_DEFAULTS, dtype=opened.dtype, stream=opened.stream)
        options = SearchOptions.from_keywords(options, {"nprobe": nprobe}, {}, base)
        options.check_opening(opened, "the service's index")
        group = getattr(index, "group", None)
        if group is not None:
            options.check_process_group(group.processes)
        #: The inverted lists a request without "nprobe" scans (None: exact).
        self.nprobe = self.resolve_nprobe(options)
        #: The options of a request that sends only its query.
        self.options = dataclasses.replace(options, nprobe=self.nprobe)
        self._keyword: BM25Index | None = None
        self._keyword_lock = threading.Lock()

    def resolve_nprobe(self, options: SearchOptions) -> int | None:
        """The inverted lists a search with ``options`` scans (``IndexSearcher.resolve_nprobe``;
        a :class:`SemanticIndex` has none: exact)."""
        resolve = getattr(self.index, "resolve_nprobe", None)
        if resolve is not None:
            return resolve(options)
        if isinstance(options.nprobe, int):
            raise InputError(
                f"nprobe={options.nprobe}: this index has no IVF lists (an in-memory "
                "SemanticIndex); expected 'default' or None"
            )
        return None

    def request_nprobe(self, options: SearchOptions) -> int | None:
        """A request's ``options`` checked against the service (its index's ``dtype`` and
        ``stream``; a search split over processes), each refusal naming the body key; returns
        the inverted lists it scans."""
        options.check_opening(self.options, "this service's index", BODY_KEYS)
        group = getattr(self.index, "group", None)
        if group is not None:
            options.check_process_group(group.processes, BODY_KEYS)
        if options.nprobe == self.nprobe:
            return self.nprobe  # the service's own (checked once)
        return self.resolve_nprobe(options)

    def dense_k(self, options: SearchOptions) -> int:
        """How many rows the dense search of a request returns: ``k``, or hybrid's ``depth``."""
        return options.k if options.mode == "dense" else min(options.depth, len(self.index))

    def keyword_index(self) -> BM25Index:
        """The BM25 index of every passage (or document) of the index, built on first use (and
        again when a :class:`SemanticIndex` has grown since)."""
        with self._keyword_lock:
            if self._keyword is None or self._keyword.lengths.shape[0] != len(self.index):
                if isinstance(self.index, SemanticIndex):
                    self._keyword = bm25_index(self.index.docs)
                else:
                    self._keyword = keyword_index(self.index)
            return self._keyword

    def answer(self, query: str, options: SearchOptions, top: BatchResult, tracer: Tracer) -> dict:
        """The JSON answer of one request (module docstring) from its dense rows ``top``: fused
        in mode hybrid (span "fuse"), with passages and, when asked, excerpts (span
        "excerpts")."""
        found = top.ids >= 0  # -1: the probed lists held fewer than k rows
        hits = list(zip(top.ids[found].tolist(), top.scores[found].tolist(), strict=True))
        if options.mode == "hybrid":
            with tracer.start_as_current_span("fuse"):
                rows = [row for row, _ in hits]
                hits = fused_ranking(rows, self.keyword_index(), query, options.k, options.depth)
        payload: dict = {"mode": options.mode, "score": SCORE_MEANING[options.mode]}
        payload["hits"] = [[row, score] for row, score in hits]
        if self.passage_of is not None:
            payload["passages"] = [dict(self.passage_of(row)) for row, _ in hits]
            if options.excerpts:
                with tracer.start_as_current_span("excerpts"):
                    for passage in payload["passages"]:
                        passage["excerpt"] = file_excerpt(passage, query, options.excerpt_chars)
        return payload


def file_excerpt(passage: Mapping[str, object], query: str, max_chars: int) -> dict:
    """``best_excerpt`` of a passage record, every offset in the passage's file (its ``start``
    added): ``{"start", "end", "text", "marks"}``."""
    at = int(passage["start"])  # type: ignore[call-overload]
    ex = best_excerpt(str(passage["text"]), query, max_chars)
    return {
        "start": at + ex.start,
        "end": at + ex.end,
        "text": ex.text,
        "marks": [[at + s, at + e] for s, e in ex.marks],
    }
