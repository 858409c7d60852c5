"""Passages cut along the document's structure: do they answer more of the relevance set? (C1.1)

    python benchmarks/relevance_chunking_probe.py [--variants grid:254/32,sections:254/32,...]
                                                  [--cache-dir DIR]

On the 70 questions and five corpora of ``jaxparadigm bench relevance`` (benchmarks/relevance/,
the same evidence judging: :func:`relevance_bench.answers`), each corpus is cut into passages
several ways, every passage encoded alone by MiniLM (vectors cached per text under
``--cache-dir``), and each question ranked the library's default way: dense top 100 (exact) and
BM25 over identifier words of ``context + "\\n" + text`` fused by RRF 1:1 (k = 60). Cuts:

* ``grid:W/O``: the library's windows (``split_passages``): ``W`` word pieces, overlap ``O``,
  on a fixed grid from the document's first piece;
* ``sections:W/O``: the document cut at every section start and end of its outline (HTML and
  Markdown headings, text title lines, Python ``class``/``def``); consecutive pieces packed into
  one passage while they fit in ``W`` word pieces, a piece longer than ``W`` windowed alone on
  the grid ``W/O``;
* ``alone:W/O``: as ``sections`` without packing: every piece its own passage(s);
* ``paragraphs:W/O``: as ``sections``, with every blank line a cut as well.

Each cut is also ranked with dense pseudo-relevance feedback (Rocchio): the query vector moved
towards the mean of its fused top ``m`` passages, ``q' = normalize(q + beta mean(x_top))``,
ranked densely again and fused with the same BM25 list (``+prfM/BETA``, :data:`PRF`).

``--bm25-grid`` instead ranks the library's cut (``grid:254/32``) with the keyword side's BM25
parameters over :data:`BM25_GRID` (``k1``, ``b``; the library's are 1.5 and 0.75).

Printed per kind of text: questions with an answering passage in the top 3 (MRR, recall@10), the
passage count, whether the bench's keep rule (:func:`relevance_variants.keeps`) keeps the row
over the library's (``grid:254/32``; ``1.5, 0.75`` in the grid), and each question's first
answering rank per cut.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import relevance_bench as rb  # noqa: E402
import relevance_variants as rv  # noqa: E402

#: ``(k1, b)`` of ``--bm25-grid``.
BM25_GRID = [(k1, b) for k1 in (0.9, 1.2, 1.5, 2.0) for b in (0.4, 0.6, 0.75, 0.9)]
#: ``(m, beta)`` of the pseudo-relevance feedback variants.
PRF = [(m, b) for m in (1, 3, 5) for b in (0.3, 0.6, 1.0)]
_BLANK = re.compile(r"\n[ \t]*\n")


def cuts(doc, mode: str) -> list[int]:
    """The character offsets where ``mode`` cuts ``doc`` (sorted, 0 included)."""
    at = {0}
    for s in doc.sections or ():
        at.update((s.start, s.end))
    if mode == "paragraphs":
        at.update(m.end() for m in _BLANK.finditer(doc.text))
    return sorted(a for a in at if a < len(doc.text))


def structured(docs, tokenizer, mode: str, window: int, overlap: int) -> list:
    """Passages of ``docs`` cut at ``cuts`` (module docstring), offsets in the document."""
    from jaxparadigm.retrieval.documents.passages import Passage

    encodings = tokenizer.encode_batch([d.text for d in docs], add_special_tokens=False)
    out = []
    step = window - overlap
    for doc, enc in zip(docs, encodings, strict=True):
        offsets = enc.offsets
        if not offsets:
            continue
        bounds = cuts(doc, mode)
        # the word pieces of each piece between consecutive cuts: [first, last) indexes
        starts = np.array([o[0] for o in offsets])
        idx = np.searchsorted(starts, bounds, side="left").tolist() + [len(offsets)]
        pieces = [(a, b) for a, b in zip(idx[:-1], idx[1:], strict=True) if b > a]

        def emit(a: int, b: int, doc=doc, offsets=offsets) -> None:
            s, e = offsets[a][0], offsets[b - 1][1]
            out.append(Passage(doc.source, s, e, doc.text[s:e]))

        pack: tuple[int, int] | None = None
        for a, b in pieces:
            if mode != "alone" and pack is not None and b - pack[0] <= window:
                pack = (pack[0], b)
                continue
            if pack is not None:
                emit(*pack)
                pack = None
            if b - a <= window:
                pack = (a, b)
                continue
            for first in range(a, max(b - overlap, a + 1), step):
                emit(first, min(first + window, b))
        if pack is not None:
            emit(*pack)
    return out


def cut(docs, tokenizer, variant: str) -> list:
    from jaxparadigm.retrieval.documents.passages import split_passages

    mode, _, size = variant.partition(":")
    w, o = (int(x) for x in size.split("/"))
    if mode == "grid":
        return split_passages(docs, tokenizer, w, o)
    return structured(docs, tokenizer, mode, w, o)


def vectors(encoder, texts: list[str], cache: Path) -> np.ndarray:
    """float32 unit ``[n, dim]``, each text encoded alone; cached by the text's sha256."""
    cache.mkdir(parents=True, exist_ok=True)
    keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
    store = cache / "vectors.npz"
    known = dict(np.load(store)) if store.is_file() else {}
    missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    for i in range(0, len(missing), 128):
        chunk = missing[i : i + 128]
        vecs = np.asarray(encoder.encode([t for _, t in chunk], normalize=True), np.float32)
        known.update(zip([k for k, _ in chunk], vecs, strict=True))
    if missing:
        np.savez(store, **known)
    return np.stack([known[k] for k in keys])


def prepare(encoder, tokenizer, spec, qs, variant: str, cache: Path) -> dict:
    """One corpus cut by ``variant``: its passages, their vectors ``x``, the keyword texts
    (``context + "\\n" + text``), the questions' vectors ``q`` and dense top 100, and each
    question's answering passages ``good``."""
    from jaxparadigm.retrieval.documents.outline import with_context
    from jaxparadigm.retrieval.documents.passages import passage_contexts
    from jaxparadigm.retrieval.documents.reading import read_documents

    files, _ = rb.check_corpus(spec)
    docs = read_documents(files).documents
    passages = cut(docs, tokenizer, variant)
    contexts = passage_contexts(docs, passages)
    x = vectors(encoder, [p.text for p in passages], cache)
    q = np.asarray(encoder.encode([q["question"] for q in qs], normalize=True), np.float32)
    root = rb.corpus_root(spec["root"])
    good = []
    for question in qs:
        spans = rb.evidence_spans(root, question["evidence"])
        good.append({r for r, p in enumerate(passages) if rb.answers(p, spans)})
    return {
        "passages": passages,
        "x": x,
        "keyword": [with_context(c, p.text) for p, c in zip(passages, contexts, strict=True)],
        "q": q,
        "dense": rb.top_lists(q, x, 100),
        "good": good,
    }


def ranked(
    prep: dict, qs: list[dict], k1: float = 1.5, b: float = 0.75, prf=PRF
) -> dict[str, list]:
    """Each question's first answering rank, dense + BM25(k1, b) fused by RRF 1:1 (label ``""``)
    and with each pseudo-relevance feedback of ``prf`` (``+prfM/BETA``)."""
    from jaxparadigm.retrieval.sparse.bm25 import bm25_index, bm25_scores

    index = bm25_index(prep["keyword"], k1=k1, b=b, identifiers=True)
    x, ranks = prep["x"], {}
    for i, question in enumerate(qs):
        kw = rv.bm25_lists(bm25_scores(index, question["question"]))
        fused = rv.fuse(("rrf", 1.0, 1.0), prep["dense"][i], kw)
        ranks.setdefault("", []).append(rb.first_rank(fused, prep["good"][i]))
        for m, beta in prf:  # dense pseudo-relevance feedback (Rocchio) on the fused top m
            v = prep["q"][i] + beta * x[fused[:m]].mean(0)
            v /= np.linalg.norm(v)
            dense = rb.top_lists(v[None, :], x, 100)[0]
            ranks.setdefault(f"+prf{m}/{beta:g}", []).append(
                rb.first_rank(rv.fuse(("rrf", 1.0, 1.0), dense, kw), prep["good"][i])
            )
    return ranks


def print_table(rows: list[dict], labels: list[str], head: str, base: str) -> None:
    """One line per label: answered in the top 3 per kind and overall (MRR, recall@10), passages
    where the rows count them, and whether :func:`relevance_variants.keeps` keeps it over
    ``base``."""
    kinds = list(rv.by_kind(rows, base))
    counted = all("passages" in r for r in rows)
    print(f"\n| {head} | " + " | ".join(kinds) + (" | passages" if counted else "") + " | kept |")
    print("|---" * (len(kinds) + 2 + counted) + "|")
    for label in labels:
        cells = [rv.cell(rv.metrics(ranks)) for ranks in rv.by_kind(rows, label).values()]
        if counted:
            cells.append(str(sum(r["passages"][label] for r in rows)))
        kept = "base" if label == base else "yes" if rv.keeps(rows, label, base) else "no"
        print(f"| {label} | " + " | ".join(cells) + f" | {kept} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--variants", default="grid:254/32,sections:254/32,alone:254/32,paragraphs:254/32"
    )
    ap.add_argument("--corpora", default="", help="only these corpora (default all)")
    ap.add_argument(
        "--cache-dir",
        default=os.path.join(tempfile.gettempdir(), "jaxparadigm-relevance", "chunking"),
    )
    ap.add_argument("--bm25-grid", action="store_true", help="BM25 (k1, b) grid instead of cuts")
    args = ap.parse_args(argv)
    from jaxparadigm.retrieval import load_minilm
    from jaxparadigm.retrieval.documents.passages import splitting_tokenizer

    print(f"CPU: {rb.cpu_info()}; load at start {os.getloadavg()[0]:.2f}")
    corpora = json.loads((rb.HERE / "corpora.json").read_text())
    questions = json.loads((rb.HERE / "questions.json").read_text())["questions"]
    encoder = load_minilm()
    tokenizer = splitting_tokenizer(encoder.tokenizer)
    names = args.corpora.split(",") if args.corpora else list(corpora)
    labels = ["grid:254/32"] if args.bm25_grid else args.variants.split(",")
    rows = []  # one per corpus, in relevance_variants' shape: {"corpus", "ranks": {label: ...}}
    for name in names:
        qs = [q for q in questions if q["corpus"] == name]
        row: dict = {"corpus": name, "ids": [q["id"] for q in qs], "ranks": {}, "passages": {}}
        for v in labels:
            t0 = time.perf_counter()
            prep = prepare(encoder, tokenizer, corpora[name], qs, v, Path(args.cache_dir))
            if args.bm25_grid:
                runs = {
                    f"{k1:g}, {b:g}": ranked(prep, qs, k1, b, prf=())[""] for k1, b in BM25_GRID
                }
            else:
                runs = {v + tag: ranks for tag, ranks in ranked(prep, qs).items()}
            for label, ranks in runs.items():
                row["ranks"][label] = ranks
                row["passages"][label] = len(prep["passages"])
            print(
                f"  {name} {v}: {len(prep['passages'])} passages, {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
        rows.append(row)
    shown = list(rows[0]["ranks"])
    if args.bm25_grid:
        print_table(rows, shown, "k1, b", "1.5, 0.75")
        return 0
    print_table(rows, shown, "cut", "grid:254/32" if "grid:254/32" in shown else shown[0])
    print("\nfirst answering rank per question: " + " / ".join(shown))
    for row in rows:
        for i, qid in enumerate(row["ids"]):
            print(f"  {qid}: " + " / ".join(str(row["ranks"][v][i]) for v in shown))
    print(f"load at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
