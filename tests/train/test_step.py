"""The jitted step: closed-form SGD update, skip on non-finite, lr scale, dynamic loss scaling."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxparadigm.models.mlp import MLP
from jaxparadigm.optim import dynamic_loss_scale
from jaxparadigm.train.objectives import classification_loss
from jaxparadigm.train.train_step import init_train_state, make_train_step

BATCH = {
    "x": np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32),
    "y": np.arange(8, dtype=np.int32) % 2,
}


def _setup(lr=0.1):
    graphdef, state = nnx.split(MLP(2, (4,), 2, rngs=nnx.Rngs(0)))
    params = nnx.to_pure_dict(state)
    loss = lambda p, b: classification_loss(nnx.merge(graphdef, p), b)
    return graphdef, params, loss, optax.sgd(lr)


def _copy(tree):
    return jax.tree_util.tree_map(np.array, tree)


def test_step_is_closed_form_sgd_and_advances_counters():
    graphdef, params, loss, tx = _setup()
    step = make_train_step(graphdef, classification_loss, tx, lr_fn=lambda c: 0.1)
    want_loss, grads = jax.value_and_grad(loss)(params, BATCH)
    want = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    state, metrics = step(init_train_state(_copy(params), tx, seed=0), BATCH)
    chex.assert_trees_all_close(state.params, want, atol=1e-6)
    np.testing.assert_allclose(metrics["loss"], want_loss, rtol=1e-6)
    np.testing.assert_allclose(metrics["grad_norm"], optax.global_norm(grads), rtol=1e-5)
    assert bool(metrics["finite"]) and float(metrics["lr"]) == np.float32(0.1)
    assert int(state.step) == int(state.opt_steps) == 1
    assert not np.array_equal(state.rng, jax.random.PRNGKey(0))


def test_non_finite_batch_is_skipped_with_state_unchanged():
    graphdef, params, _, tx = _setup()
    step = make_train_step(graphdef, classification_loss, optax.adam(0.1), donate=False)
    state0 = init_train_state(params, optax.adam(0.1), seed=0)
    bad = {**BATCH, "x": BATCH["x"].copy()}
    bad["x"][3, 0] = np.nan
    state1, metrics = step(state0, bad)
    assert not bool(metrics["finite"])
    chex.assert_trees_all_equal(state1.params, state0.params)
    chex.assert_trees_all_equal(state1.opt_state, state0.opt_state)
    assert int(state1.step) == 1 and int(state1.opt_steps) == 0
    assert (int(state1.guard.bad_streak), int(state1.guard.skipped)) == (1, 1)
    state2, metrics = step(state1, BATCH)  # a good batch clears the streak
    assert bool(metrics["finite"]) and int(state2.guard.bad_streak) == 0
    # Without the guard, the NaN reaches the parameters.
    unguarded = make_train_step(graphdef, classification_loss, optax.adam(0.1), guard=False)
    state3, _ = unguarded(init_train_state(params, optax.adam(0.1), seed=0), bad)
    assert not np.all(np.isfinite(state3.params["layers"][0]["kernel"]))


def test_lr_scale_scales_the_update():
    graphdef, params, _, tx = _setup()
    step = make_train_step(graphdef, classification_loss, tx, donate=False)
    s0 = init_train_state(params, tx, seed=0)
    full, _ = step(s0, BATCH)
    half, _ = step(s0._replace(lr_scale=jnp.float32(0.5)), BATCH)
    delta = lambda s: jax.tree_util.tree_map(lambda a, b: a - b, s.params, params)
    chex.assert_trees_all_close(
        delta(half), jax.tree_util.tree_map(lambda d: 0.5 * d, delta(full)), atol=1e-7
    )


def test_dynamic_loss_scale_gives_unscaled_gradients_and_halves_on_overflow():
    graphdef, params, _, tx = _setup()
    ls = dynamic_loss_scale(init_scale=2.0**10, growth_interval=100)
    scaled = make_train_step(graphdef, classification_loss, tx, loss_scale=ls, donate=False)
    plain = make_train_step(graphdef, classification_loss, tx, donate=False)
    s_scaled, m = scaled(init_train_state(params, tx, seed=0, loss_scale=ls), BATCH)
    s_plain, _ = plain(init_train_state(params, tx, seed=0), BATCH)
    chex.assert_trees_all_close(s_scaled.params, s_plain.params, atol=1e-6)
    assert float(m["loss_scale"]) == 2.0**10
    assert int(s_scaled.loss_scale.good_steps) == 1
    # A float16 model with S = 2**24: the backward pass overflows float16 (max 65504); the step
    # is skipped and S halves.
    graphdef16, state16 = nnx.split(MLP(2, (4,), 2, dtype="float16", rngs=nnx.Rngs(0)))
    ls16 = dynamic_loss_scale(init_scale=2.0**24)
    step16 = make_train_step(graphdef16, classification_loss, tx, loss_scale=ls16, donate=False)
    s0 = init_train_state(nnx.to_pure_dict(state16), tx, seed=0, loss_scale=ls16)
    s_over, m = step16(s0, BATCH)
    assert not bool(m["finite"]) and bool(m["overflow"])
    assert float(s_over.loss_scale.scale) == 2.0**23
    chex.assert_trees_all_equal(s_over.params, s0.params)
    # An overflow is the loss scaler's business, not a guard bad step.
    assert (int(s_over.guard.bad_streak), int(s_over.guard.skipped)) == (0, 0)


def _nan_grad_loss(model, batch, rng=None):
    """Finite loss (0) whose gradient is NaN: d sqrt(u)/du at u = 0 is inf, times 0."""
    return jnp.sqrt(jnp.sum(model(batch["x"])) * 0.0)


@pytest.mark.parametrize(
    "init_scale, loss_nan, overflow, bad_streak, scale_after",
    [
        (2.0**10, False, True, 0, 2.0**9),  # the scaler can still shrink: its business
        (1.0, False, False, 1, 1.0),  # already at the minimum scale: a guard bad step
        (2.0**10, True, False, 1, 2.0**10),  # non-finite unscaled loss: a guard bad step
    ],
)
def test_overflow_versus_guard_bad_step(init_scale, loss_nan, overflow, bad_streak, scale_after):
    graphdef, params, _, tx = _setup()
    ls = dynamic_loss_scale(init_scale=init_scale)
    step = make_train_step(graphdef, _nan_grad_loss, tx, loss_scale=ls, donate=False)
    batch = {**BATCH, "x": BATCH["x"].copy()}
    if loss_nan:
        batch["x"][0, 0] = np.nan
    s0 = init_train_state(params, tx, seed=0, loss_scale=ls)
    s1, m = step(s0, batch)
    assert not bool(m["finite"]) and bool(m["overflow"]) == overflow
    assert int(s1.guard.bad_streak) == bad_streak
    assert float(s1.loss_scale.scale) == scale_after
    chex.assert_trees_all_equal(s1.params, s0.params)


def test_bad_step_arguments():
    graphdef, _, _, tx = _setup()
    with pytest.raises(TypeError, match="loss_fn: got int"):
        make_train_step(graphdef, 3, tx)
    with pytest.raises(TypeError, match="tx: got str"):
        make_train_step(graphdef, classification_loss, "adam")
    with pytest.raises(TypeError, match="loss_scale: got float"):
        make_train_step(graphdef, classification_loss, tx, loss_scale=2.0)
