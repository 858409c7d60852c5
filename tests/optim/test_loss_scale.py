"""Dynamic loss scaling against a plain-Python model of the state machine (C4.2)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest, parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.optim import LossScaleState, dynamic_loss_scale


def _reference(init_scale, growth_interval, finite_flags):
    """Independent oracle: the rule written as ordinary Python."""
    scale, good = float(init_scale), 0
    trace = []
    for finite in finite_flags:
        if finite:
            good += 1
            if good >= growth_interval:
                scale, good = min(scale * 2.0, 2.0**127), 0
        else:
            scale, good = max(scale / 2.0, 1.0), 0
        trace.append((scale, good))
    return trace


class DynamicLossScaleTest(chex.TestCase, parameterized.TestCase):
    def test_init_state(self):
        state = dynamic_loss_scale().init()
        self.assertIsInstance(state, LossScaleState)
        chex.assert_type(state.scale, jnp.float32)
        chex.assert_type(state.good_steps, jnp.int32)
        chex.assert_shape((state.scale, state.good_steps), ())
        self.assertEqual(float(state.scale), 2.0**15)
        self.assertEqual(int(state.good_steps), 0)

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_scale_and_unscale(self):
        ls = dynamic_loss_scale(init_scale=1024.0)
        state = ls.init()
        scaled = self.variant(ls.scale)(jnp.float16(0.5), state)
        self.assertEqual(float(scaled), 512.0)
        grads = {"a": jnp.full((3,), 2048.0, jnp.float16), "b": [jnp.ones((2, 2), jnp.bfloat16)]}
        unscaled, finite = self.variant(ls.unscale)(grads, state)
        chex.assert_trees_all_equal_shapes(unscaled, grads)
        for leaf in jax.tree.leaves(unscaled):
            chex.assert_type(leaf, jnp.float32)
        np.testing.assert_array_equal(unscaled["a"], np.full(3, 2.0, np.float32))
        np.testing.assert_array_equal(unscaled["b"][0], np.full((2, 2), 1 / 1024, np.float32))
        self.assertTrue(bool(finite))
        bad = {"a": jnp.array([1.0, jnp.inf], jnp.float16), "b": [jnp.ones((2,))]}
        self.assertFalse(bool(self.variant(ls.unscale)(bad, state)[1]))
        nan = {"a": jnp.array([jnp.nan]), "b": [jnp.ones((2,))]}
        self.assertFalse(bool(self.variant(ls.unscale)(nan, state)[1]))

    @chex.variants(with_jit=True, without_jit=True)
    def test_update_halves_grows_and_floors(self):
        ls = dynamic_loss_scale(init_scale=4.0, growth_interval=3)
        update = self.variant(ls.update)
        state = ls.init()
        state = update(state, jnp.array(True))
        state = update(state, jnp.array(True))
        self.assertEqual((float(state.scale), int(state.good_steps)), (4.0, 2))
        state = update(state, jnp.array(True))  # third consecutive finite step: double
        self.assertEqual((float(state.scale), int(state.good_steps)), (8.0, 0))
        state = update(state, jnp.array(True))
        state = update(state, jnp.array(False))  # overflow: halve, reset
        self.assertEqual((float(state.scale), int(state.good_steps)), (4.0, 0))
        for _ in range(5):
            state = update(state, jnp.array(False))
        self.assertEqual(float(state.scale), 1.0)  # never below 1
        chex.assert_type(state.scale, jnp.float32)
        chex.assert_type(state.good_steps, jnp.int32)

    @settings(max_examples=60, deadline=None)
    @given(
        init_exp=st.sampled_from([0, 3, 15]),
        interval=st.integers(1, 3),
        flags=st.lists(st.booleans(), min_size=1, max_size=24),
    )
    def test_matches_python_model(self, init_exp, interval, flags):
        ls, update = _jitted(init_exp, interval)
        state = ls.init()
        for finite, (scale, good) in zip(
            flags, _reference(2.0**init_exp, interval, flags), strict=True
        ):
            state = update(state, finite)
            self.assertEqual((float(state.scale), int(state.good_steps)), (scale, good))

    def test_growth_stops_below_inf(self):
        ls = dynamic_loss_scale(init_scale=2.0**126, growth_interval=1)
        state = ls.init()
        for _ in range(3):
            state = ls.update(state, True)
        self.assertEqual(float(state.scale), 2.0**127)

    def test_skipped_step_end_to_end(self):
        # A float16 loss whose scaled gradient overflows: the step reports non-finite.
        ls = dynamic_loss_scale(init_scale=2.0**15)
        x = jnp.asarray([60000.0], jnp.float16)

        def loss(w):
            return jnp.sum(w * x)

        state = ls.init()
        grads = jax.grad(lambda w: ls.scale(loss(w), state).astype(jnp.float16))(
            jnp.ones((1,), jnp.float16)
        )
        _, finite = ls.unscale(grads, state)
        self.assertFalse(bool(finite))
        state = ls.update(state, finite)
        self.assertEqual(float(state.scale), 2.0**14)

    def test_rejects_bad_arguments(self):
        with self.assertRaisesRegex(
            ValueError, r"^init_scale: got 0\.5, expected a finite number in \[1, "
        ):
            dynamic_loss_scale(init_scale=0.5)
        with self.assertRaisesRegex(
            ValueError, r"^init_scale: got inf, expected a finite number in \[1, "
        ):
            dynamic_loss_scale(init_scale=float("inf"))
        with self.assertRaisesRegex(ValueError, r"^growth_interval: got 0, expected an int >= 1$"):
            dynamic_loss_scale(growth_interval=0)
        with self.assertRaisesRegex(
            TypeError, r"^growth_interval: got 2\.5, expected an int >= 1$"
        ):
            dynamic_loss_scale(growth_interval=2.5)


_JITTED = {}


def _jitted(init_exp, interval):
    """One compiled ``update`` per (init_scale, growth_interval), reused across examples."""
    if (init_exp, interval) not in _JITTED:
        ls = dynamic_loss_scale(init_scale=2.0**init_exp, growth_interval=interval)
        _JITTED[init_exp, interval] = (ls, jax.jit(ls.update))
    return _JITTED[init_exp, interval]


if __name__ == "__main__":
    absltest.main()
