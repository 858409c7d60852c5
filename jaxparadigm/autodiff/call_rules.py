"""VJP rules for primitives that call an inner program: jit, remat, custom_jvp/custom_vjp (C3.2).

These rules re-enter the graph engine on the inner jaxpr (a nested ``Graph``), which is how
grad-of-grad and jit-inside-grad compose (claim C3.3). ``custom_vjp_call`` runs the user's own
``fwd``/``bwd`` (so ``Function.backward`` is honoured by our engine); ``custom_jvp_call``
transposes the function's own JVP rule (so ``jax.nn.relu``'s rule, not its body, decides).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax._src import ad_util
from jax._src.custom_derivatives import custom_vjp_call_p
from jax.dtypes import float0
from jax.extend import core as jcore

from jaxparadigm.autodiff.control_flow_jvp_rules import custom_rule_jvp_program
from jaxparadigm.autodiff.graph import Graph
from jaxparadigm.autodiff.registry import register_vjp

__all__: list[str] = []


def _inner_vjp(jaxpr, cts, primals):
    """Run our forward + reverse sweep over an inner (closed or open) jaxpr."""
    graph = Graph(jaxpr)
    _, backward = graph.vjp(primals)
    return tuple(backward(list(cts)))


@register_vjp("jit", "pjit", "closed_call", "core_call")
def _jit_vjp(cts, *primals, jaxpr=None, call_jaxpr=None, **params):
    """Recurse into the called jaxpr: the cotangents of its inputs are those of the call."""
    return _inner_vjp(jaxpr if jaxpr is not None else call_jaxpr, cts, primals)


@register_vjp("remat2", "checkpoint")
def _remat_vjp(cts, *primals, jaxpr, **params):
    """Rematerialised block: our engine recomputes the inner forward anyway, so recurse."""
    return _inner_vjp(jaxpr, cts, primals)


@register_vjp("custom_jvp_call")
def _custom_jvp_call_vjp(
    cts, *primals, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros, **params
):
    """Transpose the function's OWN JVP rule (Autodidax's linearize + transpose).

    The rule's program ``(x, t) -> (f(x), J(x) t)`` is linear in the tangent inputs ``t``; our
    reverse sweep over it, with ``x`` held constant and only ``t`` differentiated, returns
    ``J(x)^T ct`` (evaluated at ``t = 0``; linearity makes the point irrelevant). So
    ``grad(jax.nn.relu)(0.0) == 0`` as the rule says, not 1/2 from the body's ``max``.
    Closed-over values (which jax refuses to differentiate) get the body's derivative.
    """
    args = primals[num_consts:]
    floats = [jnp.issubdtype(jnp.result_type(a), jnp.inexact) for a in args]
    jaxpr, consts, out_zeros, flags = custom_rule_jvp_program(
        args, jvp_jaxpr_fun, symbolic_zeros, floats
    )
    tangents = [
        jnp.zeros(jnp.shape(a), jnp.result_type(a)) if fl else np.zeros(np.shape(a), float0)
        for a, fl, f in zip(args, floats, flags, strict=True)
        if f
    ]
    wrt = [False] * len(args) + [fl for fl, f in zip(floats, flags, strict=True) if f]
    nz_cts = [c for c, z in zip(cts, out_zeros, strict=True) if not z]
    graph = Graph(jcore.ClosedJaxpr(jaxpr, consts))
    _, backward = graph.vjp([*args, *tangents], wrt)
    t_cts = iter(backward([None] * len(out_zeros) + nz_cts)[len(args) :])
    arg_cts = [next(t_cts) if f else None for f in flags]
    const_cts = [None] * num_consts
    if any(jnp.issubdtype(jnp.result_type(c), jnp.inexact) for c in primals[:num_consts]):
        const_cts = list(_inner_vjp(call_jaxpr, cts, primals)[:num_consts])
    return (*const_cts, *arg_cts)


def _is_zero(x) -> bool:
    return x is None or isinstance(x, ad_util.Zero)


@register_vjp("custom_vjp_call")
def _custom_vjp_call_vjp(cts, *primals, **params):
    """Call the user's fwd to get residuals, then the user's bwd on the output cotangents.

    Residuals are exactly what ``fwd`` returned (``Function``: the saved tensors, claim C2.2).
    ``primals`` are the ``num_consts`` closed-over values followed by the real arguments; the
    ``input_fwds`` of ``out_trees`` (residuals that are forwarded inputs) index the full
    ``primals`` (jax shifts them by ``num_consts`` when it stages the call). Closed-over constants
    receive zero cotangent (``None``): jax's own bwd wrapper returns symbolic zeros for them.
    """
    num_consts = params["num_consts"]
    bind_params = custom_vjp_call_p.get_bind_params(dict(params))
    _, fwd, bwd = bind_params["subfuns"]
    flags = [False] * num_consts + [True] * (len(primals) - num_consts)
    fwd_in = [x for pair in zip(primals, flags, strict=True) for x in pair]
    res_and_out = fwd.call_wrapped(*fwd_in)
    _, res_tree, input_fwds = params["out_trees"]()
    n_res_out = res_tree.num_leaves - sum(f is not None for f in input_fwds)
    res_out = iter(res_and_out[:n_res_out])
    outs = res_and_out[n_res_out:]
    res = [next(res_out) if f is None else primals[f] for f in input_fwds]
    full_cts = [jnp.zeros_like(o) if _is_zero(c) else c for c, o in zip(cts, outs, strict=True)]
    cts_in = bwd.call_wrapped(*res, *full_cts)  # jax pads a Zero per closed-over constant
    return tuple(None if _is_zero(c) else c for c in cts_in)
