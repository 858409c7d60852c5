"""The ranking variants `bench relevance` compares, their fusion grid and the table per kind (C1.1).

A variant is ``(dense, keyword, fusion)``:

* ``dense``: ``"plain"`` (passages encoded alone) or ``"ctx"`` (encoded with their context:
  file name and section titles, ``build_index(context=True)``); the same passages either way.
* ``keyword``: BM25 over ``"words"`` (lower-cased ``\\w+`` runs) or ``"ident"`` (identifiers
  whole and split, ``bm25_words``), of the passage text alone (``"plain"``) or with its context
  (``"ctx"``): ``"words/plain"``, ``"ident/ctx"``, ...
* ``fusion``: ``("dense",)`` / ``("bm25",)`` alone, ``("rrf", w_dense, w_bm25)`` -- weighted
  reciprocal rank fusion, ``sum_j w_j / (60 + rank_j)`` -- or ``("minmax", alpha)`` -- each
  ranking's top-100 scores min-max normalised to [0, 1], ``alpha * dense + (1 - alpha) * bm25``
  (a missing score counts 0).
"""

from __future__ import annotations

import numpy as np

from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion

DEPTH, RRF_K = 100, 60

#: The kinds of text and the corpora of each (a corpus not listed is its own kind).
KINDS = {
    "prose": "prose guides",
    "release_notes": "release notes",
    "source": "source code with docstrings",
    "click": "source code with docstrings",
    "html_manual": "HTML manual",
}

BEFORE = ("plain", "words/plain", ("rrf", 1.0, 1.0))
MIXES = (0.1, 0.2, 0.3, 0.5)
#: Each change alone over BEFORE, the experiments, then together (``{W}``: the fusion the grid
#: chose on the rankings it is applied to).
CHANGES = {
    "before (dense + BM25, RRF 1:1)": BEFORE,
    "dense alone": ("plain", "words/plain", ("dense",)),
    "BM25 alone": ("plain", "words/plain", ("bm25",)),
    "1. context: encoded and keyword": ("ctx", "words/ctx", ("rrf", 1.0, 1.0)),
    "1a. context: encoded only": ("ctx", "words/plain", ("rrf", 1.0, 1.0)),
    "1a. dense alone, context encoded": ("ctx", "words/plain", ("dense",)),
    **{
        f"1c. context vector mixed in, lam {lam:g} (+ keyword)": (
            f"mix:{lam:g}",
            "words/ctx",
            ("rrf", 1.0, 1.0),
        )
        for lam in MIXES
    },
    **{
        f"1d. headings vector mixed in, lam {lam:g} (+ keyword)": (
            f"mixh:{lam:g}",
            "words/ctx",
            ("rrf", 1.0, 1.0),
        )
        for lam in MIXES
    },
    "1b. context: keyword only": ("plain", "words/ctx", ("rrf", 1.0, 1.0)),
    "2. identifier words": ("plain", "ident/plain", ("rrf", 1.0, 1.0)),
    "stemmed identifier words (experiment)": ("plain", "stem/plain", ("rrf", 1.0, 1.0)),
    "stemmed + keyword context (experiment)": ("plain", "stem/ctx", ("rrf", 1.0, 1.0)),
    "3. weighted fusion {W}": ("plain", "words/plain", "{W}"),
    "1+2: context encoded and keyword, identifiers": ("ctx", "ident/ctx", ("rrf", 1.0, 1.0)),
    "1b+2: keyword context, identifiers": ("plain", "ident/ctx", ("rrf", 1.0, 1.0)),
    "1b+2+3 {W}": ("plain", "ident/ctx", "{W}"),
    "1b+2 BM25 alone": ("plain", "ident/ctx", ("bm25",)),
}
#: The fusions the grid tries (on 1b+2's rankings, and on the rankings before).
GRID = (
    [("rrf", w, 1.0) for w in (1.0, 1.25, 1.5, 2.0, 3.0, 4.0)]
    + [("rrf", w, 1.0, k) for k in (10, 30) for w in (1.0, 1.5, 2.0)]
    + [("minmax", a) for a in (0.3, 0.5, 0.6, 0.7, 0.8)]
)


def fusion_name(f: tuple) -> str:
    if f[0] == "rrf":
        return f"RRF {f[1]:g}:{f[2]:g}" + (f" k={f[3]}" if len(f) > 3 else "")
    if f[0] == "minmax":
        return f"min-max a={f[1]:g}"
    return f[0]


def _minmax(rows: list[int], scores: list[float]) -> dict[int, float]:
    if not rows:
        return {}
    lo, hi = min(scores), max(scores)
    span = hi - lo
    return {r: (s - lo) / span if span > 0 else 1.0 for r, s in zip(rows, scores, strict=True)}


def fuse(fusion: tuple, dense: tuple[list, list], bm25: tuple[list, list]) -> list[int]:
    """One question's ranking (rows, best first) by ``fusion`` of its dense and BM25 top lists
    (``(rows, scores)`` each, best first)."""
    if fusion[0] == "dense":
        return list(dense[0])
    if fusion[0] == "bm25":
        return list(bm25[0])
    if fusion[0] == "rrf":
        k = fusion[3] if len(fusion) > 3 else RRF_K
        fused = reciprocal_rank_fusion([dense[0], bm25[0]], k, weights=fusion[1:3])
        return [r for r, _ in fused]
    alpha = fusion[1]
    d, s = _minmax(*dense), _minmax(*bm25)
    score = {r: alpha * d.get(r, 0.0) + (1 - alpha) * s.get(r, 0.0) for r in {*d, *s}}
    order = list(dense[0]) + [r for r in bm25[0] if r not in d]  # ties: dense first
    return sorted(order, key=lambda r: -score[r])


def metrics(ranks: list[int | None]) -> dict:
    """recall@k = mean[rank <= k], MRR = mean[1 / rank] (0 when unranked), top-3 count."""
    n = len(ranks)
    hit = [r for r in ranks if r is not None]
    out = {f"r@{k}": sum(r <= k for r in hit) / n for k in (1, 3, 10)}
    out["mrr"] = sum(1.0 / r for r in hit) / n
    out["top3"] = sum(r <= 3 for r in hit)
    out["n"] = n
    return out


def cell(m: dict) -> str:
    """A table cell of :func:`metrics`: answered in the top 3 of n (MRR, recall@10)."""
    return f"{m['top3']}/{m['n']} ({m['mrr']:.3f}, {m['r@10']:.2f})"


def by_kind(results: list[dict], variant: str) -> dict[str, list]:
    """Kind of text (and ``"all"``) -> the ranks of ``variant`` over every corpus of that kind."""
    out: dict[str, list] = {}
    for r in results:
        kind = KINDS.get(r["corpus"], r["corpus"])
        out.setdefault(kind, []).extend(r["ranks"][variant])
        out.setdefault("all", []).extend(r["ranks"][variant])
    return {k: out[k] for k in sorted(out, key=lambda k: (k == "all", k))}


def counts(ranks: list) -> tuple[int, int]:
    """(questions answered in the top 3, in the top 10)."""
    return sum(r is not None and r <= 3 for r in ranks), sum(
        r is not None and r <= 10 for r in ranks
    )


def keeps(results: list[dict], variant: str, base: str) -> bool:
    """The rule for keeping a change (or a fusion) over ``base``: no kind of text answers fewer
    questions in the top 3 or in the top 10, and overall it answers more in the top 3, or as many
    with a higher MRR. (Counts of questions, not MRR, guard each kind: with 12-31 questions a
    kind's MRR moves by 0.01 when one answer moves one rank.)"""
    new, old = by_kind(results, variant), by_kind(results, base)
    if any(c < b for k in old for c, b in zip(counts(new[k]), counts(old[k]), strict=True)):
        return False
    a, b = metrics(new["all"]), metrics(old["all"])
    return a["top3"] > b["top3"] or (a["top3"] == b["top3"] and a["mrr"] > b["mrr"] + 1e-12)


def choose_fusion(results: list[dict], grid_key: str = "grid") -> tuple[tuple, list[str]]:
    """Of the :data:`GRID` fusions over the given rankings, the best that :func:`keeps` over RRF
    1:1 (most top-3 answers overall, then highest MRR); RRF 1:1 when none does."""
    base = f"{grid_key}:RRF 1:1"
    best, key, lines = GRID[0], None, []
    for f in GRID:
        name = f"{grid_key}:{fusion_name(f)}"
        kinds = {k: metrics(v) for k, v in by_kind(results, name).items()}
        ok = f == GRID[0] or keeps(results, name, base)
        cells = " | ".join(cell(m) for m in kinds.values())
        lines.append(f"| {fusion_name(f)} | {cells} | {'yes' if ok else 'no'} |")
        k = (kinds["all"]["top3"], round(kinds["all"]["mrr"], 9))
        if ok and f != GRID[0] and (key is None or k > key):
            best, key = f, k
    header = " | ".join(by_kind(results, base))
    return best, [
        f"| fusion | {header} | kept over RRF 1:1 |",
        "|---|" + "---|" * (len(by_kind(results, base)) + 1),
        *lines,
    ]


def report(results: list[dict], variants: list[str], title: str) -> None:
    kinds = list(by_kind(results, variants[0]))
    print(f"\n{title}\n")
    print("| variant | " + " | ".join(kinds) + " | R@1 | R@3 | R@10 | MRR |")
    print("|---|" + "---|" * (len(kinds) + 4))
    for v in variants:
        groups = by_kind(results, v)
        ms = {k: metrics(groups[k]) for k in kinds}
        cells = " | ".join(cell(m) for m in ms.values())
        a = ms["all"]
        print(
            f"| {v} | {cells} | {a['r@1']:.2f} | {a['r@3']:.2f} | {a['r@10']:.2f} | "
            f"{a['mrr']:.3f} |"
        )
    print("(each kind: answered in the top 3 (MRR, recall@10))")


def dense_lists(hits) -> tuple[list[int], list[float]]:
    return [h.row for h in hits], [h.score for h in hits]


def bm25_lists(scores: np.ndarray, depth: int = DEPTH) -> tuple[list[int], list[float]]:
    order = np.argsort(-scores, kind="stable")[:depth]
    rows = [int(i) for i in order if scores[i] != 0.0]
    return rows, [float(scores[i]) for i in rows]
