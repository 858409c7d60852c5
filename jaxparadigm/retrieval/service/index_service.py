"""A search service over an index folder: the folder opened once, the service ready to start (C5.2)."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.dense.ivf_search import default_nprobe
from jaxparadigm.retrieval.index.searcher import IndexSearcher
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
    **search: Any,
) -> SearchService:
    """A (not yet started) :class:`SearchService` over every passage of ``index_dir`` (C5.2).

    ``encoder`` defaults to the MiniLM the index was built with (``cached_minilm``); an encoder of
    another model is refused (``IndexSearcher.check_encoder``). ``search`` goes to
    :class:`IndexSearcher` as for ``search --index``: ``dtype`` (``"float32"``, ``"bfloat16"``,
    ``"int8"``), ``devices``, ``resident=False`` (stream the shards per request), ``block_rows``.
    ``listener``: a socket already bound by :func:`~jaxparadigm.retrieval.service.http_handler.bind_listener`
    (then ``port`` is not used). ``nprobe``: the inverted lists a request without ``"nprobe"``
    scans (an index with IVF lists); ``"default"``: :func:`~jaxparadigm.retrieval.dense.ivf_search.
    default_nprobe` of the index's lists when it has them, else exact; ``None``: exact.
    ``max_batch``, ``max_wait_ms``: how concurrent requests are batched (``serve --batch-size``,
    ``--batch-wait-ms``; :mod:`~jaxparadigm.retrieval.service.request_batcher`).
    """
    if encoder is None:
        from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm

        encoder = cached_minilm(None)
    searcher = IndexSearcher(index_dir, **search)
    searcher.check_encoder(encoder)
    if nprobe == "default":
        nprobe = None if searcher.lists is None else default_nprobe(searcher.lists, len(searcher))
    elif isinstance(nprobe, str):
        raise InputError(f"nprobe: got {nprobe!r}, expected an int, 'default' or None")
    return SearchService(
        searcher,
        port=port,
        encoder=encoder,
        listener=listener,
        nprobe=nprobe,
        max_batch=max_batch,
        max_wait_ms=max_wait_ms,
        passage_of=lambda row: searcher.passage(row)._asdict(),
    )
