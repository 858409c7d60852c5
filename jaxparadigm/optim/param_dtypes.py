"""Which parameter and gradient dtypes the optimisers take (C4.1, C4.2).

Floating and complex leaves are accepted; integer and bool leaves are refused with a ``TypeError``
naming the argument and the leaf. (optax's ``adam`` turns an integer gradient into a float update
and then truncates its integer ``nu`` state: not a step anyone wants.) Complex parameters follow
optax: a second moment of ``|g|^2`` and the conjugated gradient as the descent direction (the caller
conjugates).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def require_inexact(name: str, tree: Any) -> None:
    """Raise ``TypeError`` if a leaf of ``tree`` (an argument called ``name``) is not inexact.

    ``None`` leaves (parameters without a gradient) are skipped. Runs at trace time on dtypes
    only, so it costs nothing inside a compiled step.
    """
    leaves = jax.tree_util.tree_leaves_with_path(tree, is_leaf=lambda x: x is None)
    for path, leaf in leaves:
        if leaf is None:
            continue
        dtype = jnp.result_type(leaf)
        if not jnp.issubdtype(dtype, jnp.inexact):
            where = jax.tree_util.keystr(path) or "(root)"
            raise TypeError(
                f"{name}{where} has dtype {dtype}: expected a floating or complex dtype "
                "(integer parameters and gradients are refused)"
            )


def abs_sq(x: jax.Array) -> jax.Array:
    """``|x|^2``: ``x**2`` for real, ``(conj(x) * x).real`` for complex ``x`` (optax's form)."""
    if jnp.iscomplexobj(x):
        return (x.conj() * x).real
    return x**2


def coefficient(value: Any, dtype: Any) -> Any:
    """A scalar hyper-parameter in the arithmetic dtype ``dtype``.

    Python numbers stay Python numbers (weakly typed, so XLA folds them exactly as optax's
    constants); arrays (live hyper-parameters) are cast to ``dtype``, so a float32 coefficient
    neither promotes a bfloat16 update nor drops a complex one.
    """
    return value if isinstance(value, (int, float)) else jnp.asarray(value).astype(dtype)
