"""Define-then-run graph (C3.1): Kahn topological order, DOT text, reverse sweep with fan-out."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.extend import core as jcore

from jaxparadigm.autodiff import Graph, trace
from jaxparadigm.autodiff.graph import count_equations, topological_order


def _check_topological(graph):
    seen = set(graph.inputs) | set(graph.jaxpr.constvars)
    for node in graph.nodes:
        for v in node.inputs:
            if isinstance(v, jcore.Var):
                assert v in seen, f"{node} uses {v} before it is produced"
        seen.update(node.outputs)


def test_seed_program_nodes_in_topological_order():
    """C3.1: y = x**2 + 3*x is declared first, then executed node by node."""
    graph = trace(lambda x: x**2 + 3 * x, 2.0)
    assert [n.name for n in graph.nodes] == ["integer_pow", "mul", "add"]
    _check_topological(graph)
    assert float(graph(2.0)) == 10.0


def test_kahn_order_differs_from_program_order_but_is_valid():
    """Independent branches are interleaved by readiness (inputs first), not by source line."""
    f = lambda x: jnp.sum(jnp.sin(x)) * x[0]
    graph = trace(f, jnp.ones(3))
    order = [n.index for n in graph.nodes]
    assert sorted(order) == list(range(len(order)))
    assert order != sorted(order)
    _check_topological(graph)
    np.testing.assert_allclose(graph(jnp.arange(3.0)), f(jnp.arange(3.0)))


@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(6))))
def test_kahn_on_shuffled_equations(perm):
    """Kahn's algorithm recovers a valid order whatever order the equations are listed in."""
    f = lambda x, y: jnp.tanh(x * y) + jnp.exp(x) * (y - x)
    jaxpr = jax.make_jaxpr(f)(1.0, 2.0).jaxpr
    eqns = list(jaxpr.eqns)
    assert len(eqns) == 6
    shuffled = jaxpr.replace(eqns=[eqns[i] for i in perm])
    nodes = topological_order(shuffled)
    position = {}
    for k, node in enumerate(nodes):
        for v in node.outputs:
            position[v] = k
    for k, node in enumerate(nodes):
        for v in node.inputs:
            if isinstance(v, jcore.Var) and v in position:
                assert position[v] < k


def test_to_dot():
    dot = trace(lambda x, y: jnp.sum(x * y), jnp.ones(2), jnp.ones(2)).to_dot()
    assert dot.startswith("digraph G {") and dot.endswith("}")
    assert 'label="0: mul"' in dot and 'label="1: reduce_sum"' in dot
    assert "in0 -> n0" in dot and "in1 -> n0" in dot and "n1 -> out0" in dot


def test_backward_accumulates_fan_out():
    """x feeds three equations; its cotangent is the sum of the three contributions."""
    graph = trace(lambda x: x * x + jnp.sin(x), 0.5)
    _, backward = graph.vjp([jnp.float32(0.5)])
    (ct,) = backward([jnp.float32(1.0)])
    np.testing.assert_allclose(ct, 2 * 0.5 + np.cos(0.5), rtol=1e-6)


def test_backward_with_literal_integer_and_unused_inputs():
    f = lambda x, n, u: x * 3.0 + n.astype(jnp.float32)
    graph = trace(f, 1.0, jnp.int32(2), 5.0)
    outs, backward = graph.vjp([jnp.float32(1.0), jnp.int32(2), jnp.float32(5.0)])
    assert float(outs[0]) == 5.0
    cts = backward([jnp.float32(1.0)])
    assert float(cts[0]) == 3.0 and cts[1] is None and cts[2] is None


def test_graph_call_checks_structure():
    graph = trace(lambda t: t["a"] * 2, {"a": jnp.ones(2)})
    with pytest.raises(TypeError, match="structure"):
        graph(jnp.ones(2))
    with pytest.raises(TypeError, match="not callable"):
        trace(3)


def test_count_equations_includes_nested_jaxprs():
    f = lambda x: jax.nn.relu(x) + 1.0  # custom_jvp_call{jit{max}} then add
    closed = jax.make_jaxpr(f)(jnp.ones(2))
    assert len(closed.jaxpr.eqns) == 2
    assert count_equations(closed) == 4
    assert isinstance(Graph(closed).nodes[0].name, str)


def test_topological_order_is_fifo_over_ready_equations():
    """Pins the documented tie rule: ready equations are taken first-in first-out.

    Equations 0, 2 and 4 are ready at the start (queued in equation order); taking 0 frees 1,
    which queues behind 2 and 4; taking 1 frees 3. Smallest-index-first would give 0 1 2 3 4 and
    a stack (LIFO) 4 2 0 1 3.
    """

    def f(x, y):
        b = jnp.sin(x) * 2.0  # eqns 0 (sin), 1 (mul)
        d = b + jnp.cos(y)  # eqns 2 (cos), 3 (add)
        return d, jnp.exp(y)  # eqn 4 (exp)

    jaxpr = jax.make_jaxpr(f)(1.0, 2.0).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "mul", "cos", "add", "exp"]
    assert [n.index for n in topological_order(jaxpr)] == [0, 2, 4, 1, 3]


def test_equations_freed_by_one_producer_queue_in_equation_order():
    def f(x, y):
        a = jnp.sin(x)  # 0
        c = jnp.cos(y)  # 1, ready at the start
        return jnp.exp(a), jnp.tanh(a) + c, jnp.log(a)  # 2, 3, 4: all freed by 0 (3 needs 1)

    jaxpr = jax.make_jaxpr(f)(1.0, 2.0).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "cos", "exp", "tanh", "add", "log"]
    assert [n.index for n in topological_order(jaxpr)] == [0, 1, 2, 3, 5, 4]
