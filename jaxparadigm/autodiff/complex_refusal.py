"""The one refusal of complex numbers shared by reverse and forward mode (claims C3.2, C3.3).

Deliberate difference from jax: ``grad``/``vjp``/``jacrev`` and ``jvp``/``jacfwd`` raise a
``TypeError`` naming the argument or output whose dtype is complex (jax differentiates complex
values with its conjugate-cotangent convention and ``holomorphic=True``; we do not implement it,
and silently dropping the imaginary part is the one outcome we rule out).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax.numpy as jnp

__all__ = ["COMPLEX_REFUSED", "refuse_complex"]

COMPLEX_REFUSED = (
    "jaxparadigm.autodiff does not differentiate complex numbers (a deliberate difference from "
    "jax, which differentiates them with conjugate cotangents / holomorphic=True); split the value "
    "into real and imaginary parts"
)


def refuse_complex(leaves: Iterable[Any], what: str, fn_name: str) -> None:
    """``TypeError`` ``"{fn_name}: {what} has dtype complex..."`` if any leaf is complex.

    ``leaves`` are arrays, Python numbers, avals or dtypes; with several leaves the message also
    names the leaf's index.
    """
    leaves = list(leaves)
    for i, leaf in enumerate(leaves):
        dtype = jnp.result_type(leaf)
        if jnp.issubdtype(dtype, jnp.complexfloating):
            where = what if len(leaves) == 1 else f"{what} (leaf {i})"
            raise TypeError(f"{fn_name}: {where} has dtype {dtype}; {COMPLEX_REFUSED}")
