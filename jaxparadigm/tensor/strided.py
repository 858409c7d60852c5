"""``as_strided``: read an arbitrary strided window of a flat storage (claim C2.1).

Same result as ``torch.as_strided(storage, shape, strides, offset)`` and
``numpy.lib.stride_tricks.as_strided`` (with strides given in elements instead of bytes), but every
addressed element is checked to lie inside the storage first: NumPy would read foreign memory and
PyTorch raises only at its own storage bound.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxparadigm.tensor.static_args import storage_size_of
from jaxparadigm.tensor.view import View


def as_strided(storage: Any, shape: Any, strides: Any, offset: int = 0) -> jax.Array:
    """``out[i_0, ..., i_{n-1}] = storage[offset + sum_d i_d * strides[d]]`` (C2.1).

    ``storage`` is 1-D; ``shape``, ``strides`` (elements) and ``offset`` are static, so this works
    under ``jax.jit`` with them closed over or marked static. They are checked by :class:`View`
    (a non-int is a ``TypeError``); negative strides, a negative offset,
    or any addressed element outside the storage raise ``ValueError`` (naming the element, its
    storage index and the storage size) before tracing. Compiles to slices/reshapes when the strides
    nest, else to one gather; the storage itself is never copied beyond that.
    """
    size = storage_size_of(storage)
    view = View(shape, strides, offset)  # the one check of shape, strides and offset
    view.check_bounds(size)
    return view.materialize(storage)
