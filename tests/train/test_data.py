"""Data sets and batching: determinism, the split, stateless step -> batch mapping."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.config import DataConfig
from jaxparadigm.train.data import (
    array_batch,
    build_dataset,
    noisy_regression,
    pydoc_bytes,
    token_batch,
    two_spirals,
    validate_batch,
)


def test_spirals_shapes_classes_and_seed():
    x, y = two_spirals(100, 0.0, seed=3)
    assert x.shape == (100, 2) and x.dtype == np.float32 and y.dtype == np.int32
    assert set(np.unique(y)) == {0, 1}
    np.testing.assert_array_equal(x, two_spirals(100, 0.0, seed=3)[0])
    assert not np.array_equal(x, two_spirals(100, 0.0, seed=4)[0])
    # Noise-free points lie on the spiral r = t / 3pi, so |x| <= 1; classes are point reflections.
    assert np.all(np.linalg.norm(x, axis=1) <= 1.0 + 1e-6)


def test_regression_is_sine_of_projection_plus_noise():
    x, y = noisy_regression(500, features=3, noise=0.0, seed=0)
    assert x.shape == (500, 3) and y.shape == (500, 1)
    assert np.all(np.abs(y) <= 1.0)


def test_pydoc_split_is_deterministic_and_disjoint():
    train, val = pydoc_bytes(0.1, seed=0)
    train2, val2 = pydoc_bytes(0.1, seed=0)
    np.testing.assert_array_equal(val, val2)
    assert train.dtype == np.uint8 and train.size > 5 * val.size > 0
    assert train.size == train2.size
    assert not np.array_equal(val, pydoc_bytes(0.1, seed=1)[1])
    with pytest.raises(ValueError, match="val_fraction"):
        pydoc_bytes(1.0)


@settings(max_examples=25, deadline=None)
@given(step=st.integers(0, 10_000), seed=st.integers(0, 100))
def test_array_batch_is_a_pure_function_of_step(step, seed):
    x = np.arange(40, dtype=np.float32)[:, None]
    y = np.arange(40, dtype=np.int32)
    a, b = array_batch(x, y, step, 8, seed), array_batch(x, y, step, 8, seed)
    np.testing.assert_array_equal(a["x"], b["x"])
    np.testing.assert_array_equal(a["x"][:, 0], a["y"])  # rows stay paired


def test_one_epoch_visits_every_row_once():
    x = np.arange(40, dtype=np.float32)[:, None]
    rows = np.concatenate([array_batch(x, x, s, 8, 0)["x"][:, 0] for s in range(5)])
    np.testing.assert_array_equal(np.sort(rows), x[:, 0])
    epoch2 = np.concatenate([array_batch(x, x, s, 8, 0)["x"][:, 0] for s in range(5, 10)])
    assert not np.array_equal(rows, epoch2)  # reshuffled each epoch


def test_token_batch_windows():
    stream = np.arange(100, dtype=np.uint8)
    b = token_batch(stream, 7, 4, 10, 0)["tokens"]
    assert b.shape == (4, 11) and b.dtype == np.int32
    np.testing.assert_array_equal(np.diff(b, axis=1), 1)  # contiguous windows
    np.testing.assert_array_equal(b, token_batch(stream, 7, 4, 10, 0)["tokens"])


@pytest.mark.parametrize("kind", ["spirals", "regression", "pydoc_chars"])
def test_built_datasets_satisfy_their_schema(kind):
    ds = build_dataset(DataConfig(kind=kind, n_samples=256, batch_size=16, seq_len=16))
    for batch in [ds.batch(0), ds.batch(99), *ds.val_batches]:
        validate_batch(batch, ds.schema)
    assert ds.val_batches


# --- per-process shards of each global batch (issue 14) ---------------------------------------


@settings(max_examples=25, deadline=None)
@given(step=st.integers(0, 10_000), seed=st.integers(0, 100), count=st.sampled_from([1, 2, 4, 8]))
def test_process_shards_concatenate_to_the_one_process_batch(step, seed, count):
    x = np.arange(64, dtype=np.float32)[:, None]
    whole = array_batch(x, x, step, 16, seed)["x"]
    parts = [array_batch(x, x, step, 16, seed, shard=(p, count))["x"] for p in range(count)]
    assert all(part.shape == (16 // count, 1) for part in parts)
    np.testing.assert_array_equal(np.concatenate(parts), whole)  # in process order
    stream = np.arange(200, dtype=np.uint8)
    whole = token_batch(stream, step, 8, 5, seed)["tokens"]
    parts = [
        token_batch(stream, step, 8, 5, seed, shard=(p, min(count, 8)))["tokens"]
        for p in range(min(count, 8))
    ]
    np.testing.assert_array_equal(np.concatenate(parts), whole)


@pytest.mark.parametrize("kind", ["spirals", "pydoc_chars"])
def test_a_sharded_dataset_holds_its_rows_of_every_batch(kind):
    cfg = DataConfig(kind=kind, n_samples=256, batch_size=16, seq_len=16)
    whole, half = build_dataset(cfg), build_dataset(cfg, shard=(1, 2))
    assert half.shard == (1, 2) and whole.shard == (0, 1)
    key = "tokens" if kind == "pydoc_chars" else "x"
    for got, full in [(half.batch(5), whole.batch(5)), (half.val_batches[0], whole.val_batches[0])]:
        validate_batch(got, half.schema)
        np.testing.assert_array_equal(got[key], full[key][8:])
    assert half.schema[key][0][0] == 8


def test_bad_shards_are_refused():
    x = np.zeros((64, 1), np.float32)
    for shard in [(2, 2), (-1, 2), (0, 0), (0.5, 2), 3]:
        with pytest.raises(ValueError, match="shard: got"):
            array_batch(x, x, 0, 16, 0, shard=shard)
    with pytest.raises(ValueError, match="batch_size: got 16, expected a multiple of the 3"):
        token_batch(np.zeros(100, np.uint8), 0, 16, 5, 0, shard=(0, 3))
