"""A search service over an index folder: the folder opened once, the service ready (C5.2)."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any

from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.search_options import SearchOptions
from jaxparadigm.retrieval.service.http_service import SearchService
from jaxparadigm.retrieval.service.request_batcher import DEFAULT_MAX_BATCH, DEFAULT_MAX_WAIT_MS

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = ["index_service"]


def index_service(
    index_dir: str | os.PathLike,
    encoder: SentenceEncoder | None = None,
    port: int = 0,
    listener: socket.socket | None = None,
    nprobe: int | str | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_wait_ms: float = DEFAULT_MAX_WAIT_MS,
    *,
    options: SearchOptions | None = None,
    **search: Any,
) -> SearchService:
    """A (not yet started) :class:`SearchService` over every passage of ``index_dir`` (C5.2).

    ``encoder`` defaults to the MiniLM the index was built with (``cached_minilm``); an encoder of
    another model is refused (``IndexSearcher.check_encoder``). ``options``: the service's
    :class:`SearchOptions` (what a request's missing keys take, and how the index is opened: its
    ``dtype`` and ``stream``); None: ``SearchOptions()``, the defaults of ``search --index``
    (hybrid, excerpts, the index's default ``nprobe``), with the older keywords over them:
    ``nprobe`` (an int; ``"default"``: the index's default; ``None``: exact) and, in ``search``,
    ``dtype`` and ``resident``. ``search`` also goes to :class:`IndexSearcher`: ``devices``,
    ``block_rows``. ``listener``: a socket already bound by
    :func:`~jaxparadigm.retrieval.service.http_handler.bind_listener` (then ``port`` is not used).
    ``max_batch``, ``max_wait_ms``: how concurrent requests are batched (``serve --batch-size``,
    ``--batch-wait-ms``; :mod:`~jaxparadigm.retrieval.service.request_batcher`).
    """
    if encoder is None:
        from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm

        encoder = cached_minilm(None)
    resident = search.pop("resident", None)
    keywords = {"nprobe": nprobe, "dtype": search.pop("dtype", None)}
    keywords["stream"] = None if resident is None else not resident
    options = SearchOptions.from_keywords(options, keywords, {"nprobe": "default"}, SearchOptions())
    searcher = IndexSearcher(index_dir, options=options.opening(), **search)
    searcher.check_encoder(encoder)
    return SearchService(
        searcher,
        port=port,
        encoder=encoder,
        listener=listener,
        options=options,
        max_batch=max_batch,
        max_wait_ms=max_wait_ms,
        passage_of=lambda row: searcher.passage(row)._asdict(),
    )
