"""BM25 against a hand-computed example and rank_bm25's BM25Okapi formula; RRF by hand (C1.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.sparse.bm25 import bm25_index, bm25_scores, bm25_top, bm25_words


def okapi_reference(corpus: list[list[str]], query: list[str], k1=1.5, b=0.75, epsilon=0.25):
    """rank_bm25 0.2.2 ``BM25Okapi.get_scores``, transcribed loop by loop (it is not installed)."""
    nd, doc_len, doc_freqs = {}, [], []
    for doc in corpus:
        doc_len.append(len(doc))
        freqs: dict[str, int] = {}
        for w in doc:
            freqs[w] = freqs.get(w, 0) + 1
        doc_freqs.append(freqs)
        for w in freqs:
            nd[w] = nd.get(w, 0) + 1
    avgdl = sum(doc_len) / len(corpus)
    idf, idf_sum, negative = {}, 0.0, []
    for w, freq in nd.items():
        idf[w] = math.log(len(corpus) - freq + 0.5) - math.log(freq + 0.5)
        idf_sum += idf[w]
        if idf[w] < 0:
            negative.append(w)
    eps = epsilon * idf_sum / len(idf)
    for w in negative:
        idf[w] = eps
    scores = np.zeros(len(corpus))
    for q in query:
        q_freq = np.array([d.get(q, 0) for d in doc_freqs])
        denom = q_freq + k1 * (1 - b + b * np.array(doc_len) / avgdl)
        scores += (idf.get(q) or 0) * (q_freq * (k1 + 1) / denom)
    return scores


def test_bm25_hand_computed():
    # 3 passages, lengths 2, 1, 3 (avgdl 2); "apple" in passages 0 and 2: idf = ln(1.5/2.5) < 0,
    # "pie" only in 0: ln(2.5/1.5); "cake" in 2: ln(2.5/1.5); "tart" in 1: ln(2.5/1.5).
    docs = ["apple pie", "tart", "apple cake apple"]
    pos = math.log(2.5 / 1.5)
    neg = math.log(1.5 / 2.5)
    floor = 0.25 * (neg + 3 * pos) / 4  # epsilon * mean idf over the 4 words
    k1, b = 1.5, 0.75
    s = bm25_scores(bm25_index(docs), "apple pie")
    norm = [k1 * (1 - b + b * n / 2) for n in (2, 1, 3)]
    want0 = floor * 2.5 / (1 + norm[0]) + pos * 2.5 / (1 + norm[0])
    want2 = floor * 2 * 2.5 / (2 + norm[2])
    np.testing.assert_allclose(s, [want0, 0.0, want2], rtol=1e-12)


def test_bm25_matches_rank_bm25_formula_on_a_corpus():
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(12)]
    docs = [" ".join(rng.choice(vocab, rng.integers(1, 15))) for _ in range(40)]
    index = bm25_index(docs, k1=1.2, b=0.6)
    for query in ["w0 w3", "w1 w1 w7 nothere", "w11"]:
        want = okapi_reference([bm25_words(d) for d in docs], bm25_words(query), 1.2, 0.6)
        np.testing.assert_allclose(bm25_scores(index, query), want, rtol=1e-12, atol=1e-15)


def test_bm25_words_and_top():
    assert bm25_words("How do I Copy_Tree a folder?") == ["copy_tree", "folder"]
    index = bm25_index(["the cat sat", "a dog", "dog dog cat", "nothing here", "bird"])
    # "a dog" (1 word) beats "dog dog cat" (3 words, dog twice) by length normalisation:
    # 2.5 / (1 + 1.5(.25 + .75 / 1.6)) = 1.203 > 5 / (2 + 1.5(.25 + 2.25 / 1.6)) = 1.115;
    # passages 0, 3 and 4 score 0 (no dog)
    assert bm25_top(index, "dog", 10) == [1, 2]
    assert bm25_top(index, "dog", 1) == [1]
    assert bm25_top(index, "unicorn", 3) == []


def test_bm25_b_zero_ignores_length():
    s = bm25_scores(bm25_index(["x y", "x y z z z z z z", "q", "r", "s"], b=0.0), "x")
    assert s[0] == pytest.approx(s[1]) and s[0] > 0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: bm25_index([]), "passages: got an empty list"),
        (lambda: bm25_index("a b"), "passages: got str"),
        (lambda: bm25_index(["a", 3]), r"passages\[1\]: got int"),
        (lambda: bm25_index(["a"], b=1.5), r"^b: got 1.5, expected a finite number in \[0, 1\]$"),
        (lambda: bm25_index(["a"], k1=float("nan")), "k1: got nan"),
        (lambda: bm25_top(bm25_index(["a"]), "a", 0), "k: got 0"),
    ],
)
def test_bm25_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_rrf_hand_example():
    # a: 1/61 + 1/63; b: 1/62 + 1/61; c: 1/63; d: 1/62
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d", "a"]])
    assert [x for x, _ in fused] == ["b", "a", "d", "c"]
    assert dict(fused)["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert dict(fused)["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert dict(fused)["d"] == pytest.approx(1 / 62)


def test_rrf_ties_keep_first_met_order_and_k():
    # x and y both first in one list: equal 1/(k+1); x is met first (ranking 0)
    assert reciprocal_rank_fusion([["x"], ["y"]], k=0) == [("x", 1.0), ("y", 1.0)]
    assert [i for i, _ in reciprocal_rank_fusion([["y"], ["x"]])] == ["y", "x"]
    # p: 1/2 + 1/3 = q: 1/3 + 1/2 with k = 1 -> tie, p met first
    fused = reciprocal_rank_fusion([["p", "q"], ["q", "p"]], k=1)
    assert fused == [("p", pytest.approx(5 / 6)), ("q", pytest.approx(5 / 6))]
    assert reciprocal_rank_fusion([[1, 2, 3], [3]], top=2) == [(3, 1 / 63 + 1 / 61), (1, 1 / 61)]


@pytest.mark.parametrize(
    "rankings, kw, match",
    [
        ([], {}, "rankings: got an empty list"),
        ([["a", "a"]], {}, r"rankings\[0\]: item 'a' appears twice"),
        (["ab"], {}, r"rankings\[0\]: got str"),
        ([["a"]], {"k": -1}, "k: got -1"),
        ([["a"]], {"top": 0}, "top: got 0"),
    ],
)
def test_rrf_bad_input(rankings, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        reciprocal_rank_fusion(rankings, **kw)
