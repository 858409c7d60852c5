"""Relevance on documents nobody here wrote: recall@1/3/10 and MRR per setting (issue 35, C1.1).

    jaxparadigm bench relevance [--settings 254/32,128/32,64/16,96/24] [--corpora prose,...]
                                [--question-ids ID,...] [--cache-dir DIR] [--json FILE] [--freeze]

The evaluation set lives in benchmarks/relevance/: ``corpora.json`` names three corpora of
installed, third-party text by root folder and file list with each file's size and sha256 (the
documents are not copied here; a changed or missing file is reported), ``questions.json`` holds
questions in a user's words, each with its evidence ``(file, exact substring)``:

* ``prose``: Node.js's contributor guides (/usr/share/doc/nodejs/contributing/*.md, Debian nodejs)
* ``release_notes``: git 2.23.0-2.32.0 release notes (/usr/share/doc/git/RelNotes, Debian git)
* ``source``: twelve Python 3.11 standard-library modules (/usr/lib/python3.11, docstrings + code)

For each setting ``WINDOW/OVERLAP`` (word pieces) every corpus is indexed with the public
``build_index`` (cached under ``--cache-dir``: a rerun only searches) and each question is ranked
three ways: ``dense`` (``IndexSearcher.search``, cosine of all-MiniLM-L6-v2 embeddings),
``hybrid`` (:func:`~jaxparadigm.retrieval.ranking.hybrid_search.hybrid_search`: reciprocal rank fusion,
k = 60, of the dense top 100 and the :mod:`~jaxparadigm.retrieval.sparse.bm25` top 100) and ``bm25``
alone (for reference). A passage answers a question when it comes from an evidence file and
covers at least half of an occurrence of the evidence substring (``[start, end)`` offsets in the
file). Reported per setting, method and kind of text: recall@1, @3, @10, MRR (rank beyond 100
counts 0) and the questions with an answer in the top 3; and, for answering dense hits in the top
3, how often the shown excerpt holds the evidence: ``excerpt.best_excerpt`` (word overlap, 240
characters) versus the segment whose MiniLM embedding is nearest the query's (its first 240
characters) and the passage's first 160 characters (what ``search`` prints today). The load
average and CPU model are printed with the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_bench import cpu_info  # noqa: E402

HERE = Path(__file__).resolve().parent / "relevance"
DEPTH, RRF_K, EXCERPT_CHARS, LEAD_CHARS = 100, 60, 240, 160
DEFAULT_SETTINGS = "254/32,128/32,96/24,64/16"
METHODS = ("dense", "hybrid", "bm25")

#: How corpora.json was chosen (``--freeze`` rewrites it from these rules and the installed files).
SELECTION = {
    "prose": {
        "kind": "prose guides",
        "root": "/usr/share/doc/nodejs/contributing",
        "glob": "*.md",
        "exclude": ["collaborator-guide.md", "releases.md", "investigating-native-memory-leaks.md"],
    },
    "release_notes": {
        "kind": "release notes",
        "root": "/usr/share/doc/git/RelNotes",
        "names": [f"2.{v}.0.txt" for v in range(23, 33)],
    },
    "source": {
        "kind": "source code with docstrings",
        "root": "/usr/lib/python3.11",
        "names": [
            f"{m}.py"
            for m in "bisect contextlib copy fnmatch glob heapq secrets shlex shutil string "
            "tempfile textwrap".split()
        ],
    },
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def freeze() -> dict:
    """corpora.json from :data:`SELECTION` and the files installed here."""
    out = {}
    for name, sel in SELECTION.items():
        root = Path(sel["root"])
        if "names" in sel:
            names = list(sel["names"])
        else:
            names = sorted(p.name for p in root.glob(sel["glob"]) if p.name not in sel["exclude"])
        files = [
            {"path": n, "bytes": (root / n).stat().st_size, "sha256": sha256(root / n)}
            for n in names
        ]
        out[name] = {"kind": sel["kind"], "root": sel["root"], "files": files}
    return out


def check_corpus(spec: dict) -> tuple[list[Path], list[str]]:
    """The corpus's files present here, and a line per file missing or changed since the freeze."""
    root, files, notes = Path(spec["root"]), [], []
    for f in spec["files"]:
        path = root / f["path"]
        if not path.is_file():
            notes.append(f"{path}: missing")
            continue
        if path.stat().st_size != f["bytes"] or sha256(path) != f["sha256"]:
            notes.append(f"{path}: changed since corpora.json was written (sha256 differs)")
        files.append(path)
    return files, notes


def evidence_spans(root: Path, evidence: list[dict]) -> dict[str, list[tuple[int, int]]]:
    """Real path of each evidence file -> ``[start, end)`` of every occurrence of its substring."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for ev in evidence:
        path = root / ev["file"]
        text = path.read_bytes().decode("utf-8") if path.is_file() else ""
        at = text.find(ev["text"])
        while at >= 0:
            spans.setdefault(os.path.realpath(path), []).append((at, at + len(ev["text"])))
            at = text.find(ev["text"], at + 1)
    return spans


def answers(
    passage, spans: dict[str, list[tuple[int, int]]], lo: int = 0, hi: int | None = None
) -> bool:
    """Whether ``passage`` (``[lo, hi)`` of it, in its own offsets) covers >= half of an evidence
    occurrence."""
    start = passage.start + lo
    end = passage.end if hi is None else passage.start + hi
    for s, e in spans.get(passage.source, ()):
        if 2 * (min(end, e) - max(start, s)) >= e - s:
            return True
    return False


def first_rank(ranking: list[int], good: set[int]) -> int | None:
    return next((i for i, row in enumerate(ranking, 1) if row in good), None)


def metrics(ranks: list[int | None]) -> dict:
    """recall@k = mean[rank <= k], MRR = mean[1 / rank] (0 when unranked), top-3 count."""
    n = len(ranks)
    hit = [r for r in ranks if r is not None]
    out = {f"r@{k}": sum(r <= k for r in hit) / n for k in (1, 3, 10)}
    out["mrr"] = sum(1.0 / r for r in hit) / n
    out["top3"] = sum(r <= 3 for r in hit)
    out["n"] = n
    return out


def index_dir(
    cache: Path, name: str, spec: dict, files: list[Path], window: int, overlap: int
) -> Path:
    key = hashlib.sha256(
        json.dumps([str(p) for p in files] + [sha256(p) for p in files]).encode()
    ).hexdigest()[:12]
    return cache / f"{name}-{key}-w{window}o{overlap}"


def evaluate(
    encoder,
    name: str,
    spec: dict,
    questions: list[dict],
    files: list[Path],
    window: int,
    overlap: int,
    cache: Path,
) -> dict:
    """Build (or reuse) the corpus index for one setting; rank and judge its questions."""
    from jaxparadigm.retrieval import IndexSearcher, build_index
    from jaxparadigm.retrieval.ranking.excerpt import best_excerpt, segments
    from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index
    from jaxparadigm.retrieval.sparse.bm25 import bm25_top

    folder = index_dir(cache, name, spec, files, window, overlap)
    t0 = time.perf_counter()
    manifest = folder / "manifest.json"
    if not (manifest.is_file() and json.loads(manifest.read_text()).get("status") == "complete"):
        build_index(files, folder, encoder, chunk_tokens=window, overlap=overlap)
    built = time.perf_counter() - t0
    searcher = IndexSearcher(folder)
    passages = [searcher.passage(r) for r in range(len(searcher))]
    keyword = keyword_index(searcher)
    texts = [q["question"] for q in questions]
    dense_hits = searcher.search(encoder, texts, k=min(DEPTH, len(passages)))
    fused = hybrid_search(
        searcher, encoder, texts, k=2 * DEPTH, keyword=keyword, depth=DEPTH, rrf_k=RRF_K
    )
    query_vecs = np.asarray(encoder.encode(texts, normalize=True), np.float32)
    root = Path(spec["root"])
    ranks: dict[str, list] = {m: [] for m in METHODS}
    shown = {"excerpt": 0, "cosine": 0, "lead": 0, "answering": 0}
    for q, qv, hits, fused_hits in zip(questions, query_vecs, dense_hits, fused, strict=True):
        spans = evidence_spans(root, q["evidence"])
        dense = [h.row for h in hits]
        keywords = bm25_top(keyword, q["question"], DEPTH)
        hybrid = [h.row for h in fused_hits]
        good = {r for r in set(hybrid) if answers(passages[r], spans)}
        for method, ranking in zip(METHODS, (dense, hybrid, keywords), strict=True):
            ranks[method].append(first_rank(ranking, good))
        for row in dense[:3]:
            if row in good:
                ex = best_excerpt(passages[row].text, q["question"], EXCERPT_CHARS)
                shown["answering"] += 1
                shown["excerpt"] += answers(passages[row], spans, ex.start, ex.end)
                shown["lead"] += answers(passages[row], spans, 0, LEAD_CHARS)
                # the alternative: the segment whose MiniLM embedding is nearest the query's
                segs = segments(passages[row].text)
                vecs = encoder.encode([passages[row].text[a:b] for a, b in segs], normalize=True)
                a, b = segs[int(np.argmax(np.asarray(vecs) @ qv))]
                shown["cosine"] += answers(passages[row], spans, a, min(b, a + EXCERPT_CHARS))
    ids = [q["id"] for q in questions]
    return {"passages": len(passages), "build_s": built, "ids": ids, "ranks": ranks, "shown": shown}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--settings", default=DEFAULT_SETTINGS, help="WINDOW/OVERLAP,... in word pieces"
    )
    ap.add_argument("--corpora", default=",".join(SELECTION), help="which corpora (default all)")
    ap.add_argument(
        "--question-ids", default="", help="only these questions (and their files only)"
    )
    ap.add_argument(
        "--cache-dir", default=os.path.join(tempfile.gettempdir(), "jaxparadigm-relevance")
    )
    ap.add_argument("--json", default="", help="also write the results to this JSON file")
    ap.add_argument(
        "--freeze",
        action="store_true",
        help="rewrite relevance/corpora.json from the installed files",
    )
    args = ap.parse_args(argv)
    if args.freeze:
        (HERE / "corpora.json").write_text(json.dumps(freeze(), indent=1) + "\n")
        print(f"wrote {HERE / 'corpora.json'}")
        return 0
    corpora = json.loads((HERE / "corpora.json").read_text())
    questions = json.loads((HERE / "questions.json").read_text())["questions"]
    names = [c for c in args.corpora.split(",") if c]
    for c in names:
        if c not in corpora:
            ap.error(f"--corpora: got {c!r}, expected some of {', '.join(corpora)}")
    if args.question_ids:
        wanted = set(args.question_ids.split(","))
        unknown = wanted - {q["id"] for q in questions}
        if unknown:
            ap.error(f"--question-ids: got unknown {sorted(unknown)}")
        questions = [q for q in questions if q["id"] in wanted]
    settings = []
    for s in args.settings.split(","):
        try:
            w, o = (int(x) for x in s.split("/"))
        except ValueError:
            ap.error(f"--settings: got {s!r}, expected WINDOW/OVERLAP like 64/16")
        settings.append((w, o))

    from jaxparadigm.retrieval import load_minilm

    print(f"CPU: {cpu_info()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    encoder = load_minilm()
    cache = Path(args.cache_dir)
    results: list[dict] = []
    for name in names:
        spec = corpora[name]
        qs = [q for q in questions if q["corpus"] == name]
        if not qs:
            continue
        files, notes = check_corpus(spec)
        for line in notes:
            print(f"warning: {line}")
        if args.question_ids:  # tiny mode: only the files the chosen questions cite
            cited = {Path(spec["root"]) / e["file"] for q in qs for e in q["evidence"]}
            files = [p for p in files if p in cited]
        for w, o in settings:
            r = evaluate(encoder, name, spec, qs, files, w, o, cache)
            results.append(
                {
                    "corpus": name,
                    "kind": spec["kind"],
                    "window": w,
                    "overlap": o,
                    "files": len(files),
                    **r,
                }
            )
            print(
                f"  {name} {w}/{o}: {r['passages']} passages from {len(files)} files, "
                f"built/loaded in {r['build_s']:.1f} s",
                flush=True,
            )
    report(results, settings, names)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


def report(results: list[dict], settings: list[tuple[int, int]], names: list[str]) -> None:
    print("\n| setting | method | text | R@1 | R@3 | R@10 | MRR | answer in top 3 |")
    print("|---|---|---|---|---|---|---|---|")
    for w, o in settings:
        rows = [r for r in results if (r["window"], r["overlap"]) == (w, o)]
        for method in METHODS:
            groups = [(r["corpus"], r["ranks"][method]) for r in rows]
            groups.append(("all", [x for r in rows for x in r["ranks"][method]]))
            for label, ranks in groups if len(rows) > 1 else groups[:1]:
                m = metrics(ranks)
                print(
                    f"| {w}/{o} | {method} | {label} | {m['r@1']:.2f} | {m['r@3']:.2f} | "
                    f"{m['r@10']:.2f} | {m['mrr']:.3f} | {m['top3']}/{m['n']} |"
                )
    print("\nexcerpt holds the evidence (answering dense hits in the top 3):")
    for w, o in settings:
        rows = [r for r in results if (r["window"], r["overlap"]) == (w, o)]
        n = sum(r["shown"]["answering"] for r in rows)
        ex = sum(r["shown"]["excerpt"] for r in rows)
        lead = sum(r["shown"]["lead"] for r in rows)
        cos = sum(r["shown"]["cosine"] for r in rows)
        print(
            f"  {w}/{o}: best_excerpt (word overlap, {EXCERPT_CHARS} chars) {ex}/{n}, "
            f"segment nearest by MiniLM cosine {cos}/{n}, first {LEAD_CHARS} chars {lead}/{n}"
        )


if __name__ == "__main__":
    sys.exit(main())
