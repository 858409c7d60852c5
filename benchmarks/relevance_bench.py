"""Relevance on documents nobody here wrote: top-3 hits, MRR and recall@10 per kind (C1.1).

    jaxparadigm bench relevance [--settings 254/32] [--corpora prose,...] [--question-ids ID,...]
                                [--cache-dir DIR] [--json FILE] [--freeze]

The evaluation set lives in benchmarks/relevance/: ``corpora.json`` names five corpora of
installed, third-party text by root folder and file list with each file's size and sha256 (the
documents are not copied here; a changed or missing file is reported, a corpus whose folder is
missing is skipped with the package that provides it), ``questions.json`` holds questions in a
user's words, each with its evidence ``(file, exact substring)``. Four kinds of text:

* prose guides: Node.js's contributor guides (/usr/share/doc/nodejs/contributing/*.md, Debian nodejs)
* release notes: git 2.23.0-2.32.0 (/usr/share/doc/git/RelNotes, Debian git)
* source code with docstrings: twelve Python 3.11 standard-library modules (/usr/lib/python3.11)
  and click's sources (``{venv}/lib/python*/site-packages/click``: the running interpreter's
  environment, the project's .venv, where import-linter and jupyter-cache bring click)
* HTML manual: valgrind's (/usr/share/doc/valgrind/html, Debian valgrind; dist.* and license*
  pages left out)

For each setting ``WINDOW/OVERLAP`` (word pieces) every corpus is indexed twice with the public
``build_index`` (cached under ``--cache-dir``: a rerun only searches), passages encoded alone and
with their context (``context=True``: file name and section titles), the same passages either
way. Each question is then ranked every way of :mod:`relevance_variants`: the ranking before
(dense + BM25 of ``\\w+`` words, RRF 1:1), each change alone and together, a grid of fusions
(weighted RRF, min-max score fusion) from which the rule picks the default, and the library's
defaults end to end (``build_index`` + ``hybrid_search``). A passage answers a question when it
comes from an evidence file and covers at least half of an occurrence of the evidence substring
(``[start, end)`` offsets in the file). Reported per kind of text and overall: questions with an
answering passage in the top 3, MRR (rank beyond 100 counts 0) and recall@10; each question's
first answering rank before -> after; and, for answering hits in the default top 3, how often the
shown excerpt holds the evidence: IDF-weighted (``best_excerpt(idf=...)``), word overlap, and the
passage's first 160 characters. The load average and CPU model are printed with the table.
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
import relevance_variants as rv  # noqa: E402
from index_bench import cpu_info  # noqa: E402

HERE = Path(__file__).resolve().parent / "relevance"
EXCERPT_CHARS, LEAD_CHARS = 240, 160
DEFAULT_SETTINGS = "254/32"
metrics = rv.metrics

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
    "click": {
        "kind": "source code with docstrings",
        "root": "{venv}/lib/python*/site-packages/click",
        "glob": "*.py",
        "exclude": [],
        "install": "pip package click (in the project's .venv: `make typecheck` or `make docs` "
        "installs it, a dependency of import-linter and jupyter-cache)",
    },
    "html_manual": {
        "kind": "HTML manual",
        "root": "/usr/share/doc/valgrind/html",
        "glob": "*.html",
        "exclude_prefix": ["dist.", "license"],
        "exclude": [],
        "install": "Debian package valgrind (apt-get install valgrind)",
    },
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def corpus_root(root: str) -> Path:
    """A corpus root of corpora.json here: ``{venv}`` is this interpreter's environment
    (``sys.prefix``), a ``*`` the first folder that matches (``python*``); unmatched: as written."""
    text = root.replace("{venv}", sys.prefix)
    if "*" not in text:
        return Path(text)
    found = sorted(Path("/").glob(text.lstrip("/"))) if text.startswith("/") else []
    return found[0] if found else Path(text)


def freeze() -> dict:
    """corpora.json from :data:`SELECTION` and the files installed here."""
    out = {}
    for name, sel in SELECTION.items():
        root = corpus_root(sel["root"])
        if "names" in sel:
            names = list(sel["names"])
        else:
            skip = tuple(sel.get("exclude_prefix", ())) or ("\0",)
            names = sorted(
                p.name
                for p in root.glob(sel["glob"])
                if p.name not in sel["exclude"] and not p.name.startswith(skip)
            )
        files = [
            {"path": n, "bytes": (root / n).stat().st_size, "sha256": sha256(root / n)}
            for n in names
        ]
        out[name] = {"kind": sel["kind"], "root": sel["root"], "files": files}
        if "install" in sel:
            out[name]["install"] = sel["install"]
    return out


def check_corpus(spec: dict) -> tuple[list[Path], list[str]]:
    """The corpus's files present here, and a line per file missing or changed since the freeze."""
    root, files, notes = corpus_root(spec["root"]), [], []
    if not root.is_dir():
        need = f" (needs {spec['install']})" if "install" in spec else ""
        return [], [f"{spec['root']}: no such folder here{need}: corpus skipped"]
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


def index_dir(
    cache: Path, name: str, spec: dict, files: list[Path], window: int, overlap: int, tag: str
) -> Path:
    key = hashlib.sha256(
        json.dumps([str(p) for p in files] + [sha256(p) for p in files]).encode()
    ).hexdigest()[:12]
    return cache / f"{name}-{key}-w{window}o{overlap}{tag}"


class ReusingEncoder:
    """The encoder, except that a text the plain index already encoded gets that row's vector
    (the same model on the same text): the default index is built without encoding twice."""

    def __init__(self, encoder, searcher):
        self.encoder = encoder
        self.dim, self.max_seq_length = encoder.dim, encoder.max_seq_length
        self.tokenizer = encoder.tokenizer
        x = searcher.index.embeddings()
        self.known = {searcher.passage(r).text: x[r] for r in range(len(searcher))}

    def encode(self, texts, batch_size=32, normalize=True):
        missing = [t for t in texts if t not in self.known]
        if missing:
            vecs = self.encoder.encode(missing, batch_size=batch_size, normalize=normalize)
            self.known.update(zip(missing, np.asarray(vecs, np.float32), strict=True))
        return np.stack([self.known[t] for t in texts])


def open_index(encoder, folder: Path, files: list[Path], window: int, overlap: int, **kw):
    """The index of ``files`` in ``folder`` (built first unless a complete one is there)."""
    from jaxparadigm.retrieval import IndexSearcher, build_index

    manifest = folder / "manifest.json"
    if not (manifest.is_file() and json.loads(manifest.read_text()).get("status") == "complete"):
        build_index(files, folder, encoder, chunk_tokens=window, overlap=overlap, **kw)
    return IndexSearcher(folder)


def corpus_contexts(encoder, files, window, overlap, passages) -> list[str]:
    """Each passage's context, from the library's outline of its document (the passages checked
    to be the index's)."""
    from jaxparadigm.retrieval.documents.passages import (
        passage_contexts,
        split_passages,
        splitting_tokenizer,
    )
    from jaxparadigm.retrieval.documents.reading import read_documents

    docs = read_documents(files).documents
    cut = split_passages(docs, splitting_tokenizer(encoder.tokenizer), window, overlap)
    if cut != passages:
        raise AssertionError("the documents cut again differ from the index's passages")
    return passage_contexts(docs, cut)


def context_vectors(encoder, folder: Path, passages, contexts) -> np.ndarray:
    """float32 unit ``[n, dim]``: each passage encoded as ``context + "\\n" + text`` (what the
    index would hold were contexts encoded), cached in ``folder`` + ``.npy``."""
    from jaxparadigm.retrieval.documents.outline import with_context

    path = folder.with_name(folder.name + ".npy")
    if path.is_file():
        return np.load(path)
    texts = [with_context(c, p.text) for p, c in zip(passages, contexts, strict=True)]
    vecs = np.concatenate(
        [encoder.encode(texts[i : i + 256], normalize=True) for i in range(0, len(texts), 256)]
    ).astype(np.float32)
    np.save(path, vecs)
    return vecs


def top_lists(q: np.ndarray, x: np.ndarray, depth: int) -> list:
    """Each query's exact top ``depth`` rows of ``x`` by dot product (ties: the lower row)."""
    out = []
    for row in q @ x.T:
        top = np.argsort(-row, kind="stable")[:depth]
        out.append(([int(i) for i in top], [float(row[i]) for i in top]))
    return out


def keyword_rankings(passages, contexts, texts: list[str]) -> dict[str, list]:
    """Per keyword variant (``words|ident`` / ``plain|ctx``): each question's BM25 top lists."""
    from jaxparadigm.retrieval.documents.outline import with_context
    from jaxparadigm.retrieval.sparse.bm25 import bm25_index, bm25_scores

    out, idf = {}, {}
    try:
        import snowballstemmer  # noqa: F401  (the stemming experiment only)

        toks = ("words", "ident", "stem")
    except ImportError:
        print("note: no snowballstemmer (the docs extra brings it): stemming variants not run")
        toks = ("words", "ident")
    for tok in toks:
        for text in ("plain", "ctx"):
            docs = [
                with_context(c, p.text) if text == "ctx" else p.text
                for p, c in zip(passages, contexts, strict=True)
            ]
            queries = texts
            if tok == "stem":  # an experiment: Snowball (Porter2) stems of the identifier words
                docs, queries = stemmed(docs), stemmed(texts)
            index = bm25_index(docs, identifiers=tok == "ident")
            out[f"{tok}/{text}"] = [rv.bm25_lists(bm25_scores(index, q)) for q in queries]
            idf[f"{tok}/{text}"] = index.idf
    return {"lists": out, "idf": idf}


def stemmed(texts: list[str]) -> list[str]:
    """Each text as the English Snowball stems of its ``bm25_words`` (dots of a dotted name made
    underscores, so the ``\\w+`` words of the result are the stems), for the stemming variant
    (snowballstemmer comes with Sphinx, the docs extra; the bench skips nothing without it)."""
    import snowballstemmer

    from jaxparadigm.retrieval.sparse.bm25 import bm25_words

    stem = snowballstemmer.stemmer("english").stemWord
    return [" ".join(stem(w).replace(".", "_") for w in bm25_words(t)) for t in texts]


def mixed_rankings(encoder, searcher, contexts, texts, depth) -> dict[str, list]:
    """Dense rankings over ``normalize(x + lam * c)``: each passage's own embedding ``x`` (the
    index built without contexts) plus ``lam`` times its context's embedding ``c`` encoded alone
    (``mix:LAM``), or its headings' alone, the file name left out (``mixh:LAM``)."""
    x = searcher.index.embeddings()
    q = np.asarray(encoder.encode(texts, normalize=True), np.float32)
    out: dict[str, list] = {}
    for tag, ctx in (("mix", contexts), ("mixh", [c.partition(" > ")[2] for c in contexts])):
        unique = sorted(set(ctx))
        vecs = dict(zip(unique, np.asarray(encoder.encode(unique, normalize=True)), strict=True))
        zero = np.zeros(x.shape[1], np.float32)
        c = np.stack([vecs[k] if k else zero for k in ctx])
        for lam in rv.MIXES:
            m = x + lam * c
            m /= np.linalg.norm(m, axis=1, keepdims=True)
            out[f"{tag}:{lam:g}"] = top_lists(q, m, depth)
    return out


def idf_sum_excerpt(text: str, query: str, idf: dict) -> tuple[int, int]:
    """The alternative excerpt: the segment with the largest idf sum of its distinct query words
    (the count not first), cut by ``best_excerpt`` inside it; ``[start, end)`` in ``text``."""
    from jaxparadigm.retrieval.ranking.excerpt import _weights, best_excerpt, query_words, segments

    weight = _weights(query_words(query), idf)
    best, score = None, 0.0
    for a, b in segments(text):
        words = {w.casefold() for w in re.findall(r"\w+", text[a:b])}
        got = sum(weight[w] for w in words if w in weight)
        if words & weight.keys() and (best is None or got > score):
            best, score = (a, b), got
    a, b = best if best is not None else (0, len(text))
    ex = best_excerpt(text[a:b], query, EXCERPT_CHARS, idf=idf)
    return a + ex.start, a + ex.end


def evaluate(encoder, name, spec, questions, files, window, overlap, cache) -> dict:
    """Build (or reuse) the corpus's index (passages encoded alone) and the library's default
    index for one setting; rank its questions every way of :mod:`relevance_variants` and judge
    them."""
    from jaxparadigm.retrieval.ranking.excerpt import best_excerpt
    from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index

    t0 = time.perf_counter()
    where = (cache, name, spec, files, window, overlap)
    plain = open_index(encoder, index_dir(*where, ""), files, window, overlap, context=False)
    passages = [plain.passage(r) for r in range(len(plain))]
    contexts = corpus_contexts(encoder, files, window, overlap, passages)
    ctx_vecs = context_vectors(encoder, index_dir(*where, "-ctxvec"), passages, contexts)
    default = open_index(
        ReusingEncoder(encoder, plain), index_dir(*where, "-default"), files, window, overlap
    )
    built = time.perf_counter() - t0
    texts = [q["question"] for q in questions]
    depth = min(rv.DEPTH, len(passages))
    q = np.asarray(encoder.encode(texts, normalize=True), np.float32)
    dense = {
        "plain": [rv.dense_lists(h) for h in plain.search(encoder, texts, k=depth)],
        "ctx": top_lists(q, ctx_vecs, depth),
    }
    dense.update(mixed_rankings(encoder, plain, contexts, texts, depth))
    kw = keyword_rankings(passages, contexts, texts)
    # the library's default path end to end (build_index and hybrid_search defaults)
    library = hybrid_search(
        default, encoder, texts, k=2 * rv.DEPTH, keyword=keyword_index(default), depth=rv.DEPTH
    )
    root = corpus_root(spec["root"])
    ranks: dict[str, list] = {}
    shown: dict[str, int] = {"answering": 0, "overlap": 0, "idf": 0, "idf_sum": 0, "lead": 0}
    for qi, q in enumerate(questions):
        spans = evidence_spans(root, q["evidence"])
        good = {r for r, p in enumerate(passages) if answers(p, spans)}

        def put(variant: str, ranking: list[int], good: set[int] = good) -> None:
            ranks.setdefault(variant, []).append(first_rank(ranking, good))

        for label, (d, k, f) in rv.CHANGES.items():
            if f != "{W}" and k in kw["lists"]:
                put(label, rv.fuse(f, dense[d][qi], kw["lists"][k][qi]))
        for f in rv.GRID:  # on 1b+2's rankings
            put(
                f"grid:{rv.fusion_name(f)}",
                rv.fuse(f, dense["plain"][qi], kw["lists"]["ident/ctx"][qi]),
            )
            put(
                f"grid3:{rv.fusion_name(f)}",
                rv.fuse(f, dense["plain"][qi], kw["lists"]["words/plain"][qi]),
            )
        lib = [h.row for h in library[qi]]
        put("library defaults (build_index + hybrid_search)", lib)
        for row in lib[:3]:
            if row in good:
                text = passages[row].text
                shown["answering"] += 1
                ex = best_excerpt(text, q["question"], EXCERPT_CHARS)
                shown["overlap"] += answers(passages[row], spans, ex.start, ex.end)
                idf = kw["idf"]["ident/ctx"]
                ex = best_excerpt(text, q["question"], EXCERPT_CHARS, idf=idf)
                shown["idf"] += answers(passages[row], spans, ex.start, ex.end)
                a, b = idf_sum_excerpt(text, q["question"], idf)
                shown["idf_sum"] += answers(passages[row], spans, a, b)
                shown["lead"] += answers(passages[row], spans, 0, LEAD_CHARS)
    return {
        "passages": len(passages),
        "build_s": built,
        "ids": [q["id"] for q in questions],
        "ranks": ranks,
        "shown": shown,
    }


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
        if not files:
            print(f"warning: corpus {name}: none of its files is here; its questions are skipped")
            continue
        if args.question_ids:  # tiny mode: only the files the chosen questions cite
            cited = {corpus_root(spec["root"]) / e["file"] for q in qs for e in q["evidence"]}
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
    report(results, settings)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


def report(results: list[dict], settings: list[tuple[int, int]]) -> None:
    for w, o in settings:
        rows = [r for r in results if (r["window"], r["overlap"]) == (w, o)]
        best, grid = rv.choose_fusion(rows)
        best3, grid3 = rv.choose_fusion(rows, "grid3")
        print(f"\n{w}/{o}: fusion grid on 1b+2's rankings (keyword context, identifiers):\n")
        print("\n".join(grid))
        print(f"\nchosen by the rule: {rv.fusion_name(best)}")
        print(f"\n{w}/{o}: fusion grid on the rankings before (no context, \\w+ words):\n")
        print("\n".join(grid3))
        print(f"\nchosen by the rule: {rv.fusion_name(best3)}")
        for r in rows:
            for label, (_, _, f) in rv.CHANGES.items():
                if f == "{W}":
                    key = "grid:" if label.startswith("1b+2+3") else "grid3:"
                    chosen = best if key == "grid:" else best3
                    r["ranks"][label.replace("{W}", rv.fusion_name(chosen))] = r["ranks"][
                        key + rv.fusion_name(chosen)
                    ]
        names = [
            label.replace("{W}", rv.fusion_name(best if label.startswith("1b+2+3") else best3))
            for label in rv.CHANGES
        ]
        names = [n for n in names if all(n in r["ranks"] for r in rows)]  # variants run
        names.append("library defaults (build_index + hybrid_search)")
        rv.report(rows, names, f"{w}/{o}: answer-bearing passage in the top 3, per kind of text")
        before = names[0]
        print(f"\n{w}/{o}: kept over the ranking before by the rule (relevance_variants.keeps):")
        for label in names[1:]:
            print(f"  {label}: {'kept' if rv.keeps(rows, label, before) else 'not kept'}")
        print(f"\n{w}/{o}: first rank of an answering passage, before -> library defaults:")
        for r in rows:
            before = r["ranks"][names[0]]
            after = r["ranks"][names[-1]]
            for qid, a, b in zip(r["ids"], before, after, strict=True):
                mark = "" if b is not None and b <= 3 else "   <- not in the top 3"
                print(f"  {qid}: {a} -> {b}{mark}")
        print(f"\n{w}/{o}: excerpt holds the evidence (answering library-default hits, top 3):")
        print("| text | hits | count, then idf (default) | count alone | idf sum alone | lead |")
        print("|---|---|---|---|---|---|")
        for kind in dict.fromkeys([*(rv.KINDS.get(r["corpus"], r["corpus"]) for r in rows), "all"]):
            mine = [r for r in rows if kind in ("all", rv.KINDS.get(r["corpus"], r["corpus"]))]
            c = {k: sum(r["shown"][k] for r in mine) for k in mine[0]["shown"]}
            print(
                f"| {kind} | {c['answering']} | {c['idf']} | {c['overlap']} | {c['idf_sum']} | "
                f"{c['lead']} |"
            )


if __name__ == "__main__":
    sys.exit(main())
