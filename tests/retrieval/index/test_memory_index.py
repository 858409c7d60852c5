"""SemanticIndex (C1.1, C1.2): exact top-k vs a numpy brute force, cosine identity, index-folder round trip."""

import numpy as np
import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import IndexSearcher, SemanticIndex
from jaxparadigm.retrieval.index.writer import write_snapshot

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
    assert path.is_dir() and (path / "manifest.json").is_file()
    (shard,) = path.glob("shard_*.npy")
    np.testing.assert_array_equal(np.load(shard, allow_pickle=False), index.embeddings)
    loaded = SemanticIndex.load(path, encoder)
    assert loaded.docs == DOCS
    np.testing.assert_array_equal(loaded.embeddings, index.embeddings)
    assert loaded.search("cat on a mat", 1) == index.search("cat on a mat", 1)
    # one on-disk format: the saved folder is an index for `search --index` / `serve` too
    (hit,) = IndexSearcher(path).search(encoder, "cat on a mat", 1)[0]
    ((row, score),) = index.search("cat on a mat", 1)
    assert (hit.row, hit.source, hit.text) == (row, f"docs[{row}]", DOCS[row])
    assert hit.score == pytest.approx(score, abs=1e-6)


def test_load_errors_name_the_file(index, encoder, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        SemanticIndex.load(tmp_path / "nope", encoder)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz: a file, not a saved index"):
        SemanticIndex.load(junk, encoder)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty: no manifest.json"):
        SemanticIndex.load(tmp_path / "empty", encoder)
    wrong = tmp_path / "wrong"
    model = {"name": "m", "dim": 10, "max_seq_length": 16}
    write_snapshot(wrong, model, np.eye(1, 10, dtype=np.float32), ["a"], 4)
    with pytest.raises(ValueError, match=r"wrong: embeddings have dimension 10, expected 384"):
        SemanticIndex.load(wrong, encoder)
    with pytest.raises(ValueError, match=r"junk.npz: a file, expected a folder"):
        index.save(junk)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"other: holds \['notes.txt'\] but no manifest.json"):
        index.save(other)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]


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


def test_search_goes_through_the_one_engine_with_ties_to_the_lower_index(encoder):
    """SemanticIndex.search is VectorSearcher's top-k: equal scores rank by document index."""
    x = np.random.default_rng(3).standard_normal((9, encoder.dim))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    x[6] = x[4] = x[1]
    index = SemanticIndex.from_rows(encoder, [f"d{i}" for i in range(9)], x)
    top = index.search_vectors(x[[1]], 4)
    assert top.ids[0, :3].tolist() == [1, 4, 6]
    s = x.astype(np.float64) @ x[1].astype(np.float64)
    want = np.lexsort((np.arange(9), -s))[:4]
    np.testing.assert_array_equal(top.ids[0], want)
    np.testing.assert_allclose(top.scores[0], s[want], atol=1e-6)
    index._append(["d9"], x[[1]])  # a 10th copy: the engine is placed again, so it finds row 9
    assert index.search_vectors(x[[1]], 4).ids[0].tolist() == [1, 4, 6, 9]
