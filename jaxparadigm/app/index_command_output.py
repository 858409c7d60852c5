"""What ``jaxparadigm index build|add|info`` and ``search --index`` print (C1.1).

Each function does the library call and returns the text: the CLI only parses arguments.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxparadigm.app.encoder_devices import encoder_on_cpu_devices
from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.document_files import Skipped, describe_skipped, plural
from jaxparadigm.retrieval.index_build import add_to_index, build_index
from jaxparadigm.retrieval.index_searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.index_store import committed, read_manifest
from jaxparadigm.retrieval.sentence_encoder import shorten

__all__ = ["index_build_text", "index_add_text", "index_info_text", "index_search_text"]


def _encoder(model_path: str | os.PathLike | None):
    from jaxparadigm.retrieval.sentence_encoder import cached_minilm

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
    **kw: Any,
) -> str:
    """Build (or resume building) an index of ``paths`` in ``out_dir``, encoding on ``devices``
    CPU devices (:func:`~jaxparadigm.app.encoder_devices.encoder_on_cpu_devices`); returns a
    summary line."""
    t0 = time.perf_counter()
    encoder = _encoder(model_path)
    with encoder_on_cpu_devices(encoder, devices) as where:
        m = build_index(paths, out_dir, encoder, progress=progress, **kw)
    return _summary("indexed", Path(out_dir), m, m["count"], time.perf_counter() - t0, where)


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
    (:func:`~jaxparadigm.app.encoder_devices.encoder_on_cpu_devices`); returns a summary line."""
    t0 = time.perf_counter()
    before = committed(read_manifest(index_dir))["count"]
    encoder = _encoder(model_path)
    with encoder_on_cpu_devices(encoder, devices) as where:
        m = add_to_index(index_dir, paths, encoder, progress=progress, **kw)
    added = m["count"] - before
    return _summary("added", Path(index_dir), m, added, time.perf_counter() - t0, where)


def index_info_text(index_dir: str) -> str:
    """The manifest in a few lines (status, model, build config, sources, shards with sha256)."""
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
        f"passages: {m['count']} in {plural(len(m['shards']), 'shard')} of <= {m['shard_rows']} rows",
        "build: " + ", ".join(f"{k}={v}" for k, v in m["build"].items()),
        f"sources ({len(m['sources'])}):",
        *(f"  {s['source']}: {plural(s['passages'], 'passage')}" for s in m["sources"][:20]),
    ]
    if len(m["sources"]) > 20:
        lines.append(f"  ... and {len(m['sources']) - 20} more")
    lines.append("shards:")
    lines += [
        f"  {s['name']}: {plural(s['rows'], 'row')}, sha256 {s['sha256']['embeddings'][:16]}..."
        for s in m["shards"]
    ]
    skipped = [Skipped(**s) for s in m.get("skipped", [])]
    if skipped:
        lines += [
            "last build/add " + line if i == 0 else line
            for i, line in enumerate(describe_skipped(skipped))
        ]
    return "\n".join(lines)


def _excerpt(hit: Hit, width: int) -> str:
    text = " ".join(hit.text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def index_search_text(
    query: str,
    index_dir: str,
    top_k: int = 10,
    *,
    dtype: str = "float32",
    approx: bool = False,
    stream: bool = False,
    model_path: str | None = None,
    excerpt_chars: int = 160,
) -> str:
    """The top ``top_k`` passages of the index for ``query``: score, source [start:end], excerpt.

    ``stream=True`` reads the shards during the search instead of holding them (memory: one
    placement of shards, not the corpus)."""
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__}, expected str")
    require_int("top_k", top_k, 1)
    searcher = IndexSearcher(index_dir, dtype=dtype, resident=not stream)
    hits = searcher.search(_encoder(model_path), query, top_k, approx=approx)[0]
    lines = [f"query: {shorten(query, 80)}  index: {index_dir} ({len(searcher)} passages, {dtype})"]
    lines += [
        f"  {r}. [{h.score:.3f}] {h.source} [{h.start}:{h.end}]\n     {_excerpt(h, excerpt_chars)}"
        for r, h in enumerate(hits, 1)
    ]
    return "\n".join(lines)
