"""``as_strided``: read an arbitrary strided window of a flat storage (claim C2.1).

Same result as ``torch.as_strided(storage, shape, strides, offset)`` and
``numpy.lib.stride_tricks.as_strided`` (with strides given in elements instead of bytes), but every
addressed element is checked to lie inside the storage first: NumPy would read foreign memory and
PyTorch raises only at its own storage bound.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxparadigm.tensor.static_args import as_int, as_int_tuple, storage_size_of
from jaxparadigm.tensor.view import View


def as_strided(storage: Any, shape: Any, strides: Any, offset: int = 0) -> jax.Array:
    """``out[i_0, ..., i_{n-1}] = storage[offset + sum_d i_d * strides[d]]`` (C2.1).

    ``storage`` is 1-D; ``shape``, ``strides`` (elements) and ``offset`` are static, so this works
    under ``jax.jit`` with them closed over or marked static. Negative strides, a negative offset,
    or any addressed element outside the storage raise ``ValueError`` (naming the element, its
    storage index and the storage size) before tracing. Compiles to slices/reshapes when the strides
    nest, else to one gather; the storage itself is never copied beyond that.
    """
    size = storage_size_of(storage)
    shape = as_int_tuple(shape, "shape")
    strides = as_int_tuple(strides, "strides")
    offset = as_int(offset, "offset")
    for d, s in enumerate(strides):
        if s < 0:
            raise ValueError(
                f"as_strided strides[{d}] = {s} is negative (strides {strides}); strides must be "
                "non-negative, as in torch.as_strided"
            )
    if offset < 0:
        raise ValueError(
            f"as_strided offset = {offset} is negative; element (0, ...) would address storage "
            f"index {offset} of a storage of {size} elements"
        )
    view = View(shape, strides, offset)
    view.check_bounds(size)
    return view.materialize(storage)
