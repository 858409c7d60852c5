"""VJP rules for control flow: ``cond``/``switch``, ``scan`` (and ``fori_loop`` with static bounds,
which lowers to it), ``while`` and host callbacks (claim C3.2).

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
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.graph import Graph, Saved
from jaxparadigm.autodiff.registry import register_forward, register_vjp

__all__: list[str] = []


def _is_float(aval) -> bool:
    return jnp.issubdtype(aval.dtype, jnp.floating)


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


@register_forward("scan")
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


@register_vjp("scan")
def _scan_vjp(
    cts, *args, reverse, length, jaxpr, num_consts, num_carry, unroll=1, residuals=None, **params
):
    """Reverse scan over the saved per-iteration environments (see the module docstring)."""
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

    def step(carry, inp):
        ct_c, acc = carry
        given, saved, x = inp
        given = iter(given)
        ct_y = [next(given) if p else None for p in present]
        restored = dict(zip(c_vars, consts, strict=True)) | dict(zip(x_vars, x, strict=True))
        in_cts = saved.backward([*ct_c, *ct_y], restored)
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


def _branch_vjp(branch):
    """One branch's VJP: recompute its forward through our graph, then sweep back."""

    def vjp(ops, cts):
        graph = Graph(branch)
        in_cts = graph.backward(graph.forward(ops), cts)
        return [_dense(c, v.aval) for c, v in zip(in_cts, graph.inputs, strict=True)]

    return vjp


@register_vjp("cond")
def _cond_vjp(cts, index, *ops, branches, **params):
    """Cotangents through the taken branch: ``switch(index, [vjp of each branch])``."""
    out_avals = branches[0].out_avals
    cts = [_dense(c, a) for c, a in zip(cts, out_avals, strict=True)]
    in_cts = lax.switch(index, [_branch_vjp(b) for b in branches], list(ops), cts)
    return (None, *in_cts)


@register_vjp("while")
def _while_vjp(cts, *args, **params):
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic start/stop values (the number of iterations is not known when the program is "
        "traced). Try using lax.scan, or lax.fori_loop with static start/stop. (jaxparadigm's "
        "reverse mode, like jax's.)"
    )


@register_vjp("pure_callback", "io_callback")
def _callback_vjp(cts, *args, **params):
    raise ValueError(
        "Host callbacks (jax.pure_callback / io_callback) cannot be differentiated: the host "
        "function is opaque to the graph. Wrap the callback in jax.custom_vjp (or "
        "jaxparadigm.autodiff.Function) and give it a backward."
    )
