"""Keyword vs token-overlap vs semantic retrieval on ``pydoc_data.topics`` (C1.1, C1.2).

``run_experiment(cfg)`` (task ``retrieval``) ranks the 79 topics for each labelled query of
:data:`PYDOC_QUERIES` with four methods -- the seed's substring matcher, token overlap, MiniLM on
the first 256 tokens of each topic, MiniLM over passages (topic score = max passage cosine) -- and
writes recall@1, recall@5 and MRR, the seed's own Chinese example with its actual scores, a C1.2
check and a bar chart to ``<out_dir>/<name>/``. The MiniLM encoding runs on every CPU device of the
process (``jaxparadigm run --cpu-devices N|auto``, :mod:`jaxparadigm.app.encoder_devices`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from jaxparadigm.app.encoder_devices import encoder_on_cpu_devices, process_cpu_devices
from jaxparadigm.app.retrieval_plots import plot_metrics
from jaxparadigm.app.retrieval_report import report_markdown
from jaxparadigm.claims.evidence.dot_vs_cosine import dot_vs_cosine
from jaxparadigm.claims.evidence.pydoc_queries import PYDOC_QUERIES, LabelledQuery
from jaxparadigm.claims.evidence.seed_example import seed_example
from jaxparadigm.config import Config
from jaxparadigm.errors import ConfigError
from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder, cached_minilm
from jaxparadigm.retrieval.eval.chunked_index import max_by_owner, passage_index
from jaxparadigm.retrieval.eval.pydoc_corpus import read_corpus
from jaxparadigm.retrieval.eval.ranking_metrics import (
    first_hit_rank,
    mean_reciprocal_rank,
    ranking_from_scores,
    recall_at_k,
)
from jaxparadigm.retrieval.index.memory_index import SemanticIndex
from jaxparadigm.retrieval.sparse.keyword import keyword_search

__all__ = [
    "run_experiment",
    "METHODS",
    "pydoc_evaluation_set",
    "keyword_rankings",
    "semantic_rankings",
    "summarize_ranks",
]

METHODS = ("keyword (seed substring)", "token overlap", "semantic (first 256 tokens)",
           "semantic (passages, max)")  # fmt: skip


def keyword_rankings(queries: list[str], texts: list[str], mode: str) -> list[list[int]]:
    """Every text's index, best first, for each query by :func:`keyword_search` in ``mode``."""
    return [[i for i, _ in keyword_search(q, texts, top_k=len(texts), mode=mode)] for q in queries]


def summarize_ranks(ranks: list[int | None]) -> dict:
    """recall@1, recall@5 and MRR of the first relevant hit's 1-based ranks (``None``: no hit)."""
    return {
        "recall@1": recall_at_k(ranks, 1),
        "recall@5": recall_at_k(ranks, 5),
        "mrr": mean_reciprocal_rank(ranks),
        "ranks": ranks,
    }


def pydoc_evaluation_set(
    cfg_topics: tuple[str, ...],
) -> tuple[list[str], list[str], list[LabelledQuery]]:
    """``(names, texts, queries)``: the pydoc topics (all, or ``cfg_topics``) and the labelled
    queries that target at least one of them."""
    names, texts = read_corpus("pydoc")
    if cfg_topics:
        unknown = sorted(set(cfg_topics) - set(names))
        if unknown:
            raise ConfigError(
                f"config key 'retrieval.topics': unknown topic(s) {unknown}; expected names from "
                "pydoc_data.topics"
            )
        keep = [i for i, n in enumerate(names) if n in set(cfg_topics)]
        names, texts = [names[i] for i in keep], [texts[i] for i in keep]
    queries = [q for q in PYDOC_QUERIES if set(q.targets) & set(names)]
    if not queries:
        raise ConfigError(f"config key 'retrieval.topics': no labelled query targets {cfg_topics}")
    return names, texts, queries


def semantic_rankings(
    encoder: SentenceEncoder,
    texts: list[str],
    queries: list[str],
    chunk_words: int,
    batch_size: int,
) -> tuple[dict[str, list[list[int]]], SemanticIndex]:
    """The two MiniLM rankings of ``texts`` per query (whole text truncated to the model's length;
    passages, text score = best passage) and the passage index (for the C1.2 check)."""
    whole = SemanticIndex(encoder, batch_size).add(texts)
    rankings = {METHODS[2]: [list(ranking_from_scores(s)) for s in whole.scores(queries)]}
    index, owner = passage_index(encoder, texts, chunk_words, batch_size)
    topic = max_by_owner(index.scores(queries), owner, len(texts))
    rankings[METHODS[3]] = [list(ranking_from_scores(s)) for s in topic]
    return rankings, index


def run_experiment(cfg: Config) -> Path:
    """Run the retrieval evaluation for ``cfg.retrieval``; return ``<out_dir>/<name>/report.md``."""
    rc = cfg.retrieval
    if rc.corpus != "pydoc":
        raise ConfigError(
            f"config key 'retrieval.corpus': got {rc.corpus!r}, expected 'pydoc' (the labelled "
            "queries target pydoc topics; use `jaxparadigm search --corpus FILE` for other corpora)"
        )
    out = Path(cfg.out_dir) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    names, texts, queries = pydoc_evaluation_set(rc.topics)
    qtexts = [q.text for q in queries]
    relevant = [{names.index(t) for t in q.targets if t in names} for q in queries]

    t0 = time.perf_counter()
    encoder = cached_minilm(rc.model_path)  # one encoder (and jit cache) per process
    load_s = time.perf_counter() - t0
    rankings = {
        METHODS[0]: keyword_rankings(qtexts, texts, "substring"),
        METHODS[1]: keyword_rankings(qtexts, texts, "token_overlap"),
    }
    # every CPU device of the process (``run --cpu-devices``) encodes micro-batches side by side
    with encoder_on_cpu_devices(encoder, process_cpu_devices()):
        encode_devices = len(encoder.devices)
        t0 = time.perf_counter()
        semantic, index = semantic_rankings(encoder, texts, qtexts, rc.chunk_words, rc.batch_size)
        semantic_s = time.perf_counter() - t0
        seed = seed_example(encoder)
    rankings |= semantic
    results = {
        m: summarize_ranks([first_hit_rank(r, rel) for r, rel in zip(rs, relevant, strict=True)])
        for m, rs in rankings.items()
    }
    c12 = dot_vs_cosine(index, qtexts)
    plot_metrics(results, out / "retrieval_metrics.png")
    metrics = {
        "n_queries": len(queries),
        "n_topics": len(names),
        "n_passages": len(index),
        "chunk_words": rc.chunk_words,
        "results": results,
        "seed_example": seed,
        "c1_2": c12,
        "compiled_shapes": sorted(encoder.compiled_shapes),
        "load_seconds": load_s,
        "semantic_seconds": semantic_s,
        "encode_devices": encode_devices,
        "per_query": [
            {
                "query": q.text,
                "targets": list(q.targets),
                **{m: results[m]["ranks"][i] for m in METHODS},
            }  # fmt: skip
            for i, q in enumerate(queries)
        ],
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    report = out / "report.md"
    report.write_text(report_markdown(metrics), encoding="utf-8")
    return report
