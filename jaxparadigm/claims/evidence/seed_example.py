"""The seed's own Chinese example, an unrelated control query and its English translation (C1.1).

The article's example ranks three Chinese document titles for a Chinese query with ``np.dot`` of
MiniLM embeddings. :func:`seed_example` reports the scores they really give and the share of
``[UNK]`` word pieces: the uncased English WordPiece vocabulary has few CJK characters.
"""

from __future__ import annotations

import numpy as np

from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = [
    "seed_example",
    "SEED_QUERY",
    "SEED_DOCS",
    "SEED_CONTROL",
    "SEED_QUERY_EN",
    "SEED_DOCS_EN",
]

SEED_QUERY = "如何优化数据库查询性能"
SEED_DOCS = ("索引设计指南", "Python内存管理", "SQL执行计划分析")
SEED_CONTROL = "明天的天气怎么样"  # "what is the weather tomorrow": unrelated to every doc
SEED_QUERY_EN = "how to optimise database query performance"
SEED_DOCS_EN = ("index design guide", "Python memory management", "SQL execution plan analysis")


def seed_example(encoder: SentenceEncoder) -> dict:
    """The seed's Chinese example, an unrelated Chinese control query and the English translation,
    with the scores they really give (C1.1). ``unk_fraction`` is the share of [UNK] word pieces:
    the uncased English WordPiece vocabulary has few CJK characters."""
    out = {}
    cases = (
        ("zh", SEED_QUERY, SEED_DOCS),
        ("zh, unrelated control query", SEED_CONTROL, SEED_DOCS),
        ("en translation", SEED_QUERY_EN, SEED_DOCS_EN),
    )
    for lang, query, docs in cases:
        q = encoder.encode(query)
        d = encoder.encode(list(docs))
        scores = np.dot(q, d.T)  # the seed's formula
        unk = encoder.tokenizer.token_to_id("[UNK]")
        tokens = [encoder.tokenize([s])["input_ids"][0].tolist() for s in (query, *docs)]
        out[lang] = {
            "query": query,
            "docs": list(docs),
            "scores": [float(s) for s in scores],
            "top": int(np.argmax(scores)),
            "top_in_0_or_2": bool(int(np.argmax(scores)) in (0, 2)),
            "keyword_match": [doc for doc in docs if query.lower() in doc.lower()],
            "unk_fraction": [
                sum(t == unk for t in ids[1:-1]) / max(len(ids) - 2, 1) for ids in tokens
            ],
        }
    return out
