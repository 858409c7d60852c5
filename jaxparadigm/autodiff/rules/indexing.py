"""VJP rules for gather and the scatter family (``x[idx]``, ``x.at[idx].set/add/mul/min/max``). C3.2.

A scatter is paired with the gather that reads back the windows it writes (``scatter_dims.inverse_gather``):

    gather          dx = scatter_add(zeros, idx, ct)                       (its transpose)
    scatter-add     dx = ct,  du = gather(ct)          (scatter-sub: du = -gather(ct))
    scatter (set)   dx = ct where no update landed; du = gather(ct) for the updates that won. Which
                    update wins a duplicated index is found as jax does: scatter each update's id
                    and gather the ids back (an update keeps its cotangent iff its id survived).
    scatter-mul     out = x * P (P = product of the updates landing on a position):
                    dx = scatter_mul(ct, idx, u);  du_k = gather(ct * x)_k * prod of the other
                    updates on u_k's position (exact with zeros; jax supports only unique indices)
    scatter-min/max jax's ``_scatter_extremal_jvp`` transposed: a position's cotangent is shared
                    equally among the updates (and the original value) that attain the result.
    scatter-apply   ``NotImplementedError``, as in jax.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.scatter_dims import inverse_gather, inverse_scatter

__all__: list[str] = []


def _gather_back(ct, indices, updates_shape, dn, mode, fill_value=0):
    """The windows of ``ct`` at the positions scatter ``dn`` wrote (``fill_value`` when dropped)."""
    gather_dn, slice_sizes = inverse_gather(dn, jnp.shape(ct), updates_shape)
    return lax.gather(
        ct, indices, gather_dn, slice_sizes, mode=mode, fill_value=fill_value
    ).reshape(updates_shape)


@register_vjp("gather")
def _gather_vjp(
    ct, x, indices, *, dimension_numbers, unique_indices, indices_are_sorted, mode, **params
):
    """The transpose of a gather is a scatter-add of ct into zeros at the same indices."""
    scatter_dn = inverse_scatter(dimension_numbers)
    zeros = jnp.zeros(jnp.shape(x), ct.dtype)
    dx = lax.scatter_add(
        zeros,
        indices,
        ct,
        scatter_dn,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    return dx, None


def _scatter_add_into(ct_like, indices, values, dn, mode):
    return lax.scatter_add(jnp.zeros_like(ct_like), indices, values, dn, mode=mode)


@register_vjp("scatter-add", "scatter_add")
def _scatter_add_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    """out = x + scatter(updates): dx = ct, dupdates = gather(ct) at the same indices."""
    return ct, None, _gather_back(ct, indices, jnp.shape(updates), dimension_numbers, mode)


@register_vjp("scatter-sub")
def _scatter_sub_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    """out = x - scatter(updates): dx = ct, dupdates = -gather(ct)."""
    return ct, None, -_gather_back(ct, indices, jnp.shape(updates), dimension_numbers, mode)


@register_vjp("scatter")
def _scatter_vjp(
    ct, x, indices, updates, *, dimension_numbers, unique_indices, mode, update_jaxpr=None, **params
):
    """out = x with the windows at ``indices`` overwritten by ``updates`` (last writer unknown).

    ``x.at[idx].apply(f)`` is a ``scatter`` whose ``update_jaxpr`` computes ``f(x)``: refused.
    """
    if update_jaxpr is not None:
        _scatter_apply_refused(ct)
    dn, ushape = dimension_numbers, jnp.shape(updates)
    zero = jnp.zeros((), ct.dtype)
    if unique_indices:
        dx = lax.scatter(ct, indices, jnp.zeros(ushape, ct.dtype), dn, mode=mode)
        return dx, None, _gather_back(ct, indices, ushape, dn, mode)
    ids_shape = tuple(1 if d in dn.update_window_dims else n for d, n in enumerate(ushape))
    n_ids = int(np.prod(ids_shape, dtype=np.int64))
    ids = jnp.broadcast_to(jnp.arange(1, n_ids + 1, dtype=jnp.int32).reshape(ids_shape), ushape)
    scattered = lax.scatter(jnp.zeros(jnp.shape(x), jnp.int32), indices, ids, dn, mode=mode)
    won = _gather_back(scattered, indices, ushape, dn, mode) == ids
    dx = jnp.where(scattered == 0, ct, zero)
    du = jnp.where(won, _gather_back(ct, indices, ushape, dn, mode), zero)
    return dx, None, du


@register_vjp("scatter-mul")
def _scatter_mul_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    """out = x * P: dx = ct * P; du_k = gather(ct * x)_k * (product of the other updates at k's
    position), from the count of zero updates and the product of the non-zero ones there."""
    dn, ushape = dimension_numbers, jnp.shape(updates)
    dx = lax.scatter_mul(ct, indices, updates, dn, mode=mode)
    is_zero = updates == 0
    safe = jnp.where(is_zero, jnp.ones_like(updates), updates)
    nonzero_prod = lax.scatter_mul(jnp.ones(jnp.shape(x), ct.dtype), indices, safe, dn, mode=mode)
    zeros_at = _scatter_add_into(ct, indices, is_zero.astype(ct.dtype), dn, mode)
    prod_k = _gather_back(nonzero_prod, indices, ushape, dn, mode, fill_value=1)
    zeros_k = _gather_back(zeros_at, indices, ushape, dn, mode)
    others = jnp.where(
        is_zero,
        jnp.where(zeros_k == 1, prod_k, 0.0),
        jnp.where(zeros_k == 0, prod_k / safe, 0.0),
    )
    du = _gather_back(ct * x, indices, ushape, dn, mode) * others
    return dx, None, du.astype(jnp.result_type(updates))


def _scatter_extremal_vjp(ct, x, indices, updates, dn, mode, scatter_op):
    """Transpose of jax's extremal-scatter JVP: ties share the cotangent equally."""
    ushape = jnp.shape(updates)
    out = scatter_op(x, indices, updates, dn, mode=mode)
    gather_dn, slice_sizes = inverse_gather(dn, jnp.shape(x), ushape)

    def read(a):  # jax's own gathers here use the default fill (nan) for dropped updates
        return lax.gather(a, indices, gather_dn, slice_sizes, mode=mode).reshape(ushape)

    initial, target = read(x), read(out)
    successful = updates == target
    retained = initial == target
    ones = jnp.ones(ushape, ct.dtype)
    n_updates = read(_scatter_add_into(ct, indices, jnp.where(successful, ones, 0.0), dn, mode))
    n_refs = read(_scatter_add_into(ct, indices, ones, dn, mode))
    upd_norm = jnp.where(retained, 1.0 / (n_updates + 1), 1.0 / n_updates)
    upd_coef = jnp.where(successful, upd_norm, 0.0)
    op_coef = (-1.0 + jnp.where(retained, 1.0 / (n_updates + 1), 0.0)) / n_refs
    h = _gather_back(ct, indices, ushape, dn, mode)  # transpose of the final scatter_add
    dx = ct + _scatter_add_into(ct, indices, h * op_coef, dn, mode)
    return dx, None, (h * upd_coef).astype(jnp.result_type(updates))


@register_vjp("scatter-max")
def _scatter_max_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    return _scatter_extremal_vjp(ct, x, indices, updates, dimension_numbers, mode, lax.scatter_max)


@register_vjp("scatter-min")
def _scatter_min_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    return _scatter_extremal_vjp(ct, x, indices, updates, dimension_numbers, mode, lax.scatter_min)


@register_jvp("scatter-apply")
@register_vjp("scatter-apply")
def _scatter_apply_refused(*args, **params):
    """Neither mode differentiates ``x.at[idx].apply(f)`` (jax has no rule either)."""
    raise NotImplementedError(
        "scatter-apply (x.at[idx].apply(f)) has no VJP or JVP rule, as in jax; write the update with "
        "x.at[idx].set(f(x[idx])) instead"
    )
