"""Function on jax.custom_vjp (C2.2): residuals are exactly the saved tensors."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.ad_checkpoint import saved_residuals

from jaxparadigm.autodiff import Function, grad


class SaveOutputExp(Function):
    """exp saving its output: backward needs nothing else."""

    @staticmethod
    def forward(ctx, x):
        y = jnp.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class RecomputeExp(Function):
    """exp saving nothing but a Python scale: backward recomputes from the input."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.save_for_backward(x)
        return jnp.exp(x) * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * jnp.exp(x) * ctx.scale, None


class SaveEverything(Function):
    """tanh(x @ w) keeping x, w, the pre-activation and the output (more than needed)."""

    @staticmethod
    def forward(ctx, x, w):
        z = x @ w
        y = jnp.tanh(z)
        ctx.save_for_backward(x, w, z, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, _, y = ctx.saved_tensors
        dz = g * (1 - y * y)
        return dz @ w.T, x.T @ dz


class SaveMinimal(Function):
    """Same op, keeping only x and w and recomputing tanh in backward."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return jnp.tanh(x @ w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        y = jnp.tanh(x @ w)
        dz = g * (1 - y * y)
        return dz @ w.T, x.T @ dz


X = jnp.linspace(-1.0, 1.0, 12).reshape(3, 4)
W = jnp.linspace(0.5, -0.5, 8).reshape(4, 2)


class FunctionTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_grad_matches_jax(self):
        f = lambda x, w: jnp.sum(SaveEverything.apply(x, w) ** 2)
        ref = jax.jit(jax.grad(lambda x, w: jnp.sum(jnp.tanh(x @ w) ** 2), argnums=(0, 1)))(X, W)
        ours = self.variant(jax.grad(f, argnums=(0, 1)))(X, W)
        for a, b in zip(ours, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    def test_our_engine_calls_the_user_backward(self):
        """Our grad reaches custom_vjp_call and runs Function.backward, not the forward's ops."""

        class Doubled(Function):
            @staticmethod
            def forward(ctx, x):
                return jnp.sin(x)

            @staticmethod
            def backward(ctx, g):
                return 2 * g

        x = jnp.array([0.1, 0.2])
        np.testing.assert_allclose(grad(lambda x: jnp.sum(Doubled.apply(x)))(x), [2.0, 2.0])
        np.testing.assert_allclose(
            jax.jit(grad(lambda x: jnp.sum(SaveOutputExp.apply(x))))(x), jnp.exp(x), rtol=1e-6
        )

    def test_vmap_jit_and_static_args(self):
        f = jax.jit(jax.vmap(jax.grad(lambda x: RecomputeExp.apply(x, 2.0))))
        x = jnp.arange(3.0)
        np.testing.assert_allclose(f(x), 2 * jnp.exp(x), rtol=1e-6)
        np.testing.assert_allclose(
            jax.vmap(lambda x: SaveOutputExp.apply(x))(x), jnp.exp(x), rtol=1e-6
        )

    def test_python_scalar_arguments_can_be_saved(self):
        """jax hands fwd Python-scalar primals as TypedFloat/TypedInt; forward sees arrays."""

        class Cube(Function):
            @staticmethod
            def forward(ctx, x, p):
                ctx.save_for_backward(x, p)
                return x**p

            @staticmethod
            def backward(ctx, g):
                x, p = ctx.saved_tensors
                return g * p * x ** (p - 1), None

        f = lambda x: Cube.apply(x, 3)
        self.assertEqual(float(jax.grad(f)(2.0)), 12.0)
        self.assertEqual(float(grad(f)(2.0)), 12.0)
        self.assertEqual(float(jax.jit(jax.grad(f))(2.0)), 12.0)

    def test_residuals_are_the_saved_tensors(self):
        """C2.2: what is kept between forward and backward is exactly what was saved."""
        everything = SaveEverything.residual_report(X, W)
        minimal = SaveMinimal.residual_report(X, W)
        # x (3x4) + w (4x2) + z (3x2) + y (3x2) floats vs x + w only.
        self.assertEqual(everything, (4, 4 * (12 + 8 + 6 + 6)))
        self.assertEqual(minimal, (2, 4 * (12 + 8)))
        # Independent measurement by JAX's own residual analysis of the linearised program.
        count = lambda fn: len(saved_residuals(fn, X, W))
        self.assertEqual(count(SaveEverything.apply), 4)
        self.assertEqual(count(SaveMinimal.apply), 2)
        self.assertEqual(SaveOutputExp.residual_report(X), (1, 48))
        # A Python float attribute is static data; a saved array is a residual.
        self.assertEqual(RecomputeExp.residual_report(X, 2.0), (2, 48 + 4))

    def test_errors(self):
        with pytest.raises(TypeError, match="apply"):
            SaveOutputExp()

        class WrongArity(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError, match="returned 1 gradient"):
            jax.grad(lambda x: WrongArity.apply(x, 2.0))(1.0)

        class NoBackward(Function):
            @staticmethod
            def forward(ctx, x):
                return x

        with pytest.raises(TypeError, match="forward and backward"):
            NoBackward.apply(1.0)

        class BadSave(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward("x")
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError, match="save_for_backward: argument 0 is a str"):
            BadSave.apply(1.0)
