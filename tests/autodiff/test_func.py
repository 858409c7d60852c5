"""torch.func-style API (C3.2, C3.3) against jax.hessian / jax.jacrev / jax.jvp, and graph_growth."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxparadigm.autodiff import func
from jaxparadigm.claims.evidence.graph_growth import graph_growth
from tests.autodiff.programs import layer_norm, make_case, rel_err

f_vec = lambda x: jnp.sum(jnp.tanh(x) ** 3) * jnp.sum(x) + jnp.sum(jnp.sin(x) * x**2)
X = jnp.linspace(-1.0, 1.0, 5)


class HessianTest(chex.TestCase):
    @chex.variants(with_jit=True)
    def test_hessian_matches_jax(self):
        ours = self.variant(func.hessian(f_vec))(X)
        np.testing.assert_allclose(ours, jax.jit(jax.hessian(f_vec))(X), rtol=1e-5, atol=1e-5)

    @chex.variants(with_jit=True)
    def test_hvp_matches_hessian_times_v(self):
        v = jnp.arange(5.0) - 2.0
        ours = self.variant(lambda x, v: func.hvp(f_vec, (x,), (v,)))(X, v)
        np.testing.assert_allclose(ours, jax.hessian(f_vec)(X) @ v, rtol=1e-5, atol=1e-5)

    def test_hessian_of_layer_norm_wrt_input(self):
        _, params, x = make_case("layer_norm")
        fx = lambda x: layer_norm(params, x)
        ours = jax.jit(func.hessian(fx))(x)
        self.assertLess(rel_err(ours, jax.jit(jax.hessian(fx))(x)), 1e-5)

    def test_hessian_through_conv_matches_jax(self):
        """Forward-over-reverse through the conv VJP rule (its transposed convs get our JVP rule):
        a plain SAME conv and a strided, dilated, grouped one, w.r.t. input, kernel and both."""
        x = jax.random.normal(jax.random.PRNGKey(0), (1, 2, 4, 4))
        w = jax.random.normal(jax.random.PRNGKey(1), (2, 2, 3, 3))

        def plain(x, w):
            return jnp.sum(jnp.tanh(jax.lax.conv_general_dilated(x, w, (1, 1), "SAME")) ** 2)

        def grouped(x, w):
            y = jax.lax.conv_general_dilated(
                x, w[:, :1], (2, 1), ((1, 0), (0, 2)), (1, 2), (2, 1), feature_group_count=2
            )
            return jnp.sum(jnp.sin(y) * y)

        for fn in (plain, grouped):  # argnums (0, 1): the input, kernel and mixed blocks
            ours = jax.jit(func.hessian(fn, (0, 1)))(x, w)
            ref = jax.jit(jax.hessian(fn, (0, 1)))(x, w)
            chex.assert_trees_all_close(ours, ref, rtol=1e-4, atol=1e-4)
            for block in jax.tree.leaves(ref):
                self.assertGreater(float(jnp.max(jnp.abs(block))), 0.1)

    def test_hvp_several_primals(self):
        g = lambda a, b: jnp.sum(jnp.sin(a) * b**2)
        a, b = jnp.array([0.1, 0.5]), jnp.array([1.0, 2.0])
        va, vb = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])
        ours = jax.jit(lambda *p: func.hvp(g, p[:2], p[2:]))(a, b, va, vb)
        ref = jax.jvp(jax.grad(g, argnums=(0, 1)), (a, b), (va, vb))[1]
        for o, r in zip(ours, ref, strict=True):
            np.testing.assert_allclose(o, r, rtol=1e-6)


class JacobianTest(chex.TestCase):
    @chex.variants(with_jit=True)
    def test_jacrev_pytree(self):
        g = lambda x, y: {"a": jnp.tanh(x * y), "b": jnp.sum(x) * y}
        ours = self.variant(func.jacrev(g, argnums=(0, 1)))(X, 2.0)
        ref = jax.jacrev(g, argnums=(0, 1))(X, 2.0)
        chex.assert_trees_all_close(ours, ref, rtol=1e-6, atol=1e-7)

    def test_jacrev_has_aux_and_jacfwd(self):
        g = lambda x: (jnp.outer(x, x), jnp.sum(x))
        jac, aux = jax.jit(func.jacrev(g, has_aux=True))(X)
        chex.assert_trees_all_close(jac, jax.jacrev(lambda x: g(x)[0])(X), rtol=1e-6)
        chex.assert_trees_all_close(aux, jnp.sum(X))
        jf = func.jacfwd(lambda x: jnp.sin(x) * x)(X)
        chex.assert_trees_all_close(jf, jax.jacfwd(lambda x: jnp.sin(x) * x)(X), rtol=1e-6)


class ConventionTest(chex.TestCase):
    """torch.func's return conventions."""

    def test_grad_and_value(self):
        g, v = func.grad_and_value(lambda x: jnp.sum(x**2))(X)
        np.testing.assert_allclose(g, 2 * X, rtol=1e-6)
        g, (v2, aux) = func.grad_and_value(lambda x: (jnp.sum(x**2), {"m": x.max()}), has_aux=True)(
            X
        )
        assert float(aux["m"]) == 1.0 and float(v2) == float(v)
        g2, aux2 = func.grad(lambda x: (jnp.sum(x**2), 7), has_aux=True)(X)
        np.testing.assert_allclose(g2, 2 * X, rtol=1e-6)
        assert aux2 == 7

    def test_vjp_jvp_vmap(self):
        out, vjp_fn = func.vjp(jnp.sin, X)
        (ct,) = vjp_fn(jnp.ones_like(X))
        np.testing.assert_allclose(ct, jnp.cos(X), rtol=1e-6)
        out, tangent = func.jvp(jnp.sin, (X,), (jnp.ones_like(X),))
        np.testing.assert_allclose(tangent, jnp.cos(X), rtol=1e-6)
        out, vjp_fn, aux = func.vjp(lambda x: (jnp.sin(x), 3), X, has_aux=True)
        assert aux == 3
        batched = func.vmap(lambda a, b: a * b, in_dims=(0, None))(jnp.ones((3, 2)), jnp.ones(2))
        assert batched.shape == (3, 2)

    def test_errors(self):
        with pytest.raises(TypeError, match="primals and tangents must be tuples"):
            func.jvp(jnp.sin, X, X)
        with pytest.raises(TypeError, match="primals and tangents must be tuples"):
            func.hvp(f_vec, X, X)
        with pytest.raises(ValueError, match="1 primals but 2 tangents"):
            func.hvp(f_vec, (X,), (X, X))
        with pytest.raises(ValueError, match="out of range"):
            func.jacrev(jnp.sin, argnums=1)(X)
        with pytest.raises(TypeError, match="argnums"):
            func.hessian(f_vec, argnums=1.5)
        with pytest.raises(TypeError, match="not callable"):
            func.vmap(3)


def test_graph_growth_seed_example():
    """C3.3: each grad level re-traces the previous level's backward into a bigger program."""
    rows = graph_growth(lambda x: x**3, 3)
    assert [r.order for r in rows] == [0, 1, 2, 3]
    assert rows[0].equations == rows[0].jax_equations == 1
    counts = [r.equations for r in rows]
    assert all(b > a for a, b in zip(counts, counts[1:], strict=False))
    rows = graph_growth(lambda x: jnp.sin(x) * jnp.exp(x), 2, x=jnp.ones(3))
    assert rows[2].equations > rows[1].equations > rows[0].equations
    with pytest.raises(ValueError, match=r"^graph_growth: order: got -1, expected an int >= 0$"):
        graph_growth(jnp.sin, -1)
