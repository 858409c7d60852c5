"""Where PyTorch puts an advanced index's dimensions when the index also holds integers (C2.5).

NumPy counts an integer as an advanced index when the index has an array or a mask, so an
integer *separated* from the array by a slice or ``None`` makes the parts non-adjacent and
NumPy moves the broadcast dimensions to the front. PyTorch applies every integer first, as a
``select`` that removes its dimension (``torch/csrc/autograd/python_variable_indexing.cpp``:
``applySlicing``), and only then indexes with the arrays, by the same adjacency rule over what is
left. For ``x`` of shape ``(2, 3, 4)``::

    x[0, :, [0, 1]]       NumPy (2, 3): 0 and [0, 1] are separated by ":" -> front
                          PyTorch (3, 2): x[0] is (3, 4); [:, [0, 1]] keeps the place
    x[None, mask, None, 0, 0]   (mask of shape (2,)) NumPy (k, 1, 1), PyTorch (1, k, 1)

:func:`torch_index_steps` writes a PyTorch index as two NumPy indexes that give PyTorch's result:
``a[basic][advanced]``, where ``basic`` holds the integers, slices, ``None`` and ``...`` (a view,
the arrays' dimensions kept whole by ``:``) and ``advanced`` the arrays and masks (every other
dimension ``:``). The ``...`` spans the same dimensions in both: the integers remove as many
dimensions as they consume, each ``None`` adds one that the second step's ``:`` keeps.
``Memory.setitem_`` indexes the storage positions this way, so ``t[index] = values`` writes
where PyTorch writes (a generated program found the difference: tests/tensor/
test_generated_alias_programs.py, regression ``an_int_applies_before_the_mask``).
:func:`check_masks` makes PyTorch's check of a mask's shape, which NumPy skips for empty arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxparadigm.common.numbers import is_int

__all__ = ["check_masks", "torch_index_steps"]


def _is_array(p: Any) -> bool:
    return isinstance(p, (list, np.ndarray)) or isinstance(p, (bool, np.bool_))


def torch_index_steps(index: Any) -> tuple[Any, ...]:
    """PyTorch's ``t[index]`` as NumPy indexes applied one after the other (module docstring):
    ``(index,)`` when ``index`` has no integer or no array part (NumPy and PyTorch agree), else
    ``(basic, advanced)``."""
    parts = index if isinstance(index, tuple) else (index,)
    if not (any(is_int(p) for p in parts) and any(_is_array(p) for p in parts)):
        return (index,)
    basic: list[Any] = []
    advanced: list[Any] = []
    for p in parts:
        if p is None:
            basic.append(None)
            advanced.append(slice(None))
        elif p is Ellipsis:
            basic.append(Ellipsis)
            advanced.append(Ellipsis)
        elif isinstance(p, slice):
            basic.append(p)
            advanced.append(slice(None))
        elif is_int(p):
            basic.append(p)
        else:
            a = np.asarray(p)
            basic += [slice(None)] * (a.ndim if a.dtype == np.bool_ else 1)
            advanced.append(p)
    return tuple(basic), tuple(advanced)


def check_masks(index: Any, shape: tuple[int, ...]) -> None:
    """``IndexError`` if a boolean part of ``index`` does not match the dimensions it indexes, as
    PyTorch ("The shape of the mask ... does not match"). NumPy skips this check when the array
    is empty (``zeros((0, 1))[..., []]`` passes), so it is made here, before NumPy indexes."""
    parts = index if isinstance(index, tuple) else (index,)

    def mask(p: Any) -> np.ndarray | None:
        a = np.asarray(p) if isinstance(p, (list, np.ndarray)) else None
        return a if a is not None and a.dtype == np.bool_ else None

    def used(p: Any) -> int:
        if p is None or p is Ellipsis or isinstance(p, (bool, np.bool_)):
            return 0
        m = mask(p)
        return 1 if m is None else m.ndim

    rest, dim = len(shape) - sum(used(p) for p in parts), 0
    for p in parts:
        if p is Ellipsis:
            dim += max(rest, 0)
            continue
        m = mask(p)
        if m is not None and m.shape != tuple(shape[dim : dim + m.ndim]):
            raise IndexError(
                f"the boolean index of shape {m.shape} does not match the dimensions "
                f"{tuple(shape[dim : dim + m.ndim])} it indexes (from dimension {dim})"
            )
        dim += used(p)
