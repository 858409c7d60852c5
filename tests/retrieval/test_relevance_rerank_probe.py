"""benchmarks/relevance_rerank_probe.py: a git revision's excerpt module loads and scores like the
tree's, and the report counts top-3 answers, MRR and excerpt figures exactly (C1.1)."""

from __future__ import annotations

from tests.benchmark_module import load_benchmark

probe = load_benchmark("relevance_rerank_probe")


def test_excerpt_module_of_a_revision():
    from jaxparadigm.retrieval.ranking import excerpt

    head = probe.excerpt_module("HEAD")  # the committed module, loaded from git's copy
    assert head is not excerpt and head.__file__ != excerpt.__file__
    p = "Log in without help first. The password is stored hashed."
    assert head.best_excerpt(p, "password without") == excerpt.best_excerpt(p, "password without")
    assert head.best_excerpt(p, "password without").text == "The password is stored hashed."


def test_report_counts_by_hand(capsys):
    recs = [
        {
            "kind": "a",
            "library": 1,
            "max-sim": 4,
            "rrf": 2,
            "shown": 1,
            "excerpt": 1,
            "excerpt_rev": 0,
        },
        {
            "kind": "a",
            "library": None,
            "max-sim": 2,
            "rrf": 11,
            "shown": 0,
            "excerpt": 0,
            "excerpt_rev": 0,
        },
        {
            "kind": "b",
            "library": 5,
            "max-sim": 1,
            "rrf": 3,
            "shown": 0,
            "excerpt": 0,
            "excerpt_rev": 0,
        },
    ]
    probe.report(recs, "REV")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "library : a 1/2 (0.500, 0.50) | b 0/1 (0.200, 1.00) | all 1/3 (0.400, 0.67)"
    assert lines[1] == "max-sim : a 1/2 (0.375, 1.00) | b 1/1 (1.000, 1.00) | all 2/3 (0.583, 1.00)"
    assert lines[2] == "rrf     : a 1/2 (0.295, 0.50) | b 1/1 (0.333, 1.00) | all 2/3 (0.308, 0.67)"
    assert lines[3] == "excerpt holds the evidence, a: 1 of 1 (REV: 0)"
    assert lines[5] == "excerpt holds the evidence, all: 1 of 1 (REV: 0)"
