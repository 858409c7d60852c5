"""optax's transformation, float64 and clipping tests, ported to jaxparadigm.optim (C4.1-C4.4).

Upstream (google-deepmind/optax 0.2.8): ``optax/_src/transform_test.py`` (``TransformTest``),
``optax/_src/float64_test.py`` (``Float64Test``) and ``optax/transforms/_clipping_test.py``
(``ClippingTest``). Only the transformations we ship are ported; each test names its upstream
case. Clipping is checked for all four of our paradigms where the upstream property applies.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl.testing import absltest, parameterized

import jaxparadigm.optim as ours
from jaxparadigm.optim.learning_rate import scale

STEPS = 50
LR = 1e-2
INIT_PARAMS = (jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))
PER_STEP_UPDATES = (jnp.array([500.0, 5.0]), jnp.array([300.0, 3.0]))


class TransformTest(parameterized.TestCase):
    @parameterized.named_parameters(
        ("adam", ours.scale_by_adam),
        ("adam_low_precision_nu", lambda: ours.scale_by_adam(nu_dtype="bfloat16")),
        ("trace", lambda: ours.trace(0.9)),
        ("trace_nesterov", lambda: ours.trace(0.9, nesterov=True)),
    )
    def test_scalers(self, scaler_constr):
        # transform_test.py TransformTest.test_scalers
        scaler = scaler_constr()
        state = jax.jit(scaler.init)(INIT_PARAMS)
        chex.assert_tree_all_finite(state)
        updates, state = jax.jit(scaler.update)(PER_STEP_UPDATES, state, INIT_PARAMS)
        chex.assert_tree_all_finite((INIT_PARAMS, updates, state))
        chex.assert_trees_all_equal_shapes(INIT_PARAMS, updates)

    def test_scale(self):
        # transform_test.py TransformTest.test_scale
        for i in range(1, STEPS + 1):
            factor = 0.1**i
            scaled, _ = scale(factor).update(PER_STEP_UPDATES, {})
            chex.assert_trees_all_close(
                scaled, jax.tree.map(lambda t, f=factor: t * f, PER_STEP_UPDATES)
            )

    def test_apply_every(self):
        # transform_test.py TransformTest.test_apply_every, with our trace(0) and scale(-LR)
        # inside optax.apply_every (a transformation we do not re-implement).
        k = 4
        zero_update = (jnp.array([0.0, 0.0]), jnp.array([0.0, 0.0]))
        sgd = ours.sgd(LR, 0.0)
        sgd_params, state_sgd = INIT_PARAMS, sgd.init(INIT_PARAMS)
        every = optax.chain(optax.apply_every(k=k), ours.trace(decay=0.0), scale(-LR))
        every_params, state_every = INIT_PARAMS, every.init(INIT_PARAMS)
        every_update = jax.jit(every.update)
        for i in range(STEPS):
            updates, state_sgd = sgd.update(PER_STEP_UPDATES, state_sgd)
            sgd_params = optax.apply_updates(sgd_params, updates)
            updates_every, state_every = every_update(PER_STEP_UPDATES, state_every)
            every_params = optax.apply_updates(every_params, updates_every)
            if i % k == k - 1:
                chex.assert_trees_all_close(every_params, sgd_params, atol=1e-6, rtol=1e-5)
            else:
                chex.assert_trees_all_close(updates_every, zero_update, atol=0.0, rtol=0.0)

    def test_rms_match_adam(self):
        # transform_test.py TransformTest.test_rms_match_adam: optax's scale_by_rms (no eps in
        # the sqrt, bias-corrected) equals our scale_by_adam(b1=0).
        fun = lambda x: optax.tree.norm(x, squared=True)
        rms = optax.scale_by_rms(decay=0.999, eps_in_sqrt=False, bias_correction=True)
        adam = ours.scale_by_adam(b1=0)
        rms_params, rms_state = INIT_PARAMS, rms.init(INIT_PARAMS)
        adam_params, adam_state = INIT_PARAMS, adam.init(INIT_PARAMS)
        for _ in range(5):
            rms_updates, rms_state = rms.update(jax.grad(fun)(rms_params), rms_state)
            rms_params = optax.apply_updates(rms_params, rms_updates)
            adam_updates, adam_state = adam.update(jax.grad(fun)(adam_params), adam_state)
            adam_params = optax.apply_updates(adam_params, adam_updates)
        chex.assert_trees_all_close(adam_params, rms_params)


FLOAT64_MODULES = [
    ("clip_by_global_norm", ours.clip_by_global_norm, {"max_norm": 1.0}),
    ("clip_grad_norm_torch", ours.clip_grad_norm_torch, {"max_norm": 1.0}),
    ("clip_by_global_norm_tf", ours.clip_by_global_norm_tf, {"clip_norm": 1.0}),
    ("clip_by_norm_per_leaf", ours.clip_by_norm_per_leaf, {"max_norm": 1.0}),
    ("trace", ours.trace, {"decay": 0.5, "nesterov": False}),
    ("trace_with_nesterov", ours.trace, {"decay": 0.5, "nesterov": True}),
    ("scale_by_adam", ours.scale_by_adam, {}),
    ("add_decayed_weights", ours.add_decayed_weights, {"weight_decay": 0.1}),
    ("scale_by_schedule", ours.scale_by_schedule, {"step_size_fn": lambda x: x * 0.1}),
    ("adam", ours.adam, {"learning_rate": 0.1}),
    ("adamw", ours.adamw, {"learning_rate": 0.1}),
    ("sgd", ours.sgd, {"learning_rate": 0.1}),
    ("sgd_momentum", ours.sgd, {"learning_rate": 0.1, "momentum": 0.9}),
]


class Float64Test(parameterized.TestCase):
    @parameterized.named_parameters(FLOAT64_MODULES)
    def test_mixed_dtype_input_outputs(self, transform_constr, transform_kwargs):
        # float64_test.py Float64Test.test_mixed_dtype_input_outputs
        dtypes = lambda tree: jax.tree.map(lambda t: t.dtype, tree)
        with jax.enable_x64(True):
            params = (
                jnp.array([1.0, 2.0], dtype=jnp.float32),
                jnp.array([3.0, 4.0], dtype=jnp.float64),
            )
            updates = (
                jnp.array([10.0, 21.0], dtype=jnp.float32),
                jnp.array([33.0, 42.0], dtype=jnp.float64),
            )
            tx = transform_constr(**transform_kwargs)
            state = jax.jit(tx.init)(params)
            updates, new_state = jax.jit(tx.update)(updates, state, params=params)
            new_params = optax.apply_updates(params, updates)
            self.assertEqual(dtypes(state), dtypes(new_state))
            self.assertEqual(dtypes(params), dtypes(new_params))


CLIPPERS = (
    ("global", ours.clip_by_global_norm),
    ("torch", lambda m: ours.clip_grad_norm_torch(m, eps=0.0)),
    ("tf", ours.clip_by_global_norm_tf),
)


class ClippingTest(parameterized.TestCase):
    @parameterized.named_parameters(*CLIPPERS)
    def test_clip_by_global_norm(self, make):
        # _clipping_test.py ClippingTest.test_clip_by_global_norm
        updates = PER_STEP_UPDATES
        for i in range(1, STEPS + 1):
            clipper = make(1.0 / i)
            updates, _ = clipper.update(updates, None)
            self.assertAlmostEqual(float(ours.global_norm(updates)), 1.0 / i, places=6)
            updates_step, _ = clipper.update(PER_STEP_UPDATES, None)
            chex.assert_trees_all_close(updates, updates_step)

    def test_clip_by_norm_per_leaf(self):
        # The same property per leaf (optax's clip_by_block_rms test, with the L2 norm).
        updates = PER_STEP_UPDATES
        for i in range(1, STEPS + 1):
            clipper = ours.clip_by_norm_per_leaf(1.0 / i)
            updates, _ = clipper.update(updates, None)
            for leaf in updates:
                self.assertAlmostEqual(float(jnp.linalg.norm(leaf)), 1.0 / i, places=6)
            updates_step, _ = clipper.update(PER_STEP_UPDATES, None)
            chex.assert_trees_all_close(updates, updates_step)

    def test_complex_global_norm_matches_optax(self):
        # Not upstream: optax.tree.norm squares |g| for complex leaves; so does ours.
        tree = (jnp.array([3 + 4j, 1j], jnp.complex64), jnp.array([2.0, -1.0]))
        np.testing.assert_allclose(ours.global_norm(tree), optax.tree.norm(tree), rtol=1e-7)
        np.testing.assert_allclose(float(ours.global_norm(tree)), np.sqrt(31.0), rtol=1e-6)
        clipped, _ = ours.clip_by_global_norm(1.0).update(tree, None)
        theirs, _ = optax.clip_by_global_norm(1.0).update(tree, None)
        chex.assert_trees_all_close(clipped, theirs, rtol=1e-6)


if __name__ == "__main__":
    absltest.main()
