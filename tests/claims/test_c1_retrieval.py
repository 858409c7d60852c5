"""Chapter 1 claims: evidence values and the rules that map them to a status."""

import copy

import pytest

from jaxparadigm.claims import c1_retrieval as c1

EVIDENCE_C1_1 = {  # the shape of c1_1's evidence, used to exercise the rule alone
    "seed_zh": {"scores": [0.52, 0.50, 0.41], "top": 0, "keyword_match": [], "unk_fraction": [1.0]},
    "seed_zh_control": {"scores": [0.49, 0.36, 0.43], "top": 0},
    "seed_en": {"scores": [0.30, 0.14, 0.45], "top": 2, "keyword_match": []},
    "pydoc_queries": 70,
    "pydoc_topics": 79,
    "pydoc": {
        "keyword": {"recall@1": 0.0, "recall@5": 0.0, "mrr": 0.0},
        "token_overlap": {"recall@1": 0.27, "recall@5": 0.66, "mrr": 0.44},
        "semantic": {"recall@1": 0.61, "recall@5": 0.81, "mrr": 0.72},
    },
}


def test_c1_1_rule():
    rule = c1.c1_1.verdict_from
    assert rule(EVIDENCE_C1_1).status == "conditional"  # control query ranks like the real one
    clear = copy.deepcopy(EVIDENCE_C1_1)
    clear["seed_zh_control"] = {"scores": [0.30, 0.45, 0.31], "top": 1}
    assert rule(clear).status == "holds"
    worse = copy.deepcopy(EVIDENCE_C1_1)
    worse["pydoc"]["semantic"]["recall@1"] = 0.2
    assert rule(worse).status == "fails"


@pytest.mark.slow
def test_c1_1_measured():
    v = c1.c1_1.run()
    pd = v.evidence["pydoc"]
    assert v.evidence["pydoc_queries"] >= 60
    assert pd["keyword"]["recall@1"] < pd["semantic"]["recall@1"]
    assert v.evidence["seed_en"]["top"] in (0, 2)
    assert v.status in ("holds", "conditional")


def test_c1_2_dot_is_cosine_when_normalized():
    v = c1.c1_2.run()
    assert v.evidence["max_abs_dot_minus_cos_normalized"] < 1e-5
    assert v.evidence["unnormalized_norm_range"][0] > 1.5  # raw mean-pooled norms are far from 1
    assert v.status == "conditional"
    same = dict(v.evidence, max_abs_dot_minus_cos_unnormalized=0.0)
    assert c1.c1_2.verdict_from(same).status == "holds"
    off = dict(v.evidence, max_abs_dot_minus_cos_normalized=0.1)
    assert c1.c1_2.verdict_from(off).status == "fails"
