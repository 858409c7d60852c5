"""SemanticIndex (C1.1, C1.2): exact top-k vs a numpy brute force, cosine identity, .npz round trip."""

import numpy as np
import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import SemanticIndex

DOCS = [
    "Index design guide",
    "Python memory management",
    "SQL execution plan analysis",
    "The cat sat on the mat.",
    "Adam keeps running averages of the gradient.",
]


@pytest.fixture(scope="module")
def index(encoder):
    return SemanticIndex(encoder, batch_size=4).add(DOCS)


def test_search_is_exact_top_k_of_cosines(index, encoder):
    query = "how do I make my database queries faster"
    q = encoder.encode(query).astype(np.float64)
    d = encoder.encode(DOCS, batch_size=4).astype(np.float64)
    cos = d @ q / np.linalg.norm(d, axis=1) / np.linalg.norm(q)  # independent cosine
    got = index.search(query, top_k=3)
    assert [i for i, _ in got] == list(np.argsort(-cos)[:3])
    np.testing.assert_allclose([s for _, s in got], np.sort(cos)[::-1][:3], atol=1e-6)
    assert len(index.search(query, top_k=50)) == len(DOCS)


def test_scores_matrix_is_dot_of_normalised_embeddings(index):
    s = index.scores(["database speed", "a pet animal"])
    assert s.shape == (2, 5) and s.dtype == np.float32
    assert int(np.argmax(s[1])) == 3
    assert np.all(np.abs(s) <= 1 + 1e-6)


def test_add_appends(encoder):
    idx = SemanticIndex(encoder, batch_size=4).add(DOCS[:2])
    idx.add(DOCS[2:])
    assert len(idx) == 5 and idx.embeddings.shape == (5, 384)


def test_save_load_round_trip_without_pickle(index, encoder, tmp_path):
    path = index.save(tmp_path / "idx")
    assert path.suffix == ".npz"
    with np.load(path, allow_pickle=False) as data:
        assert data["docs"].dtype.kind == "U"
    loaded = SemanticIndex.load(path, encoder)
    assert loaded.docs == DOCS
    np.testing.assert_array_equal(loaded.embeddings, index.embeddings)
    assert loaded.search("cat on a mat", 1) == index.search("cat on a mat", 1)


def test_load_errors_name_the_file(encoder, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.npz"):
        SemanticIndex.load(tmp_path / "nope.npz", encoder)
    bad = tmp_path / "obj.npz"
    np.savez(
        bad, embeddings=np.zeros((1, 384), np.float32), docs=np.array([{"a": 1}], dtype=object)
    )
    with pytest.raises(ValueError, match="obj.npz: .*not a SemanticIndex"):
        SemanticIndex.load(bad, encoder)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, embeddings=np.zeros((1, 10), np.float32), docs=np.array(["a"]))
    with pytest.raises(ValueError, match=r"wrong.npz: embeddings have shape \(1, 10\)"):
        SemanticIndex.load(wrong, encoder)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz"):
        SemanticIndex.load(junk, encoder)


def test_bad_input(index, encoder):
    with pytest.raises(InputError, match="empty"):
        SemanticIndex(encoder).search("q")
    with pytest.raises(InputError, match="top_k: got 0"):
        index.search("q", 0)
    with pytest.raises(TypeError, match="query: got int"):
        index.search(3)
    with pytest.raises(TypeError, match="docs: got str"):
        index.add("one doc")
    with pytest.raises(TypeError, match="queries: got str"):
        index.scores("one query")
    with pytest.raises(TypeError, match="encoder: got str"):
        SemanticIndex("encoder")
