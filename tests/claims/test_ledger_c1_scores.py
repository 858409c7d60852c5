"""C1.1's summary sentences name the doc the *scores* rank first (issue 34, "Ledger").

Before the fix the English sentence copied the recorded ``top`` field: with scores that rank doc 0
first and ``top`` still 2 it said "ranks doc 2 first". These tests give both orders, consistent and
inconsistent evidence, and generated score vectors checked against an independent ``max``.
"""

import copy
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.claims import c1_retrieval as c1

EVIDENCE = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "claims" / "evidence.json").read_text()
)
C1_1 = EVIDENCE["C1.1"]
EN = "The English translation of the seed example ranks doc {} first"


def _verdict(**cases):
    ev = copy.deepcopy(C1_1)
    for name, case in cases.items():
        ev[name].update(case)
    return c1.c1_1.verdict_from(ev)


@pytest.mark.parametrize(
    "scores, top",
    [([0.30, 0.14, 0.45], 2), ([0.45, 0.14, 0.30], 0)],
    ids=["doc 2 first", "doc 0 first"],
)
def test_english_sentence_names_the_doc_its_scores_rank_first(scores, top):
    summary = _verdict(seed_en={"scores": scores, "top": top}).summary
    assert EN.format(top) in summary
    assert EN.format(2 - top) not in summary


def test_scores_that_rank_doc_0_first_never_say_doc_2():
    """The reported case: the scores rank doc 0 first but the recorded top still says 2."""
    v = _verdict(seed_en={"scores": [0.45, 0.14, 0.30], "top": 2})
    assert "ranks doc 2 first" not in v.summary
    assert "inconsistent evidence" in v.summary
    # with the Chinese checks passing, an inconsistent English case must not give "holds"
    ok_zh = {"seed_zh": {"unk_fraction": [0.1]}}
    ok_ctl = {"seed_zh_control": {"scores": [0.3, 0.5, 0.2], "top": 1}}
    base = _verdict(**ok_zh, **ok_ctl)
    assert base.status == "holds"
    bad = _verdict(**ok_zh, **ok_ctl, seed_en={"scores": [0.45, 0.14, 0.30], "top": 2})
    assert bad.status == "conditional" and "ranks doc 2 first" not in bad.summary


def test_chinese_sentences_also_read_the_scores():
    v = _verdict(seed_zh={"scores": [0.1, 0.2, 0.5], "top": 0})
    assert "Chinese query ranks doc 0 first" not in v.summary
    assert "inconsistent evidence" in v.summary
    moved = _verdict(seed_zh={"scores": [0.1, 0.2, 0.5], "top": 2})
    assert "The article's Chinese query ranks doc 2 first" in moved.summary


def test_nan_scores_rank_nothing():
    v = _verdict(seed_en={"scores": [math.nan, 0.1, 0.2], "top": 2})
    assert "ranks doc" not in v.summary.split("English translation")[1].split(".")[0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.floats(-1, 1, allow_nan=False, allow_subnormal=False),
        min_size=3,
        max_size=3,
        unique=True,
    ),
    st.integers(0, 2),
)
def test_generated_scores_name_their_argmax(scores, recorded):
    """Oracle: Python's max over (score, -index); the sentence names it, or refuses a recorded top
    that differs."""
    best = max(range(3), key=lambda i: (scores[i], -i))
    summary = _verdict(seed_en={"scores": scores, "top": recorded}).summary
    named = re.findall(r"English translation[^.]*? ranks doc (\d+) first", summary)
    if recorded == best:
        assert named == [str(best)]
    else:
        assert named == [] and "inconsistent evidence" in summary
