"""Our forward mode's API: jvp/jacfwd/hessian/hvp conventions, chunked Jacobians, complex values,
the shared argnums normaliser, the trace cache and the package's attributes (C3.2, C3.3)."""

import subprocess
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxparadigm.autodiff import func, grad, jacfwd, jvp, tape
from jaxparadigm.autodiff.trace_cache import (
    TraceCache,
    clear_trace_cache,
    trace_cache_info,
)
from tests.autodiff.programs import layer_norm, make_case, rel_err

RNG = np.random.default_rng(3)
X = jnp.asarray(RNG.standard_normal(5), jnp.float32)
f_vec = lambda x: jnp.sum(jnp.tanh(x) ** 3) * jnp.sum(x) + jnp.sum(jnp.sin(x) * x**2)


class TransformsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_jvp_matches_jax(self):
        v = jnp.arange(5.0)
        ours = self.variant(lambda x, v: jvp(f_vec, (x,), (v,)))(X, v)
        chex.assert_trees_all_close(ours, jax.jvp(f_vec, (X,), (v,)), rtol=1e-5, atol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_jacfwd_pytrees_and_argnums(self):
        g = lambda x, y: {"a": jnp.tanh(x * y), "b": jnp.sum(x) * y}
        ours = self.variant(jacfwd(g, argnums=(0, 1)))(X, 2.0)
        ref = jax.jacfwd(g, argnums=(0, 1))(X, 2.0)
        chex.assert_trees_all_close(ours, ref, rtol=1e-5, atol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_hessian_and_hvp(self):
        v = jnp.asarray(RNG.standard_normal(5), jnp.float32)
        h = self.variant(func.hessian(f_vec))(X)
        np.testing.assert_allclose(h, jax.hessian(f_vec)(X), rtol=1e-5, atol=1e-5)
        hv = self.variant(lambda x, v: func.hvp(f_vec, (x,), (v,)))(X, v)
        np.testing.assert_allclose(hv, jax.hessian(f_vec)(X) @ v, rtol=1e-5, atol=1e-5)

    def test_hessian_of_model_losses(self):
        for name in ("mlp",):  # attention: test_func.py's layer_norm and the slow port
            loss, params, batch = make_case(name)
            fx = lambda b, loss=loss, params=params: loss(params, b)
            ours = jax.jit(func.hessian(fx))(batch)
            self.assertLess(rel_err(ours, jax.jit(jax.hessian(fx))(batch)), 1e-4, name)

    def test_hessian_several_argnums(self):
        g = lambda a, b: jnp.sum(jnp.sin(a) * b**2)
        a, b = X[:2], X[2:4]
        ours = func.hessian(g, argnums=(0, 1))(a, b)
        chex.assert_trees_all_close(ours, jax.hessian(g, argnums=(0, 1))(a, b), rtol=1e-5)

    def test_unsorted_argnums(self):
        """Issue 23 (found by the generator): with argnums=(2, 0) the basis tangents were laid
        out in argument order but the columns read back in argnums order, so jacfwd and
        hessian silently swapped (or mixed) the blocks."""
        g = lambda a, b, c: jnp.sin(a) * jnp.sum(b) + c[0] * a**2
        args = (X[:2], X[2:5], X[3:4])
        for nums in ((2, 0), (1, 0), (2, 1, 0), (-1, 1)):
            ours = func.jacfwd(g, argnums=nums)(*args)
            chex.assert_trees_all_close(ours, jax.jacfwd(g, argnums=nums)(*args), rtol=1e-6)
            loss = lambda *a: jnp.sum(jnp.tanh(g(*a)))
            ours = func.hessian(loss, argnums=nums)(*args)
            ref = jax.hessian(loss, argnums=nums)(*args)
            chex.assert_trees_all_close(ours, ref, rtol=1e-4, atol=1e-5)


class ChunkTest(chex.TestCase):
    """chunk_size gives the same Jacobians (torch.func.jacrev(chunk_size=...) semantics)."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_chunked_equals_unchunked(self):
        g = lambda x: jnp.outer(jnp.sin(x), x[:3])
        full_r, full_f = func.jacrev(g)(X), func.jacfwd(g)(X)
        for c in (1, 4, 100):  # one row at a time, a remainder chunk (15 = 3*4 + 3), all at once
            chex.assert_trees_all_close(self.variant(func.jacrev(g, chunk_size=c))(X), full_r)
            chex.assert_trees_all_close(self.variant(func.jacfwd(g, chunk_size=c))(X), full_f)
        h = self.variant(func.hessian(f_vec, chunk_size=2))(X)
        np.testing.assert_allclose(h, func.hessian(f_vec)(X), rtol=1e-6, atol=1e-6)

    def test_chunked_layer_norm_hessian(self):
        _, params, x = make_case("layer_norm")
        fx = lambda x: layer_norm(params, x)
        ours = jax.jit(func.hessian(fx, chunk_size=5))(x)
        self.assertLess(rel_err(ours, jax.jit(jax.hessian(fx))(x)), 1e-5)

    def test_bad_chunk_size(self):
        with pytest.raises(
            ValueError, match=r"^jacrev: chunk_size: got 0, expected None or an int >= 1$"
        ):
            func.jacrev(jnp.sin, chunk_size=0)
        with pytest.raises(
            TypeError, match=r"^hessian: chunk_size: got 2\.5, expected None or an int >= 1$"
        ):
            func.hessian(f_vec, chunk_size=2.5)
        with pytest.raises(
            TypeError, match=r"^jacfwd: chunk_size: got True, expected None or an int >= 1$"
        ):
            jacfwd(jnp.sin, chunk_size=True)


class ComplexTest(chex.TestCase):
    """Complex values differentiate as jax does (issue 36; they were refused before)."""

    def test_jvp_complex_input(self):
        z = jnp.array([1 + 2j, -0.5j], jnp.complex64)
        t = jnp.array([0.5 - 1j, 2.0], jnp.complex64)
        chex.assert_trees_all_close(jvp(jnp.sin, (z,), (t,)), jax.jvp(jnp.sin, (z,), (t,)))
        g = lambda z: jnp.abs(z) * jnp.conj(z)
        chex.assert_trees_all_close(jvp(g, (z,), (t,)), jax.jvp(g, (z,), (t,)), rtol=1e-6)

    def test_jvp_complex_output(self):
        f = lambda x: x * 1j
        chex.assert_trees_all_close(jvp(f, (1.0,), (1.0,)), jax.jvp(f, (1.0,), (1.0,)))

    def test_jacfwd_complex_argument_is_named(self):
        with pytest.raises(TypeError, match=r"jacfwd requires real-valued inputs.*argument 1"):
            jacfwd(lambda x, z: x * z, argnums=(0, 1))(1.0, jnp.complex64(1 + 2j))
        self.assertRaises(TypeError, lambda: jacfwd(jnp.sin)(1 + 2j))
        z = jnp.complex64(1 + 2j)
        chex.assert_trees_all_close(
            jacfwd(jnp.sin, holomorphic=True)(z), jax.jacfwd(jnp.sin, holomorphic=True)(z)
        )

    def test_internal_complex_values_are_fine(self):
        f = lambda x: jnp.abs(jnp.exp(1j * x) * (1 + x))
        chex.assert_trees_all_close(jacfwd(f)(X), jax.jacfwd(f)(X), rtol=1e-5, atol=1e-6)


class ArgnumsTest(chex.TestCase):
    """One normaliser (argnums.py) behind grad, jacrev, jacfwd, hessian and tape.grad."""

    @pytest.mark.filterwarnings("ignore")
    def test_same_errors_everywhere(self):
        makers = {
            "grad": grad,
            "jacrev": func.jacrev,
            "jacfwd": jacfwd,
            "hessian": func.hessian,
            "tape.grad": tape.grad,
        }
        for name, make in makers.items():
            with pytest.raises(TypeError, match=f"{name}: argnums=True"):
                make(jnp.sin, argnums=True)
            with pytest.raises(ValueError, match=f"{name}: argnums=\\(0, 0\\) has repeated"):
                make(jnp.sin, argnums=(0, 0))
            with pytest.raises(ValueError, match=f"{name}: argnums=2 is out of range"):
                make(lambda x, y: x, argnums=2)(1.0, 2.0)
            with pytest.raises(ValueError, match="names the same argument twice"):
                make(lambda x, y: x, argnums=(0, -2))(1.0, 2.0)

    def test_negative_argnums(self):
        g = lambda x, y: x * jnp.sin(y)
        np.testing.assert_allclose(jacfwd(g, argnums=-1)(2.0, 1.0), 2.0 * np.cos(1.0), rtol=1e-6)


class TraceCacheTest(chex.TestCase):
    def test_eager_calls_trace_once(self):
        traces = []

        def f(x):
            traces.append(1)
            return jnp.sum(jnp.sin(x) * x)

        clear_trace_cache()
        for _ in range(3):
            grad(f)(X)
            jvp(f, (X,), (X,))
        self.assertEqual(len(traces), 1)
        grad(f)(X[:2])  # a new shape is a new trace
        grad(f)(X.astype(jnp.float16))  # so is a new dtype
        self.assertEqual(len(traces), 3)
        self.assertGreaterEqual(trace_cache_info().hits, 5)

    def test_bounded_lru(self):
        cache = TraceCache(maxsize=2)
        for k in "abc":
            cache.put(k, k.upper())
        self.assertIsNone(cache.get("a"))
        self.assertEqual((cache.get("b"), cache.get("c")), ("B", "C"))
        self.assertEqual(cache.info().size, 2)
        with pytest.raises(ValueError, match=r"^TraceCache: maxsize: got 0, expected an int >= 1$"):
            TraceCache(0)

    def test_entries_die_with_their_function(self):
        """A per-step lambda closing over a batch does not pin the batch in the cache."""
        import gc

        clear_trace_cache()
        batch = jnp.ones(7)
        f = lambda p: jnp.sum(p * batch)
        grad(f)(X[:1])
        self.assertEqual(trace_cache_info().size, 1)
        del f
        gc.collect()
        self.assertEqual(trace_cache_info().size, 0)

    def test_closures_over_tracers_are_not_cached(self):
        """A function closing over an outer jit's tracer is re-traced under each new trace."""

        @jax.jit
        def outer(y):
            return grad(lambda x: jnp.sum(x * y))(X)

        clear_trace_cache()
        np.testing.assert_allclose(outer(2.0), 2.0 * np.ones(5))
        self.assertEqual(trace_cache_info().size, 0)
        np.testing.assert_allclose(jax.jit(outer.__wrapped__)(3.0), 3.0 * np.ones(5))


def test_func_and_tape_are_attributes_after_import():
    code = (
        "import jaxparadigm.autodiff as ad; "
        "assert callable(ad.func.jacfwd) and callable(ad.tape.grad); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
