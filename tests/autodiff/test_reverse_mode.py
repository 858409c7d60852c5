"""grad / value_and_grad / vjp through our graph + registry, against jax.grad (C3.2, C3.3)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.autodiff import grad, value_and_grad, vjp
from tests.autodiff.programs import CASES, make_case, rel_err

TOL = 1e-6  # fp32, relative to the largest gradient entry


class OracleTest(chex.TestCase):
    """Our grad equals jax.grad on the four test programs, with and without jit / device."""

    @chex.variants(with_jit=True)
    @parameterized.named_parameters(*[(c, c) for c in CASES])
    def test_grad_params(self, case):
        f, params, batch = make_case(case)
        ours = self.variant(grad(f))(params, batch)
        ref = jax.jit(jax.grad(f))(params, batch)
        chex.assert_trees_all_equal_shapes_and_dtypes(ours, ref)
        self.assertLess(rel_err(ours, ref), TOL)

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_value_and_grad_all_variants_layer_norm(self):
        f, params, batch = make_case("layer_norm", seed=1)
        value, ours = self.variant(value_and_grad(f, argnums=(0, 1)))(params, batch)
        v_ref, g_ref = jax.jit(jax.value_and_grad(f, argnums=(0, 1)))(params, batch)
        np.testing.assert_allclose(value, v_ref, rtol=1e-6)
        self.assertLess(rel_err(ours, g_ref), TOL)


class NestingTest(chex.TestCase):
    """C3.3: grad(grad(f)) re-enters the engine; the article's example f = sum(x**3)."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_seed_example(self):
        f = lambda x: (x**3).sum()
        self.assertEqual(float(self.variant(grad(grad(f)))(2.0)), 12.0)
        x = jnp.array([1.0, -2.0, 0.5])
        g2 = self.variant(grad(lambda x: grad(f)(x).sum()))(x)
        np.testing.assert_allclose(g2, 6 * x, rtol=1e-6)

    def test_third_order_matches_jax(self):
        f = lambda x: jnp.sin(x) * jnp.exp(x) / (1.0 + x**2)
        ours = jax.jit(grad(grad(grad(f))))(0.3)
        ref = jax.jit(jax.grad(jax.grad(jax.grad(f))))(0.3)
        np.testing.assert_allclose(ours, ref, rtol=1e-5)

    def test_closure_over_outer_variable(self):
        F = lambda x, y: jnp.sin(x * y) * x
        ours = jax.jit(grad(lambda x: grad(lambda y: F(x, y))(0.7)))(0.3)
        ref = jax.jit(jax.grad(lambda x: jax.grad(lambda y: F(x, y))(0.7)))(0.3)
        np.testing.assert_allclose(ours, ref, rtol=1e-6)

    def test_mixed_with_jax_transforms(self):
        f = lambda x: jnp.sum(jnp.tanh(x) ** 2)
        x = jnp.linspace(-1.0, 1.0, 4)
        ours = jax.jit(jax.grad(lambda x: jnp.sum(grad(f)(x))))(x)
        ref = jax.jit(jax.grad(lambda x: jnp.sum(jax.grad(f)(x))))(x)
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
        batched = jax.jit(jax.vmap(grad(f)))(jnp.stack([x, 2 * x]))
        np.testing.assert_allclose(
            batched, jax.jit(jax.vmap(jax.grad(f)))(jnp.stack([x, 2 * x])), rtol=1e-6
        )


def _closing_custom_vjp(a, x):
    """A custom_vjp function whose primal, fwd and bwd close over ``a`` (a const of the call)."""

    @jax.custom_vjp
    def f(x):
        return jnp.sin(a * x) * a

    def fwd(x):
        return f(x), (jnp.cos(a * x), x)  # x is a forwarded input residual

    def bwd(res, g):
        cos_ax, _ = res
        return (g * cos_ax * a * a,)

    f.defvjp(fwd, bwd)
    return f(x)


def test_custom_vjp_closing_over_a_traced_value():
    """num_consts > 0 and a forwarded residual: input_fwds index the full primals."""
    ours = jax.jit(lambda a, x: grad(lambda x: _closing_custom_vjp(a, x))(x))(3.0, 1.0)
    ref = jax.jit(lambda a, x: jax.grad(lambda x: _closing_custom_vjp(a, x))(x))(3.0, 1.0)
    np.testing.assert_allclose(ours, ref, rtol=1e-6)
    np.testing.assert_allclose(ours, 9 * np.cos(3.0), rtol=1e-6)


class EdgeCaseTest(chex.TestCase):
    """Literals, unused and integer inputs, fan-out, outputs that are inputs, aux outputs."""

    def test_fan_out_accumulates(self):
        f = lambda x: jnp.sum(x * x + x + jnp.exp(x) * x)
        x = jnp.array([0.5, -1.0])
        np.testing.assert_allclose(grad(f)(x), jax.grad(f)(x), rtol=1e-6)

    def test_unused_and_integer_inputs(self):
        f = lambda x, n, unused: jnp.sum(x ** n.astype(jnp.float32)) + 2.0
        x = jnp.array([1.5, 2.0])
        gx, gu = grad(f, argnums=(0, 2))(x, jnp.int32(3), jnp.ones(3))
        np.testing.assert_allclose(gx, 3 * x**2, rtol=1e-6)
        np.testing.assert_array_equal(gu, jnp.zeros(3))

    def test_pow_exponent_gradient_at_base_zero_matches_jax(self):
        """d/dy x**y at x == 0 for negative, zero and positive y (nan for y < 0, as in jax)."""
        f = lambda y: jnp.sum(jnp.power(jnp.array([0.0, 0.0, 0.0, 2.0]), y))
        y = jnp.array([-1.0, 0.0, 2.0, -0.5])
        np.testing.assert_allclose(grad(f)(y), jax.grad(f)(y), rtol=1e-6)

    def test_identity_and_constant(self):
        self.assertEqual(float(grad(lambda x: x)(3.0)), 1.0)
        self.assertEqual(float(grad(lambda x: jnp.float32(2.0))(3.0)), 0.0)

    def test_has_aux(self):
        f = lambda x: (jnp.sum(x**2), {"norm": jnp.linalg.norm(x)})
        x = jnp.array([3.0, 4.0])
        g, aux = grad(f, has_aux=True)(x)
        np.testing.assert_allclose(g, 2 * x)
        np.testing.assert_allclose(aux["norm"], 5.0)
        (v, aux2), g2 = value_and_grad(f, has_aux=True)(x)
        self.assertEqual(float(v), 25.0)

    @parameterized.named_parameters(
        (
            "slices",
            lambda x: jnp.sum(x[1:3] * x[::2][:2]) + jnp.sum(jnp.concatenate([x, x[:1]]) ** 2),
        ),
        (
            "dynamic",
            lambda x: (
                jnp.sum(jax.lax.dynamic_slice(x, (1,), (2,)) ** 2)
                + jnp.sum(jax.lax.dynamic_update_slice(x, x[:2] * 3, (2,)) ** 3)
            ),
        ),
        ("pad_split", lambda x: jnp.sum(jnp.pad(x, 1) ** 3) + jnp.sum(jnp.split(x, 2)[1] ** 2)),
        (
            "minmax",
            lambda x: (
                jnp.max(x) - jnp.min(x * 2) + jnp.sum(jnp.maximum(x, 0.1) + jnp.clip(x, -0.5, 0.5))
            ),
        ),
        ("pow", lambda x: jnp.sum(jnp.abs(x) ** 2.5 + jnp.sqrt(x**2 + 1) + jnp.cbrt(x + 3.0))),
        (
            "special",
            lambda x: jnp.sum(
                jax.nn.gelu(x, approximate=False)
                + jax.nn.sigmoid(x)
                + jnp.log1p(x**2)
                + jnp.expm1(x)
                + jnp.exp2(x)
                + jnp.tan(x / 4)
            ),
        ),
        ("cumsum_where", lambda x: jnp.sum(jnp.cumsum(x) * jnp.where(x > 0, x, -x))),
        ("checkpoint", lambda x: jnp.sum(jax.checkpoint(lambda y: jnp.sin(y) * y)(x))),
        ("transpose", lambda x: jnp.sum(jnp.outer(x, x).T @ jnp.arange(4.0))),
    )
    def test_more_primitives(self, f):
        x = jnp.array([0.3, -0.7, 1.2, 0.9])
        ref = jax.jit(jax.grad(f))(x)
        np.testing.assert_allclose(jax.jit(grad(f))(x), ref, rtol=1e-5, atol=1e-6)

    def test_vjp_of_vector_function(self):
        f = lambda x, y: (jnp.tanh(x) * y, jnp.sum(x))
        x, y = jnp.array([0.1, 0.2]), jnp.array([1.0, -1.0])
        out, fn = vjp(f, x, y)
        ct = (jnp.array([1.0, 2.0]), jnp.float32(3.0))
        _, ref_fn = jax.vjp(f, x, y)
        for a, b in zip(fn(ct), ref_fn(ct), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)
        with self.assertRaisesRegex(ValueError, "cotangent structure"):
            fn(jnp.ones(2))


class ErrorTest(chex.TestCase):
    """Bad input raises one clear error before tracing."""

    def test_non_scalar_output(self):
        with self.assertRaisesRegex(TypeError, r"scalar output.*\(3,\)"):
            grad(lambda x: x * 2)(jnp.ones(3))

    def test_argnums_type(self):
        with self.assertRaisesRegex(TypeError, "argnums='a'"):
            grad(lambda x: x, argnums="a")
        with self.assertRaisesRegex(TypeError, "argnums"):
            grad(lambda x: x, argnums=())

    def test_argnums_range(self):
        with self.assertRaisesRegex(ValueError, "argnums=3 is out of range.*2 positional"):
            grad(lambda x, y: x * y, argnums=3)(1.0, 2.0)

    def test_integer_input(self):
        with self.assertRaisesRegex(TypeError, "argument 0.*int32"):
            grad(lambda n: n * 2.0)(jnp.int32(3))

    def test_integer_output(self):
        with self.assertRaisesRegex(TypeError, "floating-point output"):
            grad(lambda x: jnp.int32(1) + jnp.sum(x > 0))(1.0)

    def test_bad_has_aux(self):
        with self.assertRaisesRegex(TypeError, "has_aux=True"):
            grad(lambda x: x * 2, has_aux=True)(1.0)


@settings(max_examples=5, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=0, max_size=3),
    st.lists(st.booleans(), min_size=3, max_size=3),
    st.integers(0, 2),
)
def test_broadcast_shapes_property(shape, ones, drop):
    """Gradients of broadcast binary ops reduce back to each operand's shape (C2.4 rules)."""
    a_shape = tuple(shape)
    b_shape = tuple(1 if o else d for d, o in zip(a_shape, ones, strict=False))[drop:]
    a = jnp.linspace(0.5, 1.5, int(np.prod(a_shape))).reshape(a_shape)
    b = jnp.linspace(-1.0, 2.0, int(np.prod(b_shape))).reshape(b_shape)
    f = lambda a, b: jnp.sum(a * b + a / (b + 3.0) - b**2)
    ga, gb = jax.jit(grad(f, argnums=(0, 1)))(a, b)
    ra, rb = jax.jit(jax.grad(f, argnums=(0, 1)))(a, b)
    assert ga.shape == a_shape and gb.shape == b_shape
    np.testing.assert_allclose(ga, ra, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, rb, rtol=1e-5, atol=1e-6)


def test_eager_grad_with_other_arguments_traces_once():
    """The trace cache serves eager ``grad(f, argnums)`` too: ``f`` is traced once per (shapes,
    argnums, closed-over scalar values); a new shape, a new scalar value or a new argnums is a new
    trace, and a non-differentiated array (whose value the program bakes in) is never cached."""
    from jaxparadigm.autodiff.trace_cache import clear_trace_cache, trace_cache_info

    traces = []

    def f(x, scale, y=None):
        traces.append(1)
        out = jnp.sum(jnp.sin(x) * scale)
        return out if y is None else out + jnp.sum(x * y)

    x, y = jnp.linspace(-1.0, 1.0, 4), jnp.ones(4)
    refs = {
        k: jax.grad(f)(x, *a, y=yy)
        for k, (a, yy) in {2: ((2.0,), None), 3: ((3.0,), None), 4: ((2.0,), y)}.items()
    }
    clear_trace_cache()
    traces.clear()
    gs = [grad(f)(x, 2.0) for _ in range(3)]
    assert len(traces) == 1
    assert trace_cache_info().hits == 2
    value_and_grad(f)(x, 2.0)  # same f, same argnums split: the same entry
    assert len(traces) == 1
    g3 = grad(f)(x, 3.0)  # another scalar value is another program
    assert len(traces) == 2
    grad(f)(x[:2], 2.0)  # another shape
    grad(f, argnums=(0, 1))(x, 2.0)  # another argnums split
    assert len(traces) == 4
    grad(f, argnums=(0, 1))(x, 2.0)
    assert len(traces) == 4
    g4 = [grad(f)(x, 2.0, y=y) for _ in range(2)]  # closes over an array: traced every call
    assert len(traces) == 6
    for g in gs:
        np.testing.assert_allclose(g, refs[2], rtol=1e-6)
    np.testing.assert_allclose(g3, refs[3], rtol=1e-6)
    np.testing.assert_allclose(g4[1], refs[4], rtol=1e-6)


if __name__ == "__main__":
    pytest.main([__file__])
