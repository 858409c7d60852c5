"""Schedules (C4.3): equal to optax / torch LinearLR, and safe at and beyond 2**31 - 1."""

import math
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import absltest, parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.optim import schedules as S

INT32_MAX = 2**31 - 1
COUNTS = [0, 1, 2, 9, 10, 11, 19, 20, 21, 99, 100, 101, 12345, INT32_MAX - 1, INT32_MAX]

PAIRS = [
    ("constant", lambda m: (S.constant(0.3), optax.constant_schedule(0.3))),
    ("linear", lambda m: (S.linear(1.0, 0.1, 100), optax.linear_schedule(1.0, 0.1, 100))),
    (
        "linear_begin",
        lambda m: (S.linear(0.0, 2.0, 10, 10), optax.linear_schedule(0.0, 2.0, 10, 10)),
    ),
    (
        "polynomial",
        lambda m: (
            S.polynomial(1.0, 0.01, 2.0, 100, 20),
            optax.polynomial_schedule(1.0, 0.01, 2.0, 100, 20),
        ),
    ),
    (
        "cosine_decay",
        lambda m: (S.cosine_decay(0.5, 100, 0.1), optax.cosine_decay_schedule(0.5, 100, 0.1)),
    ),
    (
        "warmup_cosine_decay",
        lambda m: (
            S.warmup_cosine_decay(0.0, 1.0, 10, 100, 0.05),
            optax.warmup_cosine_decay_schedule(0.0, 1.0, 10, 100, 0.05),
        ),
    ),
    (
        "join",
        lambda m: (
            S.join([S.constant(1.0), S.linear(1.0, 0.5, 10), S.constant(0.25)], [10, 20]),
            optax.join_schedules(
                [
                    optax.constant_schedule(1.0),
                    optax.linear_schedule(1.0, 0.5, 10),
                    optax.constant_schedule(0.25),
                ],
                [10, 20],
            ),
        ),
    ),
]


class MatchesOptaxTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*PAIRS)
    def test_equal_on_int32_counts(self, build):
        ours, theirs = build(None)
        counts = jnp.asarray(COUNTS, jnp.int32)
        # Same compilation mode on both sides: jit may fuse cos/pow differently than eager.
        got = self.variant(lambda c: jnp.asarray(ours(c), jnp.float32) + 0 * c)(counts)
        want = self.variant(lambda c: jnp.asarray(theirs(c), jnp.float32) + 0 * c)(counts)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))

    @parameterized.named_parameters(*PAIRS)
    def test_equal_on_python_int_counts_and_safe_beyond(self, build):
        ours, theirs = build(None)
        for c in (0, 10, 20, 100):
            self.assertEqual(float(ours(c)), float(theirs(c)), msg=str(c))
        at_max = float(ours(jnp.int32(INT32_MAX)))
        for big in (INT32_MAX + 1, 2**40, 10**30):
            value = float(ours(big))
            self.assertAlmostEqual(value, at_max, places=6, msg=str(big))
            self.assertGreaterEqual(value, 0.0)

    def test_optax_polynomial_cannot_take_python_ints_past_int32(self):
        # Evidence for the note: optax's schedule raises instead of clamping; ours clamps.
        with self.assertRaises(OverflowError):
            optax.linear_schedule(1.0, 0.1, 100)(2**40)
        self.assertAlmostEqual(float(S.linear(1.0, 0.1, 100)(2**40)), 0.1, places=6)


class NeverNegativeTest(parameterized.TestCase):
    @settings(max_examples=100, deadline=None)
    @given(
        count=st.one_of(
            st.integers(-(2**31), INT32_MAX).map(lambda v: jnp.asarray(v, jnp.int32)),
            st.integers(0, 2**70),
        ),
        init=st.floats(0.0, 10.0),
        end=st.floats(0.0, 10.0),
        steps=st.integers(1, 10**6),
    )
    def test_any_count_gives_finite_non_negative(self, count, init, end, steps):
        peak = max(init, end)
        scheds = [
            S.linear(init, end, steps),
            S.polynomial(init, end, 0.5, steps, 3),
            S.cosine_decay(init, steps, 0.2),
            S.warmup_cosine_decay(0.0, peak, steps, steps + 5, min(end, peak)),
            S.linear_lr(init, 0.25, 1.0, steps),
        ]
        for sched in scheds:
            value = float(sched(count))
            self.assertTrue(math.isfinite(value) and value >= 0.0, (sched, count, value))


class LinearLrTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_closed_form(self):
        sched = S.linear_lr(0.1, start_factor=0.5, end_factor=1.0, total_iters=4)
        counts = jnp.arange(7, dtype=jnp.int32)
        expected = 0.1 * (0.5 + 0.5 * np.minimum(np.arange(7), 4) / 4)
        np.testing.assert_allclose(self.variant(sched)(counts), expected, rtol=1e-6)

    def test_wrapped_counter_restarts_warmup_but_stays_positive(self):
        sched = S.linear_lr(0.1)
        wrapped = jnp.asarray(INT32_MAX, jnp.int32) + jnp.int32(1)
        self.assertEqual(int(wrapped), -(2**31))
        self.assertAlmostEqual(float(sched(wrapped)), 0.1 / 3, places=7)

    @parameterized.parameters(
        (dict(base_lr=-1.0), r"^base_lr: got -1\.0, expected a number >= 0$"),
        (dict(base_lr=1.0, start_factor=0.0), "start_factor=0.0"),
        (dict(base_lr=1.0, start_factor=1.5), "start_factor=1.5"),
        (dict(base_lr=1.0, end_factor=-0.1), "end_factor=-0.1"),
        (dict(base_lr=1.0, end_factor=1.5), "end_factor=1.5"),
        (dict(base_lr=float("nan")), r"^base_lr: got nan, expected a number >= 0$"),
    )
    def test_bad_arguments(self, kwargs, message):
        # Each is refused by torch's LinearLR / optimiser too (see test_torch_refuses_them_too).
        with self.assertRaisesRegex(ValueError, message):
            S.linear_lr(**kwargs)

    @parameterized.parameters(
        dict(start_factor=0.0), dict(start_factor=1.5), dict(end_factor=-0.1), dict(end_factor=1.5)
    )
    def test_torch_refuses_them_too(self, **kwargs):
        torch = pytest.importorskip("torch")
        opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1.0)
        with self.assertRaises(ValueError):
            torch.optim.lr_scheduler.LinearLR(opt, **kwargs)


class ValidationTest(parameterized.TestCase):
    @parameterized.parameters(
        (lambda: S.constant("0.1"), TypeError, "value='0.1'"),
        (lambda: S.polynomial(1.0, 0.0, 1.0, "10"), TypeError, "transition_steps='10'"),
        (lambda: S.cosine_decay(1.0, 0), ValueError, "decay_steps=0"),
        (lambda: S.cosine_decay(1.0, -2.5), ValueError, "decay_steps=-2.5"),
        (lambda: S.warmup_cosine_decay(0.0, 1.0, 10, 10), ValueError, "decay_steps=10"),
        (lambda: S.join([], []), TypeError, "schedules=.*non-empty"),
        (lambda: S.join([S.constant(1.0), 0.5], [5]), TypeError, "schedules=.*callables"),
        (lambda: S.join([S.constant(1.0)] * 3, [5, "2"]), TypeError, r"boundaries\[1\]='2'"),
        (lambda: S.overflow_demo(window=0), ValueError, r"^window: got 0, expected an int >= 1$"),
        (
            lambda: S.overflow_demo(center=2**32),
            ValueError,
            r"^center: got 4294967296, expected an int in \[9, 2147483647\]$",
        ),
    )
    def test_bad_arguments(self, make, error, message):
        with self.assertRaisesRegex(error, message):
            make()


class OverflowDemoTest(absltest.TestCase):
    def test_every_field_against_the_closed_forms(self):
        """Each counter and rate against plain-Python formulas (issue 17: the demo's figures)."""
        base, s, e, n_iters = 1e-3, 1.0 / 3.0, 1.0, 5
        demo = S.overflow_demo(window=3)
        steps = list(range(INT32_MAX - 2, INT32_MAX + 4))
        naive = [t if t <= INT32_MAX else t - 2**32 for t in steps]  # int32 wraps
        safe = [min(t, INT32_MAX) for t in steps]  # saturates
        closed = lambda c: base * (s + (e - s) * min(n_iters, c) / n_iters)  # torch, no clamp
        clamped = lambda c: closed(min(max(c, 0), n_iters))
        self.assertEqual(list(demo.steps), steps)
        self.assertEqual(list(demo.naive_count), naive)
        self.assertEqual(list(demo.safe_count), safe)
        np.testing.assert_allclose(demo.lr_unclamped, [closed(c) for c in naive], rtol=1e-6)
        np.testing.assert_allclose(demo.lr_naive_clamped, [clamped(c) for c in naive], rtol=1e-6)
        np.testing.assert_allclose(demo.lr_safe, [clamped(c) for c in safe], rtol=1e-6)
        np.testing.assert_allclose(demo.lr_python_int, [clamped(c) for c in steps], rtol=1e-6)

    def test_defaults_are_documented_ones(self):
        """Defaults: the window straddles 2**31 - 1 by 4 steps; LinearLR(1/3, 1, 5) at 1e-3.
        (Moved from tests/claims/test_overflow_evidence.py: the defaults live here only.)"""
        demo = S.overflow_demo()
        self.assertEqual(demo.steps, tuple(range(INT32_MAX - 3, INT32_MAX + 5)))
        # total_iters=5 and start 1/3: a counter wrapped to -2**31 gives this unclamped rate.
        np.testing.assert_allclose(
            demo.lr_unclamped[4], 1e-3 * (1 / 3 + (2 / 3) * (-(2**31)) / 5), rtol=1e-6
        )
        np.testing.assert_allclose(demo.lr_naive_clamped[4], 1e-3 / 3, rtol=1e-6)
        np.testing.assert_allclose(demo.lr_safe, 1e-3, rtol=1e-6)

    def test_counters_are_int32_even_with_x64_enabled(self):
        with jax.enable_x64(True):
            demo = S.overflow_demo(window=1)
        self.assertEqual(demo.naive_count, (INT32_MAX, -(2**31)))
        self.assertEqual(demo.safe_count, (INT32_MAX, INT32_MAX))

    def test_smallest_window_and_center(self):
        """window >= 1 and center >= window + total_iters, both bounds inclusive and named."""
        demo = S.overflow_demo(center=5, window=2, total_iters=3)
        self.assertEqual(demo.steps, (4, 5, 6, 7))
        self.assertEqual(demo.naive_count, (4, 5, 6, 7))
        np.testing.assert_allclose(demo.lr_python_int, 1e-3, rtol=1e-6)  # past total_iters=3
        np.testing.assert_allclose(demo.lr_unclamped, 1e-3, rtol=1e-6)
        with self.assertRaisesRegex(
            ValueError, r"^center: got 4, expected an int in \[5, 2147483647\]$"
        ):
            S.overflow_demo(center=4, window=2, total_iters=3)
        with self.assertRaisesRegex(ValueError, r"^window: got 0, expected an int >= 1$"):
            S.overflow_demo(window=0)


@pytest.mark.crosscheck
def test_linear_lr_matches_torch_including_past_int32():
    torch = pytest.importorskip("torch")
    param = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([param], lr=0.2)
    sched_t = torch.optim.lr_scheduler.LinearLR(
        opt, start_factor=0.25, end_factor=0.9, total_iters=6
    )
    ours = S.linear_lr(0.2, 0.25, 0.9, 6)
    for step in range(10):
        assert float(ours(jnp.int32(step))) == pytest.approx(sched_t.get_last_lr()[0], rel=1e-6)
        opt.step()
        sched_t.step()
    # Past 2**31 - 1: tests/claims/test_overflow_evidence.py (the claim's torch side).


@pytest.mark.crosscheck
@pytest.mark.parametrize(
    "total_iters, warns",
    [(0, True), (-1, True), (0.5, True), (2.5, True), (3, False), (3.0, False)],
)
def test_linear_lr_takes_the_total_iters_torch_takes(total_iters, warns):
    """Issue 23: ``total_iters < 1`` and non-integer values were refused; torch's LinearLR takes
    them (``<= 0``: the start rate for ever; ``2.5``: it stops at step 2, short of
    ``end_factor``). Compared with torch eagerly, jitted and on host ints."""
    torch = pytest.importorskip("torch")
    param = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([param], lr=0.2)
    sched_t = torch.optim.lr_scheduler.LinearLR(opt, 0.25, 0.9, total_iters)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = S.linear_lr(0.2, 0.25, 0.9, total_iters)
    assert [str(w.message).split("=")[0] for w in caught] == (["total_iters"] if warns else [])
    steps = jnp.arange(7, dtype=jnp.int32)
    jitted = np.broadcast_to(np.asarray(jax.jit(ours)(steps)), steps.shape)
    for step in range(7):
        want = sched_t.get_last_lr()[0]
        assert float(ours(jnp.int32(step))) == pytest.approx(want, rel=1e-6), step
        assert float(ours(step)) == pytest.approx(want, rel=1e-6), step
        assert float(jitted[step]) == pytest.approx(want, rel=1e-6), step
        opt.step()
        sched_t.step()


def test_schedules_trace_under_jit_with_int32_state():
    sched = S.warmup_cosine_decay(0.0, 1.0, 5, 50)
    values = jax.jit(jax.vmap(sched))(jnp.asarray([0, 5, 50, INT32_MAX], jnp.int32))
    np.testing.assert_allclose(values, [0.0, 1.0, 0.0, 0.0], atol=1e-7)


if __name__ == "__main__":
    absltest.main()
