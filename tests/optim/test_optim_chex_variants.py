"""Optimiser updates under every chex variant, ``with_pmap`` included (4 forced CPU devices, see
tests/conftest.py): each device runs the same update as optax, compiled the same way (same variant)
and eagerly. adam, sgd and clip_by_global_norm are bit for bit optax's under the same variant
(the clip computes ``(g / ||g||) * max_norm`` per leaf, as optax does). Against optax run eagerly
adam and sgd are bitwise too; the clip is not, for optax itself: XLA compiles optax's division
differently under jit (a few elements one float32 ulp apart after two steps, |p| < 4), so that
comparison allows 2**-23."""

import chex
import jax
import jax.numpy as jnp
import optax
from absl.testing import parameterized

from jaxparadigm.optim import adam, clip_by_global_norm, sgd


def _tree(seed):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {"w": jax.random.normal(k1, (3, 4)), "b": jax.random.normal(k2, (4,))}


class UpdateVariantsTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(
        with_jit=True, without_jit=True, with_device=True, without_device=True, with_pmap=True
    )
    @parameterized.named_parameters(
        ("adam", lambda: adam(1e-2), lambda: optax.adam(1e-2), True),
        (
            "sgd_momentum",
            lambda: sgd(1e-2, momentum=0.9),
            lambda: optax.sgd(1e-2, momentum=0.9),
            True,
        ),
        ("clip", lambda: clip_by_global_norm(0.5), lambda: optax.clip_by_global_norm(0.5), False),
    )
    def test_two_steps_equal_optax(self, make_ours, make_ref, eager_bitwise):
        params, grads = _tree(0), _tree(1)

        def two_steps(tx):
            def run(p, g):
                state = tx.init(p)
                for _ in range(2):
                    u, state = tx.update(g, state, p)
                    p = optax.apply_updates(p, u)
                return p

            return run

        got = self.variant(two_steps(make_ours()))(params, grads)
        same_variant = self.variant(two_steps(make_ref()))(params, grads)
        chex.assert_trees_all_equal(got, same_variant)
        eager = two_steps(make_ref())(params, grads)
        chex.assert_trees_all_equal_shapes_and_dtypes(got, eager)
        if eager_bitwise:
            chex.assert_trees_all_equal(got, eager)
        else:
            chex.assert_trees_all_close(got, eager, rtol=0.0, atol=2.0**-23)
        chex.assert_tree_all_finite(got)


def test_enough_devices_for_pmap():
    assert jax.device_count() >= 2, "conftest should force several CPU devices"
    assert jnp.zeros(()).dtype == jnp.float32
