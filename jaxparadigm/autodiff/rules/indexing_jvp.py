"""JVP rules for scattering primitives (claim C3.2, forward mode); sort/top_k: ``sorting_jvp.py``.

* ``scatter`` (``x.at[i].set(u)``; ``.apply(f)`` raises, as in jax): with ``unique_indices`` the tangent is the same scatter of the
  tangents; otherwise the update that won each slot is identified by scattering ids (jax's
  scheme), and the tangent is a scatter-add of the winners' tangents.
* ``scatter-mul``: ``d out = scatter_mul(dx, i, u) + x * scatter_add(0, i, du * others)`` with
  ``others`` the product of the other updates in the same slot -- exact with repeated indices and
  zero updates (jax raises unless ``unique_indices=True``).
* ``scatter-min``/``scatter-max``: the tangent of the value that ends up in each slot, averaged
  over ties between the operand and the updates (jax's ``_scatter_extremal_jvp``).
"""

from __future__ import annotations

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp
from jaxparadigm.autodiff.rules.scatter_dims import inverse_gather
from jaxparadigm.autodiff.rules.tangents import instantiate

__all__ = ["products_of_others"]


def _scatter_kw(params):
    return {
        "dimension_numbers": params["dimension_numbers"],
        "indices_are_sorted": params["indices_are_sorted"],
        "unique_indices": params["unique_indices"],
        "mode": params["mode"],
    }


@register_jvp(P.scatter_p.name)
def _scatter_jvp(primals, tangents, **params):
    x, idx, u = primals
    tx, _, tu = tangents
    if params["update_jaxpr"] is not None:
        raise NotImplementedError(
            "forward mode: scatter with an update function (x.at[i].apply(f)) is not "
            "differentiable here (nor in jax); use x.at[i].set(f(x[i])) instead"
        )
    out = P.scatter_p.bind(x, idx, u, **params)
    if tx is None and tu is None:
        return out, None
    tx, tu = instantiate(tx, x), instantiate(tu, u)
    if params["unique_indices"]:
        return out, P.scatter_p.bind(tx, idx, tu, **params)
    dnums, kw = params["dimension_numbers"], _scatter_kw(params)
    ids_shape = list(jnp.shape(u))
    for d in dnums.update_window_dims:
        ids_shape[d] = 1
    num_ids = int(np.prod(ids_shape))
    update_ids = jnp.reshape(jnp.arange(1, num_ids + 1, dtype=jnp.uint32), ids_shape)
    update_ids = jnp.broadcast_to(update_ids, jnp.shape(u))
    scattered = lax.scatter(jnp.zeros(jnp.shape(x), jnp.uint32), idx, update_ids, **kw)
    g_dnums, sizes = inverse_gather(dnums, jnp.shape(x), jnp.shape(u))
    winners = lax.gather(scattered, idx, g_dnums, sizes) == update_ids
    kept = scattered == 0
    t_kept = jnp.where(kept, tx, jnp.zeros_like(tx))
    t_won = jnp.where(winners, tu, jnp.zeros_like(tu))
    return out, lax.scatter_add(t_kept, idx, t_won, **kw)


def products_of_others(u: jax.Array, slot: jax.Array) -> jax.Array:
    """``out_j = prod_{k != j, slot_k == slot_j} u_k``: the product of the other entries that
    share entry j's slot, by exclusive segmented products over the entries sorted by slot.

    Built from products and permutations only (no division, no zero special case), so it is
    exact at zero entries and stays exact under further differentiation.
    """
    flat_u, flat_slot = jnp.reshape(u, -1), jnp.reshape(slot, -1)
    if flat_u.size == 0:
        return jnp.ones_like(u)
    order = jnp.argsort(flat_slot, stable=True)
    us, ss = flat_u[order], flat_slot[order]
    change = ss[1:] != ss[:-1]
    first = jnp.concatenate([jnp.array([True]), change])
    last = jnp.concatenate([change, jnp.array([True])])

    def seg_prod(a, b):  # inclusive product restarting where a flag is set
        (va, fa), (vb, fb) = a, b
        return jnp.where(fb, vb, va * vb), fa | fb

    inclusive, _ = lax.associative_scan(seg_prod, (us, first))
    inclusive_rev, _ = lax.associative_scan(seg_prod, (us, last), reverse=True)
    one = jnp.ones(1, us.dtype)
    before = jnp.where(first, 1.0, jnp.concatenate([one, inclusive[:-1]]))
    after = jnp.where(last, 1.0, jnp.concatenate([inclusive_rev[1:], one]))
    others = jnp.zeros_like(us).at[order].set(before * after, unique_indices=True)
    return jnp.reshape(others, jnp.shape(u))


@register_jvp(P.scatter_mul_p.name)
def _scatter_mul_jvp(primals, tangents, **params):
    """``out[i] = x[i] prod_{j -> i} u_j``: ``d out = scatter_mul(dx, i, u)
    + x * scatter_add(0, i, du_j * prod_{k -> i, k != j} u_k)``.

    The slot of every update element is read back by gathering an iota of the operand, and
    ``products_of_others`` multiplies the other updates in that slot: exact with repeated indices
    and zero updates, at any order (jax only supports ``unique_indices=True`` here).
    """
    x, idx, u = primals
    tx, _, tu = tangents
    out = P.scatter_mul_p.bind(x, idx, u, **params)
    left = None if tx is None else P.scatter_mul_p.bind(tx, idx, u, **params)
    if tu is None:
        return out, left
    dnums, kw = params["dimension_numbers"], _scatter_kw(params)
    if params["unique_indices"]:
        others = jnp.ones_like(u)
    else:
        g_dnums, sizes = inverse_gather(dnums, jnp.shape(x), jnp.shape(u))
        iota = jnp.reshape(jnp.arange(jnp.size(x), dtype=jnp.int32), jnp.shape(x))
        slot = lax.gather(iota, idx, g_dnums, sizes, mode=params["mode"], fill_value=-1)
        others = products_of_others(u, slot)
    right = x * lax.scatter_add(jnp.zeros_like(x), idx, tu * others, **kw)
    return out, right if left is None else left + right


def _extremal_rule(prim):
    def rule(primals, tangents, **params):
        x, idx, u = primals
        tx, _, tu = tangents
        out = prim.bind(x, idx, u, **params)
        if tx is None and tu is None:
            return out, None
        tx, tu = instantiate(tx, x), instantiate(tu, u)
        dnums, kw = params["dimension_numbers"], _scatter_kw(params)
        g_dnums, sizes = inverse_gather(dnums, jnp.shape(x), jnp.shape(u))
        gather = lambda a: lax.gather(a, idx, g_dnums, sizes)
        scatter_dnums = {"dimension_numbers": dnums}
        initial, target = gather(x), gather(out)
        won = u == target
        retained = initial == target
        n_won = gather(
            lax.scatter_add(jnp.zeros_like(x), idx, won.astype(x.dtype), **scatter_dnums)
        )
        n_refs = gather(lax.scatter_add(jnp.zeros_like(x), idx, jnp.ones_like(u), **scatter_dnums))
        u_norm = jnp.where(retained, 1.0 / (n_won + 1), 1.0 / n_won)
        u_coef = jnp.where(won, u_norm, jnp.zeros_like(u))
        x_norm = jnp.where(retained, 1.0 / (n_won + 1), jnp.zeros_like(n_won))
        x_coef = (-1.0 + x_norm) / n_refs
        t_updates = gather(tx) * x_coef + tu * u_coef
        return out, lax.scatter_add(tx, idx, t_updates, **kw)

    return rule


register_jvp(P.scatter_min_p.name)(_extremal_rule(P.scatter_min_p))
register_jvp(P.scatter_max_p.name)(_extremal_rule(P.scatter_max_p))
