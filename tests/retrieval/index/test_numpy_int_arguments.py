"""A NumPy integer is an int wherever the library asks for one: ``search_vectors(q, np.int64(5))``
searches (a ``k`` computed with NumPy), a bool or a float never does."""

import numpy as np
import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import IndexSearcher
from jaxparadigm.retrieval.index.build import build_index
from jaxparadigm.retrieval.index.reader import Index

from .test_index_reliability import KW, _text


@pytest.fixture
def searcher(tmp_path, hash_encoder):
    (tmp_path / "d.txt").write_text(_text(300))
    build_index([tmp_path / "d.txt"], tmp_path / "idx", hash_encoder, **KW)
    return IndexSearcher(tmp_path / "idx")


@pytest.mark.parametrize("k", [np.int64(5), np.int32(5), np.uint8(5)])
def test_search_vectors_takes_a_numpy_integer_k(searcher, k):
    rows = Index(searcher.index_dir).embeddings()
    q = np.asarray(rows[:3], np.float32)
    top = searcher.search_vectors(q, k)
    assert top.ids.shape == (3, 5) and top.scores.shape == (3, 5)
    np.testing.assert_array_equal(top.ids[:, 0], [0, 1, 2])  # each row finds itself first
    oracle = np.argsort(-(q @ np.asarray(rows).T), axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(top.ids, oracle)


@pytest.mark.parametrize(
    "k, want",
    [
        (True, "search.k: got True, expected int"),
        (np.int64(0), "search.k: got 0, expected an int >= 1"),
        (5.0, "search.k: got 5.0, expected int"),
    ],
)
def test_search_vectors_refuses_a_bool_zero_or_float_k(searcher, k, want):
    q = np.asarray(Index(searcher.index_dir).embeddings()[:1], np.float32)
    with pytest.raises(InputError) as err:
        searcher.search_vectors(q, k)
    assert str(err.value) == want


def test_checked_keywords_are_reused_but_a_bool_is_never_taken_for_an_int(searcher):
    """dense_options keeps the options of plain keywords by value and type: the same keywords
    give the same (frozen) options without a new check; k=True after k=1 is still refused, as
    is a bad value after a good one."""
    q = np.asarray(Index(searcher.index_dir).embeddings()[:1], np.float32)
    first = searcher.dense_options(None, 1)
    assert searcher.dense_options(None, 1) is first and first.k == 1
    assert searcher.search_vectors(q, 1).ids.shape == (1, 1)
    with pytest.raises(InputError, match="search.k: got True, expected int"):
        searcher.search_vectors(q, True)
    with pytest.raises(InputError, match="search.k: got 0"):
        searcher.search_vectors(q, 0)
    with pytest.raises(InputError, match="search.k: got 0"):  # an error is never kept
        searcher.search_vectors(q, 0)
    assert searcher.dense_options(None, 3, True).approx is True
