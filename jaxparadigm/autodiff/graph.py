"""Define-then-run graph: a traced program, its topological order and a reverse sweep (C3.1, C3.2).

``trace(f, *example_args)`` declares the whole program first (a jaxpr: one equation per primitive
application). ``Graph.nodes`` lists the equations in topological order computed by Kahn's
algorithm (an equation is ready once every equation producing one of its inputs has run).
``Graph.backward`` walks that order in reverse and, for each equation, looks its primitive up in the
VJP registry and calls the rule; cotangents of a variable used by several equations are summed
(fan-out accumulation):

    ct[v] = sum over uses u of v of  rule_u(ct[outputs of u], primals of u)[position of v in u]

An equation whose primitive has a forward rule (``registry.register_forward``: ``jit``,
``custom_vjp_call``, ``scan``) keeps residuals in the environment under its ``Node``; the reverse
sweep hands them to the VJP rule (``residuals=``) instead of recomputing the inner forward. A call's
residuals are a ``saved.Saved`` environment: the inner graph plus the values its reverse sweep
reads.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend import core as jcore

from jaxparadigm.autodiff.registry import (
    apply_vjp,
    get_forward,
    has_forward,
    has_zero_derivative,
)
from jaxparadigm.autodiff.tape.control_flow_error import (
    CONCRETIZATION_ERRORS,
    value_control_flow_error,
)
from jaxparadigm.autodiff.tape.define_by_run import EagerGraph, is_concrete
from jaxparadigm.autodiff.trace_cache import TRACES, closes_over_tracers, trace_key

__all__ = ["Graph", "Node", "topological_order", "trace", "count_equations"]


@dataclasses.dataclass(frozen=True, eq=False)
class Node:
    """One equation of the traced program: ``outputs = name[params](*inputs)``. C3.1."""

    index: int
    name: str
    inputs: tuple
    outputs: tuple
    params: dict
    eqn: Any

    def __repr__(self) -> str:
        ins = " ".join(str(v) for v in self.inputs)
        outs = " ".join(str(v) for v in self.outputs)
        return f"Node({self.index}: {outs} = {self.name} {ins})"


def topological_order(jaxpr: jcore.Jaxpr) -> list[Node]:
    """Kahn's algorithm over a jaxpr's equations: inputs first, each node after its producers. C3.1.

    Ready equations are taken first-in first-out: the initially ready ones in equation order, then
    each newly ready equation is queued when its last producer is taken, and those freed by the same
    producer are queued in equation order. The result is deterministic, but it is not the
    smallest-position-first order across the whole queue (an early equation freed late runs after
    later equations queued before it).
    """
    eqns = list(jaxpr.eqns)
    producer: dict[Any, int] = {}
    for i, eqn in enumerate(eqns):
        for v in eqn.outvars:
            if not isinstance(v, jcore.DropVar):
                producer[v] = i
    users: list[list[int]] = [[] for _ in eqns]
    indegree = [0] * len(eqns)
    for i, eqn in enumerate(eqns):
        deps = {producer[v] for v in eqn.invars if isinstance(v, jcore.Var) and v in producer}
        indegree[i] = len(deps)
        for j in deps:
            users[j].append(i)
    ready = deque(i for i, d in enumerate(indegree) if d == 0)
    order: list[Node] = []
    while ready:
        i = ready.popleft()
        eqn = eqns[i]
        order.append(
            Node(i, eqn.primitive.name, tuple(eqn.invars), tuple(eqn.outvars), eqn.params, eqn)
        )
        for j in sorted(users[i]):
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    if len(order) != len(eqns):
        raise ValueError(f"jaxpr has a cycle: ordered {len(order)} of {len(eqns)} equations")
    return order


def _is_float(aval) -> bool:
    return jnp.issubdtype(aval.dtype, jnp.inexact)


def _shaped(atom) -> ShapedArray:
    """The abstract value of a jaxpr variable or literal, typed as the ShapedArray it is for every
    value that carries a cotangent (jax types ``Var.aval`` as the abstract base class)."""
    return cast(ShapedArray, atom.aval)


def _read(env: dict, atom):
    if isinstance(atom, jcore.Literal):
        return np.asarray(atom.val, dtype=_shaped(atom).dtype)
    return env[atom]


def count_equations(jaxpr: jcore.Jaxpr | jcore.ClosedJaxpr) -> int:
    """Number of equations in a jaxpr, those inside nested jaxprs (jit, custom calls) too. C3.3."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for sub in _params_jaxprs(eqn.params):
            total += count_equations(sub)
    return total


def _params_jaxprs(params: dict):
    for value in params.values():
        if isinstance(value, (jcore.Jaxpr, jcore.ClosedJaxpr)):
            yield value
        elif isinstance(value, (tuple, list)):
            yield from (v for v in value if isinstance(v, (jcore.Jaxpr, jcore.ClosedJaxpr)))


class Graph:
    """A declared program (closed jaxpr) with topologically ordered ``nodes``. C3.1 / C3.2.

    ``forward(flat_args)`` runs the nodes in order and keeps every intermediate value;
    ``backward(env, out_cts, wrt)`` runs the reverse sweep through the VJP registry.
    """

    def __init__(self, closed_jaxpr, in_tree=None, out_tree=None):
        if isinstance(closed_jaxpr, jcore.Jaxpr):
            closed_jaxpr = jcore.ClosedJaxpr(closed_jaxpr, ())
        self.closed_jaxpr = closed_jaxpr
        self.jaxpr = closed_jaxpr.jaxpr
        self.consts = tuple(closed_jaxpr.consts)
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.inputs = tuple(self.jaxpr.invars)
        self.outputs = tuple(self.jaxpr.outvars)
        self.nodes = topological_order(self.jaxpr)

    def __repr__(self) -> str:
        return (
            f"Graph({len(self.inputs)} inputs, {len(self.nodes)} nodes, "
            f"{len(self.outputs)} outputs)"
        )

    def __call__(self, *args):
        """Run the graph on pytree ``args`` (same structure as the example args)."""
        flat, tree = jax.tree_util.tree_flatten(args)
        if self.in_tree is not None and tree != self.in_tree:
            raise TypeError(f"Graph called with structure {tree}; traced with {self.in_tree}")
        env = self.forward(flat, [False] * len(self.inputs))  # evaluation only: no residuals
        outs = [_read(env, v) for v in self.outputs]
        return jax.tree_util.tree_unflatten(self.out_tree, outs) if self.out_tree else outs

    def forward(self, flat_args: Sequence, wrt: Sequence[bool] | None = None) -> dict:
        """Evaluate every node in topological order; return the environment var -> value. C3.1.

        Nodes with a forward rule keep their residuals under their ``Node``; with ``wrt`` (the
        inputs a backward sweep will differentiate) only nodes with an active output do, the
        others are bound plainly (so ``wrt`` all False evaluates without keeping anything).
        """
        if len(flat_args) != len(self.inputs):
            raise TypeError(f"Graph expects {len(self.inputs)} inputs, got {len(flat_args)}")
        env: dict = dict(zip(self.jaxpr.constvars, self.consts, strict=True))
        env.update(zip(self.inputs, flat_args, strict=True))
        active = None if wrt is None else self.active_vars(wrt)
        for node in self.nodes:
            invals = [_read(env, v) for v in node.inputs]
            keeps = active is None or any(v in active for v in node.outputs)
            if keeps and has_forward(node.name):
                outs, env[node] = get_forward(node.name)(*invals, **node.params)
            else:
                bind_params = node.eqn.primitive.get_bind_params(node.params)
                outs = node.eqn.primitive.bind(*invals, **bind_params)
                if not node.eqn.primitive.multiple_results:
                    outs = (outs,)
            for v, val in zip(node.outputs, outs, strict=True):
                if not isinstance(v, jcore.DropVar):
                    env[v] = val
        return env

    def outputs_of(self, env: dict) -> list:
        """The flat output values from a forward environment."""
        return [_read(env, v) for v in self.outputs]

    def active_vars(self, wrt: Sequence[bool]) -> set:
        """Float variables that depend on the inputs flagged in ``wrt`` (activity analysis),
        other than through a primitive of zero derivative (``stop_gradient``, ``floor``)."""
        active = {v for v, w in zip(self.inputs, wrt, strict=True) if w and _is_float(v.aval)}
        for node in self.nodes:
            if has_zero_derivative(node.name):
                continue
            if any(isinstance(v, jcore.Var) and v in active for v in node.inputs):
                active.update(
                    v
                    for v in node.outputs
                    if not isinstance(v, jcore.DropVar) and _is_float(v.aval)
                )
        return active

    def backward(self, env: dict, out_cts: Sequence, wrt: Sequence[bool] | None = None) -> list:
        """Reverse sweep: input cotangents (``None`` = zero) given output cotangents. C3.2.

        Visits ``nodes`` in reverse topological order; each node's rule comes from the registry
        (``MissingVJPRule`` if absent); cotangents of a fanned-out variable are summed. A rule's
        ``NoDerivative`` for a differentiated operand raises ``NotDifferentiable``.
        """
        wrt = [True] * len(self.inputs) if wrt is None else list(wrt)
        active = self.active_vars(wrt)
        ct_env: dict = {}

        def accumulate(v, ct):
            if ct is None or not isinstance(v, jcore.Var) or v not in active:
                return
            aval = _shaped(v)
            if not hasattr(ct, "dtype"):  # a Python number from a user's custom bwd
                ct = jnp.asarray(ct, aval.dtype)
            if jnp.iscomplexobj(ct) and not jnp.issubdtype(aval.dtype, jnp.complexfloating):
                ct = jnp.real(ct)  # a real value's cotangent is real (jax's convention)
            if ct.dtype != aval.dtype:
                ct = ct.astype(aval.dtype)
            ct_env[v] = ct_env[v] + ct if v in ct_env else ct

        if len(out_cts) != len(self.outputs):
            raise TypeError(f"backward: {len(out_cts)} cotangents for {len(self.outputs)} outputs")
        for v, ct in zip(self.outputs, out_cts, strict=True):
            accumulate(v, ct)
        for node in reversed(self.nodes):
            cts = [ct_env.pop(v, None) for v in node.outputs]
            if all(c is None for c in cts):
                continue
            primals = [_read(env, v) for v in node.inputs]
            ct = cts if node.eqn.primitive.multiple_results else cts[0]
            kw = dict(node.params, residuals=env[node]) if node in env else dict(node.params)
            differentiated = [isinstance(v, jcore.Var) and v in active for v in node.inputs]
            in_cts = apply_vjp("reverse mode", node.name, ct, primals, differentiated, **kw)
            for v, c in zip(node.inputs, in_cts, strict=True):
                if c is not None and isinstance(v, jcore.Var) and v in active:
                    if tuple(jnp.shape(c)) != tuple(_shaped(v).shape):
                        raise ValueError(
                            f"VJP rule for {node.name!r} returned a cotangent of shape "
                            f"{jnp.shape(c)} for a primal of shape {_shaped(v).shape}"
                        )
                accumulate(v, c)
        return [ct_env.get(v) if w else None for v, w in zip(self.inputs, wrt, strict=True)]

    @functools.cached_property
    def read_by_backward(self) -> tuple:
        """Environment keys the reverse sweep may read: consumed variables, then residual keys."""
        consts = set(self.jaxpr.constvars)
        keys: dict = {}
        for node in self.nodes:
            for v in node.inputs:
                if isinstance(v, jcore.Var) and v not in consts:
                    keys[v] = None
        keys.update((node, None) for node in self.nodes if has_forward(node.name))
        return tuple(keys)

    def vjp(
        self, flat_args: Sequence, wrt: Sequence[bool] | None = None
    ) -> tuple[list, Callable[[Sequence], list]]:
        """``(flat_outputs, backward)`` where ``backward(out_cts) -> input cotangents``. C3.2."""
        env = self.forward(flat_args, wrt)
        return self.outputs_of(env), lambda out_cts: self.backward(env, out_cts, wrt)

    def to_dot(self) -> str:
        """Graphviz ``digraph`` text: input/const boxes, one ellipse per node, data edges. C3.1."""
        lines = ["digraph G {", "  rankdir=TB;"]
        source: dict = {}
        names: dict = {}

        def name(v) -> str:
            return names.setdefault(v, f"v{len(names)}")

        for i, v in enumerate(self.jaxpr.constvars):
            lines.append(f'  c{i} [shape=box, label="const {name(v)}: {v.aval.str_short()}"];')
            source[v] = f"c{i}"
        for i, v in enumerate(self.inputs):
            lines.append(f'  in{i} [shape=box, label="input {name(v)}: {v.aval.str_short()}"];')
            source[v] = f"in{i}"
        for k, node in enumerate(self.nodes):
            nid = f"n{node.index}"
            lines.append(f'  {nid} [label="{k}: {node.name}"];')
            for v in node.inputs:
                if isinstance(v, jcore.Var) and v in source:
                    lines.append(f'  {source[v]} -> {nid} [label="{name(v)}"];')
            for v in node.outputs:
                if not isinstance(v, jcore.DropVar):
                    name(v)
                    source[v] = nid
        for i, v in enumerate(self.outputs):
            lines.append(f'  out{i} [shape=box, label="output {i}"];')
            if isinstance(v, jcore.Var) and v in source:
                lines.append(f'  {source[v]} -> out{i} [label="{name(v)}"];')
        lines.append("}")
        return "\n".join(lines)


def flat_trace(
    f: Callable,
    args: tuple,
    kwargs: dict | None = None,
    has_aux: bool = False,
    *,
    cache_as: tuple | None = None,
) -> tuple[Graph, list[Any], int, jax.tree_util.PyTreeDef]:
    """Trace ``f(*args, **kwargs)`` to a ``Graph`` over flat leaves; also return the aux tree.

    Returns ``(graph, flat_args, n_main_outputs, aux_tree)``; the graph's outputs are the main
    output leaves followed by the aux leaves. Traces are cached per (f, tree structure, shapes,
    dtypes, static kwargs) in ``trace_cache.TRACES``, so eager calls do not re-trace.
    ``cache_as=(fn, static)``: ``f`` is a per-call closure of ``fn`` over the values described by
    ``static`` (``trace_cache.static_key``; ``None``: not cached); the entry is keyed on those.
    When tracing fails because ``f`` uses the value of a traced argument (``if x > 0``), the
    graph is a ``tape.define_by_run.EagerGraph`` over the concrete values (never cached), or,
    with abstract arguments (under jit), ``ValueControlFlowError`` names ``f`` and the line.
    """
    kwargs = kwargs or {}
    flat_args, in_tree = jax.tree_util.tree_flatten(args)
    key_fn, static = (f, ()) if cache_as is None else cache_as
    key = trace_key(key_fn, flat_args, in_tree, kwargs, has_aux, static)
    cached = TRACES.get(key)
    if cached is not None:
        return (cached[0], flat_args, *cached[1:])
    trees: dict = {}

    def flat_fn(*leaves):
        out = f(*jax.tree_util.tree_unflatten(in_tree, leaves), **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    "has_aux=True requires the function to return a pair (output, aux); "
                    f"got {type(out).__name__}"
                )
            out, aux = out
        out_leaves, trees["out"] = jax.tree_util.tree_flatten(out)
        aux_leaves, trees["aux"] = jax.tree_util.tree_flatten(aux)
        return (*out_leaves, *aux_leaves)

    try:
        closed = jax.make_jaxpr(flat_fn)(*flat_args)
    except CONCRETIZATION_ERRORS as err:
        # f branches on (or converts) a traced value: define-by-run on concrete values, never
        # cached; with abstract arguments (under jit) one error naming f and the line
        if not all(is_concrete(x) for x in flat_args):
            raise value_control_flow_error("jaxparadigm.autodiff", key_fn, err) from None
        eager = EagerGraph(flat_fn, flat_args, trees)
        return cast(Graph, eager), flat_args, trees["out"].num_leaves, trees["aux"]
    graph = Graph(closed, in_tree, trees["out"])
    if not closes_over_tracers(closed):
        TRACES.put(key, (graph, trees["out"].num_leaves, trees["aux"]))
    return graph, flat_args, trees["out"].num_leaves, trees["aux"]


def trace(f: Callable, *example_args: Any, **example_kwargs: Any) -> Graph:
    """Declare the program ``f`` on example inputs: a ``Graph`` in topological order. C3.1.

    ``trace(f, x).nodes`` are the primitive applications (Kahn order); ``trace(f, x)(x) == f(x)``.
    """
    if not callable(f):
        raise TypeError(f"trace: f={f!r} is not callable")
    graph, _, _, _ = flat_trace(f, example_args, example_kwargs)
    return graph
