"""Saturating step counters (C4.3): the one step counter every stateful transformation here uses."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def safe_increment(count: jax.typing.ArrayLike) -> jax.Array:
    """Return ``count + 1``, or ``max(dtype)`` once the maximum is reached (C4.3).

    Formula: ``where(count < max, count + 1, max)``. An int32 counter therefore stops at
    ``2**31 - 1`` instead of wrapping to ``-2**31`` (which is what a plain ``count + 1`` does).
    Floating counters saturate at ``finfo(dtype).max``. Same semantics as ``optax.safe_increment``.
    """
    count = jnp.asarray(count)
    count_dtype = count.dtype
    limit: int | float
    if jnp.issubdtype(count_dtype, jnp.integer):
        limit = int(jnp.iinfo(count_dtype).max)
    elif jnp.issubdtype(count_dtype, jnp.floating):
        limit = float(jnp.finfo(count_dtype).max)
    else:
        raise TypeError(
            f"safe_increment: count has dtype {count_dtype}, expected an integer or floating dtype"
        )
    max_value = jnp.array(limit, count_dtype)
    one = jnp.array(1, count_dtype)
    return jnp.where(count < max_value, count + one, max_value)
