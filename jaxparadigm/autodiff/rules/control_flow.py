"""Rules for control flow: ``cond``/``switch``, ``scan`` (and ``fori_loop`` with static bounds,
which lowers to it), ``while`` and host callbacks (claim C3.2).

Reverse mode:

* ``scan``: the forward rule runs the body through our graph inside a ``lax.scan`` and stacks one
  ``Saved`` environment per iteration (the residuals; the loop-invariant constants and the
  per-iteration inputs ``xs`` are not copied, they are restored from the scan's own operands).
  The VJP rule is the reverse scan over those residuals:

      ct_carry_{t-1}, ct_x_t, d_consts  +=  body_backward(saved_t; ct_carry_t, ct_y_t)

  starting from the output carry's cotangent; it returns (d_consts, ct_carry_0, ct_xs).
* ``cond``: cotangents flow through the taken branch only: ``lax.switch(index, branch_vjps)``,
  each branch's VJP recomputing that branch's forward (the other branches never run).
* ``while``: reverse mode is refused with jax's message (the trip count is not static).
* ``pure_callback`` / ``io_callback``: refused; the host function has no derivative we can see.

Forward mode runs our interpreter (``eval_jvp``) on the inner jaxpr, re-staged through the same
public construct so the result keeps its structure:

* ``cond``: ``lax.switch`` over the branches' JVPs; an output has a tangent if any branch gives
  one (the others return zeros);
* ``scan`` / ``while``: a ``lax.scan`` / ``lax.while_loop`` over (carry, carry tangent); which
  carries need a tangent is the fixed point of the body's activity analysis;
* ``pure_callback``/``io_callback``: a clear ``NotImplementedError`` (host code is opaque);
  ``debug_callback``/``debug_print`` run on the primals.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax
from jax._src import debugging
from jax._src.callback import io_callback_p, pure_callback_p

from jaxparadigm.autodiff.graph import Graph
from jaxparadigm.autodiff.jvp_interpreter import eval_jvp_closed, nonzero_outputs
from jaxparadigm.autodiff.registry import register_forward, register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import kept_tangents, scatter_nonzero
from jaxparadigm.autodiff.saved import Saved

__all__: list[str] = []


def _is_float(aval) -> bool:
    return jnp.issubdtype(aval.dtype, jnp.inexact)


def _dense(ct, aval):
    """``ct`` as a (non-weak) array of ``aval``'s type: zeros for a float ``None``; ``None`` for a
    non-float value (integers carry no cotangent)."""
    if not _is_float(aval):
        return None
    if ct is None:
        return jnp.zeros(aval.shape, aval.dtype)
    return lax.convert_element_type(ct, aval.dtype)


def _split(seq, *sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(seq[start : start + n]))
        start += n
    out.append(list(seq[start:]))
    return out


@register_forward(P.scan_p)
def _scan_forward(*args, reverse, length, jaxpr, num_consts, num_carry, unroll=1, **params):
    """Run the scan with our graph as the body; keep one ``Saved`` per iteration."""
    body = Graph(jaxpr)
    consts, init, xs = _split(args, num_consts, num_carry)
    c_vars, _, x_vars = _split(body.inputs, num_consts, num_carry)
    carry_avals = [v.aval for v in body.inputs[num_consts : num_consts + num_carry]]
    init = [lax.convert_element_type(c, a.dtype) for c, a in zip(init, carry_avals, strict=True)]

    def step(carry, x):
        env = body.forward([*consts, *carry, *x])
        outs = body.outputs_of(env)
        new_carry = [
            lax.convert_element_type(c, a.dtype)
            for c, a in zip(outs[:num_carry], carry_avals, strict=True)
        ]
        return new_carry, (outs[num_carry:], Saved.of(body, env, drop=c_vars + x_vars))

    carry, (ys, saved) = lax.scan(step, init, xs, length=length, reverse=reverse, unroll=unroll)
    return [*carry, *ys], saved


@register_vjp(P.scan_p, takes_active=True)
def _scan_vjp(
    cts,
    *args,
    reverse,
    length,
    jaxpr,
    num_consts,
    num_carry,
    unroll=1,
    residuals=None,
    active=None,
    **params,
):
    """Reverse scan over the saved per-iteration environments (see the module docstring); the
    body differentiates the ``active`` consts and xs and the carries they reach (a fixed point)."""
    if residuals is None:
        _, residuals = _scan_forward(
            *args,
            reverse=reverse,
            length=length,
            jaxpr=jaxpr,
            num_consts=num_consts,
            num_carry=num_carry,
            unroll=unroll,
        )
    body = residuals.graph
    consts, _, xs = _split(args, num_consts, num_carry)
    c_vars, carry_vars, x_vars = _split(body.inputs, num_consts, num_carry)
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    ct_carry = [_dense(c, v.aval) for c, v in zip(ct_carry, carry_vars, strict=True)]
    y_avals = [v.aval for v in body.outputs[num_carry:]]
    present = [c is not None and _is_float(a) for c, a in zip(ct_ys, y_avals, strict=True)]
    ct_ys_given = [c for c, p in zip(ct_ys, present, strict=True) if p]
    acc0 = [_dense(None, v.aval) for v in c_vars]
    body_wrt = None if active is None else _body_active(jaxpr, active, num_consts, num_carry)

    def step(carry, inp):
        ct_c, acc = carry
        given, saved, x = inp
        given = iter(given)
        ct_y = [next(given) if p else None for p in present]
        restored = dict(zip(c_vars, consts, strict=True)) | dict(zip(x_vars, x, strict=True))
        in_cts = saved.backward([*ct_c, *ct_y], restored, body_wrt)
        d_consts, d_carry, d_x = _split(in_cts, num_consts, num_carry)
        acc = [
            a if d is None or a is None else a + _dense(d, v.aval)
            for a, d, v in zip(acc, d_consts, c_vars, strict=True)
        ]
        d_carry = [_dense(d, v.aval) for d, v in zip(d_carry, carry_vars, strict=True)]
        return (d_carry, acc), [_dense(d, v.aval) for d, v in zip(d_x, x_vars, strict=True)]

    (ct_init, d_consts), ct_xs = lax.scan(
        step,
        (ct_carry, acc0),
        (ct_ys_given, residuals, xs),
        length=length,
        reverse=not reverse,
        unroll=unroll,
    )
    return (*d_consts, *ct_init, *ct_xs)


def _body_active(jaxpr, active, num_consts, num_carry) -> list[bool]:
    """The scan body's differentiated inputs: active consts and xs, and each carry that is active
    at the start or that the body makes active (the fixed point ``_carry_fixed_point``)."""
    consts, init, xs = _split(list(active), num_consts, num_carry)
    carry, _ = _carry_fixed_point(jaxpr, consts, init, xs, num_carry)
    return [*consts, *carry, *xs]


def _carry_fixed_point(jaxpr, nz_consts, nz_carry, nz_xs, n_carry):
    """Smallest set of carries with a tangent that the body maps into itself."""
    while True:
        nz_out = nonzero_outputs(jaxpr, [*nz_consts, *nz_carry, *nz_xs])
        grown = [a or b for a, b in zip(nz_carry, nz_out[:n_carry], strict=True)]
        if grown == nz_carry:
            return nz_carry, nz_out[n_carry:]
        nz_carry = grown


@register_jvp(P.scan_p)
def _scan_jvp(
    primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry, unroll, **params
):
    """``scan`` over ((carry, d carry), (x, d x)) with the body's JVP; const tangents close over."""
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
            [*t_consts, *scatter_nonzero(c_t, nz_carry), *scatter_nonzero(x_t, nz_xs)],
        )
        new_c, ys = outs[:num_carry], outs[num_carry:]
        new_t = kept_tangents(touts[:num_carry], new_c, nz_carry)
        return (new_c, new_t), (ys, kept_tangents(touts[num_carry:], ys, nz_ys))

    init_t = kept_tangents(t_init, init, nz_carry)
    xs_t = [t for t in t_xs if t is not None]
    (c, c_t), (ys, ys_t) = lax.scan(
        body, (list(init), init_t), (list(xs), xs_t), length=length, reverse=reverse, unroll=unroll
    )
    outs = [*c, *ys]
    return outs, [*scatter_nonzero(c_t, nz_carry), *scatter_nonzero(ys_t, nz_ys)]


def _branch_vjp(branch, active):
    """One branch's VJP: recompute its forward through our graph, then sweep back over the
    ``active`` operands (all when ``None``)."""

    def vjp(ops, cts):
        graph = Graph(branch)
        in_cts = graph.backward(graph.forward(ops, active), cts, active)
        return [_dense(c, v.aval) for c, v in zip(in_cts, graph.inputs, strict=True)]

    return vjp


@register_vjp(P.cond_p, takes_active=True)
def _cond_vjp(cts, index, *ops, branches, active=None, **params):
    """Cotangents through the taken branch: ``switch(index, [vjp of each branch])``."""
    out_avals = branches[0].out_avals
    cts = [_dense(c, a) for c, a in zip(cts, out_avals, strict=True)]
    ops_active = None if active is None else list(active[1:])
    branch_vjps = [_branch_vjp(b, ops_active) for b in branches]
    in_cts = lax.switch(index, branch_vjps, list(ops), cts)
    return (None, *in_cts)


@register_jvp(P.cond_p)
def _cond_jvp(primals, tangents, *, branches, **params):
    """``switch(index, branches)``: the JVP of the taken branch (all staged, one runs)."""
    index, *ops = primals
    nz_in = [t is not None for t in tangents[1:]]
    nz_out = [any(col) for col in zip(*(nonzero_outputs(b, nz_in) for b in branches), strict=True)]
    given = [t for t in tangents[1:] if t is not None]

    def staged(branch):
        def fn(ops, given):
            outs, touts = eval_jvp_closed(branch, ops, scatter_nonzero(given, nz_in))
            return outs, kept_tangents(touts, outs, nz_out)

        return fn

    outs, touts = lax.switch(index, [staged(b) for b in branches], list(ops), given)
    return list(outs), scatter_nonzero(touts, nz_out)


@register_vjp(P.while_p)
def _while_vjp(cts, *args, **params):
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic start/stop values (the number of iterations is not known when the program is "
        "traced). Try using lax.scan, or lax.fori_loop with static start/stop. (jaxparadigm's "
        "reverse mode, like jax's.)"
    )


@register_jvp(P.while_p)
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
            body_jaxpr, [*b_consts, *c], [*t_b, *scatter_nonzero(c_t, nz_carry)]
        )
        return outs, kept_tangents(touts, outs, nz_carry)

    c, c_t = lax.while_loop(cond_fn, body_fn, (list(init), kept_tangents(t_init, init, nz_carry)))
    return list(c), scatter_nonzero(c_t, nz_carry)


@register_vjp(pure_callback_p, io_callback_p)
def _callback_vjp(cts, *args, **params):
    raise ValueError(
        "Host callbacks (jax.pure_callback / io_callback) cannot be differentiated: the host "
        "function is opaque to the graph. Wrap the callback in jax.custom_vjp (or "
        "jaxparadigm.autodiff.Function) and give it a backward."
    )


def _callback_jvp(name):
    def rule(primals, tangents, **params):
        raise NotImplementedError(
            f"forward mode cannot differentiate through {name}: host callbacks are opaque to "
            "the engine. Give the function a derivative with jax.custom_jvp."
        )

    return rule


register_jvp(pure_callback_p)(_callback_jvp("pure_callback"))
register_jvp(io_callback_p)(_callback_jvp("io_callback"))


def _debug_rule(prim):
    def rule(primals, tangents, **params):
        return list(prim.bind(*primals, **params)), []

    return rule


register_jvp(debugging.debug_callback_p)(_debug_rule(debugging.debug_callback_p))
register_jvp(debugging.debug_print_p)(_debug_rule(debugging.debug_print_p))
