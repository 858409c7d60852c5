"""Search an index by default: hybrid ranking, each hit's cosine and excerpt, serve's JSON (C1.1).

:func:`search_with_excerpts` is what ``jaxparadigm search --index`` runs (``serve`` ranks the same
way, :mod:`~jaxparadigm.retrieval.service.served_search`): for one query and a
:class:`~jaxparadigm.retrieval.search_options.SearchOptions` it returns :class:`ScoredHit` s (each
holding its :class:`~jaxparadigm.retrieval.documents.passages.Passage`), best first, in one of two
modes::

    mode "hybrid" (default)   score = RRF(row) = 1/(60 + dense rank) + 1/(60 + BM25 rank)
                              (:func:`~jaxparadigm.retrieval.ranking.hybrid_search.hybrid_search`; a
                              missing rank adds 0), so 2/61 ~= 0.0328 at most
    mode "dense"              score = cos(query, passage)   (the index's exact top-k)

and in both modes ``cosine = q . x_row`` (unit vectors: the cosine), so the dense similarity is
always there. The defaults are those benchmarks/relevance_bench.py measured best on installed
third-party text (RESULTS.md, "Relevance on real documents" and "Passages that know where they
are"): hybrid put an answering passage in the top 3 for 32 of 38 questions against 28 of 38 for
dense alone; the excerpt (:func:`~jaxparadigm.retrieval.ranking.excerpt.best_excerpt`) counts
the query's words and breaks ties by the keyword index's idf whenever there is one (hybrid mode,
or ``keyword`` given): it held the evidence 38 of 62 times against 35 by the count alone and 10
for a passage's first 160 characters.

:func:`search_response` is the JSON of ``jaxparadigm serve``'s answer, ``{"hits": [[row, score],
...], "passages": [{"source", "start", "end", "text"}, ...]}``, with what a hit adds beside it:
``"mode"``, ``"score"`` (what the score is, in words) and per passage ``"cosine"`` and
``"excerpt"`` (``{"start", "end", "text", "marks"}``, offsets into the passage's text, marks as
``[start, end]`` pairs; left out when the options ask for no excerpts). :func:`passage_record` is
serve's record of one passage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.passages import Passage, PassageFields
from jaxparadigm.retrieval.index.searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.ranking.excerpt import Excerpt, best_excerpt
from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index
from jaxparadigm.retrieval.search_options import MODES, SearchOptions
from jaxparadigm.retrieval.sparse.bm25 import BM25Index

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = [
    "MODES",
    "SCORE_MEANING",
    "ScoredHit",
    "search_with_excerpts",
    "passage_record",
    "search_response",
]

#: What a hit's ``score`` is, per mode (the text output's header and the JSON's ``"score"``).
SCORE_MEANING = {
    "hybrid": "reciprocal rank fusion of the dense and BM25 ranks, sum of 1/(60 + rank)",
    "dense": "cosine similarity of the query and passage embeddings",
}


class _ScoredHitRecord(NamedTuple):
    score: float
    row: int
    passage: Passage
    cosine: float
    excerpt: Excerpt | None


class ScoredHit(_ScoredHitRecord, PassageFields):
    """One result: ``score`` (per mode, module docstring), corpus ``row``, the :class:`Passage`
    (its ``source``, ``start``, ``end``, ``text`` also read as the hit's own), the query-passage
    ``cosine`` and the passage's best ``excerpt`` (None when the options ask for none)."""

    __slots__ = ()


def search_with_excerpts(
    searcher: IndexSearcher,
    encoder: SentenceEncoder,
    query: str,
    k: int | None = None,
    *,
    options: SearchOptions | None = None,
    keyword: BM25Index | None = None,
    mode: str | None = None,
    depth: int | None = None,
    approx: bool | None = None,
    excerpt_chars: int | None = None,
    nprobe: int | None = None,
) -> list[ScoredHit]:
    """The top ``options.k`` passages of ``searcher``'s index for ``query`` (module docstring),
    best first, ranked by ``options.mode``.

    ``options``: a :class:`SearchOptions` (``mode``, ``k``, ``depth``: how many of each ranking
    hybrid fuses, ``approx``: ``lax.approx_max_k`` in dense mode, ``nprobe``: the dense ranking
    scans that many inverted lists of an IVF index, ``"default"`` the index's default, None
    exact; ``excerpts``, ``excerpt_chars``); or its older keywords (each None: the
    ``SearchOptions`` default, except ``nprobe``: None, exact), not both. ``keyword``: the index's
    :func:`~jaxparadigm.retrieval.ranking.hybrid_search.keyword_index` (built here when None in
    hybrid mode; pass it when searching repeatedly).
    """
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__}, expected str")
    keywords = {"k": k, "mode": mode, "depth": depth, "approx": approx}
    keywords |= {"excerpt_chars": excerpt_chars, "nprobe": nprobe}
    defaults = {f: getattr(searcher.opened, f) for f in keywords} | {"nprobe": None}
    options = SearchOptions.from_keywords(options, keywords, defaults, searcher.opened)
    nprobe = searcher.resolve_nprobe(options)
    how = SearchOptions.read({"nprobe": nprobe}, base=options)
    hits: list[Hit]
    if options.mode == "dense":
        hits = searcher.search(encoder, query, options=how)[0]
    else:
        keyword = keyword_index(searcher) if keyword is None else keyword
        hits = hybrid_search(searcher, encoder, query, options=how, keyword=keyword)[0]
    idf = None if keyword is None else keyword.idf  # the corpus's idf breaks excerpt ties
    q = np.asarray(encoder.encode([query], normalize=True), np.float32).reshape(-1)
    out = []
    for h in hits:
        x = searcher.source.take(h.row, h.row + 1)[0]
        cosine = h.score if options.mode == "dense" else float(np.dot(x, q))
        excerpt = (
            best_excerpt(h.text, query, options.excerpt_chars, idf=idf)
            if options.excerpts
            else None
        )
        out.append(ScoredHit(*h, cosine=cosine, excerpt=excerpt))
    return out


def passage_record(hit: Hit | ScoredHit) -> dict:
    """``{"source", "start", "end", "text"}``: a passage as ``serve`` answers it."""
    return hit.passage._asdict()


def search_response(hits: list[ScoredHit], mode: str = "hybrid") -> dict:
    """The JSON object of ``search --json`` (module docstring): serve's ``hits`` and ``passages``,
    plus ``mode``, ``score`` and each passage's ``cosine`` and ``excerpt`` (when it has one)."""
    if mode not in MODES:
        raise InputError(f"mode: got {mode!r}, expected one of {', '.join(MODES)}")
    passages = []
    for h in hits:
        passages.append({**passage_record(h), "cosine": h.cosine})
        e = h.excerpt
        if e is not None:
            marks = [list(m) for m in e.marks]
            passages[-1]["excerpt"] = {
                "start": e.start,
                "end": e.end,
                "text": e.text,
                "marks": marks,
            }
    return {
        "mode": mode,
        "score": SCORE_MEANING[mode],
        "hits": [[h.row, h.score] for h in hits],
        "passages": passages,
    }
