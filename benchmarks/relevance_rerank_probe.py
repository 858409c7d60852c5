"""Small-to-big reranking on the relevance set: does a passage's best sub-window help? (C1.1)

    python benchmarks/relevance_rerank_probe.py [--top 20] [--sub 64/32] [--cache-dir DIR]
                                                [--excerpt-from REV]

On the 70 questions and five corpora of ``jaxparadigm bench relevance`` (benchmarks/relevance/,
the same evidence judging: :func:`relevance_bench.answers`), with the library's defaults
(``build_index`` with contexts, 254/32 windows, cached under ``--cache-dir`` like the bench's
``-default`` index; ``hybrid_search``), this probe reranks each question's fused top ``--top``:

* ``library``: the fused ranking itself (the default: dense + BM25, RRF 1:1);
* ``max-sim``: the top ``--top`` ordered by the largest cosine between the query and the
  passage's sub-windows (``split_passages`` of the passage text, ``--sub WINDOW/OVERLAP`` word
  pieces, each encoded alone by MiniLM); the rest keep their fused order;
* ``rrf(library, max-sim)``: the two orders of the top ``--top`` fused by
  ``reciprocal_rank_fusion`` (k = 60).

Printed per kind of text: questions answered in the top 3 (MRR, recall@10), and for the answering
hits in the library's top 3 how often ``best_excerpt`` (with the keyword index's idf, 240
characters) holds the evidence; ``--excerpt-from REV`` also scores the excerpt module of a git
revision (``git show REV:jaxparadigm/retrieval/ranking/excerpt.py``) on the same hits.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import relevance_bench as rb  # noqa: E402
import relevance_variants as rv  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXCERPT = "jaxparadigm/retrieval/ranking/excerpt.py"


def excerpt_module(rev: str):
    """The excerpt module as of git revision ``rev``, loaded from a temporary file."""
    text = subprocess.run(
        ["git", "show", f"{rev}:{EXCERPT}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "excerpt_at_rev.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("excerpt_at_rev", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def sub_vectors(encoder, searcher, rows: list[int], window: int, overlap: int) -> dict:
    """Each row's sub-window vectors ``[m, dim]``, all encoded in one call."""
    from jaxparadigm.retrieval.documents.passages import (
        Document,
        split_passages,
        splitting_tokenizer,
    )

    tok = splitting_tokenizer(encoder.tokenizer)
    subs = {}
    for r in rows:
        p = searcher.passage(r)
        subs[r] = [
            s.text for s in split_passages([Document(p.source, p.text)], tok, window, overlap)
        ]
    flat = [t for r in rows for t in subs[r]]
    vecs = np.asarray(encoder.encode(flat, batch_size=64, normalize=True), np.float32)
    out, at = {}, 0
    for r in rows:
        out[r], at = vecs[at : at + len(subs[r])], at + len(subs[r])
    return out


def corpus(encoder, name, spec, qs, args, old) -> list[dict]:
    """Every way of ranking and every excerpt score of one corpus's questions."""
    from jaxparadigm.retrieval.ranking.excerpt import best_excerpt
    from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index
    from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion

    files, _ = rb.check_corpus(spec)
    folder = rb.index_dir(Path(args.cache_dir), name, spec, files, 254, 32, "-default")
    searcher = rb.open_index(encoder, folder, files, 254, 32)
    keyword = keyword_index(searcher)
    texts = [q["question"] for q in qs]
    fused = [[h.row for h in hs] for hs in hybrid_search(searcher, encoder, texts, k=rv.DEPTH)]
    w, o = (int(x) for x in args.sub.split("/"))
    vecs = sub_vectors(encoder, searcher, sorted({r for f in fused for r in f[: args.top]}), w, o)
    qv = np.asarray(encoder.encode(texts, normalize=True), np.float32)
    root, out = rb.corpus_root(spec["root"]), []
    for q, lib, v in zip(qs, fused, qv, strict=True):
        spans = rb.evidence_spans(root, q["evidence"])
        good = {r for r in range(len(searcher)) if rb.answers(searcher.passage(r), spans)}
        top = lib[: args.top]
        best = np.array([float((vecs[r] @ v).max()) for r in top])
        maxsim = [top[i] for i in np.argsort(-best, kind="stable")]
        both = [r for r, _ in reciprocal_rank_fusion([top, maxsim])]
        rec = {"kind": spec["kind"], "id": q["id"], "shown": 0, "excerpt": 0, "excerpt_rev": 0}
        for label, order in (("library", lib), ("max-sim", maxsim), ("rrf", both)):
            rec[label] = rb.first_rank(order + lib[args.top :], good)
        for row in [r for r in lib[:3] if r in good]:
            p = searcher.passage(row)
            rec["shown"] += 1
            for key, mod in (("excerpt", None), ("excerpt_rev", old)):
                if key == "excerpt" or mod is not None:
                    e = (mod.best_excerpt if mod else best_excerpt)(
                        p.text, q["question"], rb.EXCERPT_CHARS, idf=keyword.idf
                    )
                    rec[key] += rb.answers(p, spans, e.start, e.end)
        out.append(rec)
    return out


def report(recs: list[dict], rev: str) -> None:
    kinds = sorted({r["kind"] for r in recs})
    for label in ("library", "max-sim", "rrf"):
        cells = []
        for kind in [*kinds, None]:
            ranks = [r[label] for r in recs if kind is None or r["kind"] == kind]
            m = rv.metrics(ranks)
            cells.append(f"{kind or 'all'} {m['top3']}/{m['n']} ({m['mrr']:.3f}, {m['r@10']:.2f})")
        print(f"{label:8s}: " + " | ".join(cells))
    for kind in [*kinds, None]:
        rs = [r for r in recs if kind is None or r["kind"] == kind]
        line = f"excerpt holds the evidence, {kind or 'all'}: {sum(r['excerpt'] for r in rs)}"
        line += f" of {sum(r['shown'] for r in rs)}"
        if rev:
            line += f" ({rev}: {sum(r['excerpt_rev'] for r in rs)})"
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=20, help="fused hits reranked (default 20)")
    ap.add_argument("--sub", default="64/32", help="sub-window WINDOW/OVERLAP in word pieces")
    ap.add_argument(
        "--cache-dir", default=os.path.join(tempfile.gettempdir(), "jaxparadigm-relevance")
    )
    ap.add_argument("--excerpt-from", default="", help="also score this revision's excerpt")
    args = ap.parse_args(argv)
    from jaxparadigm.retrieval import load_minilm

    corpora = json.loads((rb.HERE / "corpora.json").read_text())
    questions = json.loads((rb.HERE / "questions.json").read_text())["questions"]
    old = excerpt_module(args.excerpt_from) if args.excerpt_from else None
    encoder, recs = load_minilm(), []
    for name, spec in corpora.items():
        qs = [q for q in questions if q["corpus"] == name]
        recs += corpus(encoder, name, spec, qs, args, old)
        print(f"  {name}: {len(qs)} questions", flush=True)
    report(recs, args.excerpt_from)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
