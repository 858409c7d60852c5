"""chain_for / schedule_for against optax built by hand (C4.1-C4.4)."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl.testing import absltest, parameterized

from jaxparadigm.config import ClipConfig, OptimConfig, ScheduleConfig
from jaxparadigm.optim import chain_for, schedule_for


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w": jnp.asarray(rng.normal(size=(6, 4)), jnp.float32),
        "b": jnp.asarray(rng.normal(size=(4,)), jnp.float32),
        "head": [jnp.asarray(rng.normal(size=(4, 3)), jnp.float32)],
    }


def _grads(params, step, scale=1.0):
    rng = np.random.default_rng(1000 + step)
    return jax.tree.map(
        lambda p: jnp.asarray(scale * rng.normal(size=p.shape), jnp.float32), params
    )


def _run(tx, steps=20, scale=1.0):
    params = _params()
    state = tx.init(params)
    update = jax.jit(tx.update)
    for i in range(steps):
        updates, state = update(_grads(params, i, scale), state, params)
        params = optax.apply_updates(params, updates)
    return params, state


def _cfg(**kw):
    clip = kw.pop("clip", ClipConfig(style="none"))
    schedule = kw.pop("schedule", ScheduleConfig())
    return OptimConfig(clip=clip, schedule=schedule, **kw)


class ChainForTest(parameterized.TestCase):
    def test_adamw_cosine_is_bitwise_optax(self):
        cfg = _cfg(
            name="adamw",
            learning_rate=3e-3,
            weight_decay=0.05,
            schedule=ScheduleConfig(name="cosine_decay", decay_steps=15, alpha=0.1),
        )
        ref = optax.adamw(optax.cosine_decay_schedule(3e-3, 15, 0.1), weight_decay=0.05)
        ours, _ = _run(chain_for(cfg))
        theirs, _ = _run(ref)
        chex.assert_trees_all_equal(ours, theirs)

    def test_adam_with_global_clip_matches_optax_chain(self):
        cfg = _cfg(name="adam", learning_rate=1e-2, clip=ClipConfig(style="global", max_norm=1.0))
        ref = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
        ours, _ = _run(chain_for(cfg), scale=3.0)  # norms ~ 3*sqrt(40): clipping is active
        theirs, _ = _run(ref, scale=3.0)
        chex.assert_trees_all_equal(ours, theirs)

    def test_adam_l2_decay_matches_optax_chain(self):
        cfg = _cfg(name="adam", learning_rate=1e-2, weight_decay=0.1)
        ref = optax.chain(optax.add_decayed_weights(0.1), optax.adam(1e-2))
        chex.assert_trees_all_close(_run(chain_for(cfg))[0], _run(ref)[0], rtol=1e-6, atol=1e-7)

    def test_sgd_momentum_warmup_matches_optax(self):
        cfg = _cfg(
            name="sgd",
            learning_rate=0.1,
            momentum=0.9,
            nesterov=True,
            schedule=ScheduleConfig(name="linear", warmup_steps=5, decay_steps=10, end_value=0.01),
        )
        sched = optax.join_schedules(
            [optax.linear_schedule(0.0, 0.1, 5), optax.linear_schedule(0.1, 0.01, 10)], [5]
        )
        ref = optax.sgd(sched, momentum=0.9, nesterov=True)
        chex.assert_trees_all_close(_run(chain_for(cfg))[0], _run(ref)[0], rtol=1e-6, atol=1e-7)

    @parameterized.parameters(
        ("adam", "global"),
        ("adamw", "torch"),
        ("sgd", "tf"),
        ("adam_torch", "per_leaf"),
        ("adam", "none"),
    )
    def test_every_combination_runs_jitted_with_donation(self, name, style):
        cfg = _cfg(
            name=name,
            momentum=0.9,
            weight_decay=0.01,
            clip=ClipConfig(style=style, max_norm=0.5),
            schedule=ScheduleConfig(name="warmup_cosine_decay", warmup_steps=2, decay_steps=8),
        )
        tx = chain_for(cfg)

        @jax.jit
        def step(params, state, grads):
            updates, state = tx.update(grads, state, params)
            return optax.apply_updates(params, updates), state

        step = jax.jit(step, donate_argnums=(0, 1))
        params = _params()
        state = tx.init(params)
        state0 = jax.tree.map(jnp.copy, state)
        for i in range(3):
            old_params = params
            params, state = step(params, state, _grads(params, i))
        # Donation took effect: the previous parameter buffers were consumed by the step.
        self.assertTrue(all(x.is_deleted() for x in jax.tree.leaves(old_params)))
        chex.assert_trees_all_equal_shapes_and_dtypes(state, state0)
        chex.assert_tree_all_finite(params)
        moved = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), params, _params())
        self.assertTrue(all(jax.tree.leaves(moved)), moved)

    def test_moment_dtypes_from_config(self):
        cfg = _cfg(mu_dtype="bfloat16", nu_dtype="float16")
        state = chain_for(cfg).init(_params())
        adam_state = state[0]
        self.assertEqual(jax.tree.leaves(adam_state.mu)[0].dtype, jnp.bfloat16)
        self.assertEqual(jax.tree.leaves(adam_state.nu)[0].dtype, jnp.float16)

    def test_rejects_non_config_and_bad_values(self):
        with self.assertRaisesRegex(TypeError, "OptimConfig"):
            chain_for({"name": "adam"})
        with self.assertRaisesRegex(
            ValueError, r"^optim\.learning_rate: got -0\.1, expected a float >= 0$"
        ):
            chain_for(_cfg(learning_rate=-0.1))
        with self.assertRaisesRegex(
            ValueError, r"^optim\.b1: got 1\.0, expected a float in \[0, 1\)$"
        ):
            chain_for(_cfg(b1=1.0))
        with self.assertRaisesRegex(
            ValueError, r"^optim\.nu_dtype: got 'int8', expected one of 'float32'"
        ):
            chain_for(_cfg(nu_dtype="int8"))
        with self.assertRaisesRegex(ValueError, "warmup_steps"):
            schedule_for(_cfg(schedule=ScheduleConfig(name="linear_lr", warmup_steps=3)))
        with self.assertRaisesRegex(ValueError, "max_norm"):
            chain_for(_cfg(clip=ClipConfig(style="global", max_norm=0.0)))


class ScheduleForTest(parameterized.TestCase):
    COUNTS = [0, 1, 4, 5, 6, 9, 10, 11, 500, 2**31 - 2, 2**31 - 1]

    @parameterized.named_parameters(
        ("constant", ScheduleConfig(name="constant"), optax.constant_schedule(2e-3)),
        (
            "linear",
            ScheduleConfig(name="linear", decay_steps=10, end_value=1e-4),
            optax.linear_schedule(2e-3, 1e-4, 10),
        ),
        (
            "polynomial",
            ScheduleConfig(name="polynomial", decay_steps=10, end_value=1e-4, power=2.0),
            optax.polynomial_schedule(2e-3, 1e-4, 2.0, 10),
        ),
        (
            "cosine_decay",
            ScheduleConfig(name="cosine_decay", decay_steps=10, alpha=0.25),
            optax.cosine_decay_schedule(2e-3, 10, 0.25),
        ),
        (
            "warmup_cosine_decay",
            ScheduleConfig(name="warmup_cosine_decay", warmup_steps=5, decay_steps=10),
            optax.warmup_cosine_decay_schedule(0.0, 2e-3, 5, 10),
        ),
        (
            "constant_with_warmup",
            ScheduleConfig(name="constant", warmup_steps=5),
            optax.join_schedules(
                [optax.linear_schedule(0.0, 2e-3, 5), optax.constant_schedule(2e-3)], [5]
            ),
        ),
    )
    def test_matches_optax_on_int32_counts(self, schedule_cfg, reference):
        ours = schedule_for(_cfg(learning_rate=2e-3, schedule=schedule_cfg))
        for count in self.COUNTS:
            c = jnp.asarray(count, jnp.int32)
            np.testing.assert_array_equal(
                np.asarray(ours(c), np.float32),
                np.asarray(reference(c), np.float32),
                err_msg=str(count),
            )

    def test_linear_lr_peak_and_logging_value(self):
        sc = ScheduleConfig(name="linear_lr", start_factor=0.25, end_factor=1.0, total_iters=4)
        sched = schedule_for(_cfg(learning_rate=0.1, schedule=sc))
        values = [float(sched(jnp.int32(t))) for t in range(6)]
        np.testing.assert_allclose(values, [0.025, 0.04375, 0.0625, 0.08125, 0.1, 0.1], rtol=1e-6)

    def test_schedule_drives_the_chain(self):
        # The logged lr equals the lr the chain applied: SGD's update is -lr(t) * g.
        cfg = _cfg(
            name="sgd",
            learning_rate=0.5,
            schedule=ScheduleConfig(name="cosine_decay", decay_steps=4),
        )
        tx, sched = chain_for(cfg), schedule_for(cfg)
        params = {"x": jnp.ones((3,))}
        state = tx.init(params)
        for t in range(6):
            updates, state = tx.update({"x": jnp.ones((3,))}, state, params)
            np.testing.assert_allclose(updates["x"], -float(sched(t)) * np.ones(3), rtol=1e-6)

    def test_config_replace_keeps_types(self):
        cfg = dataclasses.replace(_cfg(), learning_rate=1e-4)
        self.assertAlmostEqual(float(schedule_for(cfg)(0)), 1e-4)


if __name__ == "__main__":
    absltest.main()
