"""Forward-mode interpreter: push tangents through a jaxpr with the JVP rule table (claim C3.2).

Autodidax's ``jvp_jaxpr`` over our registry. For every equation, in program order::

    all input tangents zero  ->  bind the primitive on the primals; output tangents are zero
    otherwise                ->  (out, out_dot) = get_jvp(name)(primals, tangents, **params)

A tangent is ``None`` for a symbolic zero (an input not being differentiated, an integer value).
Integer/bool outputs always get ``None``. Equations whose outputs nothing needs (and that have no
side effects) are skipped: dead code is not evaluated, so a primitive without a JVP rule that only
feeds dead code (e.g. the primal ``custom_vjp_call`` of a reverse pass) cannot stop forward mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
from jax.extend import core as jcore

from jaxparadigm.autodiff.graph import _read, _shaped
from jaxparadigm.autodiff.registry import get_jvp

__all__ = ["apply_equation", "eval_jvp", "eval_jvp_closed", "is_float", "nonzero_outputs"]


def is_float(aval_or_dtype: Any) -> bool:
    """Whether a value of this aval/dtype carries a tangent (float or complex dtype)."""
    dtype = getattr(aval_or_dtype, "dtype", aval_or_dtype)
    return jnp.issubdtype(dtype, jnp.inexact)


def apply_equation(eqn: jcore.JaxprEqn, invals: Sequence) -> list:
    """Bind ``eqn``'s primitive on ``invals``; always a list of outputs."""
    params = eqn.primitive.get_bind_params(eqn.params)
    outs = eqn.primitive.bind(*invals, **params)
    return list(outs) if eqn.primitive.multiple_results else [outs]


def _live_equations(jaxpr) -> list[bool]:
    """Backward reachability from the outputs; effectful equations are always live."""
    needed = {v for v in jaxpr.outvars if isinstance(v, jcore.Var)}
    live = [False] * len(jaxpr.eqns)
    for i in range(len(jaxpr.eqns) - 1, -1, -1):
        eqn = jaxpr.eqns[i]
        if eqn.effects or any(v in needed for v in eqn.outvars):
            live[i] = True
            needed.update(v for v in eqn.invars if isinstance(v, jcore.Var))
    return live


def _fit_tangent(t, var, name: str, operand_shapes=()):
    """Check a rule's tangent against its output var, cast to the primal dtype; ``None`` for
    integer outputs.

    Primitives broadcast implicitly: a rank-0 operand, or (jax >= 0.7) a same-rank operand with
    size-1 dimensions (``add f32[5,3] f32[1,3]``). A rule that passes such an operand's tangent
    through (``d(x + y) = dx`` when ``dy`` is zero) returns it in the operand's shape; its value
    is constant along the broadcast dimensions, so it is broadcast to the output here, once for
    every rule. Any other shape is a rule bug and raises.
    """
    if t is None or not is_float(var.aval):
        return None
    shape = tuple(var.aval.shape)
    t_shape = tuple(jnp.shape(t))
    if t_shape != shape:
        if not (jnp.ndim(t) == 0 or _implicit_broadcast(t_shape, shape, operand_shapes)):
            raise ValueError(
                f"JVP rule for {name!r} returned a tangent of shape {t_shape} for an output "
                f"of shape {shape}"
            )
        t = jnp.broadcast_to(t, shape)
    dtype = var.aval.dtype
    return t if jnp.result_type(t) == dtype else jnp.asarray(t).astype(dtype)


def _implicit_broadcast(t_shape, shape, operand_shapes) -> bool:
    """Whether ``t_shape`` is an operand's shape that the primitive broadcast to ``shape``:
    the same rank, every dimension either 1 or the output's."""
    return (
        t_shape in operand_shapes
        and len(t_shape) == len(shape)
        and all(a in (1, b) for a, b in zip(t_shape, shape, strict=True))
    )


def eval_jvp(
    jaxpr: jcore.Jaxpr, consts: Sequence, primals: Sequence, tangents: Sequence
) -> tuple[list[Any], list[Any]]:
    """Run an open ``jaxpr`` forward with tangents: ``(primal_outs, tangent_outs)`` lists. C3.2.

    ``consts`` feed ``jaxpr.constvars`` (zero tangent); ``tangents[i] is None`` is a zero tangent.
    """
    if len(primals) != len(jaxpr.invars) or len(tangents) != len(primals):
        raise TypeError(
            f"eval_jvp: jaxpr has {len(jaxpr.invars)} inputs; got {len(primals)} primals and "
            f"{len(tangents)} tangents"
        )
    env: dict = dict(zip(jaxpr.constvars, consts, strict=True))
    tan: dict = {}
    for v, p, t in zip(jaxpr.invars, primals, tangents, strict=True):
        env[v] = p
        if t is not None and is_float(v.aval):
            tan[v] = t
    read_t = lambda a: tan.get(a) if isinstance(a, jcore.Var) else None
    for eqn, live in zip(jaxpr.eqns, _live_equations(jaxpr), strict=True):
        if not live:
            continue
        invals = [_read(env, a) for a in eqn.invars]
        tans = [read_t(a) for a in eqn.invars]
        if all(t is None for t in tans):
            outs, out_tans = apply_equation(eqn, invals), [None] * len(eqn.outvars)
        else:
            name = eqn.primitive.name
            outs, out_tans = get_jvp(name)(invals, tans, **eqn.params)
            if not eqn.primitive.multiple_results:
                outs, out_tans = [outs], [out_tans]
            if len(outs) != len(eqn.outvars) or len(out_tans) != len(eqn.outvars):
                raise TypeError(
                    f"JVP rule for {name!r} returned {len(outs)} primals and {len(out_tans)} "
                    f"tangents for {len(eqn.outvars)} outputs"
                )
            shapes = {tuple(_shaped(a).shape) for a in eqn.invars}
            out_tans = [
                _fit_tangent(t, v, name, shapes) for t, v in zip(out_tans, eqn.outvars, strict=True)
            ]
        for v, o, t in zip(eqn.outvars, outs, out_tans, strict=True):
            if isinstance(v, jcore.DropVar):
                continue
            env[v] = o
            if t is not None:
                tan[v] = t
    primal_outs = [_read(env, a) for a in jaxpr.outvars]
    return primal_outs, [read_t(a) for a in jaxpr.outvars]


def eval_jvp_closed(
    closed_jaxpr: jcore.ClosedJaxpr | jcore.Jaxpr, primals: Sequence, tangents: Sequence
) -> tuple[list[Any], list[Any]]:
    """``eval_jvp`` on a ``ClosedJaxpr`` (or an open one without constvars)."""
    if isinstance(closed_jaxpr, jcore.ClosedJaxpr):
        return eval_jvp(closed_jaxpr.jaxpr, closed_jaxpr.consts, primals, tangents)
    return eval_jvp(closed_jaxpr, (), primals, tangents)


def nonzero_outputs(jaxpr: jcore.Jaxpr, nonzero_in: Sequence[bool]) -> list[bool]:
    """Which outputs can carry a nonzero tangent given which inputs do (activity analysis).

    Conservative: an equation's float outputs are active when any input is. ``eval_jvp`` never
    returns a tangent for an output this marks inactive, so control-flow rules use it to fix the
    tangent structure of loop carries and branch outputs before tracing them.
    """
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    active = {v for v, nz in zip(jaxpr.invars, nonzero_in, strict=True) if nz and is_float(v.aval)}
    for eqn in jaxpr.eqns:
        if any(isinstance(v, jcore.Var) and v in active for v in eqn.invars):
            active.update(
                v for v in eqn.outvars if not isinstance(v, jcore.DropVar) and is_float(v.aval)
            )
    return [isinstance(v, jcore.Var) and v in active for v in jaxpr.outvars]
