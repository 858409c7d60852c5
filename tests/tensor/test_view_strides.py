"""``tensor.view_strides``: the stride arithmetic of ``View.view``, against torch (C2.1)."""

import numpy as np
import pytest

from jaxparadigm.tensor.view_strides import compute_view_strides, infer_view_shape


@pytest.mark.parametrize(
    "target, shape, expected",
    [
        ((-1, 4), (2, 3, 4), (6, 4)),
        ((2, -1), (2, 3, 4), (2, 12)),
        ((-1,), (0, 5), (0,)),
        ((3, 0), (0, 5), (3, 0)),
        ((), (1, 1), ()),
    ],
)
def test_infer_view_shape(target, shape, expected):
    assert infer_view_shape(target, shape) == expected


@pytest.mark.parametrize(
    "target, shape, message",
    [
        ((-1, -1), (2, 3), r"view shape \(-1, -1\): only one dim can be -1"),
        ((2, -2), (2, 3), r"view shape \(2, -2\): size -2 at dim 1 is invalid"),
        ((0, -1), (0, 3), r"view shape \(0, -1\) is invalid for a view of 0 elements"),
        ((4, -1), (2, 3), r"view shape \(4, -1\) is invalid for a view of 6 elements \(shape"),
        ((4, 2), (2, 3), r"view shape \(4, 2\) is invalid for a view of 6 elements"),
    ],
)
def test_infer_view_shape_refuses(target, shape, message):
    with pytest.raises(ValueError, match=message):
        infer_view_shape(target, shape)


@pytest.mark.crosscheck
def test_compute_view_strides_matches_torch_on_strided_storages():
    """Random strides (gaps, size-1 dims, zero strides) and random regroupings of the sizes."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    checked = refused = 0
    for _ in range(400):
        shape = tuple(int(n) for n in rng.integers(0 if rng.random() < 0.1 else 1, 4, size=3))
        strides = tuple(int(s) for s in rng.integers(0, 13, size=3))
        numel = int(np.prod(shape))
        sizes = [n for n in shape if n != 1] + [1] * int(rng.integers(0, 2))
        new_shape = tuple(int(n) for n in rng.permutation(sizes)) if numel else (numel, 1)
        if np.prod(new_shape) != numel:
            new_shape = (numel,)
        t = torch.empty_strided(shape, strides)
        ours = compute_view_strides(shape, strides, new_shape)
        try:
            expected = tuple(t.view(new_shape).stride())
        except RuntimeError:
            assert ours is None, (shape, strides, new_shape)
            refused += 1
            continue
        assert ours == expected, (shape, strides, new_shape)
        checked += 1
    assert checked > 100 and refused > 20  # both outcomes exercised


def test_compute_view_strides_edge_cases():
    assert compute_view_strides((), (), (1, 1)) == (1, 1)  # a scalar takes all-ones strides
    assert compute_view_strides((0, 3), (7, 2), (0, 3)) == (7, 2)  # empty, same shape: kept
    assert compute_view_strides((0, 3), (7, 2), (3, 0)) == (1, 1)  # empty: contiguous
    assert compute_view_strides((2, 3), (1, 2), (6,)) is None  # transposed: a copy is needed
    assert compute_view_strides((2, 3), (3, 1), (3, 2)) == (2, 1)
