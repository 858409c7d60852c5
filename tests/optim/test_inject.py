"""Live hyper-parameters (inject_hyperparams / set_hyperparams): bitwise equal to the static
optimisers and changeable without recompiling (C4.1-C4.3)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import absltest, parameterized

from jaxparadigm.config import ClipConfig, OptimConfig, ScheduleConfig
from jaxparadigm.optim import (
    InjectHyperparamsState,
    adam,
    adamw,
    chain_for,
    inject_hyperparams,
    schedules,
    set_hyperparams,
    sgd,
)

CASES = (
    ("adam", adam, dict(learning_rate=1e-2)),
    ("adam_betas", adam, dict(learning_rate=3e-3, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-9)),
    ("adam_schedule", adam, dict(learning_rate=schedules.warmup_cosine_decay(0.0, 1e-2, 10, 100))),
    ("adamw", adamw, dict(learning_rate=1e-2, weight_decay=0.1)),
    ("adamw_mask", adamw, dict(learning_rate=1e-2, weight_decay=0.3, mask={"w": True, "b": False})),
    ("adam_bf16_nu", adam, dict(learning_rate=1e-2, nu_dtype="bfloat16")),
    ("sgd", sgd, dict(learning_rate=0.05)),
    (
        "sgd_nesterov_wd",
        sgd,
        dict(learning_rate=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    ),
)


def _tree(rng):
    return {
        "w": jnp.asarray(rng.normal(size=(7, 3)), jnp.float32),
        "b": jnp.asarray(rng.normal(size=(3,)), jnp.float32),
    }


def _scanned(tx, steps=100, seed=0):
    rng = np.random.default_rng(seed)
    params = _tree(rng)
    grads = jax.tree.map(lambda *xs: jnp.stack(xs), *[_tree(rng) for _ in range(steps)])

    def body(carry, g):
        params, state = carry
        updates, state = tx.update(g, state, params)
        return (optax.apply_updates(params, updates), state), None

    return jax.jit(lambda p: jax.lax.scan(body, (p, tx.init(p)), grads)[0])(params)


def _step(tx):
    """The jitted step; ``.traces()`` counts its traces (a new input signature, a retrace, is what
    a recompilation needs; unlike ``_cache_size()``, it does not depend on jit's C++ cache, which
    read 0 in one whole-suite run)."""
    traced = []

    def step(params, state, grads):
        traced.append(1)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    jitted = jax.jit(step)
    jitted.traces = lambda: len(traced)
    return jitted


class BitwiseTest(chex.TestCase, parameterized.TestCase):
    @parameterized.named_parameters(*CASES)
    def test_100_steps_bitwise_equal_to_static(self, factory, kwargs):
        p_static, s_static = _scanned(factory(**kwargs))
        p_live, s_live = _scanned(inject_hyperparams(factory)(**kwargs))
        chex.assert_trees_all_equal(p_live, p_static)
        self.assertIsInstance(s_live, InjectHyperparamsState)
        self.assertEqual(int(s_live.count), 100)
        if factory is not sgd:  # the moments too, not only the parameters
            chex.assert_trees_all_equal(s_live.inner_state, s_static[0])

    def test_optax_wrapper_drifts_ours_does_not(self):
        # optax #583/#1532: optax's inject_hyperparams(adam) is not bitwise optax.adam, because
        # 1 - b1 is computed in float32 from a float32 b1. Measured on the installed optax.
        p_static, _ = _scanned(optax.adam(1e-2))
        p_optax_live, _ = _scanned(optax.inject_hyperparams(optax.adam)(learning_rate=1e-2))
        differing = sum(
            int(jnp.sum(a != b))
            for a, b in zip(*map(jax.tree.leaves, (p_static, p_optax_live)), strict=True)
        )
        self.assertGreater(differing, 0)
        p_ours, _ = _scanned(inject_hyperparams(adam)(1e-2))
        chex.assert_trees_all_equal(p_ours, p_static)

    def test_changed_values_equal_a_static_restart_with_them(self):
        # 5 steps at (1e-2, b1=0.9), then set_hyperparams(lr=5e-3, b1=0.8, b2=0.99): bitwise the
        # static adam(5e-3, b1=0.8, b2=0.99) continuing from the same moments.
        rng = np.random.default_rng(1)
        params, grads = _tree(rng), [_tree(rng) for _ in range(10)]
        live = inject_hyperparams(adam)(1e-2)
        live_step, p_live, s_live = _step(live), params, live.init(params)
        first, second = adam(1e-2), adam(5e-3, b1=0.8, b2=0.99)
        static_steps = (_step(first), _step(second))  # compiled the same way as the live step
        p_static, s_static = params, first.init(params)
        for i, g in enumerate(grads):
            if i == 5:
                s_live = set_hyperparams(s_live, learning_rate=5e-3, b1=0.8, b2=0.99)
            p_live, s_live = live_step(p_live, s_live, g)
            p_static, s_static = static_steps[i >= 5](p_static, s_static, g)
        self.assertEqual(live_step.traces(), 1)
        chex.assert_trees_all_equal(p_live, p_static)

    def test_lr_scale_halves_the_step(self):
        tx = inject_hyperparams(adam)(1e-2)
        rng = np.random.default_rng(0)
        params = p_half = _tree(rng)
        state, s_half = set_hyperparams(tx.init(params), lr_scale=0.5), adam(5e-3).init(params)
        step, half_step = _step(tx), _step(adam(5e-3))
        for _ in range(20):
            g = _tree(rng)
            params, state = step(params, state, g)
            p_half, s_half = half_step(p_half, s_half, g)
        chex.assert_trees_all_equal(params, p_half)  # halving a float32 is exact


class NoRecompileTest(parameterized.TestCase):
    @parameterized.named_parameters(
        (
            "adam",
            adam,
            dict(learning_rate=1e-2),
            dict(learning_rate=1e-3, b1=0.5, b2=0.9, eps=1e-6),
        ),
        ("adamw", adamw, dict(learning_rate=1e-2), dict(weight_decay=0.5, lr_scale=0.1)),
        ("sgd", sgd, dict(learning_rate=0.1, momentum=0.9, weight_decay=1e-3), dict(momentum=0.5)),
        ("schedule", adam, dict(learning_rate=schedules.linear(0.0, 1.0, 5)), dict(lr_scale=0.25)),
    )
    def test_set_hyperparams_keeps_one_compilation(self, factory, kwargs, changes):
        tx = inject_hyperparams(factory)(**kwargs)
        rng = np.random.default_rng(0)
        params = _tree(rng)
        state = tx.init(params)
        step = _step(tx)
        params, state = step(params, state, _tree(rng))
        before = jax.tree.map(np.asarray, params)
        state = set_hyperparams(state, **changes)
        for name, value in changes.items():
            self.assertEqual(float(state.hyperparams[name]), np.float32(value))
        params, state = step(params, state, _tree(rng))
        params, state = step(params, state, _tree(rng))
        self.assertEqual(step.traces(), 1, "set_hyperparams caused a recompilation")
        self.assertFalse(np.array_equal(before["w"], np.asarray(params["w"])))

    def test_schedule_value_is_recorded(self):
        tx = inject_hyperparams(sgd)(schedules.linear(0.0, 1.0, 4))
        params = {"w": jnp.ones(2)}
        state = tx.init(params)
        seen = []
        for _ in range(5):
            _, state = tx.update({"w": jnp.ones(2)}, state, params)
            seen.append(float(state.hyperparams["scheduled_learning_rate"]))
        np.testing.assert_allclose(seen, [0.0, 0.25, 0.5, 0.75, 1.0])


class ChainForLiveTest(parameterized.TestCase):
    @parameterized.parameters("adam", "adamw", "sgd")
    def test_live_chain_is_bitwise_static_chain(self, name):
        cfg = OptimConfig(
            name=name,
            learning_rate=1e-2,
            weight_decay=0.01,
            momentum=0.9,
            clip=ClipConfig(style="global", max_norm=1.0),
            schedule=ScheduleConfig(name="warmup_cosine_decay", warmup_steps=10, decay_steps=100),
        )
        p_static, _ = _scanned(chain_for(cfg))
        p_live, s_live = _scanned(chain_for(cfg, live=True))
        chex.assert_trees_all_equal(p_live, p_static)
        state = set_hyperparams(s_live, lr_scale=0.5)  # found inside the chain's tuple
        self.assertEqual(float(jax.tree.leaves(state[-1].hyperparams["lr_scale"])[0]), 0.5)

    def test_adam_torch_has_no_live_form(self):
        with self.assertRaisesRegex(ValueError, "adam_torch"):
            chain_for(OptimConfig(name="adam_torch"), live=True)


class ErrorsTest(parameterized.TestCase):
    def test_unsupported_factory(self):
        with self.assertRaisesRegex(TypeError, "factory="):
            inject_hyperparams(optax.adam)

    def test_factory_validates_arguments(self):
        with self.assertRaisesRegex(TypeError, "b1='0.9'"):
            inject_hyperparams(adam)(1e-3, b1="0.9")
        with self.assertWarnsRegex(UserWarning, "^b1=1.0: accepted"):  # as adam(1e-3, b1=1.0)
            inject_hyperparams(adam)(1e-3, b1=1.0)

    @parameterized.parameters(
        (dict(b1="0.9"), TypeError, "b1='0.9'"),
        (dict(lr_scale=-0.5), ValueError, r"^lr_scale: got -0.5, expected a finite number >= 0$"),
        (dict(lr_scale=float("inf")), ValueError, "^lr_scale: got inf, expected a finite number"),
        (dict(momentum=0.5), ValueError, "momentum: not a live hyper-parameter here"),
        (dict(one_minus_b1=0.5), ValueError, "one_minus_b1: derived"),
        (dict(lr_scale="half"), TypeError, "^lr_scale: got 'half', expected a finite number >= 0$"),
    )
    def test_bad_changes(self, changes, error, message):
        state = inject_hyperparams(adam)(1e-3).init({"w": jnp.ones(2)})
        with self.assertRaisesRegex(error, message):
            set_hyperparams(state, **changes)

    def test_learning_rate_of_a_schedule_is_not_settable(self):
        state = inject_hyperparams(adam)(schedules.constant(1e-3)).init({"w": jnp.ones(2)})
        with self.assertRaisesRegex(ValueError, "learning_rate: not a live"):
            set_hyperparams(state, learning_rate=1e-2)

    def test_needs_one_injected_state(self):
        with self.assertRaisesRegex(ValueError, "found 0"):
            set_hyperparams(adam(1e-3).init({"w": jnp.ones(2)}), lr_scale=0.5)


class OptaxInjectCasesTest(parameterized.TestCase):
    @parameterized.parameters(
        (adam, dict(learning_rate=1e-1)),
        (adamw, dict(learning_rate=1e-1)),
        (sgd, dict(learning_rate=1e-3, momentum=0.9)),
    )
    def test_optimizers_can_be_wrapped_in_inject_hyperparams(self, factory, kwargs):
        # optax/_src/alias_test.py AliasTest.test_optimizers_can_be_wrapped_in_inject_hyperparams
        opt, opt_inject = factory(**kwargs), inject_hyperparams(factory)(**kwargs)
        params = [jnp.negative(jnp.ones((2, 3))), jnp.ones((2, 5, 2))]
        grads = [jnp.ones((2, 3)), jnp.negative(jnp.ones((2, 5, 2)))]
        updates, new_state = jax.jit(opt.update)(grads, jax.jit(opt.init)(params), params)
        state_inject = jax.jit(opt_inject.init)(params)
        updates_inject, new_state_inject = jax.jit(opt_inject.update)(grads, state_inject, params)
        chex.assert_trees_all_close(updates_inject, updates, rtol=1e-3)
        inner = jax.tree.leaves(new_state_inject.inner_state)
        chex.assert_trees_all_close(inner, jax.tree.leaves(new_state)[: len(inner)], rtol=1e-4)


def test_set_hyperparams_inside_jit_says_to_call_it_outside():
    """Issue 24 #18: a traced value used to reach check_number ('expected a real number')."""
    state = inject_hyperparams(adam)(1e-3).init({"w": jnp.ones(3)})
    traced = jax.jit(lambda s, lr: set_hyperparams(s, learning_rate=lr))
    with pytest.raises(TypeError, match=r"learning_rate: got a traced value .* outside jax\.jit"):
        traced(state, 0.1)


if __name__ == "__main__":
    absltest.main()
