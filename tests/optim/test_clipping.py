"""Clipping paradigms (C4.4) against optax, TF's and torch's formulas."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import absltest, parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.optim import clipping


def _tree(scale, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w": jnp.asarray(scale * rng.normal(size=(6, 5)), jnp.float32),
        "layers": [
            jnp.asarray(scale * rng.normal(size=(5,)), jnp.float32),
            jnp.asarray(scale * 10 * rng.normal(size=(2, 2)), jnp.float32),
        ],
    }


def _np_norm(tree):
    return float(
        np.sqrt(sum(np.sum(np.asarray(x, np.float64) ** 2) for x in jax.tree.leaves(tree)))
    )


def _apply(tx, tree, variant=lambda f: f):
    return variant(tx.update)(tree, tx.init(tree))[0]


class GlobalNormTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_equals_optax_and_numpy(self):
        tree = _tree(0.7)
        ours = self.variant(clipping.global_norm)(tree)
        chex.assert_shape(ours, ())
        self.assertEqual(float(ours), float(optax.tree.norm(tree)))
        np.testing.assert_allclose(float(ours), _np_norm(tree), rtol=1e-6)


class ClipByGlobalNormTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.parameters(0.01, 0.3, 2.0)
    def test_matches_optax(self, scale):
        tree = _tree(scale)
        ours = _apply(clipping.clip_by_global_norm(1.0), tree, self.variant)
        theirs = _apply(optax.clip_by_global_norm(1.0), tree, self.variant)
        chex.assert_trees_all_equal(ours, theirs)  # bitwise: optax's ops, in optax's order
        chex.assert_trees_all_equal_shapes_and_dtypes(ours, tree)

    def test_below_threshold_is_bitwise_unchanged(self):
        tree = _tree(0.01)
        self.assertLess(_np_norm(tree), 1.0)
        chex.assert_trees_all_equal(_apply(clipping.clip_by_global_norm(1.0), tree), tree)

    def test_above_threshold_norm_becomes_max_norm(self):
        out = _apply(clipping.clip_by_global_norm(0.5), _tree(3.0))
        np.testing.assert_allclose(_np_norm(out), 0.5, rtol=1e-6)

    def test_two_hundred_steps_are_bitwise_optax(self):
        """clip -> adam for 200 jitted steps on tiny params: every parameter equals optax's bit for
        bit (the factor ``g * (m / n)`` drifted 1.2e-7 from optax's ``(g / n) * m`` by then)."""

        def run(tx):
            @jax.jit
            def step(p, s, i):
                grads = jax.tree.map(lambda a, b: 3.0 * a + jnp.sin(b) * (i % 7), g, p)
                updates, s = tx.update(grads, s, p)
                return optax.apply_updates(p, updates), s

            p, s = params, tx.init(params)
            for i in range(200):
                p, s = step(p, s, i)
            return p

        params, g = _tree(1.0, seed=3), _tree(1.0, seed=4)
        ours = run(optax.chain(clipping.clip_by_global_norm(0.5), optax.adam(1e-2)))
        theirs = run(optax.chain(optax.clip_by_global_norm(0.5), optax.adam(1e-2)))
        chex.assert_trees_all_equal(ours, theirs)

    @parameterized.parameters(jnp.bfloat16, jnp.complex64)
    def test_global_norm_and_clip_bitwise_for_other_dtypes(self, dtype):
        tree = jax.tree.map(lambda x: (x * (1 + 0.5j)).astype(dtype), _tree(2.0))
        self.assertEqual(float(clipping.global_norm(tree)), float(optax.tree.norm(tree)))
        chex.assert_trees_all_equal(
            _apply(clipping.clip_by_global_norm(1.0), tree),
            _apply(optax.clip_by_global_norm(1.0), tree),
        )

    def test_per_leaf_clip_is_optax_clip_of_each_leaf_alone(self):
        tree = _tree(2.0)
        out = _apply(clipping.clip_by_norm_per_leaf(1.0), tree)
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(tree), strict=True):
            chex.assert_trees_all_equal(a, _apply(optax.clip_by_global_norm(1.0), b))

    def test_zero_gradient_stays_zero(self):
        zeros = jax.tree.map(jnp.zeros_like, _tree(1.0))
        chex.assert_trees_all_equal(_apply(clipping.clip_by_global_norm(1.0), zeros), zeros)

    @settings(max_examples=25, deadline=None)
    @given(scale=st.floats(1e-3, 1e3), max_norm=st.floats(1e-2, 10.0), seed=st.integers(0, 5))
    def test_property_norm_bounded_direction_kept(self, scale, max_norm, seed):
        tree = _tree(scale, seed)
        out = _apply(clipping.clip_by_global_norm(max_norm), tree)
        before, after = _np_norm(tree), _np_norm(out)
        self.assertLessEqual(after, max_norm * (1 + 1e-5))
        np.testing.assert_allclose(after, min(before, max_norm), rtol=1e-5)
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(tree), strict=True):
            np.testing.assert_allclose(
                np.asarray(a) * before, np.asarray(b) * after, rtol=1e-4, atol=1e-6 * before
            )


class OtherParadigmsTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(0.01, 2.0)
    def test_torch_formula(self, scale):
        tree = _tree(scale)
        out = _apply(clipping.clip_grad_norm_torch(1.0), tree, self.variant)
        factor = min(1.0, 1.0 / (_np_norm(tree) + 1e-6))
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(tree), strict=True):
            np.testing.assert_allclose(a, np.asarray(b) * factor, rtol=1e-6)

    def test_torch_style_always_multiplies(self):
        # Norm just below max_norm: optax/TF leave it unchanged, torch shrinks it by ~eps/norm.
        tree = {"g": jnp.asarray([0.6, 0.79999], jnp.float32)}
        torch_out = _apply(clipping.clip_grad_norm_torch(1.0, eps=1e-3), tree)["g"]
        global_out = _apply(clipping.clip_by_global_norm(1.0), tree)["g"]
        np.testing.assert_array_equal(global_out, tree["g"])
        self.assertTrue(np.all(np.asarray(torch_out) < np.asarray(tree["g"])))

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.parameters(0.01, 2.0)
    def test_tf_formula(self, scale):
        tree = _tree(scale)
        out = _apply(clipping.clip_by_global_norm_tf(1.0), tree, self.variant)
        n = _np_norm(tree)
        factor = 1.0 * min(1.0 / n, 1.0 / 1.0)
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(tree), strict=True):
            np.testing.assert_allclose(a, np.asarray(b) * factor, rtol=1e-6)
        global_out = _apply(clipping.clip_by_global_norm(1.0), tree)
        chex.assert_trees_all_close(out, global_out, rtol=1e-6)

    def test_tf_infinite_norm_gives_nan(self):
        tree = {"g": jnp.asarray([jnp.inf, 1.0])}
        self.assertTrue(np.all(np.isnan(_apply(clipping.clip_by_global_norm_tf(1.0), tree)["g"])))

    def test_per_leaf_clips_each_leaf_and_differs_from_global(self):
        tree = _tree(2.0)
        out = _apply(clipping.clip_by_norm_per_leaf(1.0), tree)
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(tree), strict=True):
            n = float(np.linalg.norm(np.asarray(b)))
            np.testing.assert_allclose(a, np.asarray(b) * min(1.0, 1.0 / n), rtol=1e-6)
        global_out = _apply(clipping.clip_by_global_norm(1.0), tree)
        self.assertGreater(_np_norm(out), _np_norm(global_out) * 1.5)

    @parameterized.parameters(
        (
            lambda: clipping.clip_grad_norm_torch(1.0, eps=-1e-6),
            ValueError,
            r"^eps: got -1e-06, expected a number >= 0$",
        ),
        (
            lambda: clipping.clip_grad_norm_torch(1.0, eps=float("nan")),
            ValueError,
            r"^eps: got nan, expected a number >= 0$",
        ),
        (lambda: clipping.clip_by_global_norm("1"), TypeError, "max_norm='1'"),
    )
    def test_bad_arguments(self, make, error, message):
        # Kept: torch's clip_grad_norm_ has no eps argument (its 1e-6 is fixed), so there is no
        # peer behaviour to follow, and a negative eps can make ||g|| + eps zero. A string bound
        # fails inside optax too.
        with self.assertRaisesRegex(error, message):
            make()

    @parameterized.parameters(
        (lambda: clipping.clip_by_global_norm(0.0), r"max_norm=0\.0: .* sets every gradient to 0"),
        (lambda: clipping.clip_grad_norm_torch(-1.0), r"max_norm=-1\.0: .* negative bound"),
        (lambda: clipping.clip_by_global_norm_tf(float("inf")), r"clip_norm=inf: .* NaN"),
        (lambda: clipping.clip_by_norm_per_leaf(-2), r"max_norm=-2: .* negative bound"),
    )
    def test_surely_wrong_bounds_warn(self, make, message):
        # Issue 23: these were refused; optax, torch and TF take them (values compared in
        # test_optax_dropin_values.py). They warn, naming the argument and the consequence.
        with self.assertWarnsRegex(UserWarning, message):
            make()


@pytest.mark.crosscheck
@pytest.mark.parametrize("scale", [0.01, 0.1, 3.0])
def test_clip_grad_norm_torch_matches_torch(scale):
    torch = pytest.importorskip("torch")
    tree = _tree(scale, seed=2)
    leaves = jax.tree.leaves(tree)
    params = [torch.nn.Parameter(torch.zeros(x.shape)) for x in leaves]
    for p, x in zip(params, leaves, strict=True):
        p.grad = torch.tensor(np.asarray(x))
    total = torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
    ours = jax.tree.leaves(_apply(clipping.clip_grad_norm_torch(1.0), tree))
    for p, a in zip(params, ours, strict=True):
        np.testing.assert_allclose(np.asarray(a), p.grad.numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(float(total), float(clipping.global_norm(tree)), rtol=1e-6)


if __name__ == "__main__":
    absltest.main()
