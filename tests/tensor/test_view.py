"""View: metadata of movement ops and their materialisation, against NumPy (and torch if present)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.tensor import View

STORAGE = jnp.arange(12.0)


class SeedExampleTest(chex.TestCase):
    """C2.1: storage 0..11, offset 2, size (2,3), stride (3,1) -> [[2,3,4],[5,6,7]]."""

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_seed_view(self):
        view = View((2, 3), (3, 1), 2)
        out = self.variant(view.materialize)(STORAGE)
        np.testing.assert_array_equal(np.asarray(out), [[2, 3, 4], [5, 6, 7]])
        self.assertEqual(view.max_index(), 7)
        self.assertTrue(view.is_contiguous())


class MaterializeTest(chex.TestCase):
    """Each movement op, materialised under the four chex variants, against NumPy."""

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.named_parameters(
        ("transpose", lambda v: v.transpose(0, 1), lambda a: a.T),
        (
            "permute3",
            lambda v: v.view(2, 3, 2).permute(2, 0, 1),
            lambda a: a.reshape(2, 3, 2).transpose(2, 0, 1),
        ),
        ("slice_step", lambda v: v.slice(1, 1, 4, 2), lambda a: a[:, 1:4:2]),
        ("slice_neg", lambda v: v.slice(0, -2, None), lambda a: a[-2:]),
        ("select", lambda v: v.select(1, -1), lambda a: a[:, -1]),
        (
            "expand",
            lambda v: v.select(0, 1).view(1, 4).expand(5, 3, -1),
            lambda a: np.broadcast_to(a[1], (5, 3, 4)),
        ),
        ("view_of_slice", lambda v: v.slice(0, 1, 3).view(8), lambda a: a[1:3].reshape(8)),
        ("column_transposed", lambda v: v.slice(1, 2, 4).transpose(0, 1), lambda a: a[:, 2:4].T),
        ("empty", lambda v: v.slice(0, 2, 2), lambda a: a[2:2]),
    )
    def test_matches_numpy(self, op, reference):
        base = View.contiguous((3, 4))
        view = op(base)
        out = self.variant(view.materialize)(STORAGE)
        expected = reference(np.arange(12.0).reshape(3, 4))
        np.testing.assert_array_equal(np.asarray(out), expected)

    def test_view_is_a_static_jit_argument(self):
        fn = jax.jit(lambda v, s: v.materialize(s), static_argnums=0)
        a = fn(View((2, 3), (3, 1), 2), STORAGE)
        b = fn(View((2, 3), (3, 1), 2), STORAGE)  # equal + hashable: cache hit
        np.testing.assert_array_equal(a, b)
        self.assertEqual(hash(View((2, 3), (3, 1), 2)), hash(View([2, 3], [3, 1], 2)))

    @parameterized.named_parameters(
        ("transpose", View((4, 3), (1, 4))),
        ("slice", View((3, 2), (4, 1), 1)),
        ("expand", View((5, 4), (0, 1))),
        ("seed", View((2, 3), (3, 1), 2)),
        ("strided_step", View((2, 2), (6, 2), 1)),
    )
    def test_nested_strides_compile_without_gather(self, view):
        jaxpr = str(jax.make_jaxpr(view.materialize)(STORAGE))
        self.assertNotIn("gather", jaxpr)
        np.testing.assert_array_equal(
            view.materialize(STORAGE), np.asarray(STORAGE)[view.storage_indices()]
        )

    def test_overlapping_windows_fall_back_to_gather(self):
        view = View((3, 3), (1, 1))  # sliding windows
        self.assertIn("gather", str(jax.make_jaxpr(view.materialize)(STORAGE)))
        np.testing.assert_array_equal(view.materialize(STORAGE), [[0, 1, 2], [1, 2, 3], [2, 3, 4]])

    def test_window_running_past_the_storage_end(self):
        # Last row needs only 2 of its 3 grid cells: the plan pads, the values stay right.
        view = View((2, 2), (3, 1), 7)
        np.testing.assert_array_equal(view.materialize(STORAGE), [[7, 8], [10, 11]])


class MetadataTest(parameterized.TestCase):
    def test_contiguous_and_numel(self):
        v = View.contiguous((2, 3, 4))
        self.assertEqual(v.strides, (12, 4, 1))
        self.assertEqual(v.numel(), 24)
        self.assertTrue(v.is_contiguous())
        self.assertFalse(v.transpose(0, 2).is_contiguous())
        self.assertTrue(View((1, 3), (99, 1)).is_contiguous())  # size-1 dims ignored
        self.assertEqual(View((0, 3), (3, 1), 5).max_index(), -1)

    @parameterized.named_parameters(
        ("expand", View((3, 4), (0, 1)), True),
        ("sliding", View((3, 3), (1, 1)), True),
        ("interleaved_dup", View((3, 2), (1, 2)), True),
        ("transpose", View((4, 3), (1, 4)), False),
        ("step_slice", View((2, 3), (8, 2), 1), False),
        ("interleaved_unique", View((3, 2), (2, 3)), False),
        ("size_one_zero_stride", View((1, 3), (0, 1)), False),
        ("two_elements_one_place", View((2,), (0,)), True),
        ("one_element", View((1, 1), (0, 0)), False),
        ("scalar", View((), ()), False),
    )
    def test_internal_overlap(self, view, expected):
        self.assertEqual(view.has_internal_overlap(), expected)
        unique = np.unique(view.storage_indices()).size
        self.assertEqual(unique != view.numel(), expected)  # the brute-force definition

    def test_expand_rules(self):
        v = View.contiguous((3, 1))
        self.assertEqual(v.expand(2, 3, 4), View((2, 3, 4), (0, 1, 0)))
        self.assertEqual(v.expand(-1, 5).strides, (1, 0))
        with self.assertRaisesRegex(ValueError, "non-singleton"):
            v.expand(4, 1)
        with self.assertRaisesRegex(ValueError, "new leading dim"):
            v.expand(-1, 3, 1)
        with self.assertRaisesRegex(ValueError, "fewer dims"):
            v.expand(3)

    def test_view_incompatible_says_contiguous_copies(self):
        t = View.contiguous((3, 4)).transpose(0, 1)
        with self.assertRaisesRegex(
            ValueError,
            r"view size \(12,\) is not compatible with the view's shape \(4, 3\) and strides "
            r"\(1, 4\) .*; a view cannot express it\. Use contiguous\(\)/reshape, which copies\.$",
        ):
            t.view(12)
        self.assertEqual(t.view(4, 3), t)  # same shape is always fine
        self.assertEqual(View.contiguous((2, 3, 4)).view(-1, 4).shape, (6, 4))

    @parameterized.named_parameters(
        (
            "negative_stride",
            lambda: View((2,), (-1,)),
            ValueError,
            r"strides\[0\] = -1 is negative .*\(PyTorch views have no negative strides\)$",
        ),
        ("negative_offset", lambda: View((2,), (1,), -1), ValueError, "offset"),
        ("length_mismatch", lambda: View((2, 3), (1,)), ValueError, "same length"),
        ("float_dim", lambda: View((2.0,), (1,)), TypeError, "shape"),
        ("bool_stride", lambda: View((2,), (True,)), TypeError, "strides"),
        ("bad_perm", lambda: View.contiguous((2, 3)).permute(0, 0), ValueError, "permutation"),
        ("dim_range", lambda: View.contiguous((2, 3)).transpose(0, 2), ValueError, "out of range"),
        ("select_range", lambda: View.contiguous((2, 3)).select(1, 3), ValueError, "index = 3"),
        ("slice_step", lambda: View.contiguous((2, 3)).slice(1, 0, 3, 0), ValueError, "step"),
        ("view_numel", lambda: View.contiguous((2, 3)).view(4, 2), ValueError, "invalid"),
        ("two_minus_one", lambda: View.contiguous((2, 3)).view(-1, -1), ValueError, "one dim"),
        (
            "out_of_storage",
            lambda: View((2, 3), (3, 1), 8).materialize(STORAGE),
            ValueError,
            "index 13",
        ),
        ("storage_2d", lambda: View((2,), (1,)).materialize(jnp.zeros((2, 2))), ValueError, "1-D"),
        ("storage_type", lambda: View((2,), (1,)).materialize([1, 2]), TypeError, "storage"),
    )
    def test_bad_input(self, make, error, pattern):
        with self.assertRaisesRegex(error, pattern):
            make()


# ---------------------------------------------------------------------------------------------
# Hypothesis: random chains of movement ops, View vs NumPy on the same data.
# ---------------------------------------------------------------------------------------------


def _apply_random_op(data, view, array):
    """Draw one movement op valid for the current shape; apply it to the View and to NumPy."""
    ops = ["permute", "transpose", "expand", "slice"]
    if view.ndim:
        ops.append("select")
    ops.append("view")
    op = data.draw(st.sampled_from(ops))
    nd = view.ndim
    if op == "permute":
        dims = data.draw(st.permutations(range(nd)))
        return view.permute(*dims), array.transpose(dims), True
    if op == "transpose" and nd:
        d0, d1 = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
        return view.transpose(d0, d1), np.swapaxes(array, d0, d1), True
    if op == "expand":
        lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
        target = [data.draw(st.sampled_from([-1, 3])) if n == 1 else -1 for n in view.shape]
        full = tuple(lead) + tuple(
            n if t == -1 else t for n, t in zip(view.shape, target, strict=True)
        )
        return view.expand(*lead, *target), np.broadcast_to(array, full), True
    if op == "slice" and nd:
        d = data.draw(st.integers(0, nd - 1))
        start = data.draw(st.one_of(st.none(), st.integers(-5, 5)))
        stop = data.draw(st.one_of(st.none(), st.integers(-5, 5)))
        step = data.draw(st.integers(1, 3))
        index = [slice(None)] * nd
        index[d] = slice(start, stop, step)
        return view.slice(d, start, stop, step), array[tuple(index)], True
    if op == "select":
        d = data.draw(st.integers(0, nd - 1))
        if view.shape[d] == 0:
            return view, array, True
        i = data.draw(st.integers(-view.shape[d], view.shape[d] - 1))
        index = [slice(None)] * nd
        index[d] = i
        return view.select(d, i), array[(*index, Ellipsis)], True  # "...": a view, not a scalar
    if op == "view":
        shape = data.draw(st.permutations(view.shape)) if nd else ()
        try:
            new = view.view(*shape)
        except (
            ValueError
        ):  # torch's rule refused the alias; test_view_strides_match_torch checks it
            return view, array, True
        return new, array.reshape(shape), False
    return view, array, True


def _check_movement_chain(shape, offset, data):
    numel = int(np.prod(shape))
    storage = np.arange(offset + numel, dtype=np.float32)
    view = View.contiguous(tuple(shape), offset)
    array = storage[offset:].reshape(shape)
    for _ in range(data.draw(st.integers(1, 4))):
        view, array, same_strides = _apply_random_op(data, view, array)
        assert view.shape == array.shape
        if same_strides and array.size > 1:
            # NumPy's own view metadata (byte strides / pointer offset) is the oracle.
            np_strides = tuple(
                s // array.itemsize if n > 1 else v
                for s, n, v in zip(array.strides, array.shape, view.strides, strict=True)
            )
            assert np_strides == view.strides
            assert (array.__array_interface__["data"][0] - storage.ctypes.data) // 4 == view.offset
    np.testing.assert_array_equal(np.asarray(view.materialize(storage)), array)
    np.testing.assert_array_equal(storage[view.storage_indices()], array)


_CHAIN_ARGS = (st.lists(st.integers(1, 4), min_size=0, max_size=3), st.integers(0, 3), st.data())


@settings(max_examples=40, deadline=None)
@given(*_CHAIN_ARGS)
def test_movement_ops_match_numpy(shape, offset, data):
    _check_movement_chain(shape, offset, data)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(*_CHAIN_ARGS)
def test_movement_ops_match_numpy_many(shape, offset, data):
    _check_movement_chain(shape, offset, data)


def test_view_strides_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for trial in range(300):
        shape = tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(1, 4)))
        perm = tuple(int(p) for p in rng.permutation(len(shape)))
        t = torch.arange(int(np.prod(shape))).view(shape).permute(perm)
        v = View.contiguous(shape).permute(*perm)
        new_shape = tuple(int(n) for n in rng.permutation(t.shape))
        try:
            expected = t.view(new_shape).stride()
        except RuntimeError:
            with pytest.raises(ValueError, match="not compatible"):
                v.view(*new_shape)
            continue
        assert v.view(*new_shape).strides == tuple(expected)
        t2 = t.view(new_shape)
        if trial % 30 == 0:  # values too, on a sample (each new shape compiles)
            np.testing.assert_array_equal(
                v.view(*new_shape).materialize(jnp.arange(t.numel())), t2.numpy()
            )


def test_empty_views_are_contiguous_whatever_their_strides():
    """PyTorch's rule: a view with no elements is contiguous (``torch.empty_strided((0, 3), (1, 5))
    .is_contiguous()`` is True)."""
    assert View((0, 3), (1, 5)).is_contiguous()
    assert View((3, 0), (7, 2)).is_contiguous()
    assert not View((2, 3), (1, 5)).is_contiguous()


@pytest.mark.parametrize(
    "target, strides",
    [
        # torch.empty(2, 3).expand(*target).stride(): a new size-1 leading dim takes the stride
        # that would step over the dims to its right (PyTorch's inferExpandGeometry).
        ((1, 1, 2, 3), (6, 6, 3, 1)),
        ((4, 1, 2, 3), (0, 6, 3, 1)),
        ((1, 4, 2, 3), (0, 0, 3, 1)),
    ],
)
def test_expand_new_leading_dims_strides_match_torch(target, strides):
    assert View.contiguous((2, 3)).expand(*target).strides == strides


def test_expand_edge_sizes_match_torch():
    # torch.empty(3).expand(1, 3).stride() == (3, 1); torch.empty(1).expand(0): shape (0,), stride 0
    assert View.contiguous((3,)).expand(1, 3).strides == (3, 1)
    assert View.contiguous((1,)).expand(0) == View((0,), (0,))
    with pytest.raises(ValueError) as info:
        View.contiguous((1,)).expand(-2)
    assert str(info.value) == "expand shape (-2,): size -2 at dim 0 is negative"


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda v: v.transpose(5, 0),
            ValueError,
            "d0 = 5 is out of range for a 2-d view of shape (2, 3); expected a dim in [-2, 1]",
        ),
        (
            lambda v: v.transpose(0, -3),
            ValueError,
            "d1 = -3 is out of range for a 2-d view of shape (2, 3); expected a dim in [-2, 1]",
        ),
        (
            lambda v: v.expand(2.5),
            TypeError,
            "shape[0]: got 2.5, expected an int",
        ),
        (
            lambda v: v.slice(1, 0, 2, 0),
            ValueError,
            "slice step = 0 must be positive (views cannot reverse)",
        ),
        (
            lambda v: v.slice(1, 0, 2, 1.5),
            TypeError,
            "step: got 1.5, expected an int",
        ),
        (
            lambda v: v.slice(1, 0.5, 2),
            TypeError,
            "start: got 0.5, expected an int",
        ),
        (
            lambda v: v.slice(5, 0, 1),
            ValueError,
            "dim = 5 is out of range for a 2-d view of shape (2, 3); expected a dim in [-2, 1]",
        ),
        (
            lambda v: v.slice(1.5, 0, 1),
            TypeError,
            "dim: got 1.5, expected an int",
        ),
        (
            lambda v: v.permute(0, 5),
            ValueError,
            "dims[1] = 5 is out of range for a 2-d view of shape (2, 3); expected a dim in [-2, 1]",
        ),
        (
            lambda v: v.select(0, 1.5),
            TypeError,
            "index: got 1.5, expected an int",
        ),
        (
            lambda v: v.select(0, 5),
            ValueError,
            "select index = 5 is out of range for dim 0 of size 2 (view shape (2, 3)); expected "
            "an index in [-2, 1]",
        ),
        (
            lambda v: v.slice(1, 0, "2"),
            TypeError,
            "stop: got '2', expected an int",
        ),
    ],
)
def test_movement_errors_name_the_argument(call, error, message):
    with pytest.raises(error) as info:
        call(View.contiguous((2, 3)))
    assert str(info.value) == message


@settings(max_examples=300, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    strides=st.lists(st.integers(0, 6), min_size=3, max_size=3),
    offset=st.integers(0, 3),
)
def test_internal_overlap_matches_brute_force(shape, strides, offset):
    """Oracle: two elements overlap exactly when the storage indices are not all distinct."""
    view = View(tuple(shape), tuple(strides[: len(shape)]), offset)
    indices = view.storage_indices().reshape(-1)
    assert view.has_internal_overlap() == (np.unique(indices).size != indices.size)


@pytest.mark.parametrize(
    "view, target, strides",
    [
        # torch: tensor(5.).view(1, 1), empty(0, 3).view(3, 0), empty_strided((1,), (5,)).view(1, 1),
        # empty_strided((0, 3), (1, 5)).view(0, 3): strides (1, 1), (1, 1), (5, 5), (1, 5).
        (View((), ()), (1, 1), (1, 1)),
        (View.contiguous((0, 3)), (3, 0), (1, 1)),
        (View((1,), (5,)), (1, 1), (5, 5)),
        (View((0, 3), (1, 5)), (0, 3), (1, 5)),
    ],
)
def test_view_strides_of_scalar_single_and_empty_views_match_torch(view, target, strides):
    assert view.view(*target).strides == strides
