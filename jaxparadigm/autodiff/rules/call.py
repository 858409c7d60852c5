"""Rules for primitives that call an inner program: jit, remat, custom_jvp/custom_vjp (C3.2).

The VJP rules re-enter the graph engine on the inner jaxpr (a nested ``Graph``), which is how
grad-of-grad and jit-inside-grad compose (claim C3.3); the JVP rules run our interpreter
(``eval_jvp``) on it.

* ``jit``: the forward rule runs the inner graph and keeps its environment (a ``Saved``); the VJP
  rule sweeps the inner graph backward over it -- nothing is recomputed. Forward mode inlines
  the call: ``eval_jvp`` on the called jaxpr.
* ``checkpoint`` (``jax.checkpoint`` / ``remat``): nothing is kept; the backward sweep recomputes
  the inner forward from the block's inputs, behind an ``optimization_barrier`` when
  ``prevent_cse`` (as jax does, so XLA cannot merge the recomputation with the first forward).
  The ``policy`` is not consulted: every intermediate is recomputed. Forward mode:
  ``jax.checkpoint`` of the inner JVP, same policy.
* ``custom_vjp_call`` (``jax.custom_vjp``, ``Function``): the forward rule calls the user's
  ``fwd`` once and keeps its residuals (``Function``: the saved tensors, claim C2.2); the VJP rule
  calls the user's ``bwd`` on them. The user's forward is never re-run during backward. Forward
  mode differentiates the user's ``fwd`` (whose outputs are the primal outputs and residuals) --
  this is what jax does for forward-over-reverse (``jax.hessian``); plain ``jax.jvp`` of a
  ``custom_vjp`` function raises in jax instead (a documented difference).
* ``custom_jvp_call`` (``jax.custom_jvp``: ``jax.nn.relu``, ``softplus``): forward mode runs the
  function's OWN JVP rule (``jax.nn.relu``'s ``select(x > 0, t, 0)``); reverse mode linearises
  and transposes it (Autodidax's linearize + transpose): our reverse sweep over the rule's
  program ``(x, t) -> (f(x), J t)`` with only ``t`` differentiated gives ``J^T ct``, so the rule,
  not the body, decides (``grad(jax.nn.relu)(0.0) == 0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src import ad_util
from jax._src.custom_derivatives import custom_vjp_call_p
from jax.dtypes import float0
from jax.extend import core as jcore

from jaxparadigm.autodiff.graph import Graph
from jaxparadigm.autodiff.jvp_interpreter import eval_jvp, eval_jvp_closed, is_float
from jaxparadigm.autodiff.registry import register_forward, register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import add_tangents, instantiate, scatter_nonzero
from jaxparadigm.autodiff.saved import Saved

__all__ = ["custom_rule_jvp_program"]


def _inner_vjp(jaxpr, cts, primals, active):
    """Run our forward + reverse sweep over an inner (closed or open) jaxpr; ``active``: the
    differentiated inputs."""
    graph = Graph(jaxpr)
    _, backward = graph.vjp(primals, active)
    return tuple(backward(list(cts)))


# "pjit", "core_call": legacy names (no primitive of jax 0.10 has them; older jax named its jit
# primitive "pjit"), kept as aliases so lookups by those names keep working.
@register_forward(P.jit_p, "pjit", P.closed_call_p, "core_call")
def _jit_forward(*primals, jaxpr=None, call_jaxpr=None, **params):
    """Run the called graph; keep its forward environment as the residuals."""
    graph = Graph(jaxpr if jaxpr is not None else call_jaxpr)
    env = graph.forward(primals)
    return graph.outputs_of(env), Saved.of(graph, env)


@register_vjp(P.jit_p, "pjit", P.closed_call_p, "core_call", takes_active=True)
def _jit_vjp(cts, *primals, jaxpr=None, call_jaxpr=None, residuals=None, active=None, **params):
    """The cotangents of the call's inputs are those of the called graph's inputs (the sweep
    differentiates the ``active`` ones, all when ``None``)."""
    if residuals is None:
        _, residuals = _jit_forward(*primals, jaxpr=jaxpr, call_jaxpr=call_jaxpr)
    return tuple(residuals.backward(cts, wrt=active))


@register_jvp(P.jit_p, "pjit", P.closed_call_p, "core_call")
def _call_jvp(primals, tangents, *, jaxpr=None, call_jaxpr=None, **params):
    """A call is transparent to differentiation: push tangents through the called jaxpr."""
    return eval_jvp_closed(jaxpr if jaxpr is not None else call_jaxpr, primals, tangents)


# "checkpoint": the legacy name of remat_p ("remat2" in jax 0.10), kept as an alias.
@register_vjp(P.remat_p, "checkpoint", takes_active=True)
def _remat_vjp(cts, *primals, jaxpr, prevent_cse=True, active=None, **params):
    """Rematerialised block: recompute the inner forward in the backward sweep, then sweep back."""
    if prevent_cse and primals:
        primals = lax.optimization_barrier(tuple(primals))
    return _inner_vjp(jaxpr, cts, primals, active)


@register_jvp(P.remat_p, "checkpoint")
def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy, **params):
    """``jax.checkpoint`` of the inner JVP: rematerialisation survives forward mode."""
    nz = [t is not None for t in tangents]

    def inner(ps, ts):
        return eval_jvp(jaxpr, (), ps, scatter_nonzero(ts, nz))

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


@register_forward(P.custom_jvp_call_p)
def _custom_jvp_call_forward(
    *primals, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros, **params
):
    """The primal outputs as the function's OWN JVP rule computes them, as jax's linearize does.

    Same values as the body (for a consistent rule), but a derivative of higher order then
    differentiates the rule's primal expression, not the body again through the custom rule:
    with ``f = custom_jvp(sin)`` whose rule says ``2 cos(x) t``, ``grad(grad(sin . f))`` uses
    ``d sin(x) = cos(x)`` for the primal, as jax does. With closed-over values (differentiated
    through the body, below) the primitive is bound as it is. Nothing is kept (the VJP rule
    recomputes its program).
    """
    if num_consts:
        outs = _bind_custom_jvp(
            primals, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros, params
        )
        return outs, None
    floats = [jnp.issubdtype(jnp.result_type(a), jnp.inexact) for a in primals]
    jaxpr, consts, out_zeros, flags = custom_rule_jvp_program(
        primals, jvp_jaxpr_fun, symbolic_zeros, floats
    )
    primal_only = jaxpr.replace(outvars=jaxpr.outvars[: len(out_zeros)])
    tangents = _zero_tangents(primals, floats, flags)
    outs, _ = eval_jvp(primal_only, consts, [*primals, *tangents], [None] * len(jaxpr.invars))
    return list(outs), None


def _bind_custom_jvp(primals, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros, params):
    from jax._src.custom_derivatives import custom_jvp_call_p

    eqn_params = dict(
        params,
        call_jaxpr=call_jaxpr,
        jvp_jaxpr_fun=jvp_jaxpr_fun,
        num_consts=num_consts,
        symbolic_zeros=symbolic_zeros,
    )
    return custom_jvp_call_p.bind(*primals, **custom_jvp_call_p.get_bind_params(eqn_params))


def _zero_tangents(args, floats, flags):
    return [
        jnp.zeros(jnp.shape(a), jnp.result_type(a)) if fl else np.zeros(np.shape(a), float0)
        for a, fl, f in zip(args, floats, flags, strict=True)
        if f
    ]


@register_vjp(P.custom_jvp_call_p)
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
    tangents = _zero_tangents(args, floats, flags)
    wrt = [False] * len(args) + [fl for fl, f in zip(floats, flags, strict=True) if f]
    nz_cts = [c for c, z in zip(cts, out_zeros, strict=True) if not z]
    graph = Graph(jcore.ClosedJaxpr(jaxpr, consts))
    _, backward = graph.vjp([*args, *tangents], wrt)
    t_cts = iter(backward([None] * len(out_zeros) + nz_cts)[len(args) :])
    arg_cts = [next(t_cts) if f else None for f in flags]
    const_cts = [None] * num_consts
    if any(jnp.issubdtype(jnp.result_type(c), jnp.inexact) for c in primals[:num_consts]):
        body_wrt = [True] * num_consts + [False] * len(args)
        const_cts = list(_inner_vjp(call_jaxpr, cts, primals, body_wrt)[:num_consts])
    return (*const_cts, *arg_cts)


@register_jvp(P.custom_jvp_call_p)
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
    touts = scatter_nonzero(outs[n_out:], [not z for z in out_zeros])
    if any(t is not None for t in tangents[:num_consts]):
        body_t = [*tangents[:num_consts], *[None] * len(args)]
        _, from_consts = eval_jvp_closed(call_jaxpr, primals, body_t)
        touts = [add_tangents(a, b) for a, b in zip(touts, from_consts, strict=True)]
    return list(outs[:n_out]), touts


def _is_zero(x) -> bool:
    return x is None or isinstance(x, ad_util.Zero)


@register_forward(P.custom_vjp_call_p)
def _custom_vjp_forward(*primals, **params):
    """Call the user's ``fwd`` once: ``(outputs, residuals)``.

    ``primals`` are the ``num_consts`` closed-over values followed by the real arguments; the
    ``input_fwds`` of ``out_trees`` (residuals that are forwarded inputs) index the full
    ``primals`` (jax shifts them by ``num_consts`` when it stages the call).
    """
    num_consts = params["num_consts"]
    _, fwd, _ = custom_vjp_call_p.get_bind_params(dict(params))["subfuns"]
    flags = [False] * num_consts + [True] * (len(primals) - num_consts)
    fwd_in = [x for pair in zip(primals, flags, strict=True) for x in pair]
    res_and_out = fwd.call_wrapped(*fwd_in)
    _, res_tree, input_fwds = params["out_trees"]()
    n_res_out = res_tree.num_leaves - sum(f is not None for f in input_fwds)
    res_out = iter(res_and_out[:n_res_out])
    res = [next(res_out) if f is None else primals[f] for f in input_fwds]
    return list(res_and_out[n_res_out:]), res


@register_vjp(P.custom_vjp_call_p)
def _custom_vjp_call_vjp(cts, *primals, residuals=None, **params):
    """The user's ``bwd`` on the residuals its ``fwd`` saved in the forward sweep.

    Closed-over constants receive zero cotangent (``None``): jax's own bwd wrapper returns
    symbolic zeros for them. Called on its own (no forward sweep), the rule runs ``fwd`` first.
    """
    outs = None
    if residuals is None:
        outs, residuals = _custom_vjp_forward(*primals, **params)
    _, _, bwd = custom_vjp_call_p.get_bind_params(dict(params))["subfuns"]
    out_avals = params["call_jaxpr"].out_avals
    full_cts = [
        jnp.zeros(a.shape, a.dtype) if _is_zero(c) else c
        for c, a in zip(cts, out_avals, strict=True)
    ]
    del outs
    cts_in = bwd.call_wrapped(*residuals, *full_cts)  # jax pads a Zero per closed-over constant
    return tuple(None if _is_zero(c) else c for c in cts_in)


@register_jvp(P.custom_vjp_call_p)
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
