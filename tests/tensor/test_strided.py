"""as_strided against numpy.lib.stride_tricks.as_strided (bytes) and torch.as_strided."""

import chex
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.tensor import as_strided


def _numpy_as_strided(storage, shape, strides, offset):
    base = storage[offset:]
    itemsize = storage.itemsize
    return np.lib.stride_tricks.as_strided(
        base, shape=shape, strides=tuple(s * itemsize for s in strides), writeable=False
    )


class AsStridedTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.named_parameters(
        ("seed_c2_1", (2, 3), (3, 1), 2),
        ("transposed", (3, 4), (1, 3), 0),
        ("broadcast_row", (4, 3), (0, 1), 5),
        ("sliding_windows", (5, 3), (1, 1), 1),
        ("non_divisible", (3, 2), (3, 2), 0),
        ("scalar", (), (), 7),
    )
    def test_matches_numpy(self, shape, strides, offset):
        storage = np.arange(12, dtype=np.float32)
        out = self.variant(lambda s: as_strided(s, shape, strides, offset))(storage)
        np.testing.assert_array_equal(
            np.asarray(out), _numpy_as_strided(storage, shape, strides, offset)
        )

    def test_seed_example(self):
        out = as_strided(jnp.arange(12), (2, 3), (3, 1), 2)
        np.testing.assert_array_equal(out, [[2, 3, 4], [5, 6, 7]])
        self.assertEqual(out.dtype, jnp.int32)

    @parameterized.named_parameters(
        ("negative_stride", (2, 3), (-3, 1), 6, "strides\\[0\\] = -3 is negative"),
        ("negative_offset", (2,), (1,), -1, "offset = -1 is negative"),
        ("past_the_end", (2, 3), (4, 1), 4, r"element \(1, 2\).*storage index 10.*only 10"),
        ("big_stride", (3,), (5,), 0, r"element \(2,\).*storage index 10"),
    )
    def test_out_of_bounds_names_element_and_size(self, shape, strides, offset, pattern):
        with self.assertRaisesRegex(ValueError, pattern):
            as_strided(jnp.arange(10.0), shape, strides, offset)

    def test_bad_types(self):
        with self.assertRaisesRegex(TypeError, "shape"):
            as_strided(jnp.arange(4.0), (2.5,), (1,))
        with self.assertRaisesRegex(ValueError, "1-D"):
            as_strided(jnp.zeros((2, 2)), (2,), (1,))


@st.composite
def _strided_case(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    strides = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, 5))
    extent = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1
    if 0 in shape:
        extent = offset
    size = draw(st.integers(max(extent, 1), max(extent, 1) + 3))
    return shape, strides, offset, size


def _check_strided_case(case):
    shape, strides, offset, size = case
    storage = np.arange(size, dtype=np.float32) * 2 + 1
    np.testing.assert_array_equal(
        np.asarray(as_strided(storage, shape, strides, offset)),
        _numpy_as_strided(storage, shape, strides, offset),
    )


@settings(max_examples=25, deadline=None)
@given(_strided_case())
def test_as_strided_matches_numpy(case):
    _check_strided_case(case)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_strided_case())
def test_as_strided_matches_numpy_many(case):
    _check_strided_case(case)


@settings(max_examples=150, deadline=None)
@given(_strided_case(), st.integers(1, 4))
def test_out_of_bounds_is_always_refused(case, short):
    shape, strides, offset, size = case
    needed = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1
    if 0 in shape or needed - short <= 0:
        return
    with pytest.raises(ValueError, match=f"storage index {needed - 1}"):
        as_strided(np.zeros(needed - short, np.float32), shape, strides, offset)


@pytest.mark.crosscheck
def test_matches_torch_as_strided():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for _ in range(12):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(n) for n in rng.integers(1, 4, ndim))
        strides = tuple(int(s) for s in rng.integers(0, 5, ndim))
        offset = int(rng.integers(0, 4))
        size = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1
        storage = np.arange(size, dtype=np.float32)
        expected = torch.as_strided(torch.from_numpy(storage), shape, strides, offset).numpy()
        np.testing.assert_array_equal(
            np.asarray(as_strided(storage, shape, strides, offset)), expected
        )


def test_offset_defaults_to_zero():
    np.testing.assert_array_equal(np.asarray(as_strided(np.arange(6.0), (2,), (1,))), [0.0, 1.0])


@pytest.mark.parametrize(
    "args, error, message",
    [
        (((2.5,), (1,)), TypeError, "shape[0]: got 2.5, expected an int"),
        (((2,), (1.5,)), TypeError, "strides[0]: got 1.5, expected an int"),
        (((2,), (1,), 1.5), TypeError, "offset: got 1.5, expected an int"),
        (
            ((2,), (-1,)),
            ValueError,
            "strides[0] = -1 is negative in strides (-1,); strides are >= 0 "
            "(PyTorch views have no negative strides)",
        ),
    ],
)
def test_errors_give_the_whole_message(args, error, message):
    with pytest.raises(error) as info:
        as_strided(np.arange(6.0), *args)
    assert str(info.value) == message
