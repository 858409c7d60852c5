"""Hypothesis strategies of view chains and of writes through the last view (issue 23, item 3a).

A chain starts from a contiguous base ``(shape, offset)`` over a storage with a few spare
elements, then applies 1-6 movement ops drawn against the current shape (tracked with an
``np.empty`` array, independent of the library): ``permute``, ``transpose``, ``expand``,
``slice``, ``narrow``, ``select``, ``unsqueeze`` (a ``None`` dim), ``view``. About one op in eight
is drawn out of range on purpose (a bad dim, index, start, length, expand size or view shape), so
refusals are compared too; numpy's refusal ends the drawn chain there (the refusal is the last op).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

OPS = ("permute", "transpose", "expand", "slice", "narrow", "select", "unsqueeze", "view")


def _dim(draw, ndim: int, bad: bool) -> int:
    if bad or ndim == 0:
        return draw(st.sampled_from([ndim, -ndim - 1, ndim + 1]))
    return draw(st.integers(-ndim, ndim - 1))


def _factor_shape(draw, numel: int) -> list[int]:
    """A random shape with ``numel`` elements (ones inserted), one entry maybe ``-1``."""
    dims: list[int] = []
    rest = numel
    if numel == 0:
        dims = [0] + [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
    else:
        while rest > 1:
            divisors = [d for d in range(2, rest + 1) if rest % d == 0]
            d = draw(st.sampled_from(divisors))
            dims.append(d)
            rest //= d
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    dims = draw(st.permutations(dims)) if dims else dims
    if dims and numel > 0 and draw(st.integers(0, 3)) == 0:
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return list(dims)


def draw_op(draw, shape: tuple[int, ...]) -> tuple:
    ndim = len(shape)
    bad = draw(st.integers(0, 7)) == 0
    name = draw(st.sampled_from(OPS))
    if name == "permute":
        dims = list(draw(st.permutations(list(range(ndim)))))
        dims = [d - ndim if draw(st.booleans()) else d for d in dims]
        if bad:
            dims = dims[:-1] + [dims[0]] if len(dims) > 1 else dims + [0]
        return ("permute", tuple(dims))
    if name == "transpose":
        limit = max(ndim, 1)
        return ("transpose", _dim(draw, limit, bad), _dim(draw, limit, False))
    if name == "expand":
        lead = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
        body = []
        for n in shape:
            choice = draw(st.integers(0, 3))
            body.append(-1 if choice == 0 else (draw(st.integers(0, 4)) if n == 1 else n))
        if bad:
            body = body + [draw(st.integers(2, 4))] if not body else [-2] + body[1:]
        return ("expand", tuple(lead + body))
    if name == "slice":
        d = _dim(draw, ndim, bad)
        n = shape[d] if -ndim <= d < ndim else 3
        bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
        step = draw(st.integers(1, 3)) if not bad or ndim == 0 else draw(st.integers(-1, 0))
        return ("slice", d, draw(bound), draw(bound), step)
    if name == "narrow":
        d = _dim(draw, ndim, bad and draw(st.booleans()))
        n = shape[d] if -ndim <= d < ndim else 2
        start = draw(st.integers(-n, n))
        length = draw(st.integers(0, n - (start + n if start < 0 else start)))
        if bad:
            start, length = draw(
                st.sampled_from([(n + 1, 0), (-n - 1, 1), (start, -1), (start, n - start + 1)])
            )
        return ("narrow", d, start, length)
    if name == "unsqueeze":
        d = (
            draw(st.integers(-ndim - 1, ndim))
            if not bad
            else draw(st.sampled_from([ndim + 1, -ndim - 2]))
        )
        return ("unsqueeze", d)
    if name == "select":
        d = _dim(draw, ndim, bad and draw(st.booleans()))
        n = shape[d] if -ndim <= d < ndim else 1
        index = (
            draw(st.integers(-n, n - 1))
            if n > 0 and not bad
            else draw(st.sampled_from([n, -n - 1]))
        )
        return ("select", d, index)
    numel = math.prod(shape)
    target = _factor_shape(draw, numel)
    if bad:
        target = target + [2] if numel else target + [-1, -1]
    return ("view", tuple(target))


def apply_numpy(array: np.ndarray, op: tuple) -> np.ndarray:
    """The op in NumPy terms (values oracle); ``view`` must not copy (``copy=False``)."""
    name, *args = op
    if name == "permute":
        dims = args[0]
        if len(dims) != array.ndim:
            raise ValueError("permute: wrong number of dims")
        return np.transpose(array, dims)
    if name == "transpose":
        if array.ndim == 0:  # torch wraps a 0-d tensor's dims 0 / -1 as if it had one dim
            if all(d in (0, -1) for d in args):
                return array
            raise IndexError("dim out of range")
        return np.swapaxes(array, *args)
    if name == "expand":
        target = list(args[0])
        if len(target) < array.ndim:
            raise ValueError("expand: fewer dims")
        lead = len(target) - array.ndim
        for i in range(lead):
            if target[i] < 0:
                raise ValueError("expand: -1 in a new leading dim")
        for i, n in enumerate(array.shape):
            if target[lead + i] == -1:
                target[lead + i] = n
            elif target[lead + i] < 0:
                raise ValueError("expand: negative size")
        return np.broadcast_to(array, tuple(target))
    if name == "slice":
        d, start, stop, step = args
        if step <= 0:
            raise ValueError("slice: step must be positive")
        d = _normalize(d, array.ndim)
        return array[(slice(None),) * d + (slice(start, stop, step),)]
    if name == "narrow":  # torch.narrow's documented ranges, then numpy's slice
        d, start, length = args
        if array.ndim == 0:
            raise ValueError("narrow: a 0-d array")
        d = _normalize(d, array.ndim)
        n = array.shape[d]
        if not -n <= start <= n:
            raise IndexError("narrow: start out of range")
        start = start + n if start < 0 else start
        if length < 0 or start + length > n:
            raise ValueError("narrow: start + length exceeds the dim")
        return array[(slice(None),) * d + (slice(start, start + length),)]
    if name == "unsqueeze":
        return np.expand_dims(array, args[0])  # AxisError (a ValueError) out of range
    if name == "select":
        d, index = args
        d = _normalize(d, array.ndim)
        if not -array.shape[d] <= index < array.shape[d]:
            raise IndexError("select: index out of range")
        return array[(slice(None),) * d + (index, Ellipsis)]  # "...": a view even when 0-d
    return np.reshape(array, args[0], copy=False)


def _normalize(d: int, ndim: int) -> int:
    if not -ndim <= d < ndim:
        raise IndexError(f"dim {d} out of range for {ndim} dims")
    return d % ndim


@st.composite
def view_chains(draw, max_ops: int = 6) -> tuple:
    """``(base_shape, offset, spare, ops)``; numpy refuses at most the last op."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    if draw(st.integers(0, 5)):  # empty storages only now and then
        shape = tuple(max(n, 1) for n in shape)
    offset = draw(st.integers(0, 3))
    spare = draw(st.integers(0, 3))
    array = np.empty(shape)
    ops = []
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw_op(draw, array.shape)
        ops.append(op)
        try:
            array = apply_numpy(array, op)
        except (ValueError, IndexError, TypeError):
            break
    return shape, offset, spare, tuple(ops)


@st.composite
def writes(draw, shape: tuple[int, ...]) -> tuple:
    """A write through a view of ``shape``: ``(kind, index, values)``; values broadcast to the
    written shape (sometimes they do not: a refusal to compare)."""
    kind = draw(st.sampled_from(["copy_", "add_", "fill_", "setitem_"]))
    index = None
    target = shape
    if kind == "setitem_" and shape:
        d = draw(st.integers(0, len(shape) - 1))
        n = shape[d]
        if n and draw(st.booleans()):
            i = draw(st.integers(-n, n - 1))
            index = (slice(None),) * d + (i,)
            target = shape[:d] + shape[d + 1 :]
        else:
            start = draw(st.integers(0, max(n, 0)))
            step = draw(st.integers(1, 2))
            index = (slice(None),) * d + (slice(start, None, step),)
            target = shape[:d] + (len(range(start, n, step)),) + shape[d + 1 :]
    elif kind == "setitem_":
        index = ()
    if kind == "fill_":
        return kind, None, draw(st.floats(-4, 4, width=32))
    values_shape = list(target[len(target) - draw(st.integers(0, len(target))) :])
    values_shape = [1 if draw(st.integers(0, 2)) == 0 else n for n in values_shape]
    if values_shape and draw(st.integers(0, 9)) == 0:
        values_shape[0] += 1  # does not broadcast (unless it was 0 -> 1)
    values = np.asarray(
        draw(
            st.lists(
                st.integers(-9, 9),
                min_size=math.prod(values_shape),
                max_size=math.prod(values_shape),
            )
        ),
        np.float32,
    ).reshape(values_shape)
    return kind, index, values
