"""torch_index_steps: PyTorch's placement of an advanced index's dimensions when the index also
holds integers, and Memory.setitem_ writing where PyTorch writes (C2.5)."""

import numpy as np
import pytest

from jaxparadigm.tensor.memory import Memory
from jaxparadigm.tensor.torch_index import torch_index_steps

X = np.arange(24).reshape(2, 3, 4)

#: (index, PyTorch's result shape): the first two differ from NumPy's ((2, 3) and (2, 1, 1)).
CASES = [
    ((0, slice(None), [0, 1]), (3, 2)),
    ((None, np.array([True, False]), None, 0, 0), (1, 1, 1)),
    ((slice(None), 0, [1, 2]), (2, 2)),
    (([0, 1], 0), (2, 4)),
    ((0, [1, 2], slice(None)), (2, 4)),
    ((Ellipsis, 1, [0, 3]), (2, 2)),
    (([1], slice(None), 2), (1, 3)),
    ((np.array([[True, False, True], [False, False, True]]), 1), (3,)),
    ((0,), (3, 4)),
    (([0, 1],), (2, 3, 4)),
    ((slice(None), None, [0, 1], 2), (2, 1, 2)),
]


def _torch_shaped(index):
    out = X
    for step in torch_index_steps(index):
        out = out[step]
    return out


@pytest.mark.parametrize("index, shape", CASES)
def test_the_steps_give_pytorchs_shape(index, shape):
    assert _torch_shaped(index).shape == shape


def test_without_an_integer_or_without_an_array_numpy_is_left_alone():
    for index in [(0, slice(None)), ([0, 1], slice(None)), 1, (Ellipsis, None)]:
        assert torch_index_steps(index) == (index,)


def test_the_first_step_is_a_view_and_the_values_land_where_pytorch_puts_them():
    basic, advanced = torch_index_steps((0, slice(None), [0, 1]))
    assert np.shares_memory(X[basic], X)
    mem, h = Memory().tensor(np.zeros(24, np.float32).reshape(2, 3, 4))
    values = np.arange(1, 7, dtype=np.float32).reshape(3, 2)  # PyTorch's (3, 2)
    mem = mem.setitem_(h, (0, slice(None), [0, 1]), values)
    want = np.zeros((2, 3, 4), np.float32)
    want[0, :, 0], want[0, :, 1] = values[:, 0], values[:, 1]
    np.testing.assert_array_equal(np.asarray(mem.read(h)), want)
    with pytest.raises(ValueError, match="cannot be broadcast"):  # NumPy's (2, 3) is refused
        mem.setitem_(h, (0, slice(None), [0, 1]), np.ones((2, 3), np.float32))


@pytest.mark.crosscheck
@pytest.mark.parametrize("index, shape", CASES)
def test_the_steps_equal_torch(index, shape):
    torch = pytest.importorskip("torch")
    parts = index if isinstance(index, tuple) else (index,)
    theirs = torch.from_numpy(X)[
        tuple(torch.from_numpy(np.asarray(p)) if isinstance(p, (list, np.ndarray)) else p
              for p in parts)
    ]  # fmt: skip
    np.testing.assert_array_equal(_torch_shaped(index), theirs.numpy())
