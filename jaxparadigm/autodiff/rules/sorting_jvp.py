"""JVP rules for sorting primitives (claim C3.2, forward mode); their VJPs: ``sorting.py``.

* ``sort`` (any number of operands): sort an iota along with the operands to get the permutation
  ``perm``, then ``d out_k = take_along_axis(d x_k, perm)`` -- ties follow the primal's order.
* ``top_k``: ``d values = take_along_axis(d x, indices, axis)``; indices get no tangent.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp

__all__: list[str] = []


@register_jvp(P.sort_p.name)
def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = jnp.shape(primals[0])
    iota = lax.broadcasted_iota(np.int32, shape, dimension)
    outs = P.sort_p.bind(
        *primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys
    )
    perm = outs[-1]
    t_out = [None if t is None else jnp.take_along_axis(t, perm, axis=dimension) for t in tangents]
    return list(outs[:-1]), t_out


@register_jvp(P.top_k_p.name)
def _top_k_jvp(primals, tangents, *, k, axis, **params):
    (x,), (t,) = primals, tangents
    values, indices = P.top_k_p.bind(x, k=k, axis=axis, **params)
    return [values, indices], [jnp.take_along_axis(t, indices, axis=axis), None]
