"""One ``Index`` reader, one writer, ``IndexSearcher.search_vectors`` (C1.1, C1.2; issue 33 item 2).

No encoder runs here: the folders are written by ``write_snapshot`` from seeded unit vectors, so the
rows (and their ties) are known exactly and a numpy brute force is the oracle.
"""

import json

import numpy as np
import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import Index, IndexSearcher
from jaxparadigm.retrieval.index import store
from jaxparadigm.retrieval.index.writer import write_snapshot

DIM = 16
MODEL = {"name": "all-MiniLM-L6-v2", "dim": DIM, "max_seq_length": 64}


def _unit_rows(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def rows():
    """40 unit rows in which rows 5, 17 and 33 are one vector, and rows 8 and 30 another (ties)."""
    x = _unit_rows(40)
    x[17] = x[33] = x[5]
    x[30] = x[8]
    return x


@pytest.fixture
def folder(tmp_path, rows):
    texts = [f"passage {i}" for i in range(len(rows))]
    return write_snapshot(tmp_path / "idx", MODEL, rows, texts, batch_size=4, shard_rows=7)


def _brute_force(x: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Independent oracle: float64 scores, best first, ties to the lower row id."""
    s = q.astype(np.float64) @ x.astype(np.float64).T
    ids = np.stack([np.lexsort((np.arange(x.shape[0]), -row))[:k] for row in s])
    return np.take_along_axis(s, ids, 1), ids


def test_index_reads_back_what_the_one_writer_wrote(folder, rows):
    index = Index(folder)
    assert len(index) == 40 and index.dim == DIM and index.model == MODEL
    assert [a.shape[0] for a in index.shard_arrays] == [7, 7, 7, 7, 7, 5]  # shard_rows = 7
    np.testing.assert_array_equal(index.embeddings(), rows)
    assert [p.text for p in index.passages()] == [f"passage {i}" for i in range(40)]
    assert index.passage(33) == ("docs[33]", 0, 10, "passage 33")


def test_search_vectors_equals_numpy_brute_force_with_ties_by_row_id(folder, rows):
    q = np.concatenate([rows[[5, 8]], _unit_rows(3, seed=1)])  # 2 queries that hit the ties
    for k in (1, 3, 6, 40, 100):
        top = IndexSearcher(folder).search_vectors(q, k)
        want_scores, want_ids = _brute_force(rows, q, min(k, 40))
        np.testing.assert_array_equal(top.ids, want_ids)
        np.testing.assert_allclose(top.scores, want_scores, atol=1e-6)
    top = IndexSearcher(folder).search_vectors(q[:2], 4)
    assert top.ids[0, :3].tolist() == [5, 17, 33] and top.ids[1, :2].tolist() == [8, 30]
    assert top.scores.dtype == np.float32 and top.ids.dtype == np.int64


def test_search_vectors_takes_any_float_dtype_and_unnormalised_queries(folder, rows):
    q = 3.0 * rows[[2]].astype(np.float64)  # scores scale, the ranking does not
    top = IndexSearcher(folder).search_vectors(q, 2)
    want_scores, want_ids = _brute_force(rows, q, 2)
    np.testing.assert_array_equal(top.ids, want_ids)
    np.testing.assert_allclose(top.scores, want_scores, atol=1e-5)


@pytest.mark.parametrize(
    "queries, error, match",
    [
        ([[0.0] * DIM], TypeError, r"queries: got list, expected a float32 array \[n, 16\]"),
        (np.ones((1, DIM), np.int32), TypeError, "queries: got dtype int32, expected a float32"),
        (np.ones(DIM, np.float32), ValueError, r"queries: got shape \(16,\), expected \(n, 16\)"),
        (
            np.ones((2, 8), np.float32),
            ValueError,
            r"queries: got shape \(2, 8\), expected \(n, 16\)",
        ),
        (np.ones((0, DIM), np.float32), ValueError, r"queries: got shape \(0, 16\)"),
        (np.array([[1.0] * DIM, [np.nan] * DIM]), ValueError, "queries: row 1 holds NaN or inf"),
    ],
)
def test_search_vectors_refuses_bad_queries_naming_them(folder, queries, error, match):
    with pytest.raises(error, match=match):
        IndexSearcher(folder).search_vectors(queries, 3)


def test_search_vectors_refuses_bad_k_and_any_nprobe(folder, rows):
    searcher = IndexSearcher(folder)
    with pytest.raises(ValueError, match=r"^search\.k: got 0, expected an int >= 1$"):
        searcher.search_vectors(rows[:1], 0)
    with pytest.raises(ValueError, match=r"nprobe: got 4, but .*idx has no IVF lists"):
        searcher.search_vectors(rows[:1], 3, nprobe=4)
    assert searcher.search_vectors(rows[:1], 1, nprobe=None).ids.tolist() == [[0]]


def test_write_snapshot_replaces_an_index_through_one_writer(tmp_path, rows, monkeypatch):
    """A crash while the new shards are written leaves the previous index, readable and whole."""
    path = write_snapshot(tmp_path / "idx", MODEL, rows[:10], ["a"] * 10, 4, shard_rows=4)
    before = sorted(p.name for p in path.iterdir())
    calls = []
    real = store.write_shard

    def failing(*args, **kw):
        calls.append(args[1])
        if len(calls) == 2:
            raise OSError("disk full")
        return real(*args, **kw)

    monkeypatch.setattr("jaxparadigm.retrieval.index.writer.write_shard", failing)
    with pytest.raises(OSError, match="disk full"):
        write_snapshot(path, MODEL, rows, ["b"] * 40, 4, shard_rows=4)
    assert calls == [0, 1] and sorted(p.name for p in path.iterdir()) == before
    np.testing.assert_array_equal(Index(path).embeddings(), rows[:10])
    monkeypatch.undo()
    write_snapshot(path, MODEL, rows, ["b"] * 40, 4, shard_rows=4)
    m = json.loads((path / "manifest.json").read_text())
    assert m["status"] == "complete" and m["pending"] is None and m["count"] == 40
    assert len(list(path.glob("shard_*.npy"))) == 10  # the old shards were deleted


def test_index_refuses_damage_and_an_interrupted_build(folder, tmp_path):
    shard = sorted(folder.glob("shard_00002-*.npy"))[0]
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    with pytest.raises(InputError, match=rf"shard_00002-\w+: {shard.name} fails its checksum"):
        Index(folder)
    building = tmp_path / "building"
    building.mkdir()
    m = store.new_manifest(MODEL, 4, {"chunk_tokens": 62, "overlap": 0, "batch_size": 4})
    m["pending"] = {"plan_sha256": "0" * 64, "start_row": 0, "rows": 9}
    store.write_manifest(building, m)
    with pytest.raises(InputError, match=r"the build was interrupted \(0 of 9 passages written\)"):
        Index(building)
