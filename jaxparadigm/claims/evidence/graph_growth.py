"""How the program grows when gradients nest: evidence for claim C3.3.

Grad-of-grad re-enters the engine: level k traces the backward program of level k-1 into a new
graph and differentiates it. ``graph_growth`` counts the equations of each level's program
(nested jaxprs included; counted as traced, without dead-code elimination)
for our engine and for ``jax.grad`` side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxparadigm.autodiff.graph import count_equations
from jaxparadigm.autodiff.reverse_mode import grad
from jaxparadigm.common.numbers import check_int

__all__ = ["GrowthRow", "graph_growth"]


class GrowthRow(NamedTuple):
    """Equation counts of the k-th derivative program: ours and ``jax.grad``'s. C3.3."""

    order: int
    equations: int
    jax_equations: int


def _nest(grad_fn: Callable, f: Callable, k: int) -> Callable:
    """Level 0 is f; level k is grad of (sum of level k-1), i.e. d^k f / dx^k elementwise."""
    g = f
    for _ in range(k):
        g = grad_fn(lambda x, g=g: jnp.sum(g(x)))
    return g


def graph_growth(f: Callable, order: int, x: jax.typing.ArrayLike = 1.0) -> list[GrowthRow]:
    """Equation count of grad^k(f) for k = 0..order, ours vs jax.grad (claim C3.3).

    ``f`` maps an array ``x`` (default the scalar 1.0) to an array; level k differentiates the sum
    of level k-1, so for scalar ``x`` it is the plain k-th derivative.
    """
    if not callable(f):
        raise TypeError(f"graph_growth: f={f!r} is not callable")
    order = check_int("graph_growth: order", order, 0, error=ValueError)
    x = jnp.asarray(x, jnp.float32) if not hasattr(x, "dtype") else x
    rows = []
    for k in range(order + 1):
        ours = count_equations(jax.make_jaxpr(_nest(grad, f, k))(x))
        ref = count_equations(jax.make_jaxpr(_nest(jax.grad, f, k))(x))
        rows.append(GrowthRow(k, ours, ref))
    return rows
