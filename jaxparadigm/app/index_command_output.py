"""What ``jaxparadigm index build|add|info`` and ``search --index`` print (C1.1).

Each function does the library call and returns the text: the CLI only parses arguments.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxparadigm.app.encoder_devices import encoder_on_cpu_devices
from jaxparadigm.app.retrieval_launch import log_assignment
from jaxparadigm.common.quoting import plural, quote
from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.dense.ivf_search import default_nprobe
from jaxparadigm.retrieval.documents.reading import Skipped, describe_skipped
from jaxparadigm.retrieval.index.build import NothingToAdd, add_to_index, build_index
from jaxparadigm.retrieval.index.ivf_store import list_sizes_text
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.index.store import committed, read_manifest
from jaxparadigm.retrieval.ranking.excerpt import mark_text
from jaxparadigm.retrieval.ranking.search_results import (
    SCORE_MEANING,
    ScoredHit,
    search_response,
    search_with_excerpts,
)
from jaxparadigm.retrieval.search_options import SearchOptions

__all__ = [
    "MARK_OPEN",
    "MARK_CLOSE",
    "index_build_text",
    "index_add_text",
    "index_info_text",
    "index_ivf_text",
    "index_search_hits",
    "index_search_json",
    "index_search_text",
]


def _encoder(model_path: str | os.PathLike | None):
    from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm

    return cached_minilm(None if model_path is None else str(model_path))


def _summary(
    verb: str, index_dir: Path, m: dict, added: int, seconds: float, where: str = ""
) -> str:
    """The one-line summary, then the skipped inputs by reason (``describe_skipped``)."""
    line = (
        f"{verb} {plural(added, 'passage')} in {seconds:.1f} s{where}: {index_dir} now holds "
        f"{plural(m['count'], 'passage')} from {plural(len(m['sources']), 'source')} in "
        f"{plural(len(m['shards']), 'shard')} of <= {m['shard_rows']} rows ({m['model']['name']}, "
        f"dim {m['model']['dim']}, {m['dtype']})"
    )
    skipped = [Skipped(**s) for s in m.get("skipped", [])]
    tail = describe_skipped(skipped) + (["(--strict refuses these instead)"] if skipped else [])
    return "\n".join([line, *tail])


def index_build_text(
    paths: Sequence[str],
    out_dir: str,
    *,
    model_path: str | None = None,
    progress: bool = True,
    devices: int | None = None,
    ivf: int | None = None,
    **kw: Any,
) -> str:
    """Build (or resume building) an index of ``paths`` in ``out_dir``, encoding on ``devices``
    CPU devices (:func:`~jaxparadigm.app.encoder_devices.encoder_on_cpu_devices`); returns a
    summary line. ``ivf``: then train that many inverted lists (:func:`index_ivf_text`)."""
    if ivf is not None:
        ivf = require_int("ivf", ivf, 1)  # before the build: its upper bound is checked after it
    t0 = time.perf_counter()
    encoder = _encoder(model_path)
    with encoder_on_cpu_devices(encoder, devices) as where:
        m = build_index(paths, out_dir, encoder, progress=progress, **kw)
    text = _summary("indexed", Path(out_dir), m, m["count"], time.perf_counter() - t0, where)
    if ivf is not None:
        text += "\n" + index_ivf_text(str(out_dir), ivf)
    return text


def index_add_text(
    paths: Sequence[str],
    index_dir: str,
    *,
    model_path: str | None = None,
    progress: bool = True,
    devices: int | None = None,
    **kw: Any,
) -> str:
    """Append ``paths`` to the index in ``index_dir``, encoding on ``devices`` CPU devices
    (:func:`~jaxparadigm.app.encoder_devices.encoder_on_cpu_devices`); returns a summary line,
    or ``nothing to add: FILE is already indexed (unchanged)`` when the index holds them all
    (:class:`~jaxparadigm.retrieval.index.build.NothingToAdd`: a rerun is no error, exit 0)."""
    t0 = time.perf_counter()
    before = committed(read_manifest(index_dir))["count"]
    encoder = _encoder(model_path)
    with encoder_on_cpu_devices(encoder, devices) as where:
        try:
            m = add_to_index(index_dir, paths, encoder, progress=progress, **kw)
        except NothingToAdd as exc:
            return str(exc)
    added = m["count"] - before
    return _summary("added", Path(index_dir), m, added, time.perf_counter() - t0, where)


def _ivf_offsets(index_dir: Path, ivf: dict):
    """The lists' offsets, checked against the manifest's sha256 (a small file)."""
    from jaxparadigm.retrieval.index.ivf_store import load_ivf_file

    return load_ivf_file(index_dir, ivf, "offsets")


def index_ivf_text(index_dir: str, lists: int, *, seed: int = 0, iters: int = 10) -> str:
    """Train ``lists`` inverted lists for the index (:func:`train_ivf`); returns a summary line."""
    from jaxparadigm.retrieval.index.ivf_build import train_ivf

    m = train_ivf(index_dir, lists, seed=seed, iters=iters)
    ivf = m["ivf"]
    sizes = list_sizes_text(_ivf_offsets(Path(index_dir), ivf))
    return (
        f"trained {ivf['lists']} IVF lists over {plural(ivf['rows'], 'row')} in "
        f"{ivf['seconds']:.1f} s (k-means seed {ivf['seed']}, {ivf['iters']} iterations on "
        f"{plural(ivf['train_rows'], 'row')}): {sizes}; search probes "
        f"{plural(default_nprobe(ivf['lists'], ivf['rows']), 'list')} by default (--nprobe P; P = "
        f"{ivf['lists']}: exact)"
    )


def _history(m: dict) -> list[dict]:
    """Every build and add of the manifest, oldest first; a manifest without a history gives one
    record of its last build or add, its time and paths unknown."""
    if "history" in m:
        return m["history"]
    return [
        {
            "command": "build or add (last; earlier ones were not recorded)",
            "at": "unknown time",
            "paths": [],
            "passages": m["count"],
            "sources": len(m["sources"]),
            "skipped": m.get("skipped", []),
        }
    ]


def _ivf_lines(index_dir: str, m: dict) -> list[str]:
    """``index info``'s lines on the inverted lists: how many, how trained, their sizes."""
    ivf = m.get("ivf")
    if not ivf:
        return ["ivf: none (exact search; `jaxparadigm index ivf DIR --lists N` adds lists)"]
    return [
        f"ivf: {ivf['name']}: {ivf['lists']} lists over {plural(ivf['rows'], 'row')} "
        f"(k-means seed {ivf['seed']}, {ivf['iters']} iterations on "
        f"{plural(ivf['train_rows'], 'row')}); search probes "
        f"{plural(default_nprobe(ivf['lists'], ivf['rows']), 'list')} by default (--nprobe)",
        f"  {list_sizes_text(_ivf_offsets(Path(index_dir), ivf))}",
    ]


def index_info_text(index_dir: str, *, skipped: bool = False) -> str:
    """The manifest in a few lines (status, model, build config, sources, shards with sha256),
    then every build and add (when, what it was given, what it added and skipped); with
    ``skipped=True`` every input each of them skipped (else the first 10 of each)."""
    m = read_manifest(index_dir)
    pending = m["pending"]
    lines = [
        f"index: {index_dir}",
        f"status: {m['status']}"
        + (
            f" ({m['count']} of {pending['start_row'] + pending['rows']} written"
            + (
                f"; search serves the {pending['base']['count']} passages indexed before this add)"
                if "base" in pending
                else ")"
            )
            if pending
            else ""
        ),
        f"model: {m['model']['name']} (dim {m['model']['dim']}, max_seq_length "
        f"{m['model']['max_seq_length']}), embeddings {m['dtype']}",
        f"passages: {m['count']} in {plural(len(m['shards']), 'shard')} "
        f"of <= {m['shard_rows']} rows",
        "build: " + ", ".join(f"{k}={v}" for k, v in m["build"].items()),
        f"sources ({len(m['sources'])}):",
        *(f"  {s['source']}: {plural(s['passages'], 'passage')}" for s in m["sources"][:20]),
    ]
    if len(m["sources"]) > 20:
        lines.append(f"  ... and {len(m['sources']) - 20} more")
    lines += _ivf_lines(index_dir, m)
    lines.append("shards:")
    lines += [
        f"  {s['name']}: {plural(s['rows'], 'row')}, sha256 {s['sha256']['embeddings'][:16]}..."
        for s in m["shards"]
    ]
    history = _history(m)
    lines.append("history (every build and add, oldest first):")
    limit = None if skipped else 10
    hidden = 0
    for n, h in enumerate(history, 1):
        given = f" of {', '.join(h['paths'])}" if h["paths"] else ""
        lines.append(
            f"  {n}. {h['command']} at {h['at']}{given}: {plural(h['passages'], 'passage')} from "
            f"{plural(h['sources'], 'source')}, {plural(len(h['skipped']), 'input')} skipped"
        )
        told = describe_skipped([Skipped(**s) for s in h["skipped"]], limit=limit or 10**9)
        if limit is not None and len(h["skipped"]) > limit:
            hidden += len(h["skipped"]) - limit
            told = told[: 1 + limit]
        lines += [f"    {line}" for line in told]
    if hidden:
        lines.append(
            f"({hidden} more skipped inputs: `jaxparadigm index info {index_dir} --skipped`)"
        )
    return "\n".join(lines)


#: How ``search --index`` marks the query's words in an excerpt: plain text that reads the same on a
#: terminal and in a redirected file.
MARK_OPEN, MARK_CLOSE = "\u00ab", "\u00bb"


def _shown_excerpt(hit: ScoredHit) -> str:
    """The hit's best excerpt on one line, query words as «word», "..." where it is cut (none:
    the options asked for no excerpt)."""
    e = hit.excerpt
    if e is None:
        return ""
    text = mark_text(e.text, e.marks, e.start, MARK_OPEN, MARK_CLOSE)
    text = " ".join(text.split())
    return ("..." if e.start > 0 else "") + text + ("..." if e.end < len(hit.text.rstrip()) else "")


def index_search_hits(
    query: str,
    index_dir: str,
    top_k: int | None = None,
    *,
    options: SearchOptions | None = None,
    model_path: str | None = None,
    **keywords: Any,
) -> tuple[IndexSearcher, SearchOptions, list[ScoredHit]]:
    """The opened index, the options searched with and the top ``k`` :class:`ScoredHit` s for
    ``query``
    (:func:`~jaxparadigm.retrieval.ranking.search_results.search_with_excerpts`) with ``options``
    (the CLI's :class:`SearchOptions`), or ``top_k`` and the keywords ``mode``, ``dtype``,
    ``approx``, ``stream``, ``nprobe`` over ``SearchOptions()`` (each None: its default; nprobe
    ``"default"``: the index's default, exact on an index without IVF lists)."""
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__}, expected str")
    options = SearchOptions.from_keywords(options, {"k": top_k, **keywords}, {}, SearchOptions())
    searcher = IndexSearcher(index_dir, options=options.opening())
    log_assignment("search", searcher)  # a process of a group: its shards, to its log
    hits = search_with_excerpts(searcher, _encoder(model_path), query, options=options)
    return searcher, options, hits


def index_search_json(query: str, index_dir: str, top_k: int | None = None, **kw: Any) -> str:
    """``search --index DIR --json``:
    :func:`~jaxparadigm.retrieval.ranking.search_results.search_response` (serve's
    ``{"hits", "passages"}`` plus ``mode``, ``score``, ``cosine``, ``excerpt``);
    ``kw``: :func:`index_search_hits`'s."""
    _, options, hits = index_search_hits(query, index_dir, top_k, **kw)
    return json.dumps(search_response(hits, options.mode), ensure_ascii=False)


def index_search_text(query: str, index_dir: str, top_k: int | None = None, **kw: Any) -> str:
    """The top ``k`` passages of the index for ``query``: score and cosine, source
    [start:end], and the best excerpt with the query's words marked «so».

    ``kw``: :func:`index_search_hits`'s (``options``, or ``mode``: ``"hybrid"`` (default; score
    = fused RRF) or ``"dense"`` (score = cosine), ``stream=True``: read the shards during the
    search instead of holding them (memory: one placement of shards, not the corpus), ...)."""
    searcher, options, hits = index_search_hits(query, index_dir, top_k, **kw)
    mode, nprobe = options.mode, searcher.resolve_nprobe(options)
    how = options.dtype if nprobe is None else f"IVF: nprobe {nprobe} of {searcher.lists} lists"
    lines = [
        f"query: {quote(query, 80)}  index: {index_dir} ({len(searcher)} passages, {how})",
        f"mode: {mode}; score: {SCORE_MEANING[mode]}"
        + ("; (cos ...): the cosine similarity" if mode == "hybrid" else "")
        + f"; query words marked {MARK_OPEN}so{MARK_CLOSE}",
    ]
    for r, h in enumerate(hits, 1):
        score = f"{h.score:.4f}" if mode == "hybrid" else f"{h.score:.3f}"
        cosine = f"(cos {h.cosine:.3f}) " if mode == "hybrid" else ""
        lines.append(f"  {r}. [{score}] {h.source} [{h.start}:{h.end}]")
        if h.excerpt is not None or cosine:
            lines.append(f"     {cosine}{_shown_excerpt(h)}")
    return "\n".join(lines)
