"""JVP rules for primitives that hold inner programs: calls, control flow, custom rules (C3.2).

Each rule runs our interpreter (``eval_jvp``) on the inner jaxpr, re-staged through the same
public construct so the result keeps its structure:

* ``jit``/``closed_call``: inlined -- ``eval_jvp`` on the called jaxpr;
* ``cond``: ``lax.switch`` over the branches' JVPs; an output has a tangent if any branch gives
  one (the others return zeros);
* ``scan`` / ``while``: a ``lax.scan`` / ``lax.while_loop`` over (carry, carry tangent); which
  carries need a tangent is the fixed point of the body's activity analysis;
* ``remat2`` (``jax.checkpoint``): ``jax.checkpoint`` of the inner JVP, same policy;
* ``custom_jvp_call``: the function's OWN JVP rule (``jax.nn.relu``'s ``select(x > 0, t, 0)``);
* ``custom_vjp_call``: differentiates the user's ``fwd`` (whose outputs are the primal outputs
  and residuals) -- this is what jax does for forward-over-reverse (``jax.hessian``); plain
  ``jax.jvp`` of a ``custom_vjp`` function raises in jax instead (a documented difference);
* ``pure_callback``/``io_callback``: a clear ``NotImplementedError`` (host code is opaque);
  ``debug_callback``/``debug_print`` run on the primals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax import lax
from jax._src import debugging

from jaxparadigm.autodiff.jvp_interpreter import (
    eval_jvp,
    eval_jvp_closed,
    is_float,
    nonzero_outputs,
)
from jaxparadigm.autodiff.registry import register_jvp
from jaxparadigm.autodiff.rules.tangents import add_tangents, instantiate

__all__ = ["custom_rule_jvp_program"]


def _scatter_nonzero(values, flags):
    """Full list from the values of the flagged (nonzero) positions; ``None`` elsewhere."""
    it = iter(values)
    return [next(it) if f else None for f in flags]


def _kept(tangents, primals, flags):
    """The tangents at flagged positions, zeros instantiated (a fixed structure for staging)."""
    return [instantiate(t, p) for t, p, f in zip(tangents, primals, flags, strict=True) if f]


@register_jvp("jit", "pjit", "closed_call", "core_call")
def _call_jvp(primals, tangents, *, jaxpr=None, call_jaxpr=None, **params):
    """A call is transparent to differentiation: push tangents through the called jaxpr."""
    return eval_jvp_closed(jaxpr if jaxpr is not None else call_jaxpr, primals, tangents)


@register_jvp("cond")
def _cond_jvp(primals, tangents, *, branches, **params):
    """``switch(index, branches)``: the JVP of the taken branch (all staged, one runs)."""
    index, *ops = primals
    nz_in = [t is not None for t in tangents[1:]]
    nz_out = [any(col) for col in zip(*(nonzero_outputs(b, nz_in) for b in branches), strict=True)]
    given = [t for t in tangents[1:] if t is not None]

    def staged(branch):
        def fn(ops, given):
            outs, touts = eval_jvp_closed(branch, ops, _scatter_nonzero(given, nz_in))
            return outs, _kept(touts, outs, nz_out)

        return fn

    outs, touts = lax.switch(index, [staged(b) for b in branches], list(ops), given)
    return list(outs), _scatter_nonzero(touts, nz_out)


def _carry_fixed_point(jaxpr, nz_consts, nz_carry, nz_xs, n_carry):
    """Smallest set of carries with a tangent that the body maps into itself."""
    while True:
        nz_out = nonzero_outputs(jaxpr, [*nz_consts, *nz_carry, *nz_xs])
        grown = [a or b for a, b in zip(nz_carry, nz_out[:n_carry], strict=True)]
        if grown == nz_carry:
            return nz_carry, nz_out[n_carry:]
        nz_carry = grown


@register_jvp("scan")
def _scan_jvp(
    primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry, unroll, **params
):
    """``scan`` over ((carry, d carry), (x, d x)) with the body's JVP; consts' tangents close over."""
    n_c = num_consts
    consts, init, xs = primals[:n_c], primals[n_c : n_c + num_carry], primals[n_c + num_carry :]
    t_consts, t_init, t_xs = (
        tangents[:n_c],
        tangents[n_c : n_c + num_carry],
        tangents[n_c + num_carry :],
    )
    nz_xs = [t is not None for t in t_xs]
    nz_carry, nz_ys = _carry_fixed_point(
        jaxpr, [t is not None for t in t_consts], [t is not None for t in t_init], nz_xs, num_carry
    )

    def body(carry, x):
        (c, c_t), (xp, x_t) = carry, x
        outs, touts = eval_jvp_closed(
            jaxpr,
            [*consts, *c, *xp],
            [*t_consts, *_scatter_nonzero(c_t, nz_carry), *_scatter_nonzero(x_t, nz_xs)],
        )
        new_c, ys = outs[:num_carry], outs[num_carry:]
        new_t = _kept(touts[:num_carry], new_c, nz_carry)
        return (new_c, new_t), (ys, _kept(touts[num_carry:], ys, nz_ys))

    init_t = _kept(t_init, init, nz_carry)
    xs_t = [t for t in t_xs if t is not None]
    (c, c_t), (ys, ys_t) = lax.scan(
        body, (list(init), init_t), (list(xs), xs_t), length=length, reverse=reverse, unroll=unroll
    )
    outs = [*c, *ys]
    return outs, [*_scatter_nonzero(c_t, nz_carry), *_scatter_nonzero(ys_t, nz_ys)]


@register_jvp("while")
def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """``while_loop`` over (carry, d carry); the predicate reads the primal carry only."""
    c_consts = primals[:cond_nconsts]
    b_consts = primals[cond_nconsts : cond_nconsts + body_nconsts]
    init = primals[cond_nconsts + body_nconsts :]
    t_b = tangents[cond_nconsts : cond_nconsts + body_nconsts]
    t_init = tangents[cond_nconsts + body_nconsts :]
    nz_carry, _ = _carry_fixed_point(
        body_jaxpr, [t is not None for t in t_b], [t is not None for t in t_init], [], len(init)
    )

    def cond_fn(carry):
        c, _ = carry
        (pred,), _ = eval_jvp_closed(cond_jaxpr, [*c_consts, *c], [None] * (len(c_consts) + len(c)))
        return pred

    def body_fn(carry):
        c, c_t = carry
        outs, touts = eval_jvp_closed(
            body_jaxpr, [*b_consts, *c], [*t_b, *_scatter_nonzero(c_t, nz_carry)]
        )
        return outs, _kept(touts, outs, nz_carry)

    c, c_t = lax.while_loop(cond_fn, body_fn, (list(init), _kept(t_init, init, nz_carry)))
    return list(c), _scatter_nonzero(c_t, nz_carry)


@register_jvp("remat2", "checkpoint")
def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy, **params):
    """``jax.checkpoint`` of the inner JVP: rematerialisation survives forward mode."""
    nz = [t is not None for t in tangents]

    def inner(ps, ts):
        return eval_jvp(jaxpr, (), ps, _scatter_nonzero(ts, nz))

    fn = jax.checkpoint(inner, prevent_cse=prevent_cse, policy=policy)
    outs, touts = fn(list(primals), [t for t in tangents if t is not None])
    return list(outs), list(touts)


def _float0_zeros(x):
    return np.zeros(np.shape(x), jax.dtypes.float0)


def custom_rule_jvp_program(
    args: Sequence[Any], jvp_jaxpr_fun: Any, symbolic_zeros: bool, nonzero: Sequence[bool]
) -> tuple[Any, Any, list[bool], list[bool]]:
    """The user's custom JVP rule as a jaxpr over ``(*args, *tangents)``. C3.2.

    Returns ``(jaxpr, consts, out_zeros, tangent_flags)``: the rule's program (outputs: primal
    outputs then the non-zero output tangents), which outputs' tangents are symbolically zero,
    and which args take a tangent input. Without ``symbolic_zeros`` every arg takes one (zeros
    instantiated, ``float0`` for integers), as jax does.
    """
    flags = list(nonzero) if symbolic_zeros else [True] * len(args)
    jaxpr, consts, out_zeros = jvp_jaxpr_fun.call_wrapped(*[not f for f in flags])
    return jaxpr, consts, list(out_zeros), flags


def _rule_tangents(args, tangents, flags):
    return [
        instantiate(t, a) if is_float(np.result_type(a)) else _float0_zeros(a)
        for a, t, f in zip(args, tangents, flags, strict=True)
        if f
    ]


@register_jvp("custom_jvp_call")
def _custom_jvp_call_jvp(
    primals, tangents, *, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros
):
    """Run the function's own JVP rule. Closed-over values (jax refuses to differentiate them)
    get the body's derivative, added to the rule's."""
    args, t_args = primals[num_consts:], tangents[num_consts:]
    jaxpr, consts, out_zeros, flags = custom_rule_jvp_program(
        args, jvp_jaxpr_fun, symbolic_zeros, [t is not None for t in t_args]
    )
    n_in = len(jaxpr.invars)
    outs, _ = eval_jvp(jaxpr, consts, [*args, *_rule_tangents(args, t_args, flags)], [None] * n_in)
    n_out = len(out_zeros)
    touts = _scatter_nonzero(outs[n_out:], [not z for z in out_zeros])
    if any(t is not None for t in tangents[:num_consts]):
        body_t = [*tangents[:num_consts], *[None] * len(args)]
        _, from_consts = eval_jvp_closed(call_jaxpr, primals, body_t)
        touts = [add_tangents(a, b) for a, b in zip(touts, from_consts, strict=True)]
    return list(outs[:n_out]), touts


@register_jvp("custom_vjp_call")
def _custom_vjp_call_jvp(primals, tangents, *, num_consts, fwd_jaxpr_thunk, out_trees, **params):
    """Differentiate the user's ``fwd``; its trailing outputs are the primal outputs."""
    if any(t is not None for t in tangents[:num_consts]):
        raise TypeError(
            "forward mode: a custom_vjp function is being differentiated with respect to a "
            "value it closes over; pass that value as an argument instead (jax refuses too)"
        )
    args, t_args = primals[num_consts:], tangents[num_consts:]
    jaxpr, consts = fwd_jaxpr_thunk.call_wrapped(*[t is not None for t in t_args])
    _, res_tree, input_fwds = out_trees()
    n_res = res_tree.num_leaves - sum(f is not None for f in input_fwds)
    outs, touts = eval_jvp(jaxpr, consts, list(args), list(t_args))
    return list(outs[n_res:]), list(touts[n_res:])


def _callback_jvp(name):
    def rule(primals, tangents, **params):
        raise NotImplementedError(
            f"forward mode cannot differentiate through {name}: host callbacks are opaque to "
            "the engine. Give the function a derivative with jax.custom_jvp."
        )

    return rule


register_jvp("pure_callback")(_callback_jvp("pure_callback"))
register_jvp("io_callback")(_callback_jvp("io_callback"))


def _debug_rule(prim):
    def rule(primals, tangents, **params):
        return list(prim.bind(*primals, **params)), []

    return rule


register_jvp("debug_callback")(_debug_rule(debugging.debug_callback_p))
register_jvp("debug_print")(_debug_rule(debugging.debug_print_p))
