"""The schedules at their edges (issue 39): the names in every warning and error, the count
before ``transition_begin`` on optax's float path, host int counts on that path, the saturating
shift for a negative boundary, and the message of ``join`` with too many boundaries.

Each test names the boundary it pins; each killed a one-line mutant of ``optim/schedules/`` that
the earlier tests let through (``make mutation MODULE=optim.schedules``).
"""

import inspect
import warnings

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.optim.schedules import (
    constant,
    cosine_decay,
    join,
    linear,
    polynomial,
    warmup_cosine_decay,
)
from jaxparadigm.optim.schedules.decay import shift_count

# A valid call of each factory, and for each numeric argument values that are accepted with a
# warning: negative values, a fraction where a step count is expected, NaN and inf.
VALID = {
    constant: dict(value=0.1),
    polynomial: dict(
        init_value=1.0, end_value=0.1, power=2.0, transition_steps=10, transition_begin=2
    ),
    linear: dict(init_value=1.0, end_value=0.1, transition_steps=10, transition_begin=2),
    cosine_decay: dict(init_value=1.0, decay_steps=10, alpha=0.1, exponent=1.0),
    warmup_cosine_decay: dict(
        init_value=0.0, peak_value=1.0, warmup_steps=3, decay_steps=10, end_value=0.1
    ),
}
STEP_ARGUMENTS = {"transition_steps", "transition_begin", "decay_steps", "warmup_steps"}


def _suspicious(name: str):
    values = [float("nan"), float("inf")]
    return values + ([12.5] if name in STEP_ARGUMENTS else [-0.5])


CASES = [(f, a, v) for f, kw in VALID.items() for a in kw for v in _suspicious(a)]


@given(case=st.sampled_from(CASES))
@settings(max_examples=60, deadline=None)
def test_every_warning_names_the_argument_as_spelled(case):
    """Boundary: a name with the right meaning but another spelling ("DECAY_STEPS", "XXpowerXX")
    is a different name to the user. Each warning starts with ``name=`` of an argument of the
    signature, and the changed argument is named by one of them."""
    factory, name, value = case
    kwargs = {**VALID[factory], name: value}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            factory(**kwargs)
        except ValueError as err:  # decay_steps=nan and the like: refused, naming it
            assert str(err).startswith(f"{name}=") or f"{name}=" in str(err), err
            return
    signature = set(inspect.signature(factory).parameters)
    messages = [str(w.message) for w in caught]
    assert messages, f"{name}={value!r}: expected a warning"
    assert all(m.split("=", 1)[0] in signature for m in messages), messages
    assert any(m.startswith(f"{name}=") for m in messages), messages


def test_the_warning_says_what_a_negative_power_or_exponent_does():
    with pytest.warns(UserWarning, match=r"^power=-1\.0: .*the value is infinite once the "):
        polynomial(1.0, 0.0, -1.0, 10)
    with pytest.warns(UserWarning, match=r"^exponent=-2\.0: .*infinite at the end of the decay"):
        cosine_decay(1.0, 10, exponent=-2.0)


def test_decay_steps_not_past_warmup_is_refused_in_one_line():
    with pytest.raises(ValueError) as err:
        warmup_cosine_decay(0.0, 1.0, warmup_steps=10, decay_steps=10)
    assert str(err.value) == (
        "decay_steps=10: expected more than warmup_steps=10 (optax raises too)"
    )


@pytest.mark.parametrize("count", [0, 1, 4, 5, 6, 15, 16, 17, 40])
def test_optax_float_path_before_during_and_after_the_transition(count):
    """Boundary: non-integer step arguments take optax's float arithmetic; counts before
    ``transition_begin`` (clipped to 0), at it, inside, at its end and past it, as a Python int
    and as an int32 array, equal optax."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = polynomial(1.0, 0.1, 2.0, transition_steps=10.5, transition_begin=5.5)
    theirs = optax.polynomial_schedule(1.0, 0.1, 2.0, transition_steps=10.5, transition_begin=5.5)
    expected = np.float32(theirs(jnp.int32(count)))
    assert np.float32(ours(count)) == expected
    assert np.float32(ours(jnp.int32(count))) == expected


INT32 = np.iinfo(np.int32)


@pytest.mark.parametrize(
    "count, by, expected",
    [
        (5, -3, 8),
        (INT32.max - 3, -3, INT32.max),  # exactly at the bound: no saturation needed
        (INT32.max - 2, -3, INT32.max),  # one past: saturates instead of wrapping
        (INT32.max, -1, INT32.max),
        (INT32.min + 3, 3, INT32.min),
        (INT32.min + 2, 3, INT32.min),
        (-7, 3, -10),
    ],
)
def test_shift_count_saturates_at_both_bounds(count, by, expected):
    """Boundary: ``count - by`` at exactly the int32 bound and one past it, both signs of ``by``."""
    got = shift_count(jnp.int32(count), by)
    assert got.dtype == jnp.int32 and int(got) == expected


def test_join_with_a_negative_boundary_past_int32_saturates():
    """A negative join boundary shifts the count up: near the top it saturates (and optax's
    piece still reads the last value instead of wrapping to the start)."""
    sched = join([constant(1.0), linear(0.0, 1.0, 2**31 - 1)], [-5])
    assert float(sched(jnp.int32(INT32.max - 1))) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "schedules, boundaries, says",
    [
        (2, [3, 6, 9], "boundaries[1:] are ignored"),
        (3, [3, 6, 9, 12], "boundaries[2:] are ignored"),
        (3, [3], "schedules[2:] are never used"),
        (4, [3], "schedules[2:] are never used"),
    ],
)
def test_join_names_exactly_what_it_drops(schedules, boundaries, says):
    """Boundary: one boundary too many or too few, and more."""
    pieces = [constant(float(i)) for i in range(schedules)]
    with pytest.warns(UserWarning) as caught:
        join(pieces, boundaries)
    (message,) = [str(w.message) for w in caught]
    assert f"; {says}, as optax's zip drops them" in message
