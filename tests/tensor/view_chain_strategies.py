"""Aliasing programs: several tensors over shared storages, drawn by hypothesis (issue 23, 3a).

A program has one storage of ``offset + numel + spare`` elements holding a contiguous base tensor
``t0`` of ``shape`` at ``offset``, and a second storage of 0-8 elements viewed whole as ``t1``. Then
2-``max_steps`` steps, each drawn against the state so far (tracked by :class:`NumpyProgram`, the
NumPy model that is also the always-available oracle):

* ``("move", src, op)``: a new tensor, ``op`` from ``view_chain_generator.draw_op`` on tensor
  ``src`` (permute, transpose, expand, slice, narrow, select, unsqueeze, view);
* ``("as_strided", src, shape, strides, offset)``: a new tensor over ``src``'s storage, strides
  drawn small so that two indices often share one storage element (an overlapping view); offset
  ``None`` keeps ``src``'s (torch's default); about one in eight runs past the storage end; an
  overlapping one (and every other one in two) is written through at once;
* ``("set_", dst, source, geometry)``: rebind tensor ``dst`` to tensor ``source``'s storage, or to
  new values (an int array: a dtype refusal), with ``geometry = (offset, shape, strides or None)``
  or ``None``;
* ``("write", dst, write)``: ``fill_``/``add_``/``copy_``/``setitem_`` through tensor ``dst``; a
  ``setitem_`` index mixes ints, slices, ``None`` (new dims), ``...``, and now and then one
  advanced part (an int array that may repeat a position, or a bool mask);
* ``("copy_from", dst, src)``: ``dst.copy_(src.clone())``.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from numpy.lib.array_utils import byte_bounds

from jaxparadigm.tensor.torch_index import torch_index_steps
from tests.tensor.view_chain_generator import apply_numpy, draw_op

REFUSALS = (ValueError, IndexError, TypeError)


class NotJudged(Exception):
    """The NumPy model cannot judge this step (it ends the program's comparison there)."""


ITEM = 4  # float32 bytes


def initial_storages(sizes: tuple[int, ...]) -> list[np.ndarray]:
    """Distinct values per storage (0, 1, ... and 100, 101, ...), float32."""
    return [np.arange(n, dtype=np.float32) + 100 * i for i, n in enumerate(sizes)]


class NumpyProgram:
    """The NumPy model: ``buffers`` (1-D float32 arrays) and ``tensors`` (writable ndarrays over
    them, each with the index of its buffer). Every tensor is rebuilt as
    ``np.ndarray(shape, buffer=..., offset=..., strides=...)`` from NumPy's own metadata, so
    NumPy checks that a view fits its buffer and writes go through to the buffer. NumPy does not
    place an empty view (its offset is clamped to the buffer), so the offset of an empty tensor is
    not an oracle."""

    def __init__(self, sizes: tuple[int, ...], shape: tuple[int, ...], offset: int) -> None:
        self.buffers = initial_storages(sizes)
        self.tensors: list[tuple[np.ndarray, int]] = []
        self.tensors.append((self._strided(0, shape, _contiguous_bytes(shape), offset), 0))
        self.tensors.append((self._strided(1, (sizes[1],), (ITEM,), 0), 1))

    def _strided(self, b: int, shape, byte_strides, offset: int) -> np.ndarray:
        buffer = self.buffers[b]
        if math.prod(shape) == 0:
            offset = min(offset, buffer.size)
        view = np.ndarray(
            tuple(shape), np.float32, buffer=buffer, offset=offset * ITEM, strides=byte_strides
        )
        low, high = byte_bounds(view)  # the constructor lets a stride-0 view leave an empty buffer
        if view.size and (low < byte_bounds(buffer)[0] or high > byte_bounds(buffer)[1]):
            raise ValueError("view leaves its buffer")
        return view

    def offset_of(self, i: int) -> int:
        array, b = self.tensors[i]
        if array.size == 0:
            raise NotJudged("NumPy does not place an empty view (a[7:1] starts at a[0])")
        start = self.buffers[b].__array_interface__["data"][0]
        return (array.__array_interface__["data"][0] - start) // ITEM

    def positions(self, i: int) -> np.ndarray:
        """Storage index of every element, from NumPy's address and byte strides."""
        array, _ = self.tensors[i]
        if array.size == 0:
            return np.zeros(array.shape, np.int64)
        index = np.full(array.shape, self.offset_of(i), np.int64)
        for d, (n, s) in enumerate(zip(array.shape, array.strides, strict=True)):
            shape = [1] * array.ndim
            shape[d] = n
            index = index + (np.arange(n) * (s // ITEM)).reshape(shape)
        return index

    def step(self, step: tuple) -> None:
        """Apply one step; a refusal raises and leaves the state unchanged."""
        kind, *args = step
        if kind == "move":
            src, op = args
            array, b = self.tensors[src]
            out = apply_numpy(array, op)
            offset = (out.__array_interface__["data"][0] - self.buffers[b].ctypes.data) // ITEM
            self.tensors.append((self._strided(b, out.shape, out.strides, offset), b))
        elif kind == "as_strided":
            src, shape, strides, offset = args
            b = self.tensors[src][1]
            offset = self.offset_of(src) if offset is None else offset
            view = self._strided(b, shape, tuple(ITEM * s for s in strides), offset)
            self.tensors.append((view, b))
        elif kind == "set_":
            self._set(*args)
        elif kind == "write":
            dst, (what, index, values) = args
            array = self.tensors[dst][0]
            if what == "fill_":
                array[...] = values
            elif what == "copy_":  # broadcast_to: values may not have more dims (torch's rule)
                array[...] = np.broadcast_to(values, array.shape)
            elif what == "add_":
                array += values
            else:  # PyTorch's placement: its integers first (jaxparadigm.tensor.torch_index)
                *first, last = torch_index_steps(index)
                for step in first:
                    array = array[step]  # a basic index: a view of the same buffer
                array[last] = values
        else:  # copy_from
            dst, src = args
            array = self.tensors[dst][0]
            array[...] = np.broadcast_to(self.tensors[src][0].copy(), array.shape)

    def _set(self, dst: int, source, geometry) -> None:
        """Rebind ``dst`` (only it): NumPy has no ``set_``; the analogue is rebinding a name to
        another array over the source's buffer (or over a new buffer of the values)."""
        if isinstance(source, np.ndarray):
            if source.dtype != self.buffers[self.tensors[dst][1]].dtype:
                raise TypeError("set_: a source of another dtype")
            self.buffers.append(source.reshape(-1).copy())
            b, base = len(self.buffers) - 1, 0
            array = self._strided(b, source.shape, _contiguous_bytes(source.shape), 0)
        else:
            array, b = self.tensors[source]
            if geometry is not None and not array.flags["C_CONTIGUOUS"]:
                raise ValueError("set_: a source tensor used as storage must be contiguous")
            base = 0 if geometry is None else self.offset_of(source)
        if geometry is not None:
            offset, shape, strides = geometry
            current = self.tensors[dst][0]
            if strides is not None:
                byte_strides = tuple(ITEM * s for s in strides)
            else:  # torch: the row-major layout must fit, then an unchanged size keeps its strides
                byte_strides = _contiguous_bytes(shape)
            try:
                array = self._strided(b, shape, byte_strides, base + offset)
                if strides is None and tuple(shape) == current.shape:
                    array = self._strided(b, shape, current.strides, base + offset)
            except REFUSALS:  # ("buffer is too small" is a TypeError)
                if isinstance(source, np.ndarray):
                    self.buffers.pop()  # refused: no new buffer
                raise
        self.tensors[dst] = (array, b)


def _contiguous_bytes(shape) -> tuple[int, ...]:
    strides, step = [], ITEM
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)


# --- strategies ---------------------------------------------------------------------------------


def _small_shape(draw, max_dims: int = 3) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(0, 3), max_size=max_dims)))


def draw_as_strided(draw, model: NumpyProgram, src: int) -> tuple:
    """Small strides (often overlapping); in bounds but now and then one element past the end."""
    size = model.buffers[model.tensors[src][1]].size
    a, b, s1 = draw(st.integers(2, 3)), draw(st.integers(2, 3)), draw(st.integers(1, 2))
    top = min((b - 1) * s1, (size - 1 - (b - 1) * s1) // (a - 1))
    if top >= 0 and draw(st.booleans()):  # overlapping windows: row i starts s0 after row i-1
        shape, strides = (a, b), (draw(st.integers(0, top)), s1)
        if draw(st.booleans()):
            shape, strides = shape[::-1], strides[::-1]
    else:
        shape = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
        if shape and draw(st.integers(0, 7)) == 0:
            shape = (0,) + shape[1:]
        strides = tuple(draw(st.integers(0, 2)) for _ in shape)
    reach = sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if all(shape) else 0
    room = size - 1 - reach
    if draw(st.integers(0, 7)) == 0 or room < 0:
        offset = max(room + 1, 0)  # one past the end when the view is not empty
    elif draw(st.integers(0, 3)) == 0:
        return ("as_strided", src, shape, strides, None)
    else:
        offset = draw(st.integers(0, room))
    return ("as_strided", src, shape, strides, offset)


def draw_set(draw, model: NumpyProgram, dst: int) -> tuple:
    choice = draw(st.integers(0, 9))
    if choice < 2:
        shape = _small_shape(draw)
        dtype = np.int32 if choice == 0 and draw(st.booleans()) else np.float32
        source = (np.arange(math.prod(shape)) * 10 - 7).astype(dtype).reshape(shape)
        size = source.size
    else:
        source = draw(st.integers(0, len(model.tensors) - 1))
        size = model.buffers[model.tensors[source][1]].size
    if draw(st.booleans()):
        return ("set_", dst, source, None)
    shape = _small_shape(draw)
    strides = None if draw(st.booleans()) else tuple(draw(st.integers(0, 2)) for _ in shape)
    extent = (
        math.prod(shape)
        if strides is None
        else 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    )
    offset = draw(st.integers(0, max(size - extent, 0) + draw(st.integers(0, 1))))
    return ("set_", dst, source, (offset, shape, strides))


def indexed(array: np.ndarray, index) -> np.ndarray:
    """``array[index]`` as PyTorch indexes (:func:`torch_index_steps`)."""
    for step in torch_index_steps(index):
        array = array[step]
    return array


def draw_index(draw, shape: tuple[int, ...]) -> tuple:
    """A ``setitem_`` index over the first ``k`` dims: ints and slices, ``None`` (a new dim) here
    and there, maybe one ``...``, and one time in three one advanced part (an int array that may
    repeat a position, or a bool mask)."""
    k = draw(st.integers(0, len(shape)))
    advanced_at = draw(st.integers(0, k - 1)) if k and draw(st.integers(0, 2)) == 0 else None
    parts: list = []
    for d, n in enumerate(shape[:k]):
        if draw(st.integers(0, 4)) == 0:
            parts.append(None)
        if d == advanced_at and draw(st.booleans()):
            size = draw(st.integers(1, 3))
            parts.append(
                np.asarray([draw(st.integers(-n, n - 1)) if n else 0 for _ in range(size)])
            )
        elif d == advanced_at:
            parts.append(np.asarray([draw(st.booleans()) for _ in range(n)], dtype=bool))
        elif draw(st.booleans()):
            parts.append(draw(st.integers(-n, n - 1)) if n else 0)
        else:
            parts.append(slice(draw(st.integers(0, n)), None, draw(st.integers(1, 2))))
    if draw(st.integers(0, 3)) == 0:
        parts.insert(draw(st.integers(0, len(parts))), Ellipsis)
    if draw(st.integers(0, 3)) == 0:
        parts.append(None)
    return tuple(parts)


def draw_values(draw, target: tuple[int, ...]) -> np.ndarray:
    """Values that broadcast to ``target`` (a trailing part, some dims 1), now and then not."""
    shape = list(target[len(target) - draw(st.integers(0, len(target))) :])
    shape = [1 if draw(st.integers(0, 2)) == 0 else n for n in shape]
    if shape and draw(st.integers(0, 9)) == 0:
        shape[0] += 1
    values = draw(
        st.lists(st.integers(-9, 9), min_size=math.prod(shape), max_size=math.prod(shape))
    )
    return np.asarray(values, np.float32).reshape(shape)


def draw_write(draw, shape: tuple[int, ...]) -> tuple:
    what = draw(st.sampled_from(["fill_", "add_", "copy_", "setitem_", "setitem_"]))
    if what == "fill_":
        return what, None, np.float32(draw(st.integers(-9, 9)) / 2)
    if what != "setitem_":
        return what, None, draw_values(draw, shape)
    index = draw_index(draw, shape)
    try:
        target = indexed(np.empty(shape), index).shape
    except IndexError:
        target = shape
    return what, index, draw_values(draw, target)


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


KINDS = ("write", "as_strided", "move", "set_", "write", "move", "copy_from")


@st.composite
def alias_programs(draw, max_steps: int = 8) -> tuple:
    """``(sizes, shape, offset, steps)``; the steps are drawn against the NumPy model's state."""
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=draw(st.integers(0, 1)), max_size=3)))
    offset, spare = draw(st.integers(0, 2)), draw(st.integers(0, 6))
    sizes = (offset + math.prod(shape) + spare, draw(st.integers(0, 8)))
    model = NumpyProgram(sizes, shape, offset)
    steps = []
    for _ in range(draw(st.integers(2, max_steps))):
        kind = draw(st.sampled_from(KINDS))
        pick = st.integers(0, len(model.tensors) - 1)
        i = len(model.tensors) - 1 if draw(st.booleans()) else draw(pick)  # often the newest
        if kind == "move":
            step = ("move", i, draw_op(draw, model.tensors[i][0].shape))
        elif kind == "as_strided":
            step = draw_as_strided(draw, model, i)
        elif kind == "set_":
            step = draw_set(draw, model, i)
        elif kind == "write":
            step = ("write", i, draw_write(draw, model.tensors[i][0].shape))
        else:  # mostly a source that broadcasts to the destination
            target = model.tensors[i][0].shape
            fits = [j for j, (a, _) in enumerate(model.tensors) if _broadcasts(a.shape, target)]
            step = (
                "copy_from",
                i,
                draw(st.sampled_from(fits) if fits and draw(st.booleans()) else pick),
            )
        steps.append(step)
        try:
            model.step(step)
        except (*REFUSALS, NotJudged):
            continue
        if kind != "as_strided":
            continue
        i = len(model.tensors) - 1
        positions = model.positions(i).reshape(-1)
        if np.unique(positions).size < positions.size or draw(st.booleans()):  # write through it
            steps.append(("write", i, draw_write(draw, model.tensors[i][0].shape)))
            try:
                model.step(steps[-1])
            except (*REFUSALS, NotJudged):
                pass
    return sizes, shape, offset, tuple(steps)
