"""Generated view chains on ``View``/``Memory``/``as_strided`` vs NumPy and PyTorch (issue 23, 3a).

Chains come from ``tests/tensor/view_chain_generator.py``. Oracles:

* NumPy (always): each op applied to an ndarray (``view`` as ``reshape(copy=False)``, which
  refuses exactly when a copy would be needed); the final values must equal our
  ``View.materialize``, and ``np.lib.stride_tricks.as_strided`` on our metadata must equal our
  ``as_strided``; a refusal must meet a refusal.
* PyTorch (``crosscheck``): the same ops on a ``torch.as_strided`` base: shape, strides, storage
  offset and ``is_contiguous`` after every op, values at the end, refusals (``.view`` raising vs
  our ``view`` refusing); then one write through the last view (``copy_``/``add_``/``fill_``/
  ``setitem_``), compared on the whole storage (every alias sees it) or refusal for refusal.

Classes as in ``tests/differential_classes.py``. Documented refusal (counted by name):

* ``negative_expand_size``: ``expand`` to a negative size. PyTorch builds a tensor of size -2
  when another dim is 0 (its numel check passes, ``torch.zeros(1, 0).expand(-2, -1)`` has shape
  ``(-2, 0)``); we refuse every negative size but ``-1``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxparadigm.tensor import Memory, View, as_strided
from tests.differential_classes import (
    EQUAL,
    RAISED,
    SILENT,
    Tally,
    default_settings,
    long_settings,
)
from tests.tensor.view_chain_generator import apply_numpy, view_chains, writes

REFUSALS = (ValueError, IndexError, TypeError)


def apply_ours(view: View, op: tuple) -> View:
    name, *args = op
    if name in ("permute", "expand", "view"):
        return getattr(view, name)(*args[0])
    return getattr(view, name)(*args)


def _attempt(fn, *args):
    try:
        return fn(*args), None
    except REFUSALS as err:
        return None, err


def _storage(shape, offset, spare) -> np.ndarray:
    return np.arange(offset + math.prod(shape) + spare, dtype=np.float32)


def check_numpy(chain: tuple, tally: Tally) -> View | None:
    """One chain vs NumPy; returns our final view (None when the chain ended in a refusal)."""
    shape, offset, spare, ops = chain
    storage = _storage(shape, offset, spare)
    array = storage[offset : offset + math.prod(shape)].reshape(shape)
    view = View.contiguous(shape, offset)
    for op in ops:
        ours, our_err = _attempt(apply_ours, view, op)
        want, np_err = _attempt(apply_numpy, array, op)
        detail = f"chain {chain}: at {op}: ours {ours or our_err!r}, numpy {np_err!r}"
        if our_err and np_err:
            tally.record(EQUAL)
            return None
        if our_err or np_err:
            tally.record(RAISED if our_err else SILENT, detail)
            return None
        tally.record(EQUAL if ours.shape == want.shape else SILENT, detail)
        view, array = ours, want
    got = np.asarray(view.materialize(storage))
    tally.record(EQUAL if np.array_equal(got, array) else SILENT, f"chain {chain}: values")
    strided = np.lib.stride_tricks.as_strided(
        storage[view.offset :], view.shape, tuple(4 * s for s in view.strides), writeable=False
    )
    direct = np.asarray(as_strided(storage, view.shape, view.strides, view.offset))
    tally.record(EQUAL if np.array_equal(direct, strided) else SILENT, f"chain {chain}: as_strided")
    return view


def _run_numpy(profile) -> None:
    tally = Tally("view chains vs numpy")

    @profile
    @given(chain=view_chains())
    def run(chain):
        tally.example()
        check_numpy(chain, tally)

    run()
    tally.finish()


def test_generated_view_chains_match_numpy():
    _run_numpy(default_settings(150))


@pytest.mark.slow
def test_generated_view_chains_match_numpy_long():
    _run_numpy(long_settings(2_000))


# --- PyTorch -----------------------------------------------------------------------------------


def apply_torch(tensor, op: tuple):
    import torch

    name, *args = op
    if name == "slice":
        return torch.ops.aten.slice.Tensor(tensor, *args)
    if name in ("permute", "expand", "view"):
        return getattr(tensor, name)(args[0])
    return getattr(tensor, name)(*args)


def _torch_refusals():
    import torch

    return (
        (RuntimeError, IndexError, ValueError, TypeError, torch.OpError)
        if hasattr(torch, "OpError")
        else (RuntimeError, IndexError, ValueError, TypeError)
    )


def _meta(view: View) -> tuple:
    return view.shape, view.strides, view.offset, view.is_contiguous()


def _torch_meta(t) -> tuple:
    return tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.is_contiguous()


def write_ours(mem: Memory, h, write: tuple) -> Memory:
    kind, index, values = write
    if kind == "setitem_":
        return mem.setitem_(h, index, values)
    return getattr(mem, kind)(h, values)


def write_torch(t, write: tuple) -> None:
    import torch

    kind, index, values = write
    if kind == "setitem_":
        t[index] = torch.from_numpy(np.array(values))
    elif kind == "fill_":
        t.fill_(values)
    else:
        getattr(t, kind)(torch.from_numpy(np.array(values)))


def check_torch(chain: tuple, write_draw, tally: Tally) -> None:
    import torch

    refusals = _torch_refusals()
    shape, offset, spare, ops = chain
    storage = _storage(shape, offset, spare)
    base_t = torch.from_numpy(storage.copy())
    t = torch.as_strided(base_t, shape, View.contiguous(shape).strides, offset)
    view = View.contiguous(shape, offset)
    for op in ops:
        ours, our_err = _attempt(apply_ours, view, op)
        try:
            theirs, torch_err = apply_torch(t, op), None
        except refusals as err:
            theirs, torch_err = None, err
        detail = f"chain {chain}: at {op}: ours {ours or our_err!r}, torch {torch_err!r}"
        if our_err and torch_err:
            tally.record(EQUAL)
            return
        if our_err and op[0] == "expand" and min(theirs.shape, default=0) < 0:
            tally.refused("negative_expand_size")
            return
        if our_err or torch_err:
            tally.record(RAISED if our_err else SILENT, detail)
            return
        same = _meta(ours) == _torch_meta(theirs)
        tally.record(EQUAL if same else SILENT, f"{detail}: {_meta(ours)} vs {_torch_meta(theirs)}")
        view, t = ours, theirs
    got = np.asarray(view.materialize(storage))
    tally.record(EQUAL if np.array_equal(got, t.numpy()) else SILENT, f"chain {chain}: values")
    # A write through the last view, seen through the storage by every alias.
    write = write_draw(writes(view.shape))
    mem, whole = Memory().tensor(storage)
    h = mem.as_strided(whole, view.shape, view.strides, view.offset)
    try:
        after, our_err = np.asarray(write_ours(mem, h, write).storage(whole)), None
    except REFUSALS as err:
        after, our_err = None, err
    try:
        write_torch(t, write)
        torch_err = None
    except refusals as err:
        torch_err = err
    detail = f"chain {chain}: write {write}: ours {our_err!r}, torch {torch_err!r}"
    if our_err or torch_err:
        tally.record(EQUAL if (our_err and torch_err) else (RAISED if our_err else SILENT), detail)
        return
    same = np.array_equal(after, base_t.numpy())
    tally.record(EQUAL if same else SILENT, f"{detail}: {after} vs {base_t.numpy()}")


def _run_torch(profile) -> None:
    pytest.importorskip("torch")
    tally = Tally("view chains and writes vs torch")

    @profile
    @given(chain=view_chains(), data=st.data())
    def run(chain, data):
        tally.example()
        check_torch(chain, data.draw, tally)

    run()
    tally.finish()


@pytest.mark.crosscheck
def test_generated_view_chains_and_writes_match_torch():
    _run_torch(default_settings(100))


@pytest.mark.crosscheck
@pytest.mark.slow
def test_generated_view_chains_and_writes_match_torch_long():
    _run_torch(long_settings(2_000))


# --- Shrunk cases the generators found (each failed before its fix) ---------------------------


def test_regression_transpose_of_a_0d_view_wraps_dims_0_and_minus_1():
    # Found: ((), 0, 0, (('transpose', 0, 0),)) raised; torch.tensor(1.).transpose(0, -1) is
    # the scalar itself (maybe_wrap_dim wraps a 0-d tensor's dims as if it had one).
    scalar = View.contiguous((), 3)
    assert scalar.transpose(0, 0) == scalar
    assert scalar.transpose(-1, 0) == scalar
    with pytest.raises(ValueError, match="d0 = 1 is out of range for a 0-d view"):
        scalar.transpose(1, 0)


def test_regression_expanding_a_0d_view_gives_zero_strides():
    # Found: ((3,), 2, 2, (('select', 0, 0), ('expand', (0, 1)))) gave strides (0, 1); torch
    # gives (0, 0): a new trailing dim of a 0-d source has stride 0.
    assert View.contiguous((3,), 2).select(0, 0).expand(0, 1).strides == (0, 0)
    assert View.contiguous(()).expand(2, 1, 3).strides == (0, 0, 0)
    assert View.contiguous((1,)).expand(2, 1, 1).strides == (0, 1, 1)  # unchanged: 1-d source


def test_regression_fill_through_an_expanded_view():
    # Found: ((1,), 0, 1, (('permute', (-1,)), ('expand', (2, 2)), ('select', -2, 1))) + fill_
    # raised; torch fills an expanded tensor (every shared element gets the same value).
    mem, whole = Memory().tensor(np.arange(2.0, dtype=np.float32))
    h = mem.as_strided(whole, (2,), (0,), 0)
    np.testing.assert_array_equal(mem.fill_(h, -1.5).storage(whole), [-1.5, 1.0])
    with pytest.raises(ValueError, match="copy_: more than one element"):
        mem.copy_(h, np.ones(2, np.float32))  # torch refuses copy_ into it


@pytest.mark.crosscheck
@pytest.mark.parametrize(
    "chain, write",
    [
        (((), 0, 0, (("transpose", 0, 0),)), ("fill_", None, 2.0)),
        (((3,), 2, 2, (("select", 0, 0), ("expand", (0, 1)), ("permute", (0, 1)))), None),
        (((1,), 0, 1, (("expand", (2, 2)), ("select", -2, 1))), ("fill_", None, -1.5)),
        (((1,), 0, 1, (("expand", (2, 2)), ("select", -2, 1))), ("add_", None, np.ones(2))),
    ],
)
def test_regression_chains_match_torch(chain, write):
    pytest.importorskip("torch")
    tally = Tally("view regression")
    check_torch(chain, lambda strategy: write or ("fill_", None, 0.0), tally)
    assert tally.counts[EQUAL] == sum(tally.counts.values()) > 0, tally.summary()
