"""PyTorch's own test cases for narrow, unsqueeze / ``None`` dims, as_strided and set_, ported.

Upstream: pytorch/pytorch ``test/test_view_ops.py`` (classes ``TestViewOps``, ``TestOldViewOps``)
and ``test/test_torch.py`` (``TestTorch``, ``TestTorchDeviceType`` and its helper
``check_internal_mem_overlap``); each test names the upstream test it ports. A PyTorch tensor
``t`` is a ``Memory`` handle here; a view of it is ``dataclasses.replace(t, view=t.view.<op>)``;
``t[i] = x`` is ``mem.setitem_``. Expected values are upstream's literals or NumPy on the same data.
The crosscheck tests at the end pin PyTorch behaviours our documented refusals rely on
(issue 23: the named refusals of ``test_generated_alias_programs.py``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxparadigm.tensor import Memory, View


def _alias(h, make):
    return dataclasses.replace(h, view=make(h.view))


def _np_strided(storage, shape, strides, offset):
    return np.lib.stride_tricks.as_strided(
        storage[offset:], shape, tuple(storage.itemsize * s for s in strides), writeable=False
    )


# --- narrow ---------------------------------------------------------------------------------


def test_narrow_view():
    """TestViewOps.test_narrow_view: a write through ``narrow(t, 1, 2, 2)`` reaches ``t``."""
    mem, t = Memory().tensor(np.ones((5, 5), np.float32))
    v = _alias(t, lambda view: view.narrow(1, 2, 2))
    mem = mem.setitem_(v, (0, 0), 0.0)
    assert np.asarray(mem.read(t))[0, 2] == np.asarray(mem.read(v))[0, 0] == 0.0


@pytest.mark.parametrize(
    "dim, start, length, expected",
    [
        (0, 0, 1, [[0, 1, 2]]),
        (0, 0, 2, [[0, 1, 2], [3, 4, 5]]),
        (0, 1, 1, [[3, 4, 5]]),
        (0, -1, 1, [[6, 7, 8]]),
        (0, -2, 2, [[3, 4, 5], [6, 7, 8]]),
        (0, -3, 3, [[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
        (-1, -1, 1, [[2], [5], [8]]),
        (-2, -1, 1, [[6, 7, 8]]),
    ],
)
def test_narrow(dim, start, length, expected):
    """TestOldViewOps.test_narrow: the eight cases on ``[[0, 1, 2], [3, 4, 5], [6, 7, 8]]``."""
    view = View.contiguous((3, 3)).narrow(dim, start, length)
    np.testing.assert_array_equal(np.asarray(view.materialize(np.arange(9))), expected)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_narrow_empty(dim):
    """test_narrow_empty (as in torch_npu's copy of PyTorch's test_torch.py, TestTensor; the
    stored pytorch snapshot did not show it): ``x.narrow(d, x.size(d), 0)`` has size 0 at d."""
    x = View.contiguous((2, 3, 4))
    expected = list(x.shape)
    expected[dim] = 0
    assert x.narrow(dim, x.shape[dim], 0).shape == tuple(expected)


def test_narrow_as_split():
    """TestOldViewOps.test_split: ``tensor.split([5, 5, 10], 0)`` pieces equal
    ``tensor.narrow(0, start, size)``; the pieces tile the storage without overlap."""
    storage = np.arange(200, dtype=np.float32)
    t, start = View.contiguous((20, 10)), 0
    for size in (5, 5, 10):
        piece = t.narrow(0, start, size)
        want = storage.reshape(20, 10)[start : start + size]
        np.testing.assert_array_equal(np.asarray(piece.materialize(storage)), want)
        assert (piece.offset, piece.shape) == (start * 10, (size, 10))
        start += size


# --- unsqueeze and None dims ------------------------------------------------------------------


def test_unsqueeze_view():
    """TestViewOps.test_unsqueeze_view: ``v = unsqueeze(t, 1); v[0, 0, 1] = 0`` reaches ``t[0, 1]``."""
    mem, t = Memory().tensor(np.ones((5, 5), np.float32))
    v = _alias(t, lambda view: view.unsqueeze(1))
    mem = mem.setitem_(v, (0, 0, 1), 0.0)
    assert np.asarray(mem.read(t))[0, 1] == 0.0 and v.shape == (5, 1, 5)


def test_unsqueeze():
    """TestOldViewOps.test_unsqueeze: ``x.unsqueeze(1) == x.view(2, 1, 3, 4)`` (and dim 2), also
    for the non-contiguous ``x[:, 1]``."""
    storage = np.arange(24, dtype=np.float32)
    x = View.contiguous((2, 3, 4))
    assert x.unsqueeze(1) == x.view(2, 1, 3, 4)
    assert x.unsqueeze(2) == x.view(2, 3, 1, 4)
    column = x.select(1, 1)
    assert not column.is_contiguous()
    want = storage.reshape(2, 3, 4)[:, 1]
    for dim, shape in ((1, (2, 1, 4)), (2, (2, 4, 1))):
        got = np.asarray(column.unsqueeze(dim).materialize(storage))
        np.testing.assert_array_equal(got, want.reshape(shape))


def test_expand_is_compatible_with_unsqueeze():
    """TestOldViewOps.test_expand: ``tensor2.expand(1, 1, 5)`` and
    ``tensor2.unsqueeze(0).unsqueeze(1)`` have the same values and strides."""
    tensor2 = View.contiguous((5,))
    expanded, unsqueezed = tensor2.expand(1, 1, 5), tensor2.unsqueeze(0).unsqueeze(1)
    assert expanded.strides == unsqueezed.strides == (5, 5, 1)
    storage = np.arange(5.0)
    np.testing.assert_array_equal(expanded.materialize(storage), unsqueezed.materialize(storage))


def test_basic_indexing_newaxis_view():
    """TestViewOps.test_basic_indexing_newaxis_view: ``v = t[None, :2, 3]; v[0, 0] = 0`` reaches
    ``t[0, 3]``; the same ``None`` index also writes directly (``t[None, :2, 3] = 7``)."""
    mem, t = Memory().tensor(np.ones((5, 5), np.float32))
    v = _alias(t, lambda view: view.slice(0, None, 2).select(1, 3).unsqueeze(0))
    assert v.shape == (1, 2)
    mem = mem.setitem_(v, (0, 0), 0.0)
    assert np.asarray(mem.read(t))[0, 3] == np.asarray(mem.read(v))[0, 0] == 0.0
    mem = mem.setitem_(t, (None, slice(None, 2), 3), 7.0)
    np.testing.assert_array_equal(np.asarray(mem.read(t))[:, 3], [7, 7, 1, 1, 1])


# --- as_strided -------------------------------------------------------------------------------


def test_as_strided_view():
    """TestViewOps.test_as_strided_view: ``v = as_strided(t, (25,), (1,)); v[6] = 0`` reaches
    ``t[1, 1]``."""
    mem, t = Memory().tensor(np.ones((5, 5), np.float32))
    v = mem.as_strided(t, (25,), (1,))
    mem = mem.setitem_(v, 6, 0.0)
    assert np.asarray(mem.read(t))[1, 1] == 0.0


@pytest.mark.parametrize(
    "numel, prepro, size, strides, offset",
    [
        (25, lambda v: v.view(5, 5), (3, 3), (6, 2), 2),
        (12, None, (1, 2, 1, 5), (0, 5, 100, 1), 2),  # "crazy stride at dim with size 1"
        (5, None, (3, 3, 3), (0, 1, 0), 2),  # expand
        (5, None, (3, 3, 3), (0, 0, 0), 4),
        (5, lambda v: v.expand(5, 5), (5, 5), (0, 1), 0),
        (35, None, (6, 6), (5, 1), 2),  # "non-expand overlapping"
        (15, None, (3, 2), (3, 6), 2),
        (12, lambda v: v.view(3, 4), (4, 3), (1, 4), None),  # transpose
        (12, lambda v: v.view(6, 2).slice(0, 3, None), (3, 2), (2, 1), 0),  # outside the input
        (6, lambda v: v.view(2, 3).expand(10, 2, 3), (2, 3), (3, 1), 0),  # select on expanded
    ],
)
def test_as_strided_geometries(numel, prepro, size, strides, offset):
    """TestViewOps.test_as_strided_gradients' geometries (its forward values): ``x.as_strided``
    over ``prepro(x)``, offset ``None`` keeping ``prepro(x)``'s own; vs NumPy on the storage."""
    storage = np.arange(numel, dtype=np.float32)
    mem, x = Memory().tensor(storage)
    y = _alias(x, prepro) if prepro else x
    extra = () if offset is None else (offset,)
    out = mem.as_strided(y, size, strides, *extra)
    start = y.view.offset if offset is None else offset
    assert out.view.offset == start
    want = _np_strided(storage, size, strides, start)
    np.testing.assert_array_equal(np.asarray(mem.read(out)), want)
    if numel == 12 and offset == 0:  # upstream: x[3:].as_strided([3, 2], [2, 1], 0) == x[:3]
        np.testing.assert_array_equal(want, storage.reshape(6, 2)[:3])


# --- set_ -------------------------------------------------------------------------------------


def test_tensor_set():
    """TestTorch.test_tensor_set: ``t1.set_(t2)`` shares ``t2``'s storage; with a size the strides
    are row-major ``(120, 40, 10, 1)``; with a stride, that stride."""
    mem, t1 = Memory().tensor(np.zeros(0, np.float32))
    mem, t2 = mem.tensor(np.random.default_rng(0).uniform(size=(3, 4, 9, 10)).astype(np.float32))
    mem, s = mem.set_(t1, t2)
    assert s.storage == t2.storage and s.uid == t2.uid and s.view == t2.view
    size = (9, 3, 4, 10)
    mem, s = mem.set_(t1, t2, 0, size)
    assert (s.shape, s.view.strides) == (size, (120, 40, 10, 1))
    mem, s = mem.set_(t1, t2, 0, size, (10, 360, 90, 1))
    assert s.view.strides == (10, 360, 90, 1)
    flat = np.asarray(mem.storage(t2))
    np.testing.assert_array_equal(mem.read(s), _np_strided(flat, size, (10, 360, 90, 1), 0))


def test_tensor_set_errors():
    """TestTorch.test_tensor_set_errors: a float32 tensor cannot be set to data of another dtype,
    with or without a geometry (PyTorch: RuntimeError; here TypeError). Upstream's other dtype is
    float64, which JAX (x64 off) stores as float32; int32 stands in for it."""
    mem, f = Memory().tensor(np.zeros((2, 3), np.float32))
    mem, d = mem.tensor(np.zeros((2, 3), np.int32))
    for call in (
        lambda: mem.set_(f, d),
        lambda: mem.set_(f, d, 0, (2, 3), (3, 1)),
        lambda: mem.set_(f, np.zeros((2, 3), np.int32)),
    ):
        with pytest.raises(TypeError, match="cannot set a tensor of dtype float32"):
            call()


# --- overlapping writes -----------------------------------------------------------------------


def test_copy_many_to_one():
    """TestTorchDeviceType.test_copy_many_to_one: ``zeros(1, 6).expand(5, 6).copy_(zeros(5, 6))``
    is refused (many elements, one storage element); check_internal_mem_overlap: so is
    ``copy_`` into ``randn(1).expand(3, 3)``."""
    mem, row = Memory().tensor(np.zeros((1, 6), np.float32))
    with pytest.raises(ValueError, match="refers to a single storage element"):
        mem.copy_(_alias(row, lambda v: v.expand(5, 6)), np.zeros((5, 6), np.float32))
    mem, one = Memory().tensor(np.ones(1, np.float32))
    with pytest.raises(ValueError, match="refers to a single storage element"):
        mem.copy_(_alias(one, lambda v: v.expand(3, 3)), np.ones((3, 3), np.float32))


def test_copy_broadcast():
    """TestTorchDeviceType.test_copy_broadcast: ``zeros(5, 6).copy_(zeros(6))`` broadcasts;
    ``copy_(zeros(30))`` is refused."""
    mem, t = Memory().tensor(np.zeros((5, 6), np.float32))
    mem = mem.copy_(t, np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(mem.read(t), np.tile(np.arange(6), (5, 1)))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        mem.copy_(t, np.zeros(30, np.float32))


# --- PyTorch behaviours the documented refusals rest on (crosscheck) --------------------------


@pytest.mark.crosscheck
def test_torch_writes_through_a_nonzero_stride_overlap_and_we_refuse():
    """``overlapping_write``: PyTorch's overlap check gives up on ``as_strided((3, 2), (1, 1))``
    (no zero stride) and writes, in its kernel's order; we refuse. ``fill_`` agrees."""
    torch = pytest.importorskip("torch")
    s = torch.arange(6.0)
    s.as_strided((3, 2), (1, 1)).add_(torch.ones(3, 2))  # no refusal
    mem, h = Memory().tensor(np.arange(6, dtype=np.float32))
    window = mem.as_strided(h, (3, 2), (1, 1))
    with pytest.raises(ValueError, match="refers to a single storage element"):
        mem.add_(window, np.ones((3, 2), np.float32))
    t = torch.arange(6.0)
    t.as_strided((3, 2), (1, 1)).fill_(-1.0)
    np.testing.assert_array_equal(mem.fill_(window, -1.0).storage(h), t.numpy())


@pytest.mark.crosscheck
def test_torch_refuses_a_partially_overlapping_copy_our_api_reads_first():
    """PyTorch refuses ``s[0:4].copy_(s[2:6])`` ("some elements of the input tensor and the
    written-to tensor refer to a single memory location"). Our ``copy_`` takes values, so the
    source is read first: ``mem.copy_(a, mem.read(b))`` is PyTorch's ``a.copy_(b.clone())``."""
    torch = pytest.importorskip("torch")
    s = torch.arange(6.0)
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        s[0:4].copy_(s[2:6])
    s[0:4].copy_(s[2:6].clone())
    mem, h = Memory().tensor(np.arange(6, dtype=np.float32))
    a, b = _alias(h, lambda v: v.slice(0, 0, 4)), _alias(h, lambda v: v.slice(0, 2, 6))
    np.testing.assert_array_equal(mem.copy_(a, mem.read(b)).storage(h), s.numpy())


@pytest.mark.crosscheck
def test_torch_set_with_a_geometry_reinterprets_another_dtype_and_we_refuse():
    """``set_reinterprets_dtype``: PyTorch refuses ``f.set_(int_tensor)`` but reads the int32
    bytes as float32 for ``f.set_(int_tensor, 0, (2,))`` (its untyped storage); we refuse both."""
    torch = pytest.importorskip("torch")
    source = torch.tensor([-7, 1], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="Could not set tensor of type int"):
        torch.zeros(1).set_(source)
    bits = torch.zeros(1).set_(source, 0, (2,))
    assert bits.dtype == torch.float32 and bits.view(torch.int32).tolist() == [-7, 1]
    mem, f = Memory().tensor(np.zeros(1, np.float32))
    mem, i = mem.tensor(np.array([-7, 1], np.int32))
    with pytest.raises(TypeError, match="cannot set a tensor of dtype float32"):
        mem.set_(f, i, 0, (2,))


@pytest.mark.crosscheck
@pytest.mark.parametrize("start, length", [(1, 3), (-2, 2), (5, 0), (6, 0), (-6, 1), (2, 4)])
def test_narrow_matches_torch_or_both_refuse(start, length):
    torch = pytest.importorskip("torch")
    try:
        t = torch.arange(10.0).view(2, 5).narrow(1, start, length)
    except (IndexError, RuntimeError):
        with pytest.raises(ValueError, match="narrow"):
            View.contiguous((2, 5)).narrow(1, start, length)
        return
    got = View.contiguous((2, 5)).narrow(1, start, length)
    assert (got.shape, got.strides, got.offset) == (tuple(t.shape), t.stride(), t.storage_offset())


# --- bad input: one error naming the argument, the value and the expected range ---------------


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda v: v.narrow(1, 4, 0),
            ValueError,
            "narrow start = 4 is out of range for dim 1 of size 3 (view shape (2, 3)); expected "
            "a start in [-3, 3]",
        ),
        (
            lambda v: v.narrow(1, -2, 3),
            ValueError,
            "narrow length = 3 from start 1 does not fit dim 1 of size 3 (view shape (2, 3)); "
            "expected 0 <= length <= 2",
        ),
        (
            lambda v: v.narrow(0, 0, -1),
            ValueError,
            "narrow length = -1 from start 0 does not fit dim 0 of size 2 (view shape (2, 3)); "
            "expected 0 <= length <= 2",
        ),
        (
            lambda v: v.narrow(0, 0, 1.0),
            TypeError,
            "length: got 1.0, expected an int",
        ),
        (
            lambda v: v.select(0, 0).select(0, 0).narrow(0, 0, 0),
            ValueError,
            "narrow() cannot be applied to a 0-d view (shape ())",
        ),
        (
            lambda v: v.unsqueeze(3),
            ValueError,
            "unsqueeze dim = 3 is out of range for a 2-d view of shape (2, 3); expected a dim "
            "in [-3, 2]",
        ),
        (
            lambda v: v.unsqueeze(None),
            TypeError,
            "dim: got None, expected an int",
        ),
    ],
)
def test_narrow_and_unsqueeze_errors_name_the_argument(call, error, message):
    with pytest.raises(error) as info:
        call(View.contiguous((2, 3)))
    assert str(info.value) == message
