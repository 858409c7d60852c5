"""Rules for gather and the scatter family (``x[idx]``, ``x.at[idx].set/add/mul/min/max``). C3.2.

A scatter is paired with the gather that reads back the windows it writes
(``scatter_dims.inverse_gather``). Reverse mode::

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
    scatter-apply   ``NotImplementedError`` in both modes, as in jax.

Forward mode:

* ``gather``, ``scatter-add``, ``scatter-sub``: linear in the operand and the updates (a gather
  out of bounds in mode "fill" gets a zero tangent, whatever ``fill_value`` the primal used);
* ``scatter`` (``x.at[i].set(u)``): with ``unique_indices`` the tangent is the same scatter of the
  tangents; otherwise the update that won each slot is identified by scattering ids (jax's
  scheme), and the tangent is a scatter-add of the winners' tangents;
* ``scatter-mul``: ``d out = scatter_mul(dx, i, u) + x * scatter_add(0, i, du * others)`` with
  ``others`` the product of the other updates in the same slot -- exact with repeated indices and
  zero updates (jax raises unless ``unique_indices=True``);
* ``scatter-min``/``scatter-max``: the tangent of the value that ends up in each slot, averaged
  over ties between the operand and the updates (jax's ``_scatter_extremal_jvp``).
"""

from __future__ import annotations

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src.lax.slicing import scatter_sub_p

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.scatter_dims import inverse_gather, inverse_scatter
from jaxparadigm.autodiff.rules.tangents import instantiate, linear_rule

__all__ = ["products_of_others"]


def _gather_back(ct, indices, updates_shape, dn, mode, fill_value=0):
    """The windows of ``ct`` at the positions scatter ``dn`` wrote (``fill_value`` when dropped)."""
    gather_dn, slice_sizes = inverse_gather(dn, jnp.shape(ct), updates_shape)
    return lax.gather(
        ct, indices, gather_dn, slice_sizes, mode=mode, fill_value=fill_value
    ).reshape(updates_shape)


@register_vjp(P.gather_p)
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


@register_jvp(P.gather_p)
def _gather_jvp(primals, tangents, *, fill_value, **params):
    """Linear in the operand; out-of-bounds slots (mode "fill") get a zero tangent, whatever
    ``fill_value`` the primal used (as jax)."""
    (x, idx), (t, _) = primals, tangents
    out = P.gather_p.bind(x, idx, fill_value=fill_value, **params)
    return out, P.gather_p.bind(t, idx, fill_value=0, **params)


def _scatter_add_into(ct_like, indices, values, dn, mode):
    return lax.scatter_add(jnp.zeros_like(ct_like), indices, values, dn, mode=mode)


# "scatter_add": an alias name for lookups by it (scatter_add_p is "scatter-add").
@register_vjp(P.scatter_add_p, "scatter_add")
def _scatter_add_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    """out = x + scatter(updates): dx = ct, dupdates = gather(ct) at the same indices."""
    return ct, None, _gather_back(ct, indices, jnp.shape(updates), dimension_numbers, mode)


@register_vjp(scatter_sub_p)
def _scatter_sub_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    """out = x - scatter(updates): dx = ct, dupdates = -gather(ct)."""
    return ct, None, -_gather_back(ct, indices, jnp.shape(updates), dimension_numbers, mode)


register_jvp(P.scatter_add_p)(linear_rule(P.scatter_add_p, (0, 2)))
register_jvp(scatter_sub_p)(linear_rule(scatter_sub_p, (0, 2)))


def _scatter_kw(params):
    return {
        "dimension_numbers": params["dimension_numbers"],
        "indices_are_sorted": params["indices_are_sorted"],
        "unique_indices": params["unique_indices"],
        "mode": params["mode"],
    }


@register_vjp(P.scatter_p)
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


@register_jvp(P.scatter_p)
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


@register_vjp(P.scatter_mul_p)
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


@register_jvp(P.scatter_mul_p)
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


@register_vjp(P.scatter_max_p)
def _scatter_max_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    return _scatter_extremal_vjp(ct, x, indices, updates, dimension_numbers, mode, lax.scatter_max)


@register_vjp(P.scatter_min_p)
def _scatter_min_vjp(ct, x, indices, updates, *, dimension_numbers, mode, **params):
    return _scatter_extremal_vjp(ct, x, indices, updates, dimension_numbers, mode, lax.scatter_min)


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


register_jvp(P.scatter_min_p)(_extremal_rule(P.scatter_min_p))
register_jvp(P.scatter_max_p)(_extremal_rule(P.scatter_max_p))


# x.at[i].apply(f) binds ``scatter`` with an ``update_jaxpr`` (no primitive of jax is named
# "scatter-apply"): _scatter_vjp refuses it through this function, _scatter_jvp in its own words.
def _scatter_apply_refused(*args, **params):
    """Neither mode differentiates ``x.at[idx].apply(f)`` (jax has no rule either)."""
    raise NotImplementedError(
        "scatter-apply (x.at[idx].apply(f)) has no VJP or JVP rule, as in jax; "
        "write the update with x.at[idx].set(f(x[idx])) instead"
    )
