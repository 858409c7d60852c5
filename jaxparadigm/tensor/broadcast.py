"""Broadcast shape inference, NumPy rules plus TF's partially-unknown dims (claim C2.4).

Shapes are right-aligned; on each aligned axis the sizes must be equal or one of them 1, and the
result takes the non-1 size. A dim may be ``None`` (unknown, as in a TF partial shape):
``None`` vs 1 -> ``None``; ``None`` vs n -> n; ``None`` vs ``None`` -> ``None``.
"""

from __future__ import annotations

import operator
from typing import Any

import jax
import numpy as np

Dim = int | None


def _array_shape(shape: Any, position: int) -> Any:
    """A NumPy/JAX array given as a shape: 0-d is one dim, 1-D integer is a tuple of dims."""
    if shape.ndim == 0:
        return (shape,)
    if shape.ndim != 1 or (shape.size and not np.issubdtype(shape.dtype, np.integer)):
        raise TypeError(
            f"shape #{position} must be a tuple of ints or None, or a 1-D integer array; got an "
            f"array of shape {tuple(shape.shape)} and dtype {shape.dtype}"
        )
    try:
        return tuple(shape.tolist())
    except jax.errors.ConcretizationTypeError:
        raise TypeError(
            f"shape #{position} is a traced array; a shape must be concrete (static), got {shape!r}"
        ) from None


def _as_shape(shape: Any, position: int) -> tuple[Dim, ...]:
    """One input shape as a tuple of ints/None; an int or 0-d array is a 1-D shape (as in NumPy).

    A 1-D integer NumPy/JAX array is a shape given as an array (``np.array([3, 1])`` is
    ``(3, 1)``), as ``np.broadcast_shapes`` accepts.
    """
    if isinstance(shape, bool):
        raise TypeError(f"shape #{position} must be a tuple of ints or None, got {shape!r}")
    if hasattr(shape, "ndim") and hasattr(shape, "dtype"):
        shape = _array_shape(shape, position)
    elif isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"shape #{position} must be a tuple of ints or None, got {shape!r}")
    dims: list[Dim] = []
    for i, n in enumerate(shape):
        if n is None:
            dims.append(None)
            continue
        if isinstance(n, bool):
            raise TypeError(f"shape #{position} {tuple(shape)!r}: dim {i} is {n!r}, not an int")
        try:
            n = operator.index(n)
        except TypeError:
            raise TypeError(
                f"shape #{position} {tuple(shape)!r}: dim {i} is {n!r} "
                f"({type(n).__name__}), expected an int >= 0 or None"
            ) from None
        if n < 0:
            raise ValueError(
                f"shape #{position} {tuple(shape)!r}: dim {i} is {n}, expected an int >= 0 or None"
            )
        dims.append(n)
    return tuple(dims)


def _merge(a: Dim, b: Dim) -> Dim | str:
    """Broadcast two aligned dims; the string ``"incompatible"`` when they do not broadcast."""
    if a is None:
        return a if b == 1 or b is None else b
    if b is None:
        return b if a == 1 else a
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    return "incompatible"


def _resolve(shapes: tuple[tuple[Dim, ...], ...]) -> tuple[tuple[Dim, ...], tuple | None]:
    """Result shape, and the first conflict ``(axis, i, j)`` (negative axis, shape positions)."""
    ndim = max((len(s) for s in shapes), default=0)
    result: list[Dim] = []
    for axis in range(-1, -ndim - 1, -1):  # right to left: report the rightmost conflict
        size: Dim = 1
        for i, s in enumerate(shapes):
            if -axis > len(s):
                continue
            merged = _merge(size, s[axis])
            if isinstance(merged, str):  # "incompatible"
                owner = next(
                    k for k in range(i) if -axis <= len(shapes[k]) and shapes[k][axis] == size
                )
                return tuple(reversed(result)), (axis, owner, i)
            size = merged
        result.append(size)
    return tuple(reversed(result)), None


def broadcast_shapes(*shapes: Any) -> tuple[Dim, ...]:
    """Broadcast shapes by NumPy's rules (right-align; dims equal or 1), ``None`` = unknown (C2.4).

    ``(3, 1) x (1, 4) -> (3, 4)``; ``(2, 1, 5) x (5,) -> (2, 1, 5)``; ``(None, 3) x (4, 1) ->
    (4, 3)``. Equals ``np.broadcast_shapes`` on fully known shapes. Incompatible shapes raise
    ``ValueError`` naming both shapes, the aligned axis and the two sizes.
    """
    parsed = tuple(_as_shape(s, i) for i, s in enumerate(shapes))
    result, conflict = _resolve(parsed)
    if conflict is not None:
        axis, i, j = conflict
        a, b = parsed[i], parsed[j]
        raise ValueError(
            f"shapes {a} (#{i}) and {b} (#{j}) do not broadcast: on aligned axis {axis} (counted "
            f"from the right) sizes {a[axis]} and {b[axis]} differ and neither is 1"
        )
    return result


def explain_broadcast(*shapes: Any) -> str:
    """Render the right-aligned broadcast table of ``shapes`` and the result (C2.4).

    One row per input, one column per aligned axis (``-k`` counted from the right), blanks where a
    shape has no such dim and ``?`` for unknown (``None``) dims. On a conflict the result row is
    replaced by a line naming the axis and sizes instead of raising.
    """
    parsed = tuple(_as_shape(s, i) for i, s in enumerate(shapes))
    result, conflict = _resolve(parsed)
    ndim = max((len(s) for s in parsed), default=0)

    def cell(d: Dim | str) -> str:
        return "?" if d is None else str(d)

    labels = [f"#{i} {s}" for i, s in enumerate(parsed)]
    rows = [[""] * (ndim - len(s)) + [cell(d) for d in s] for s in parsed]
    header = [str(a) for a in range(-ndim, 0)]
    if conflict is None:
        labels.append("result")
        rows.append([cell(d) for d in result])
    width = max([len(x) for row in rows + [header] for x in row], default=1)
    label_w = max([len(x) for x in labels + ["axis"]])
    lines = ["axis".ljust(label_w) + "".join(" " + h.rjust(width) for h in header)]
    for label, row in zip(labels, rows, strict=True):
        if label == "result":
            lines.append("-" * len(lines[0]))
        lines.append(label.ljust(label_w) + "".join(" " + c.rjust(width) for c in row))
    if conflict is not None:
        axis, i, j = conflict
        lines.append(
            f"incompatible: aligned axis {axis}: {cell(parsed[i][axis])} (#{i}) vs "
            f"{cell(parsed[j][axis])} (#{j}); neither is 1"
        )
    return "\n".join(lines)
