"""Jacobian rows in chunks: ``map_rows(fn, n, chunk_size)`` (torch.func's ``chunk_size``; C3.3).

A Jacobian is ``n`` independent JVPs (columns) or VJPs (rows), one per basis vector ``e_k``.
``map_rows`` evaluates ``fn(k)`` for ``k = 0 .. n-1`` and stacks the results on a new leading axis:

* ``chunk_size=None``: all ``n`` at once (``jax.vmap``) -- peak memory ~ n copies of ``fn``'s
  intermediates;
* ``chunk_size=c``: ``lax.map(fn, arange(n), batch_size=c)`` -- a loop over ``ceil(n / c)``
  vmapped chunks, so only ``c`` copies are live at a time. Results equal the unchunked ones.

The basis vector is built inside ``fn`` from the index ``k``, so no ``n x n`` identity matrix is
materialised either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxparadigm.common.numbers import check_int

__all__ = ["check_chunk_size", "map_rows"]


def check_chunk_size(chunk_size: object, fn_name: str) -> int | None:
    """``None`` or a positive int; ``ValueError``/``TypeError`` naming the value otherwise."""
    if chunk_size is None:
        return None
    return check_int(
        f"{fn_name}: chunk_size",
        chunk_size,
        1,
        error=ValueError,
        type_error=TypeError,
        expected="None or an int",
    )


def map_rows(fn: Callable, n: int, chunk_size: int | None = None) -> Any:
    """``stack([fn(k) for k in range(n)])`` (a pytree), vmapped whole or by ``chunk_size`` rows."""
    idx = jnp.arange(n, dtype=jnp.int32)
    if chunk_size is None or chunk_size >= n:
        return jax.vmap(fn)(idx)
    return lax.map(fn, idx, batch_size=chunk_size)
