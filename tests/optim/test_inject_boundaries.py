"""inject_hyperparams at its edges (issue 39): the first step of a schedule, ``lr_scale`` on a
scheduled rate, the exact type of every live value (a weakly typed scalar would change a jitted
step's signature), and the names in its messages and warnings.

Each test names the boundary it pins; each killed a one-line mutant of ``optim/inject.py`` that
the earlier tests let through (``make mutation MODULE=optim.inject``).
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxparadigm.optim import adam, adamw, inject_hyperparams, set_hyperparams, sgd

PARAMS = {"w": jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3) / 7, "b": jnp.ones(3, jnp.float32)}
GRADS = jax.tree.map(lambda p: jnp.cos(p) + 0.25, PARAMS)


def _ramp(count):
    """A schedule whose value differs at every step: 0.01 * (count + 1)."""
    return 0.01 * (count + 1)


def _exact_float32_scalar(value) -> bool:
    aval = jax.typeof(value)
    return aval.shape == () and aval.dtype == jnp.float32 and not aval.weak_type


@pytest.mark.parametrize(
    "factory, kwargs",
    [
        (adam, dict(learning_rate=1e-2, b1=0.8)),
        (adamw, dict(learning_rate=_ramp, weight_decay=0.1)),
        (sgd, dict(learning_rate=lambda count: 0.1, momentum=0.9)),  # a plain Python float
    ],
)
def test_every_live_value_is_a_strong_float32_scalar_before_and_after(factory, kwargs):
    """Boundary: init, one update, and set_hyperparams all keep each value a float32 scalar that
    is not weakly typed (weak and strong float32 are different jit signatures and scan carries)."""
    tx = inject_hyperparams(factory)(**kwargs)
    state = tx.init(PARAMS)
    _, stepped = tx.update(GRADS, state, PARAMS)
    changed = set_hyperparams(stepped, lr_scale=0.5, **({"b1": 0.7} if "b1" in kwargs else {}))
    for where, s in (("init", state), ("update", stepped), ("set_hyperparams", changed)):
        bad = {k: jax.typeof(v) for k, v in s.hyperparams.items()}
        bad = {k: a for k, a in bad.items() if not _exact_float32_scalar(s.hyperparams[k])}
        assert not bad, f"{where}: {bad}"

    def body(state, _):
        _, state = tx.update(GRADS, state, PARAMS)
        return state, None

    jax.lax.scan(body, changed, None, length=3)  # a carry whose types drift would be refused


def test_the_schedule_is_recorded_at_step_0_then_at_each_step():
    """Boundary: the first step is 0 (the value recorded by init is schedule(0), not schedule(1))."""
    tx = inject_hyperparams(adam)(learning_rate=_ramp)
    state = tx.init(PARAMS)
    assert float(state.hyperparams["scheduled_learning_rate"]) == np.float32(0.01)
    for step in range(3):
        _, state = tx.update(GRADS, state, PARAMS)
        assert float(state.hyperparams["scheduled_learning_rate"]) == np.float32(_ramp(step))


@pytest.mark.parametrize("scale", [0.5, 2.0, 0.0])
def test_lr_scale_multiplies_a_scheduled_rate(scale):
    """lr_scale scales a schedule's value as it scales a constant rate: the step is ``scale``
    times the unscaled one (0 stops it), never divided by it."""
    tx = inject_hyperparams(sgd)(learning_rate=_ramp)
    state = tx.init(PARAMS)
    plain, _ = tx.update(GRADS, state, PARAMS)
    scaled, _ = tx.update(GRADS, set_hyperparams(state, lr_scale=scale), PARAMS)
    for a, b in zip(jax.tree.leaves(scaled), jax.tree.leaves(plain), strict=True):
        np.testing.assert_allclose(a, scale * b, rtol=1e-6)


def test_integer_params_are_refused_naming_params():
    tx = inject_hyperparams(adam)(learning_rate=1e-2)
    with pytest.raises(TypeError, match=r"^params\['w'\] has dtype int32"):
        tx.init({"w": jnp.ones(2, jnp.int32)})


@pytest.mark.parametrize(
    "factory, name, kwargs",
    [
        (adam, "mu_dtype", dict(mu_dtype=jnp.int32)),
        (adam, "nu_dtype", dict(nu_dtype=jnp.int8)),
        (sgd, "accumulator_dtype", dict(momentum=0.9, accumulator_dtype=jnp.int16)),
    ],
)
def test_a_truncating_store_warns_naming_its_own_argument(factory, name, kwargs):
    """Every warning about an integer store names the argument as the user spelled it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inject_hyperparams(factory)(learning_rate=1e-2, **kwargs)
    messages = [str(w.message) for w in caught if "truncates" in str(w.message)]
    assert messages and all(m.startswith(f"{name}=") for m in messages), messages


def test_an_unknown_name_lists_the_live_ones_exactly():
    state = inject_hyperparams(adam)(learning_rate=1e-2).init(PARAMS)
    with pytest.raises(ValueError) as err:
        set_hyperparams(state, momentum=0.9)
    assert str(err.value) == (
        "momentum: not a live hyper-parameter here; live ones: "
        "b1, b2, eps, eps_root, learning_rate, lr_scale"
    )
