"""Define-by-run tape (C3.1) and saved-tensor lifetime (C2.2), with jax.grad as the oracle."""

import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jaxparadigm.autodiff import tape
from jaxparadigm.autodiff.tape import Var, saved_tensors_report


def test_seed_example_records_chain_while_running():
    """C3.1: y = x**2 + 3*x already carries AddBackward -> (PowBackward, MulBackward) -> leaf."""
    x = Var(jnp.array([1.0, 2.0]), requires_grad=True)
    y = x**2 + 3 * x
    assert y.grad_fn.name == "AddBackward"
    (pow_node, _), (mul_node, _) = y.grad_fn.next_functions
    assert (pow_node.name, mul_node.name) == ("PowBackward", "MulBackward")
    leaf = pow_node.next_functions[0][0]
    assert leaf.name == "AccumulateGrad" and leaf.variable is x
    assert mul_node.next_functions[0][0] is leaf and mul_node.next_functions[1] == (None, 0)
    y.backward(jnp.ones(2))
    np.testing.assert_allclose(x.grad, 2 * np.array([1.0, 2.0]) + 3)
    assert x.is_leaf and not y.is_leaf


def _program(a, b, c):
    """Exercises every recorded op, broadcasting included."""
    h = (a @ b).tanh() * c - (a @ b).sigmoid() / (c.exp() + 1.0)
    h = h + (a.sin() * a.cos()).sum(axis=1).reshape(-1, 1) - (-a).relu().mean()
    h = h + ((a * a + 1.0).log() ** 1.5).T.sum(axis=0).reshape(a.shape[0], 1)
    return (h**2).mean() + 2.0 / (1.0 + h.sum() ** 2)


def _jnp_program(a, b, c):
    h = jnp.tanh(a @ b) * c - jax.nn.sigmoid(a @ b) / (jnp.exp(c) + 1.0)
    h = h + (jnp.sin(a) * jnp.cos(a)).sum(axis=1).reshape(-1, 1) - jax.nn.relu(-a).mean()
    h = h + (jnp.log(a * a + 1.0) ** 1.5).T.sum(axis=0).reshape(a.shape[0], 1)
    return (h**2).mean() + 2.0 / (1.0 + h.sum() ** 2)


_JNP_GRAD = jax.jit(jax.grad(_jnp_program, argnums=(0, 1, 2)))


def _check_random_program(m, k, n, c_row, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = rng.standard_normal((n,) if c_row else (m, 1)).astype(np.float32)
    ours = tape.grad(_program, argnums=(0, 1, 2))(a, b, c)
    ref = _JNP_GRAD(a, b, c)
    for g, r in zip(ours, ref, strict=True):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("c_row", [True, False])
def test_random_programs_match_jax_grad(c_row):
    """Gradients of a program mixing all ops (c broadcast as (n,) or (m, 1)) equal jax.grad."""
    _check_random_program(3, 2, 4, c_row, seed=7)


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.booleans(), st.integers(0, 99))
def test_random_programs_many_shapes(m, k, n, c_row, seed):
    _check_random_program(m, k, n, c_row, seed)


@settings(max_examples=5, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=3),
    st.lists(st.booleans(), min_size=3, max_size=3),
    st.integers(0, 2),
)
@example(shape=[3, 3, 3], ones=[True, True, True], drop=0)  # 27 terms summing to ~0 (2e-6 off)
def test_broadcast_gradients_reduce_to_operand_shape(shape, ones, drop):
    a_shape = tuple(shape)
    b_shape = tuple(1 if o else d for d, o in zip(a_shape, ones, strict=False))[drop:]
    a = Var(np.linspace(0.5, 1.5, int(np.prod(a_shape)), dtype=np.float32).reshape(a_shape), True)
    b = Var(np.linspace(-1, 1, int(np.prod(b_shape)), dtype=np.float32).reshape(b_shape), True)
    (a * b + a - b).sum().backward()
    assert a.grad.shape == a_shape and b.grad.shape == b_shape
    np.testing.assert_allclose(a.grad, np.broadcast_to(b.value, a_shape) + 1.0, rtol=1e-6)
    expected_b = np.asarray(a.value - 1.0)
    lead = len(a_shape) - len(b_shape)
    expected_b = expected_b.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(b_shape) if d == 1 and a_shape[lead + i] != 1)
    expected_b = expected_b.sum(axis=axes, keepdims=True)
    # a sum of up to 27 float32 terms that cancel to ~0: float32 rounding grows with the count
    np.testing.assert_allclose(b.grad, expected_b, rtol=1e-5, atol=1e-6 * a.value.size)


def test_matmul_node_names_and_grads():
    m = Var(np.ones((2, 3), np.float32), requires_grad=True)
    v = Var(np.arange(3.0, dtype=np.float32), requires_grad=True)
    assert (m @ m.T).grad_fn.name == "MmBackward"
    assert (m @ v).grad_fn.name == "MvBackward"
    assert (v @ v).grad_fn.name == "DotBackward"
    (v @ v).backward()
    np.testing.assert_allclose(v.grad, 2 * np.arange(3.0))


def test_second_backward_raises_like_pytorch():
    """C2.2: saved tensors are freed by backward; a node that needs them then raises."""
    x = Var(jnp.array([1.0, 2.0]), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        _ = y.grad_fn.next_functions[0][0].saved_tensors


def test_second_backward_without_saved_tensors_is_allowed():
    """As in PyTorch, AddBackward/SumBackward save nothing, so nothing is freed."""
    x = Var(jnp.array([1.0, 2.0]), requires_grad=True)
    y = (x + 1.0).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0])


def test_retain_graph_allows_second_backward_and_accumulates():
    x = Var(jnp.array([3.0]), requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    assert saved_tensors_report(y).count == 2  # x twice: both factors need a gradient
    y.backward()
    np.testing.assert_allclose(x.grad, [12.0])
    assert saved_tensors_report(y) == (0, 0)


def test_saved_tensors_are_released_after_backward():
    """C2.2 evidence: an intermediate kept only by the graph dies once backward has run."""
    x = Var(jnp.linspace(0.0, 1.0, 256), requires_grad=True)
    hidden = (x * 2.0).exp()  # ExpBackward saves its output
    ref = weakref.ref(hidden.value)
    y = hidden.sum()
    del hidden
    gc.collect()
    assert ref() is not None
    before = saved_tensors_report(y)
    # MulBackward keeps only the factor 2.0 (x's gradient needs it; 4 B); ExpBackward keeps its
    # output (1 KiB), as PyTorch does.
    assert before == (2, 256 * 4 + 4)
    y.backward()
    gc.collect()
    assert ref() is None
    assert saved_tensors_report(y) == (0, 0)


def test_errors():
    with pytest.raises(TypeError, match="only floating point"):
        Var(jnp.array([1, 2]), requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        Var(1.0).backward()
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        (Var(jnp.ones(2), requires_grad=True) * 2).backward()
    with pytest.raises(ValueError, match="grad has shape"):
        (Var(jnp.ones(2), requires_grad=True) * 2).backward(jnp.ones(3))
    with pytest.raises(TypeError, match="scalar Var"):
        tape.grad(lambda v: v * 2)(jnp.ones(2))
    with pytest.raises(ValueError, match="out of range"):
        tape.grad(lambda v: v.sum(), argnums=2)(jnp.ones(2))
    with pytest.raises(ValueError, match="axis=3"):
        Var(jnp.ones(2)).sum(axis=3)


def test_no_graph_without_requires_grad():
    y = Var(jnp.ones(2)) * 3.0
    assert y.grad_fn is None and not y.requires_grad


def test_pow_exponent_gradient_at_base_zero_follows_pytorch():
    """d/db a**b at a == 0: 0 only where b >= 0 (PyTorch's mask); -inf = log(0) * inf for b < 0."""
    a = Var(jnp.array([0.0, 0.0, 0.0, 2.0]), requires_grad=True)
    b = Var(jnp.array([-1.0, 0.0, 2.0, 3.0]), requires_grad=True)
    (a**b).sum().backward()
    np.testing.assert_allclose(np.asarray(b.grad), [-np.inf, 0.0, 0.0, 8 * np.log(2.0)], rtol=1e-6)
