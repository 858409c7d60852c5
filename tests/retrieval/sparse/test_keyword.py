"""keyword_search (C1.1): the seed's substring matcher and the token-overlap ranker."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval import keyword_search
from jaxparadigm.retrieval.sparse.keyword import word_set

DOCS = ["Index design guide", "Python memory management", "SQL execution plan analysis"]


@settings(max_examples=400, deadline=None)
@given(
    query=st.text(alphabet="abcAB ", max_size=3),
    docs=st.lists(st.text(alphabet="abcAB ", max_size=8), max_size=6),
)
def test_substring_equals_seed_keyword_match(query, docs):
    seed = [doc for doc in docs if query.lower() in doc.lower()]  # the article's function
    got = keyword_search(query, docs, top_k=len(docs) + 1)
    assert [docs[i] for i, _ in got] == seed
    assert all(s == 1.0 for _, s in got)


def test_substring_is_brittle_for_paraphrase():
    assert keyword_search("how to optimise database query performance", DOCS) == []
    assert keyword_search("PYTHON", DOCS) == [(1, 1.0)]


def test_token_overlap_scores_fraction_of_query_words():
    got = keyword_search("python plan for memory", DOCS, top_k=3, mode="token_overlap")
    # query words after stopwords: {python, plan, memory}
    assert got == [(1, pytest.approx(2 / 3)), (2, pytest.approx(1 / 3))]
    assert keyword_search("the of to", DOCS, mode="token_overlap") == []


def test_token_overlap_ties_keep_document_order_and_top_k():
    docs = ["alpha beta", "beta alpha", "alpha", "gamma"]
    assert keyword_search("alpha", docs, top_k=2, mode="token_overlap") == [(0, 1.0), (1, 1.0)]


def test_word_set_lowercases_and_drops_stopwords():
    assert word_set("How do I use the Index?") == {"use", "index"}


@pytest.mark.parametrize(
    "args, exc, match",
    [
        ((3, DOCS), TypeError, "query: got int"),
        (("q", "doc"), TypeError, "docs: got str"),
        (("q", ["ok", None]), TypeError, r"docs\[1\]"),
        (("q", DOCS, 0), ValueError, "top_k: got 0"),
        (("q", DOCS, 5, "bm25"), ValueError, "mode: got 'bm25'"),
    ],
)
def test_bad_input(args, exc, match):
    with pytest.raises(exc, match=match):
        keyword_search(*args)
