"""benchmarks/relevance_bench.py: its evaluation set is sound, its judge is exact, and a tiny run
of the whole script works (marked ci_full: it loads MiniLM and encodes ~35 passages) (C1.1)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

ROOT = Path(__file__).resolve().parents[2] / "benchmarks"
bench = load_benchmark("relevance_bench")

CORPORA = json.loads((ROOT / "relevance" / "corpora.json").read_text())
QUESTIONS = json.loads((ROOT / "relevance" / "questions.json").read_text())["questions"]


def test_twelve_or_more_questions_per_kind_with_unique_ids():
    assert Counter(q["corpus"] for q in QUESTIONS) == {
        "prose": 12,
        "release_notes": 12,
        "source": 14,
        "click": 17,
        "html_manual": 15,
    }
    assert len({q["id"] for q in QUESTIONS}) == len(QUESTIONS)
    kinds = Counter(bench.rv.KINDS[q["corpus"]] for q in QUESTIONS)
    assert kinds == {
        "prose guides": 12,
        "release notes": 12,
        "source code with docstrings": 31,
        "HTML manual": 15,
    }
    assert {n: c["kind"] for n, c in CORPORA.items()} == bench.rv.KINDS


def test_a_missing_corpus_folder_is_reported_not_fatal(tmp_path):
    spec = {"root": str(tmp_path / "nowhere"), "files": [{"path": "a.html"}], "install": "pkg x"}
    assert bench.check_corpus(spec) == (
        [],
        [f"{tmp_path / 'nowhere'}: no such folder here (needs pkg x): corpus skipped"],
    )
    assert bench.corpus_root("{venv}/lib") == Path(bench.sys.prefix) / "lib"


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: q["id"])
def test_every_evidence_substring_is_in_its_file(q):
    corpus = CORPORA[q["corpus"]]
    names = {f["path"] for f in corpus["files"]}
    for ev in q["evidence"]:
        assert ev["file"] in names
        path = bench.corpus_root(corpus["root"]) / ev["file"]
        if not path.is_file():
            pytest.skip(f"{path} is not installed here")
        assert ev["text"] in path.read_text(encoding="utf-8")


def test_judge_counts_half_an_occurrence(tmp_path):
    from jaxparadigm.retrieval.documents.passages import Passage

    doc = tmp_path / "d.txt"
    doc.write_text("0123456789 the answer is here 0123456789")  # "answer" at [15, 21)
    spans = bench.evidence_spans(tmp_path, [{"file": "d.txt", "text": "answer"}])
    real = str(doc.resolve())
    assert spans == {real: [(15, 21)]}
    assert bench.answers(Passage(real, 0, 40, ""), spans)
    assert bench.answers(Passage(real, 18, 40, ""), spans)  # 3 of 6 characters
    assert not bench.answers(Passage(real, 19, 40, ""), spans)  # 2 of 6
    assert not bench.answers(Passage(real, 0, 17, ""), spans)  # 2 of 6
    assert not bench.answers(Passage(real + "x", 0, 40, ""), spans)  # another file
    # a window of the passage: [lo, hi) in the passage's own offsets
    assert bench.answers(Passage(real, 10, 40, ""), spans, 5, 11)
    assert not bench.answers(Passage(real, 10, 40, ""), spans, 0, 7)


def test_metrics_by_hand():
    m = bench.metrics([1, 3, None, 11])
    assert (m["r@1"], m["r@3"], m["r@10"]) == (0.25, 0.5, 0.5)
    assert m["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 11) / 4)
    assert (m["top3"], m["n"]) == (2, 4)
    assert bench.first_rank([5, 7, 9], {9, 7}) == 2 and bench.first_rank([5], {1}) is None


@pytest.mark.ci_full
def test_tiny_run_of_the_bench(tmp_path, capsys):
    ids = "source-11,source-12"
    for name in ("bisect.py", "secrets.py"):
        if not (Path(CORPORA["source"]["root"]) / name).is_file():
            pytest.skip(f"{name} is not installed under {CORPORA['source']['root']}")
    out = tmp_path / "r.json"
    args = ["--question-ids", ids, "--settings", "64/16", "--cache-dir", str(tmp_path / "c")]
    assert bench.main([*args, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "load average at start" in text and "CPU:" in text
    assert "| before (dense + BM25, RRF 1:1) | 2/2 " in text  # one kind, then "all"
    (r,) = json.loads(out.read_text())
    assert (r["corpus"], r["files"], r["window"], r["overlap"]) == ("source", 2, 64, 16)
    assert r["passages"] > 10 and r["ids"] == ["source-11", "source-12"]
    before = r["ranks"]["before (dense + BM25, RRF 1:1)"]
    assert before == [1, 1]  # measured: both docstrings first by BM25 + dense
    # the library's default path equals the bench's own fusion of the same rankings
    assert (
        r["ranks"]["library defaults (build_index + hybrid_search)"]
        == r["ranks"]["1b+2: keyword context, identifiers"]
    )
    assert r["shown"]["answering"] >= 1 and r["shown"]["idf"] <= r["shown"]["answering"]
    assert bench.main([*args]) == 0  # the cached index is reused
    assert "built/loaded" in capsys.readouterr().out
