"""Define-by-run differentiation of a function that branches on values (C3.1).

``func.grad(lambda w: w**2 if w > 0 else -w)(2.0)``: tracing the function to a jaxpr (our
define-then-run path, ``graph.flat_trace``) fails, since an abstract tracer has no truth value.
When the arguments are concrete (outside ``jit``), ``flat_trace`` falls back to this module, as
``jax.grad`` and ``torch.func.grad`` answer such functions: the function runs on tracers that
carry their *concrete* value, so ``if w > 0`` takes the branch the value says (and ``int``,
``bool``, ``float``, ``complex`` and ``.item()`` of a value are that value, a constant), and every
primitive applied records one node as it executes (the tape of C3.1, at the level of jax
primitives)::

    node = (primitive, params, input keys, input values, output keys)
    reverse sweep, nodes in reverse recording order:
        ct[input] += VJP_rule[primitive](ct[outputs], *input values, **params)

with the same VJP registry as the define-then-run graph, so the two paths give the same
numbers wherever both run. Forward mode runs the function on tracers carrying
``(value, tangent)`` and applies the JVP registry, primitive by primitive. ``custom_jvp``
functions use their rule (reverse mode: the pullback of ``t -> jvp_rule(x, t)``, linear in t,
recorded at t = 0 on a nested tape at the concrete x); ``custom_vjp`` functions call the user's
``fwd`` and, backward, ``bwd``.

The recording is never cached (it belongs to these values): each call runs the function again.
Both traces evaluate primitives on the enclosing trace, so a define-by-run level nests inside
another (``hessian`` of a branching function) as long as the values stay concrete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core

from jaxparadigm.autodiff.registry import apply_vjp, get_jvp, get_vjp, has_zero_derivative

__all__ = ["EagerGraph", "is_concrete"]


def is_concrete(x) -> bool:
    """True when ``x`` has a value now (an array, a number, or a tracer over one)."""
    return core.to_concrete_value(x) is not None


def _unzip(pairs) -> tuple[tuple, tuple]:
    pairs = list(pairs)
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def _float(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


class _ValueTracer(core.Tracer):
    """A tracer that carries its concrete ``value`` (and a ``tangent`` in forward mode)."""

    __slots__ = ("value", "key", "tangent")

    def __init__(self, trace, value, key=None, tangent=None):
        super().__init__(trace, core.typeof(value))
        self.value, self.key, self.tangent = value, key, tangent

    def to_concrete_value(self):
        return core.to_concrete_value(self.value)

    # jax's Tracer converts a concrete value for int() and bool() only; float() and complex()
    # of the value this tracer carries work the same way (the value is a constant: no gradient)
    def __float__(self):
        if is_concrete(self):
            return float(self.to_concrete_value())
        return super().__float__()

    def __complex__(self):
        if is_concrete(self):
            return complex(self.to_concrete_value())
        return super().__complex__()

    def full_lower(self):
        return self

    def cur_qdd(self):
        return core.cur_qdd(self.value)

    def get_referent(self):
        return core.get_referent(self.value)


class _Node:
    __slots__ = ("pullback", "in_keys", "out_keys")

    def __init__(self, pullback, in_keys, out_keys):
        self.pullback, self.in_keys, self.out_keys = pullback, in_keys, out_keys


class _RecordingTrace(core.Trace):
    """Evaluates each primitive on the parent trace and records a node (reverse mode)."""

    def __init__(self, parent):
        super().__init__()
        self.parent_trace, self.requires_low = parent, False
        self.nodes: list[_Node] = []
        self.avals: dict[int, Any] = {}

    def unpack(self, x):
        if isinstance(x, _ValueTracer) and x._trace is self:
            return x.value, x.key
        return x, None

    def new(self, value):
        if not _float(value):
            return value
        key = len(self.avals)
        self.avals[key] = core.typeof(value)
        return _ValueTracer(self, value, key)

    def _bind_parent(self, prim, vals, params):
        avals = tuple(core.typeof(v) for v in vals)
        return prim.bind_with_trace(self.parent_trace, tuple(vals), avals, params)

    def _record(self, pullback, keys, outs):
        wrapped = [self.new(o) for o in outs]
        out_keys = [w.key if isinstance(w, _ValueTracer) else None for w in wrapped]
        self.nodes.append(_Node(pullback, keys, out_keys))
        return wrapped

    def process_primitive(self, primitive, tracers, params, /):
        vals, keys = _unzip(map(self.unpack, tracers))
        out = self._bind_parent(primitive, vals, params)
        if all(k is None for k in keys) or has_zero_derivative(primitive):
            return out
        multiple = primitive.multiple_results
        get_vjp(primitive.name)  # a missing rule is reported where the primitive runs
        active = [k is not None for k in keys]

        def pullback(cts, vals=vals):
            ct = cts if multiple else cts[0]
            return apply_vjp("reverse mode", primitive, ct, vals, active, **params)

        wrapped = self._record(pullback, keys, out if multiple else [out])
        return wrapped if multiple else wrapped[0]

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers, /, *, symbolic_zeros):
        vals, keys = _unzip(map(self.unpack, tracers))
        if all(k is None for k in keys):
            params = dict(subfuns=(fun, jvp), symbolic_zeros=symbolic_zeros)
            return self._bind_parent(primitive, vals, params)
        # the rule's tangent output is linear in t: record it at t = 0 on a nested tape (the
        # rule's own branches on the primals see their values) and pull back through that
        inner = _RecordingTrace(self.parent_trace)
        ts = [
            inner.new(jnp.zeros(jnp.shape(v), jnp.result_type(v)))
            if _float(v)
            else np.zeros(np.shape(v), jax.dtypes.float0)
            for v in vals
        ]
        with core.set_current_trace(inner):
            outs_in = jvp.call_wrapped(*vals, *ts)
        outs, out_keys = _unzip(map(inner.unpack, outs_in))
        n = len(outs) // 2

        def pullback(cts):
            ct_env = inner.backward(out_keys[n:], cts)
            return [ct_env.get(t.key) if isinstance(t, _ValueTracer) else None for t in ts]

        return self._record(pullback, keys, list(outs[:n]))

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, tracers, /, *, out_trees, **kw):
        vals, keys = _unzip(map(self.unpack, tracers))
        if all(k is None for k in keys):
            params = dict(subfuns=(fun, fwd, bwd), out_trees=out_trees, **kw)
            return self._bind_parent(primitive, vals, params)
        fwd_in = [x for v, k in zip(vals, keys, strict=True) for x in (v, k is not None)]
        with core.set_current_trace(self.parent_trace):
            res_and_out = fwd.call_wrapped(*fwd_in)
        _, res_tree, input_fwds = out_trees()
        n_res = res_tree.num_leaves - sum(f is not None for f in input_fwds)
        res_out = iter(res_and_out[:n_res])
        res = [next(res_out) if f is None else vals[f] for f in input_fwds]
        outs = list(res_and_out[n_res:])

        def pullback(cts):
            full = [jnp.zeros_like(o) if c is None else c for c, o in zip(cts, outs, strict=True)]
            cts_in = bwd.call_wrapped(*res, *full)
            return [c if hasattr(c, "dtype") else None for c in cts_in]

        return self._record(pullback, keys, outs)

    def backward(self, out_keys: Sequence, out_cts: Sequence) -> dict:
        """The reverse sweep: ``{key: cotangent}`` given the outputs' keys and cotangents."""
        ct_env: dict[int, Any] = {}

        def accumulate(key, ct):
            if key is None or ct is None:
                return
            aval = self.avals[key]
            ct = jnp.asarray(ct, aval.dtype)
            ct_env[key] = ct_env[key] + ct if key in ct_env else ct

        for k, c in zip(out_keys, out_cts, strict=True):
            accumulate(k, c)
        # the rules run on the caller's trace (an outer recording, a vmap over cotangents)
        for node in reversed(self.nodes):
            cts = [ct_env.pop(k, None) if k is not None else None for k in node.out_keys]
            if all(c is None for c in cts):
                continue
            for k, c in zip(node.in_keys, node.pullback(cts), strict=True):
                accumulate(k, c)
        return ct_env


class _EagerJVPTrace(core.Trace):
    """Forward mode on concrete values: each primitive through the JVP registry."""

    def __init__(self, parent):
        super().__init__()
        self.parent_trace, self.requires_low = parent, False

    def unpack(self, x):
        if isinstance(x, _ValueTracer) and x._trace is self:
            return x.value, x.tangent
        return x, None

    def wrap(self, value, tangent):
        return value if tangent is None else _ValueTracer(self, value, tangent=tangent)

    def process_primitive(self, primitive, tracers, params, /):
        vals, tans = _unzip(map(self.unpack, tracers))
        if all(t is None for t in tans):
            avals = tuple(core.typeof(v) for v in vals)
            return primitive.bind_with_trace(self.parent_trace, tuple(vals), avals, params)
        with core.set_current_trace(self.parent_trace):
            out, tout = get_jvp(primitive.name)(list(vals), list(tans), **params)
        if primitive.multiple_results:
            return [self.wrap(o, t) for o, t in zip(out, tout, strict=True)]
        return self.wrap(out, tout)

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers, /, *, symbolic_zeros):
        vals, tans = _unzip(map(self.unpack, tracers))
        if all(t is None for t in tans):
            avals = tuple(core.typeof(v) for v in vals)
            params = dict(subfuns=(fun, jvp), symbolic_zeros=symbolic_zeros)
            return primitive.bind_with_trace(self.parent_trace, tuple(vals), avals, params)
        full = [
            t
            if t is not None
            else jnp.zeros(jnp.shape(v), jnp.result_type(v))
            if _float(v)
            else np.zeros(np.shape(v), jax.dtypes.float0)
            for v, t in zip(vals, tans, strict=True)
        ]
        with core.set_current_trace(self.parent_trace):
            outs = jvp.call_wrapped(*vals, *full)
        n = len(outs) // 2
        return [self.wrap(o, t) for o, t in zip(outs[:n], outs[n:], strict=True)]

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, tracers, /, **params):
        raise TypeError(
            "jvp: can't apply forward-mode autodiff (jvp) to a custom_vjp function (as in jax)"
        )


class EagerGraph:
    """A define-by-run stand-in for ``graph.Graph``: the same ``forward``/``outputs_of``/
    ``backward`` interface (and ``eval_jvp`` for forward mode), recorded anew on every run.

    ``flat_fn(*leaves)`` returns the flat outputs (main outputs, then aux); ``out_tree`` is read
    from ``trees`` after a run, as ``flat_trace`` does.
    """

    def __init__(self, flat_fn: Callable, flat_args: Sequence, trees: dict):
        self.flat_fn, self.trees = flat_fn, trees
        self._first = self._run(list(flat_args), [_float(x) for x in flat_args])
        self._first_args = list(flat_args)
        self.out_tree = trees["out"]
        self.outputs = [_Out(core.typeof(v)) for v in self._first["values"]]

    def __repr__(self) -> str:
        return f"EagerGraph({len(self._first['trace'].nodes)} recorded nodes)"

    def _run(self, flat_args, wrt) -> dict:
        with core.take_current_trace() as parent:
            trace = _RecordingTrace(parent)
            args = [trace.new(x) if w else x for x, w in zip(flat_args, wrt, strict=True)]
            with core.set_current_trace(trace):
                outs = self.flat_fn(*args)
        raw, keys = _unzip(map(trace.unpack, outs))
        in_keys = [a.key if isinstance(a, _ValueTracer) else None for a in args]
        values = [v if hasattr(v, "dtype") else jnp.asarray(v) for v in raw]
        return {"trace": trace, "values": values, "out_keys": list(keys), "in_keys": in_keys}

    def forward(self, flat_args: Sequence, wrt: Sequence[bool] | None = None) -> dict:
        wrt = [_float(x) for x in flat_args] if wrt is None else list(wrt)
        same = len(flat_args) == len(self._first_args) and all(
            a is b for a, b in zip(flat_args, self._first_args, strict=True)
        )
        if same and wrt == [k is not None for k in self._first["in_keys"]]:
            return self._first
        return self._run(list(flat_args), wrt)

    def outputs_of(self, env: dict) -> list:
        return list(env["values"])

    def backward(self, env: dict, out_cts: Sequence, wrt: Sequence[bool] | None = None) -> list:
        cts = env["trace"].backward(env["out_keys"], out_cts)
        keys = env["in_keys"]
        wrt = [k is not None for k in keys] if wrt is None else wrt
        return [cts.get(k) if w and k is not None else None for k, w in zip(keys, wrt, strict=True)]

    @property
    def read_by_backward(self) -> tuple:
        return ()

    def eval_jvp(self, flat_args: Sequence, flat_tangents: Sequence) -> tuple[list, list]:
        """Forward mode on the concrete values: ``(outputs, tangents)`` (``None`` = zero)."""
        with core.take_current_trace() as parent:
            trace = _EagerJVPTrace(parent)
            args = [trace.wrap(x, t) for x, t in zip(flat_args, flat_tangents, strict=True)]
            with core.set_current_trace(trace):
                outs = self.flat_fn(*args)
        pairs = [trace.unpack(o) for o in outs]
        return [p for p, _ in pairs], [t for _, t in pairs]


class _Out:
    """An output's abstract value, where ``Graph.outputs`` holds jaxpr variables."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval
