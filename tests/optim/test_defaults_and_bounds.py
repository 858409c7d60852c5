"""Defaults, bounds and structure the optimisers promise (issue 17: survivors of the random
mutation sample of ``optim``, each test named for the slip it catches).

Oracles: optax's own transformations (``optax.trace``, ``optax.chain`` of scale_by_adam and
scale_by_learning_rate) for defaults and state structure; the documented bounds of each argument.
"""

import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxparadigm.config import OptimConfig, ScheduleConfig
from jaxparadigm.optim import (
    adam,
    adam_torch_style,
    adamw,
    chain_for,
    inject_hyperparams,
    schedules,
    sgd,
    trace,
)

PARAMS = {"w": jnp.asarray([[0.5, -1.0], [2.0, 0.25]]), "b": jnp.asarray([0.1, -0.3])}
GRADS = {"w": jnp.asarray([[0.2, 0.4], [-0.6, 1.0]]), "b": jnp.asarray([-0.5, 0.7])}


def _steps(tx, n=4):
    params, state = PARAMS, tx.init(PARAMS)
    for i in range(n):
        grads = jax.tree.map(lambda g, k=i + 1: g * k, GRADS)
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return params, state


def test_trace_defaults_to_heavy_ball_momentum_as_optax_trace():
    """``trace(decay)`` without ``nesterov`` is optax.trace(decay): a default flipped to Nesterov
    changes every step after the first."""
    ours, _ = _steps(trace(0.9))
    theirs, _ = _steps(optax.trace(0.9))
    chex.assert_trees_all_equal(ours, theirs)


@pytest.mark.parametrize("eps", [-1e-8, float("nan")])
def test_adam_torch_eps_must_not_be_negative(eps):
    """torch.optim.Adam refuses ``eps < 0`` and NaN ("Invalid epsilon value"); so do we."""
    with pytest.raises(ValueError, match="eps"):
        adam_torch_style(1e-3, eps=eps)


@pytest.mark.crosscheck
def test_adam_torch_takes_eps_zero_as_torch():
    """``eps = 0`` was refused; torch.optim.Adam takes it (``0.0 <= eps``): same steps."""
    torch = pytest.importorskip("torch")
    p0 = np.asarray([0.5, -1.0, 2.0], np.float32)
    grads = [np.asarray([0.2, -0.4, 1.0], np.float32) * (k + 1) for k in range(4)]
    tp = torch.nn.Parameter(torch.tensor(p0))
    opt = torch.optim.Adam([tp], lr=0.1, eps=0.0)
    tx = adam_torch_style(0.1, eps=0.0)
    params = jnp.asarray(p0)
    state = tx.init(params)
    for g in grads:
        tp.grad = torch.tensor(g)
        opt.step()
        updates, state = tx.update(jnp.asarray(g), state, params)
        params = optax.apply_updates(params, updates)
        np.testing.assert_allclose(np.asarray(params), tp.detach().numpy(), rtol=1e-6, atol=2.5e-7)


def test_adam_torch_refuses_integer_updates_naming_them():
    tx = adam_torch_style(1e-3)
    state = tx.init(PARAMS)
    ints = {"w": jnp.ones((2, 2), jnp.int32), "b": GRADS["b"]}
    with pytest.raises(TypeError, match=r"updates\['w'\] has dtype int32"):
        tx.update(ints, state, PARAMS)


def test_adam_torch_skips_parameters_without_gradient():
    """torch.optim.Adam skips a parameter whose ``.grad`` is None: its moments stay zero and it
    gets no update, while the other parameters step."""
    tx = adam_torch_style(0.1)
    state = tx.init(PARAMS)
    updates, state = tx.update({"w": GRADS["w"], "b": None}, state, PARAMS)
    assert updates["b"] is None
    np.testing.assert_array_equal(state.mu["b"], np.zeros(2))
    np.testing.assert_array_equal(state.nu["b"], np.zeros(2))
    np.testing.assert_allclose(state.mu["w"], 0.1 * np.asarray(GRADS["w"]), rtol=1e-6)
    # First Adam step: -lr * sign(g) (up to eps).
    np.testing.assert_allclose(updates["w"], -0.1 * np.sign(GRADS["w"]), rtol=1e-5)


@pytest.mark.parametrize("name", ["adam", "sgd"])
def test_chain_adds_a_decay_transformation_only_for_positive_weight_decay(name):
    """``weight_decay=0`` adds no ``add_decayed_weights(0)`` (a no-op transformation with a state
    entry of its own): the chain is one transformation shorter than with weight decay."""
    plain = OptimConfig(name=name, learning_rate=1e-2, weight_decay=0.0)
    decayed = OptimConfig(name=name, learning_rate=1e-2, weight_decay=0.01)
    assert len(chain_for(plain).init(PARAMS)) + 1 == len(chain_for(decayed).init(PARAMS))


def test_live_sgd_without_weight_decay_has_no_weight_decay_hyperparameter():
    """``inject_hyperparams(sgd)`` makes ``weight_decay`` live only when it is used (> 0)."""
    without = inject_hyperparams(sgd)(0.1, momentum=0.9).init(PARAMS)
    with_wd = inject_hyperparams(sgd)(0.1, momentum=0.9, weight_decay=0.01).init(PARAMS)
    assert "weight_decay" not in without.hyperparams
    assert "weight_decay" in with_wd.hyperparams
    assert "momentum" in without.hyperparams
    plain = inject_hyperparams(sgd)(0.1).init(PARAMS)
    assert "momentum" not in plain.hyperparams


@pytest.mark.parametrize(
    "kw, path",
    [
        ({"momentum": 1.0}, "optim.momentum"),
        ({"schedule": {"end_value": -0.1}}, "optim.schedule.end_value"),
        (
            {"schedule": {"name": "linear_lr", "start_factor": 0.0, "total_iters": 2}},
            "optim.schedule.start_factor",
        ),
    ],
)
def test_chain_refuses_values_on_the_open_bound(kw, path):
    # The settings types refuse the value when built (before chain_for sees it).
    with pytest.raises(ValueError, match="^" + path.replace(".", r"\.") + ": got "):
        kw = {k: ScheduleConfig(**v) if k == "schedule" else v for k, v in kw.items()}
        chain_for(OptimConfig(**kw))


def test_live_hyperparameters_are_strong_float32_whatever_x64():
    """Live hyperparameters are stored as float32 arrays that are not weakly typed (a weak or
    float64 scalar would promote or demote the updates it multiplies), with x64 on or off."""
    for x64 in (False, True):
        with jax.enable_x64(x64):
            state = inject_hyperparams(adam)(1e-3, b1=0.8).init(PARAMS)
        for name, value in state.hyperparams.items():
            chex.assert_type(value, jnp.float32)
            assert not value.weak_type, (x64, name)


def test_live_schedule_records_the_step_zero_learning_rate_at_init():
    schedule = schedules.linear(1.0, 0.0, 10)
    state = inject_hyperparams(sgd)(schedule).init(PARAMS)
    assert float(state.hyperparams["scheduled_learning_rate"]) == 1.0  # schedule(1) is 0.9


@pytest.mark.parametrize(
    "kw, warns",
    [
        ({"peak_value": -1.0}, "peak_value=-1.0"),
        ({"warmup_steps": -1}, None),
        ({"end_value": 1.5}, None),  # above peak_value = 1.0: the decay rises, as in optax
    ],
)
def test_warmup_cosine_decay_accepts_what_optax_accepts(kw, warns):
    """Issue 23: these arguments were refused; optax takes them, so do we (negative: a warning)."""
    args = {**dict(init_value=0.0, peak_value=1.0, warmup_steps=2, decay_steps=10), **kw}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = schedules.warmup_cosine_decay(**args)
    assert [str(w.message).split(":")[0] for w in caught] == ([warns] if warns else [])
    counts = jnp.arange(-2, 14, dtype=jnp.int32)
    want = optax.warmup_cosine_decay_schedule(**args)(counts[2:])
    np.testing.assert_array_equal(ours(counts[2:]), want)


def test_safe_increment_keeps_the_counts_dtype():
    """The saturating bound is built in the count's own dtype: a uint32 count (whose bound
    2**32 - 1 is no int32) increments and saturates as uint32, a float16 count stays float16."""
    from jaxparadigm.optim import safe_increment

    top = np.iinfo(np.uint32).max
    for start, want in ((5, 6), (top - 1, top), (top, top)):
        count = safe_increment(jnp.asarray(start, jnp.uint32))
        chex.assert_type(count, jnp.uint32)
        assert int(count) == want
    half = safe_increment(jnp.asarray(3.0, jnp.float16))
    chex.assert_type(half, jnp.float16)
    assert float(half) == 4.0


def test_bound_errors_show_open_and_closed_ends():
    from jaxparadigm.optim.hyperparam_checks import check_number

    with pytest.raises(ValueError, match=r"^eps: got 0\.0, expected a finite number > 0$"):
        check_number("eps", 0.0, low=0.0, low_open=True)
    with pytest.raises(ValueError, match=r"^b: got 1\.0, expected a finite number in \[0, 1\)$"):
        check_number("b", 1.0, low=0.0, high=1.0, high_open=True)


def test_scale_refuses_integer_updates_naming_them():
    from jaxparadigm.optim.learning_rate import scale

    tx = scale(0.5)
    with pytest.raises(TypeError, match=r"^updates\['w'\] has dtype int32"):
        tx.update({"w": jnp.ones(2, jnp.int32)}, tx.init(None))


def test_cosine_decay_accepts_negative_init_value_with_a_warning_naming_it():
    with pytest.warns(UserWarning, match=r"^init_value=-1\.0: accepted \(as optax\)"):
        sched = schedules.cosine_decay(-1.0, 10)
    counts = jnp.arange(12, dtype=jnp.int32)
    np.testing.assert_array_equal(sched(counts), optax.cosine_decay_schedule(-1.0, 10)(counts))


def test_live_weight_decay_does_not_promote_bfloat16_updates():
    """A live (float32 array) weight decay is cast to the parameters' dtype: bfloat16 updates stay
    bfloat16, and equal the static (Python float) decay."""
    from jaxparadigm.optim.weight_decay import LiveDecay, decay_weights

    p = {"w": jnp.asarray([1.0, -2.0, 4.0], jnp.bfloat16)}
    g = {"w": jnp.asarray([0.5, 0.5, -1.0], jnp.bfloat16)}
    live = decay_weights(g, p, LiveDecay(jnp.asarray(0.25, jnp.float32)))
    static = decay_weights(g, p, 0.25)
    chex.assert_type(live["w"], jnp.bfloat16)
    chex.assert_trees_all_equal(live, static)
    # A float32 array given as the static decay is used as optax uses it: it promotes.
    chex.assert_type(decay_weights(g, p, jnp.asarray(0.25, jnp.float32))["w"], jnp.float32)
    ref = optax.add_decayed_weights(jnp.asarray(0.25, jnp.float32))
    chex.assert_type(ref.update(g, ref.init(p), p)[0]["w"], jnp.float32)


def test_regression_live_zero_weight_decay_skips_the_term_as_the_static_one():
    """Found by the generated chains: ``inject_hyperparams(adamw)(..., weight_decay=0.0)`` added
    ``0 * p``, NaN where a parameter is not finite, where ``adamw(weight_decay=0.0)`` (and optax)
    skip the term."""
    params = {"w": jnp.asarray([jnp.nan, 1.0, jnp.inf])}
    grads = {"w": jnp.asarray([0.1, -0.2, 0.3])}
    live = inject_hyperparams(adamw)(0.1, weight_decay=0.0)
    static = adamw(0.1, weight_decay=0.0)
    want = optax.adamw(0.1, weight_decay=0.0).update(grads, static.init(params), params)[0]
    got = live.update(grads, live.init(params), params)[0]
    np.testing.assert_array_equal(got["w"], want["w"])
    assert np.all(np.isfinite(got["w"]))


def test_decay_weights_without_params_names_the_transformation():
    from jaxparadigm.optim.weight_decay import decay_weights

    with pytest.raises(ValueError, match=r"^add_decayed_weights: params=None, expected the"):
        decay_weights({"w": jnp.ones(2)}, None, 0.1)
