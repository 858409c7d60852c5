"""Optax as a drop-in (issue 23, item 5): what optax accepts, we accept, with equal values.

Each case was refused before issue 23 (``ValueError``), so each test fails on the old code. The
oracle is optax 0.2.8 itself (``optax.schedules._schedule``/``_join``, ``optax._src.alias``) on
counts ``>= 0`` (below 0 our schedules clamp the count and optax's cosine does not). A value that
gives a negative or infinite rate is accepted with a ``UserWarning`` naming it.
"""

import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxparadigm.optim as ours
from jaxparadigm.optim import schedules as S

COUNTS = jnp.arange(0, 16, dtype=jnp.int32)
NAN, INF = float("nan"), float("inf")

SCHEDULE_CASES = [
    # (name, ours, optax's, warning names or ())
    ("constant_negative", lambda m: m.constant(-0.5), "value"),
    ("linear_negative_end", lambda m: m.linear(1.0, -1.0, 10), "end_value"),
    ("linear_negative_steps", lambda m: m.linear(1.0, 0.0, -3), None),
    ("polynomial_negative_power", lambda m: m.polynomial(2.0, 1.0, -0.5, 10), "power"),
    ("polynomial_zero_power", lambda m: m.polynomial(2.0, 1.0, 0.0, 10, 2), None),
    ("polynomial_negative_begin", lambda m: m.polynomial(2.0, 1.0, 2.0, 10, -4), None),
    ("cosine_alpha_above_one", lambda m: m.cosine_decay(1.0, 10, 2.0), None),
    ("cosine_alpha_negative", lambda m: m.cosine_decay(1.0, 10, -0.5), "alpha"),
    ("cosine_negative_init", lambda m: m.cosine_decay(-1.0, 10, 0.1, 2.0), "init_value"),
    ("warmup_cosine_end_above_peak", lambda m: m.warmup_cosine_decay(0.0, 1.0, 3, 12, 2.0), None),
    ("warmup_cosine_no_warmup", lambda m: m.warmup_cosine_decay(0.5, 1.0, -2, 9), None),
    (
        "join_negative_boundary",
        lambda m: m.join([m.constant(1.0), m.linear(2.0, 0.0, 5)], [-3]),
        None,
    ),
    (
        "join_unordered_boundaries",
        lambda m: m.join([m.constant(1.0), m.constant(2.0), m.constant(3.0)], [8, 4]),
        None,
    ),
    # NaN/inf values and non-integer step counts (issue 23, second pass): optax computes them.
    ("constant_nan", lambda m: m.constant(NAN), "value"),
    ("constant_inf", lambda m: m.constant(INF), "value"),
    ("linear_nan_end", lambda m: m.linear(1.0, NAN, 4), "end_value"),
    ("linear_fractional_steps", lambda m: m.linear(1.0, 0.0, 2.5), "transition_steps"),
    ("linear_fractional_begin", lambda m: m.linear(1.0, 0.0, 4, 1.5), "transition_begin"),
    ("linear_nan_steps", lambda m: m.linear(1.0, 0.0, NAN), "transition_steps"),
    ("linear_inf_steps", lambda m: m.linear(1.0, 0.0, INF), "transition_steps"),
    ("linear_integral_float_steps", lambda m: m.linear(1.0, 0.0, 4.0, 2.0), None),
    ("polynomial_inf_power", lambda m: m.polynomial(1.0, 0.0, INF, 4), "power"),
    ("polynomial_nan_power", lambda m: m.polynomial(1.0, 0.0, NAN, 4), "power"),
    ("cosine_fractional_steps", lambda m: m.cosine_decay(1.0, 2.5), "decay_steps"),
    ("cosine_inf_steps", lambda m: m.cosine_decay(1.0, INF), "decay_steps"),
    ("cosine_nan_init", lambda m: m.cosine_decay(NAN, 4), "init_value"),
    ("cosine_inf_alpha", lambda m: m.cosine_decay(1.0, 4, INF), "alpha"),
    ("cosine_nan_exponent", lambda m: m.cosine_decay(1.0, 4, 0.0, NAN), "exponent"),
    (
        "warmup_cosine_fractional_steps",
        lambda m: m.warmup_cosine_decay(0.0, 1.0, 1.5, 4.5),
        ["warmup_steps", "decay_steps"],
    ),
    ("warmup_cosine_nan_peak", lambda m: m.warmup_cosine_decay(0.0, NAN, 1, 4), "peak_value"),
    # join_schedules pairs with zip: extra boundaries are ignored, extra schedules never used.
    (
        "join_extra_boundary",
        lambda m: m.join([m.constant(1.0), m.linear(2.0, 0.0, 4)], [2, 4]),
        "boundaries",
    ),
    (
        "join_missing_boundary",
        lambda m: m.join([m.constant(1.0), m.linear(2.0, 0.0, 4), m.constant(3.0)], [2]),
        "boundaries",
    ),
    (
        "join_no_boundary",
        lambda m: m.join([m.linear(2.0, 0.0, 4), m.constant(3.0)], []),
        "boundaries",
    ),
    (
        "join_fractional_boundary",
        lambda m: m.join([m.constant(1.0), m.linear(2.0, 0.0, 4)], [2.5]),
        "boundaries[0]",
    ),
    (
        "join_nan_boundary",  # step < NaN is false: the later piece, at count NaN (constant here)
        lambda m: m.join([m.constant(1.0), m.constant(2.0)], [NAN]),
        "boundaries[0]",
    ),
]


class _OptaxNames:
    """optax's schedules under our names, so one lambda builds both."""

    constant = staticmethod(optax.constant_schedule)
    linear = staticmethod(optax.linear_schedule)
    polynomial = staticmethod(optax.polynomial_schedule)
    cosine_decay = staticmethod(optax.cosine_decay_schedule)
    warmup_cosine_decay = staticmethod(optax.warmup_cosine_decay_schedule)
    join = staticmethod(optax.join_schedules)


@pytest.mark.filterwarnings("ignore:count=nan")  # join_nan_boundary: the later piece at count NaN
@pytest.mark.parametrize("name, build, warns", SCHEDULE_CASES, ids=[c[0] for c in SCHEDULE_CASES])
def test_schedule_accepts_what_optax_accepts(name, build, warns):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = build(S)
    expected = [warns] if isinstance(warns, str) else (warns or [])
    assert [str(w.message).split("=")[0] for w in caught] == expected, name
    theirs = build(_OptaxNames)
    # Both jitted: XLA's pow(0, -0.5) is inf eagerly but NaN under jit, in optax and here alike.
    want = np.asarray(jnp.broadcast_to(jax.jit(theirs)(COUNTS), COUNTS.shape))
    got = np.asarray(jnp.broadcast_to(jax.jit(sched)(COUNTS), COUNTS.shape))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for count in (0, 5, 15):  # host ints take the Python path (eager, as optax's eager)
        np.testing.assert_allclose(sched(count), theirs(count), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("factory", ["sgd", "adam", "adamw"])
def test_negative_learning_rate_ascends_as_in_optax(factory):
    params = {"w": jnp.array([1.0, -2.0, 0.5])}
    grads = {"w": jnp.array([0.1, 0.2, -0.3])}
    with pytest.warns(UserWarning, match=r"^learning_rate=-0\.1: accepted \(as optax\)"):
        tx = getattr(ours, factory)(-0.1)
    ref = getattr(optax, factory)(-0.1)
    updates, _ = tx.update(grads, tx.init(params), params)
    ref_updates, _ = ref.update(grads, ref.init(params), params)
    chex.assert_trees_all_equal(updates, ref_updates)


def test_injected_negative_learning_rate_as_in_optax():
    params = {"w": jnp.array([1.0, -2.0])}
    grads = {"w": jnp.array([0.1, 0.2])}
    with pytest.warns(UserWarning, match="learning_rate=-0.01"):
        tx = ours.inject_hyperparams(ours.adam)(-0.01)
    state = tx.init(params)
    with pytest.warns(UserWarning, match="learning_rate=-0.5"):
        state = ours.set_hyperparams(state, learning_rate=-0.5)
    ref = optax.adam(-0.5)  # static: optax's own inject drifts in the last bit (optax #583)
    updates, _ = tx.update(grads, state, params)
    ref_updates, _ = ref.update(grads, ref.init(params), params)
    chex.assert_trees_all_equal(updates, ref_updates)


def test_torch_style_adam_still_refuses_a_negative_rate():
    # torch.optim.Adam raises "Invalid learning rate"; adam_torch_style follows torch, not optax.
    with pytest.raises(ValueError, match=r"^learning_rate: got -0\.1, expected a number >= 0$"):
        ours.adam_torch_style(-0.1)


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(
    init=st.floats(-2, 2, width=32),
    end=st.floats(-2, 2, width=32),
    steps=st.integers(-3, 50),
    begin=st.integers(-3, 5),
    alpha=st.floats(-1, 2, width=32),
)
def test_wrapped_counter_reads_as_the_start_whatever_the_signs(init, end, steps, begin, alpha):
    """With optax's arguments accepted (negative values, steps <= 0, alpha outside [0, 1]) the
    clamp still holds: a wrapped int32 counter gives the value of any count before every boundary
    (-2**30 here; no overflow in ``count - transition_begin``), which is the value at count 0 when
    every join boundary is > 0 (warmup_steps > 0 here) (C4.3).

    Shrunk case found by this test: ``polynomial(0, 1, 2, 1, transition_begin=1)`` gave the end
    value 1 on the wrapped counter (``-2**31 - 1`` wraps to ``2**31 - 1``), as optax does."""
    wrapped = jnp.asarray(2**31 - 1, jnp.int32) + jnp.int32(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        built = [
            S.polynomial(init, end, 2.0, steps, begin),
            S.cosine_decay(init, max(steps, 1), alpha),
            S.warmup_cosine_decay(init, end, steps, steps + 7, alpha),
        ]
    for sched in built:
        np.testing.assert_array_equal(sched(wrapped), sched(jnp.int32(-(2**30))))
    if steps > 0:
        for sched in built:
            np.testing.assert_array_equal(sched(wrapped), sched(jnp.int32(0)))


def test_regression_wrapped_counter_minus_transition_begin_does_not_wrap_to_the_end():
    wrapped = jnp.asarray(2**31 - 1, jnp.int32) + jnp.int32(1)
    sched = S.polynomial(0.0, 1.0, 2.0, 1, transition_begin=1)
    assert float(sched(wrapped)) == 0.0  # the start; before the fix 1.0 (the end)
    near_top = jnp.asarray(2**31 - 2, jnp.int32)
    joined = S.join([S.constant(5.0), S.linear(1.0, 0.0, 10)], [-3])
    assert float(joined(near_top)) == 0.0  # the end of the second piece; before: its start, 1.0
    theirs = optax.polynomial_schedule(0.0, 1.0, 2.0, 1, transition_begin=1)
    counts = jnp.arange(0, 5, dtype=jnp.int32)
    np.testing.assert_array_equal(sched(counts), theirs(counts))  # unchanged where no overflow


def test_join_with_the_wrong_number_of_boundaries_warns_what_is_dropped():
    """optax's ``join_schedules`` pairs pieces and boundaries with ``zip``: extra boundaries are
    ignored and extra schedules never reached. Both are surely a mistake: a warning says which."""
    pieces = [S.constant(1.0), S.constant(2.0)]
    with pytest.warns(
        UserWarning,
        match=r"^boundaries=\[2, 4\]: .* 2 schedules need 1 boundaries; boundaries\[1:\] are ignored",
    ):
        S.join(pieces, [2, 4])
    with pytest.warns(UserWarning, match=r"^boundaries=\[\]: .* schedules\[1:\] are never used"):
        S.join(pieces, [])
    with pytest.warns(
        UserWarning, match=r"^boundaries=\[2\]: .* 3 schedules .* schedules\[2:\] are never used"
    ):
        S.join([*pieces, S.constant(3.0)], [2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S.join(pieces, [2])  # the right number: no warning
