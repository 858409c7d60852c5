"""The one ``unbroadcast``: the sum that undoes NumPy broadcasting in a backward pass (C2.4, C3.2).

Used by the graph engine's elementwise VJP rules and by the define-by-run tape alike.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["unbroadcast"]


def unbroadcast(ct: jax.Array, like: Any) -> jax.Array:
    """Sum ``ct`` over the dims that broadcasting added to ``like``; cast to its dtype. C2.4/C3.2.

    ``like`` (an array, a scalar or a ``jax.ShapeDtypeStruct``) has shape ``s``; ``ct`` has the
    broadcast shape ``b`` (aligned from the right). The result has shape ``s``: the leading
    ``len(b) - len(s)`` dims of ``b`` and the dims where ``s`` is 1 but ``b`` is not are summed.
    """
    shape = tuple(jnp.shape(like))
    if tuple(ct.shape) != shape:
        lead = ct.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(shape) if d == 1 and ct.shape[lead + i] != 1
        )
        ct = jnp.sum(ct, axis=axes) if axes else ct
        ct = jnp.reshape(ct, shape)
    dtype = jnp.result_type(like)
    return ct if ct.dtype == dtype else ct.astype(dtype)
