"""scatter_nd_update against a sequential NumPy loop (TF's CPU order: later duplicates win)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.tensor import scatter_nd_update, scatter_nd_update_inplace


def reference(x, indices, updates):
    """Apply the rows one after another, as TF's CPU kernel does."""
    out = np.array(x, copy=True)
    indices, updates = np.asarray(indices), np.asarray(updates)
    k = indices.shape[-1]
    n = int(np.prod(indices.shape[:-1]))  # not -1: ambiguous when k == 0 or a size is 0
    rows = indices.reshape(n, k)
    values = updates.reshape((n,) + out.shape[k:])
    for j in range(rows.shape[0]):
        out[tuple(rows[j])] = values[j]
    return out


class ScatterTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.named_parameters(
        ("tf_doc_1d", (8,), [[4], [3], [1], [7]], [9, 10, 11, 12]),
        ("duplicates_last_wins", (5,), [[1], [3], [1], [1]], [1, 2, 3, 4]),
        ("slices", (4, 3), [[0], [2], [0]], [[1, 1, 1], [2, 2, 2], [3, 3, 3]]),
        ("full_index_2d", (3, 3), [[[0, 0], [2, 1]], [[0, 0], [1, 2]]], [[5, 6], [7, 8]]),
    )
    def test_matches_sequential_reference(self, shape, indices, updates):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        indices = np.asarray(indices, np.int32)
        updates = np.asarray(updates, np.float32)
        out = self.variant(scatter_nd_update)(x, indices, updates)
        np.testing.assert_array_equal(np.asarray(out), reference(x, indices, updates))

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(
        # Issue 10: k = 0 raised ZeroDivisionError; an empty index row addresses all of x.
        ("issue_k0", (3, 4), np.zeros((1, 0), np.int32), np.ones((1, 3, 4))),
        ("k0_last_row_wins", (2, 2), np.zeros((3, 0), np.int32), np.arange(12.0).reshape(3, 2, 2)),
        ("k0_no_rows", (2, 2), np.zeros((0, 0), np.int32), np.zeros((0, 2, 2))),
        ("k0_batched", (2,), np.zeros((2, 2, 0), np.int32), np.arange(8.0).reshape(2, 2, 2)),
        ("k0_scalar_x", (), np.zeros((2, 0), np.int32), np.array([5.0, 6.0])),
        ("zero_size_slices", (3, 0), np.array([[1], [2]]), np.zeros((2, 0))),
        ("no_rows", (3, 2), np.zeros((0, 1), np.int32), np.zeros((0, 2))),
    )
    def test_index_depth_zero_and_zero_sizes(self, shape, indices, updates):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        updates = np.asarray(updates, np.float32)
        out = self.variant(scatter_nd_update)(x, indices, updates)
        expected = reference(x, indices, updates)
        np.testing.assert_array_equal(np.asarray(out), expected)
        if indices.shape[-1] == 0 and updates.size:  # the whole tensor is the last update
            np.testing.assert_array_equal(expected, updates.reshape((-1,) + shape)[-1])

    @parameterized.named_parameters(
        ("1d", (4,), [[4]]),
        ("2d_last_axis", (2, 3), [[0, 3]]),  # a `<=` slip would write x[1, 0] (flat 3)
        ("2d_first_axis", (2, 3), [[2, 0]]),
        ("slices", (2, 3), [[2]]),
    )
    def test_index_equal_to_the_dimension_is_out_of_range(self, shape, indices):
        x = jnp.zeros(shape)
        indices = np.asarray(indices, np.int32)
        updates = jnp.ones(indices.shape[:-1] + shape[indices.shape[-1] :])
        with self.assertRaisesRegex(ValueError, "out of range"):  # known indices: refused
            scatter_nd_update(x, indices, updates)
        out = jax.jit(scatter_nd_update)(x, jnp.asarray(indices), updates)  # traced: dropped
        np.testing.assert_array_equal(out, np.zeros(shape))
        below = indices - (indices == np.asarray(shape[: indices.shape[-1]]))  # dim - 1: written
        out = jax.jit(scatter_nd_update)(x, jnp.asarray(below), updates)
        np.testing.assert_array_equal(out, reference(np.zeros(shape), below, updates))
        self.assertEqual(float(jnp.sum(out)), float(updates.size))

    def test_empty_axis_message(self):
        with self.assertRaisesRegex(ValueError, r"component 0 must not exist \(axis size 0\)"):
            scatter_nd_update(jnp.zeros((0, 3)), np.array([[0]]), jnp.zeros((1, 3)))

    def test_returns_new_array_and_leaves_x(self):
        x = jnp.zeros((4,))
        out = scatter_nd_update(x, jnp.array([[2]]), jnp.array([1.0]))
        np.testing.assert_array_equal(x, np.zeros(4))
        np.testing.assert_array_equal(out, [0, 0, 1, 0])
        self.assertFalse(x.is_deleted())

    def test_traced_out_of_range_updates_are_dropped(self):
        fn = jax.jit(scatter_nd_update)
        out = fn(jnp.zeros((3,)), jnp.array([[5], [1], [-1]]), jnp.array([1.0, 2.0, 3.0]))
        np.testing.assert_array_equal(out, [0, 2, 0])

    @parameterized.named_parameters(
        ("colliding_2d", (2, 3), [[1, 1], [0, 4]], [[0, 0, 0], [0, 7, 0]]),  # (0, 4) -> flat 4
        ("uint32_wraps_negative", (3,), np.array([[4294967295], [1]], np.uint32), [0, 9, 0]),
        ("uint8_below_big_dim", (300,), np.array([[255], [1]], np.uint8), None),
    )
    def test_traced_out_of_range_row_never_masks_a_valid_row(self, shape, indices, expected):
        indices = jnp.asarray(indices)
        updates = jnp.full(indices.shape[:-1], 7.0).at[-1].set(9.0)
        out = jax.jit(scatter_nd_update)(jnp.zeros(shape), indices, updates)
        if expected is None:  # all rows in range: compare with the sequential reference
            expected = reference(np.zeros(shape), indices, updates)
        np.testing.assert_array_equal(out, expected)

    @parameterized.named_parameters(
        ("jnp_constant", lambda: jnp.array([[5]])),
        ("jnp_constant_negative", lambda: jnp.asarray(np.array([[-1]]))),
        ("numpy", lambda: np.array([[5]])),
        ("list", lambda: [[5]]),
    )
    def test_known_indices_inside_jit_raise(self, make_indices):
        for fn in (scatter_nd_update, scatter_nd_update_inplace):
            with self.assertRaisesRegex(ValueError, r"out of range for x of shape \(3,\)"):
                jax.jit(lambda x, fn=fn: fn(x, make_indices(), jnp.ones(1)))(jnp.zeros(3))

    @parameterized.named_parameters(
        ("1d", (2**31,), 1),
        ("2d", (2**16, 2**15), 2),
        ("leading_axes_only", (2**16, 2**15, 3), 2),
    )
    def test_more_rows_than_int32_raise_without_x64(self, shape, k):
        def run(x):
            idx = np.zeros((1, k), np.int32)
            return scatter_nd_update(x, idx, jnp.zeros((1,) + shape[k:], jnp.int8))

        big = jax.ShapeDtypeStruct(shape, jnp.int8)  # abstract: nothing is allocated
        with self.assertRaisesRegex(ValueError, rf"x of shape \({shape[0]},.*int32"):
            jax.eval_shape(run, big)
        with jax.enable_x64(True):
            self.assertEqual(jax.eval_shape(run, big).shape, shape)

    def test_int32_row_limit_is_inclusive(self):
        shape = (2**31 - 1,)
        out = jax.eval_shape(
            lambda x: scatter_nd_update(x, np.zeros((1, 1), np.int32), jnp.zeros(1, jnp.int8)),
            jax.ShapeDtypeStruct(shape, jnp.int8),
        )
        self.assertEqual(out.shape, shape)

    def test_x64_traced_int64_index_is_not_truncated(self):
        with jax.enable_x64(True):
            idx = jnp.array([[2**32 + 1], [2]], jnp.int64)  # int32 cast would give [[1], [2]]
            out = jax.jit(scatter_nd_update)(jnp.zeros(3), idx, jnp.ones(2))
        np.testing.assert_array_equal(out, [0, 0, 1])

    @parameterized.named_parameters(
        ("out_of_range", (4,), [[4]], [1.0], ValueError, r"indices\[0\] = \[4\].*\[0, 3\]"),
        ("negative", (4, 2), [[0, 1], [-1, 0]], [1.0, 2.0], ValueError, r"indices\[1\]"),
        ("depth", (4,), [[1, 2]], [1.0], ValueError, "exceeds the rank"),
        ("updates_shape", (4, 2), [[1]], [1.0], ValueError, r"must be indices.shape\[:-1\]"),
        ("float_indices", (4,), [[1.0]], [1.0], TypeError, "integer dtype"),
        ("scalar_indices", (4,), 1, [1.0], ValueError, "rank >= 1"),
    )
    def test_bad_input(self, shape, indices, updates, error, pattern):
        with self.assertRaisesRegex(error, pattern):
            scatter_nd_update(
                jnp.zeros(shape), np.asarray(indices), np.asarray(updates, np.float32)
            )

    def test_dtype_mismatch(self):
        with self.assertRaisesRegex(TypeError, "dtype"):
            scatter_nd_update(jnp.zeros(3, jnp.int32), jnp.array([[0]]), jnp.array([1.0]))


class DonationTest(parameterized.TestCase):
    def test_inplace_reuses_the_input_buffer(self):
        x = jnp.arange(1024.0)
        platform = x.devices().pop().platform
        if platform not in ("cpu", "gpu", "cuda", "rocm", "tpu"):
            pytest.skip(f"donation support on {platform} is unknown")
        before = x.unsafe_buffer_pointer()
        out = scatter_nd_update_inplace(x, jnp.array([[3], [3]]), jnp.array([7.0, 8.0]))
        # Donation: x was given up, and the result lives in x's old buffer.
        self.assertTrue(x.is_deleted())
        self.assertEqual(out.unsafe_buffer_pointer(), before)
        self.assertEqual(float(out[3]), 8.0)
        with self.assertRaises(RuntimeError):
            np.asarray(x)

    def test_plain_version_allocates_a_new_buffer(self):
        x = jnp.arange(1024.0)
        out = scatter_nd_update(x, jnp.array([[3]]), jnp.array([7.0]))
        self.assertFalse(x.is_deleted())
        self.assertNotEqual(out.unsafe_buffer_pointer(), x.unsafe_buffer_pointer())

    def test_inplace_validates_before_donating(self):
        x = jnp.zeros(4)
        with self.assertRaisesRegex(ValueError, "out of range"):
            scatter_nd_update_inplace(x, jnp.array([[9]]), jnp.array([1.0]))
        self.assertFalse(x.is_deleted())


@st.composite
def _scatter_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    k = draw(st.integers(1, len(shape)))
    batch = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    comps = [
        draw(
            st.lists(
                st.integers(0, n - 1), min_size=int(np.prod(batch)), max_size=int(np.prod(batch))
            )
        )
        for n in shape[:k]
    ]
    indices = np.stack([np.asarray(c, np.int32) for c in comps], axis=-1).reshape(batch + (k,))
    updates = (
        np.arange(np.prod(batch + shape[k:]), dtype=np.float32).reshape(batch + shape[k:]) + 100
    )
    return np.zeros(shape, np.float32), indices, updates


def _check_case(case):
    x, indices, updates = case
    np.testing.assert_array_equal(
        np.asarray(scatter_nd_update(x, indices, updates)), reference(x, indices, updates)
    )


@settings(max_examples=6, deadline=None)  # each new shape compiles the scatter
@given(_scatter_case())
def test_random_scatters_match_reference(case):
    _check_case(case)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_scatter_case())
def test_random_scatters_match_reference_many(case):
    _check_case(case)


# -- issue 17 -------------------------------------------------------------------------------------

_scatter_traced = jax.jit(scatter_nd_update)  # indices are jit arguments: genuinely traced


def test_traced_row_with_a_negative_leading_component_is_dropped():
    """[-1, 1] must not wrap around to the last row: every component is range-checked."""
    out = _scatter_traced(jnp.zeros((3, 2)), jnp.array([[-1, 1], [1, 0]]), jnp.array([9.0, 7.0]))
    np.testing.assert_array_equal(np.asarray(out), [[0.0, 0.0], [7.0, 0.0], [0.0, 0.0]])


def test_traced_index_equal_to_a_dim_at_the_dtype_maximum_is_dropped():
    """int8 indices into a dim of size 127 = int8 max: the component 127 is out of range and must
    not spill into the next row ([0, 127] would be flat position 127 = row [1, 0])."""
    x = jnp.zeros((3, 127), jnp.int8)
    out = _scatter_traced(x, jnp.array([[0, 127]], jnp.int8), jnp.array([9], jnp.int8))
    assert not np.asarray(out).any()


def test_many_duplicates_last_row_wins():
    """200 rows into 5 slots: the last row for each slot wins, as a sequential loop does."""
    rng = np.random.default_rng(7)
    x = np.zeros((5, 2), np.float32)
    indices = rng.integers(0, 5, (200, 1))
    updates = rng.normal(size=(200, 2)).astype(np.float32)
    np.testing.assert_array_equal(
        np.asarray(scatter_nd_update(x, indices, updates)), reference(x, indices, updates)
    )


def test_positions_are_sized_by_the_addressed_slices_only():
    """x of shape (2, 2**31): two addressable rows, so int32 positions suffice (checked without
    allocating, under jax.eval_shape); only prod(x.shape[:k]) counts, not the slice size."""
    out = jax.eval_shape(
        lambda x, u: scatter_nd_update(x, np.array([[1]]), u),
        jax.ShapeDtypeStruct((2, 2**31), jnp.int8),
        jax.ShapeDtypeStruct((1, 2**31), jnp.int8),
    )
    assert out.shape == (2, 2**31)


def test_one_dimensional_indices_are_one_row():
    """TF: indices of shape [k] address one slice; updates then have shape x.shape[k:]."""
    out = scatter_nd_update(np.zeros((2, 3), np.float32), np.array([1]), np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(out), [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


def test_batched_indices_under_vmap():
    """vmap tracers hold no trace-time constant: the indices are treated as traced."""
    scatter_each = jax.vmap(lambda i, u: scatter_nd_update(jnp.zeros(3), i, u))
    out = scatter_each(jnp.array([[[0]], [[1]]]), jnp.ones((2, 1)))
    np.testing.assert_array_equal(np.asarray(out), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


@pytest.mark.parametrize(
    "args, message",
    [
        (("a", [[0]], [1.0]), "x must be array-like, got str"),
        ((np.zeros(3), "b", [1.0]), "indices must be array-like, got str"),
        ((np.zeros(3), [[0]], "c"), "updates must be array-like, got str"),
        # the dtype named is the caller's (float64), not the float32 jnp.asarray made of it
        (
            (np.zeros(3), np.array([[0.5]]), np.ones(1)),
            "indices must have an integer dtype, got float64",
        ),
    ],
)
def test_argument_errors_give_the_whole_message(args, message):
    with pytest.raises(TypeError) as info:
        scatter_nd_update(*args)
    assert str(info.value) == message


def test_out_of_range_row_is_named_by_its_full_batch_position():
    """indices of shape [1, 2, k]: the bad row is indices[0, 1], not indices[0]."""
    with pytest.raises(ValueError) as info:
        scatter_nd_update(
            np.zeros((3, 2), np.float32), np.array([[[0, 0], [5, 1]]]), np.ones((1, 2), np.float32)
        )
    assert str(info.value) == (
        "indices[0, 1] = [5, 1] is out of range for x of shape (3, 2): component 0 must lie in "
        "[0, 2]"
    )
