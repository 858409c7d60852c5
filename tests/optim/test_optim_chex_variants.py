"""Optimiser updates under every chex variant, ``with_pmap`` included (4 forced CPU devices, see
tests/conftest.py): each device runs the same update and must equal optax's, bit for bit."""

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
        ("adam", lambda: adam(1e-2), lambda: optax.adam(1e-2)),
        ("sgd_momentum", lambda: sgd(1e-2, momentum=0.9), lambda: optax.sgd(1e-2, momentum=0.9)),
        ("clip", lambda: clip_by_global_norm(0.5), lambda: optax.clip_by_global_norm(0.5)),
    )
    def test_two_steps_equal_optax(self, make_ours, make_ref):
        params, grads = _tree(0), _tree(1)
        ours, ref = make_ours(), make_ref()

        @self.variant
        def two_steps(p, g):
            state = ours.init(p)
            for _ in range(2):
                u, state = ours.update(g, state, p)
                p = optax.apply_updates(p, u)
            return p

        state = ref.init(params)
        expected = params
        for _ in range(2):
            u, state = ref.update(grads, state, expected)
            expected = optax.apply_updates(expected, u)
        got = two_steps(params, grads)
        chex.assert_trees_all_equal_shapes_and_dtypes(got, expected)
        chex.assert_trees_all_close(got, expected, rtol=1e-6, atol=1e-7)
        chex.assert_tree_all_finite(got)


def test_enough_devices_for_pmap():
    assert jax.device_count() >= 2, "conftest should force several CPU devices"
    assert jnp.zeros(()).dtype == jnp.float32
