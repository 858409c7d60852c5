"""What ``jaxparadigm search "query" [--corpus FILE|pydoc]`` prints: three rankings (C1.1)."""

from __future__ import annotations

import warnings

from jaxparadigm.common.quoting import quote
from jaxparadigm.config import RetrievalConfig
from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.encoder.sentence_encoder import (
    UnknownWordPieceWarning,
    cached_minilm,
)
from jaxparadigm.retrieval.eval.chunked_index import max_by_owner, passage_index
from jaxparadigm.retrieval.eval.pydoc_corpus import read_corpus, topic_title
from jaxparadigm.retrieval.eval.ranking_metrics import ranking_from_scores
from jaxparadigm.retrieval.index.memory_index import SemanticIndex
from jaxparadigm.retrieval.sparse.keyword import keyword_search

__all__ = ["format_search"]


def format_search(query: str, corpus: str = "pydoc", top_k: int = 5) -> str:
    """The top ``top_k`` of ``corpus`` for ``query`` by substring, token overlap and MiniLM (C1.1).

    ``corpus`` is ``"pydoc"`` (semantic: passages, topic = best passage) or a UTF-8 text file with
    one document per line (semantic: whole lines). The pydoc passage embeddings are cached on disk.
    A query without any word piece is refused (``InputError``) before the corpus is indexed; an
    ``[UNK]``-only one warns once (``UnknownWordPieceWarning``); the echoed query is shortened.
    """
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__}, expected str")
    top_k = require_int("top_k", top_k, 1)
    names, texts = read_corpus(corpus)
    encoder = cached_minilm(None)
    encoder.check_texts([query], "query")  # refuse or warn once, before indexing the corpus
    if str(corpus) == "pydoc":
        chunk_words = RetrievalConfig().chunk_words
        index, owner = passage_index(encoder, texts, chunk_words, cache=True)
    else:
        index = SemanticIndex(encoder).add(texts)
    with warnings.catch_warnings():  # the query's [UNK] warning was given above
        warnings.simplefilter("ignore", UnknownWordPieceWarning)
        if str(corpus) == "pydoc":
            scores = max_by_owner(index.scores([query]), owner, len(names))[0]
            semantic = [(int(i), float(scores[i])) for i in ranking_from_scores(scores)[:top_k]]
        else:
            semantic = index.search(query, top_k)

    def show(i: int) -> str:
        text = topic_title(texts[i]) if str(corpus) == "pydoc" else texts[i]
        return f"{names[i]}: {text[:70]}"

    lines = [
        f"query: {quote(query, 80)}  corpus: {corpus} "
        f"({len(texts)} document{'' if len(texts) == 1 else 's'})"
    ]
    for label, hits in (
        ("keyword (seed substring)", keyword_search(query, texts, top_k, "substring")),
        ("token overlap", keyword_search(query, texts, top_k, "token_overlap")),
        ("semantic (all-MiniLM-L6-v2, cosine)", semantic),
    ):
        lines.append(f"\n{label}:")
        lines += [f"  {r}. [{s:.3f}] {show(i)}" for r, (i, s) in enumerate(hits, 1)] or [
            "  (no match)"
        ]
    return "\n".join(lines)
