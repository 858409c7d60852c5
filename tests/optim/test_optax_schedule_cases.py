"""optax's own schedule tests, ported to jaxparadigm.optim.schedules (C4.3).

Upstream: google-deepmind/optax, ``optax/schedules/_schedule_test.py`` and
``optax/schedules/_join_test.py`` (optax 0.2.8). Each test names the upstream class and test it
ports. Cases for schedules we do not ship (piecewise constant/interpolate, exponential decay,
SGDR, one-cycle) are not ported. Negative values, negative ``transition_steps``, ``exponent <=
0`` are taken as optax takes them (issue 23; negative/infinite rates warn); the one deliberate
difference left is NaN counts (pinned in ``NanCountTest``).
"""

import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from absl.testing import absltest, parameterized

from jaxparadigm.optim import schedules as S


class ConstantTest(absltest.TestCase):
    def test_constant(self):
        # _schedule_test.py ConstantTest.test_constant
        schedule_fn = jax.jit(S.constant(10))
        generated = [schedule_fn(count) for count in range(15)]
        np.testing.assert_allclose(np.full(15, 10.0, np.float32), generated, atol=1e-3)


class PolynomialTest(absltest.TestCase):
    def test_linear(self):
        # _schedule_test.py PolynomialTest.test_linear
        schedule_fn = jax.jit(S.polynomial(10.0, 20.0, 1, 10))
        generated = [schedule_fn(count) for count in range(15)]
        expected = np.array(list(range(10, 20)) + [20] * 5, dtype=np.float32)
        np.testing.assert_allclose(expected, generated, atol=1e-3)

    def test_zero_steps_schedule(self):
        # _schedule_test.py PolynomialTest.test_zero_steps_schedule (num_steps in [-1, 0]).
        for num_steps in [-1, 0]:
            schedule_fn = jax.jit(S.polynomial(10.0, 20.0, 1, num_steps))
            for count in range(15):
                np.testing.assert_allclose(schedule_fn(count), 10.0)
            self.assertEqual(
                S.linear(10.0, 20.0, num_steps)(7), optax.linear_schedule(10.0, 20.0, num_steps)(7)
            )

    def test_negative_transition_begin_reads_as_zero(self):
        # optax's polynomial_schedule: "a negative transition_begin ... falling back to 0".
        counts = jnp.arange(14, dtype=jnp.int32)
        ours = S.polynomial(10.0, 20.0, 1, 10, transition_begin=-2)(counts)
        theirs = optax.polynomial_schedule(10.0, 20.0, 1, 10, transition_begin=-2)(counts)
        np.testing.assert_array_equal(ours, theirs)

    def test_nonlinear(self):
        # _schedule_test.py PolynomialTest.test_nonlinear
        schedule_fn = jax.jit(S.polynomial(25.0, 10.0, 2, 10))
        generated = [schedule_fn(count) for count in range(15)]
        expected = [10.0 + 15.0 * (1.0 - n / 10) ** 2 for n in range(10)] + [10] * 5
        np.testing.assert_allclose(np.array(expected, np.float32), generated, atol=1e-3)

    def test_with_decay_begin(self):
        # _schedule_test.py PolynomialTest.test_with_decay_begin
        schedule_fn = jax.jit(S.polynomial(30.0, 10.0, 2, 10, transition_begin=4))
        generated = [schedule_fn(count) for count in range(20)]
        expected = [30.0] * 4 + [10.0 + 20.0 * (1.0 - n / 10) ** 2 for n in range(10)] + [10] * 6
        np.testing.assert_allclose(np.array(expected, np.float32), generated, atol=1e-3)


def _cosine_multipliers(fractions):
    return 0.5 + 0.5 * np.cos(np.pi * np.asarray(fractions))


class CosineDecayTest(absltest.TestCase):
    def test_decay_count_smaller_count(self):
        # _schedule_test.py CosineDecayTest.test_decay_count_smaller_count
        schedule_fn = jax.jit(S.cosine_decay(0.1, 10, 0.0))
        generated = [schedule_fn(count) for count in range(10)]
        expected = 0.1 * _cosine_multipliers(np.arange(10) / 10)
        np.testing.assert_allclose(expected, generated, atol=1e-3)

    def test_decay_count_greater_count(self):
        # _schedule_test.py CosineDecayTest.test_decay_count_greater_count
        schedule_fn = jax.jit(S.cosine_decay(0.1, 5, 0.0))
        generated = [schedule_fn(count) for count in range(12)]
        expected = 0.1 * _cosine_multipliers(np.minimum(np.arange(12) / 5, 1.0))
        np.testing.assert_allclose(expected, generated, atol=1e-3)

    def test_decay_count_greater_count_with_alpha(self):
        # _schedule_test.py CosineDecayTest.test_decay_count_greater_count_with_alpha
        schedule_fn = jax.jit(S.cosine_decay(0.1, 5, 0.1))
        generated = [schedule_fn(count) for count in range(12)]
        multipliers = 0.9 * _cosine_multipliers(np.minimum(np.arange(12) / 5, 1.0)) + 0.1
        np.testing.assert_allclose(0.1 * multipliers, generated, atol=1e-3)

    def test_with_exponent(self):
        # _schedule_test.py CosineDecayTest.test_with_exponent (upstream's expected values)
        schedule_fn = jax.jit(S.cosine_decay(init_value=0.1, decay_steps=100, exponent=2))
        output = schedule_fn(np.array([0, 10, 50, 75, 100]))
        expected = [0.1, 0.09516553580760956, 0.025, 0.0021446612663567066, 0.0]
        np.testing.assert_allclose(output, np.array(expected), rtol=1e-6, atol=1e-8)

    def test_exponent_is_bitwise_optax(self):
        counts = jnp.arange(0, 120, 7, dtype=jnp.int32)
        for exponent in (2, 0.5, 3.0):
            ours = jax.jit(S.cosine_decay(0.3, 100, 0.1, exponent))(counts)
            theirs = jax.jit(optax.cosine_decay_schedule(0.3, 100, 0.1, exponent))(counts)
            np.testing.assert_array_equal(ours, theirs)

    def test_with_giant_int_steps(self):
        # _schedule_test.py CosineDecayTest.test_with_giant_int_steps
        schedule_fn = jax.jit(S.cosine_decay(1000.0, int(1e10), 0.0, exponent=1))
        np.testing.assert_allclose(schedule_fn(int(1e9)), 975.52826)

    def test_nonpositive_exponent_as_optax(self):
        # optax accepts exponent=0 (a constant) and < 0 (an infinite rate at the end); so do we,
        # with a warning for the infinite one.
        counts = jnp.arange(12, dtype=jnp.int32)
        for exponent, warns in ((0.0, False), (-1.0, True)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                ours = S.cosine_decay(1.0, 10, 0.0, exponent)(counts)
            self.assertEqual(len(caught), int(warns))
            theirs = optax.cosine_decay_schedule(1.0, 10, 0.0, exponent)(counts)
            np.testing.assert_array_equal(ours, theirs)
        self.assertTrue(np.isinf(float(ours[10])))


class WarmupCosineDecayTest(parameterized.TestCase):
    @parameterized.named_parameters(
        ("with end value", 10, 0.5, 1e-4),
        ("without end value", 5, 3, 0.0),
    )
    def test_limits(self, init_value, peak_value, end_value):
        # _schedule_test.py WarmupCosineDecayTest.test_limits
        schedule_fn = jax.jit(S.warmup_cosine_decay(init_value, peak_value, 100, 1000, end_value))
        np.testing.assert_allclose(init_value, schedule_fn(0))
        np.testing.assert_allclose(peak_value, schedule_fn(100))
        np.testing.assert_allclose(end_value, schedule_fn(1000), rtol=1e-3)

    def test_with_exponent(self):
        # _schedule_test.py WarmupCosineDecayTest.test_with_exponent (upstream's values; a
        # negative end_value warns).
        with self.assertWarnsRegex(UserWarning, "end_value=-3.0"):
            schedule_fn = jax.jit(S.warmup_cosine_decay(0.2, 1.21, 50, 100, -3.0, exponent=2))
        output = schedule_fn(np.array([0, 10, 50, 75, 100]))
        expected = [0.20000004768371582, 0.4020000100135803, 1.2100000381469727]
        expected += [-1.947500228881836, -3.000000238418579]
        np.testing.assert_allclose(output, np.array(expected), rtol=1e-6, atol=1e-8)

    def test_with_exponent_positive_end(self):
        # The same schedule with end_value=0.3, against the closed form.
        schedule_fn = jax.jit(S.warmup_cosine_decay(0.2, 1.21, 50, 100, 0.3, exponent=2))
        t = np.array([0, 10, 50, 75, 100])
        warm = 0.2 + (1.21 - 0.2) * t / 50
        alpha = 0.3 / 1.21
        frac = np.clip((t - 50) / 50, 0, 1)
        decay = 1.21 * ((1 - alpha) * (0.5 * (1 + np.cos(np.pi * frac))) ** 2 + alpha)
        np.testing.assert_allclose(
            schedule_fn(t), np.where(t < 50, warm, decay), rtol=1e-6, atol=1e-7
        )

    def test_exponent_is_bitwise_optax(self):
        counts = jnp.arange(0, 130, 3, dtype=jnp.int32)
        ours = jax.jit(S.warmup_cosine_decay(0.0, 1.0, 20, 100, 0.05, exponent=2))(counts)
        want = optax.warmup_cosine_decay_schedule(0.0, 1.0, 20, 100, 0.05, exponent=2)
        np.testing.assert_array_equal(ours, jax.jit(want)(counts))

    def test_zero_peak_value(self):
        # _schedule_test.py WarmupCosineDecayTest.test_zero_peak_value (end_value=-3.0, upstream's
        # values): alpha is 0 when peak is 0, so the decay stays at 0.
        for end_value in (-3.0, 0.0):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                schedule_fn = jax.jit(S.warmup_cosine_decay(0.2, 0, 50, 100, end_value, exponent=2))
            output = schedule_fn(np.array([0, 10, 50, 75, 100]))
            np.testing.assert_allclose(output, [0.2, 0.16, 0.0, 0.0, 0.0], rtol=1e-6, atol=1e-8)

    def test_monotonicity_and_exponent_ordering(self):
        # _schedule_test.py WarmupCosineDecayTest.test_monotonicity_and_exponent_ordering
        regular = S.warmup_cosine_decay(0.0, 1.0, 5, 25, 0.1, exponent=1.0)
        steep = S.warmup_cosine_decay(0.0, 1.0, 5, 25, 0.1, exponent=2.0)
        steps = np.arange(26)
        vals, vals2 = np.asarray(regular(steps)), np.asarray(steep(steps))
        self.assertTrue(np.all(np.diff(vals[:6]) > 0))
        self.assertAlmostEqual(float(vals[5]), 1.0, places=6)
        self.assertTrue(np.all(np.diff(vals[5:]) <= 0))
        self.assertAlmostEqual(float(vals[-1]), 0.1, places=6)
        self.assertTrue(np.all(vals2[5:] <= vals[5:] + 1e-12))

    def test_raises_when_decay_equals_warmup(self):
        # _schedule_test.py WarmupCosineDecayTest.test_raises_when_decay_equals_warmup
        with self.assertRaises(ValueError):
            S.warmup_cosine_decay(0.2, 1.2, 10, 10, 0.0)


class JoinTest(absltest.TestCase):
    def test_join_schedules(self):
        # _join_test.py JoinTest.test_join_schedules
        my_schedule = S.join([S.constant(1.0), S.constant(2.0), S.constant(1.0)], [3, 6])
        expected = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.0]
        for count, want in enumerate(expected):
            np.testing.assert_allclose(want, my_schedule(count), atol=0.0)
            np.testing.assert_allclose(want, my_schedule(jnp.int32(count)), atol=0.0)


class ScheduleAsLearningRateTest(parameterized.TestCase):
    @parameterized.parameters("sgd", "adam", "adamw")
    def test_optimization(self, name):
        # _schedule_test.py ScheduleAsLearningRateTest.test_optimization on optax's parabola.
        import jaxparadigm.optim as ours

        factory = getattr(ours, name)
        kwargs = {"momentum": 0.9} if name == "sgd" else {}
        with_schedule = factory(S.constant(1e-3), **kwargs)
        with_lr = factory(1e-3, **kwargs)
        target = jnp.array([1.0, -1.0, 1.0])
        objective = lambda p: jnp.sum((p - target) ** 2)

        def run(opt):
            params = jnp.array([-1.0, 10.0, 1.0])
            state = opt.init(params)

            @jax.jit
            def step(params, state):
                updates, state = opt.update(jax.grad(objective)(params), state, params)
                return optax.apply_updates(params, updates), state

            for _ in range(10):
                params, state = step(params, state)
            return params

        chex.assert_trees_all_close(run(with_schedule), run(with_lr))


ALL_SCHEDULES = [
    ("constant", lambda: S.constant(0.5)),
    ("linear", lambda: S.linear(1.0, 0.1, 10)),
    ("polynomial", lambda: S.polynomial(1.0, 0.1, 2.0, 10, 3)),
    ("cosine_decay", lambda: S.cosine_decay(1.0, 10, 0.1, exponent=2)),
    ("warmup_cosine_decay", lambda: S.warmup_cosine_decay(0.0, 1.0, 3, 10, 0.1)),
    ("linear_lr", lambda: S.linear_lr(1.0, 0.25, 1.0, 5)),
    ("join", lambda: S.join([S.constant(1.0), S.linear(1.0, 0.5, 4)], [2])),
]


class NanCountTest(chex.TestCase, parameterized.TestCase):
    """Our defined behaviour for NaN counts (issue 10): optax returns NaN for 6 of these. A NaN
    count reads as count 0; on the host it warns (issue 23: it was refused, a refusal optax does
    not make)."""

    @parameterized.named_parameters(*ALL_SCHEDULES)
    def test_host_nan_count_warns_and_reads_as_zero(self, build):
        sched = build()
        at_zero = np.asarray(sched(0), np.float32)
        for nan in (float("nan"), np.float32("nan"), np.array([2.0, np.nan])):
            with self.assertWarnsRegex(
                UserWarning, r"^count=.*: a NaN step count reads as count 0"
            ):
                got = np.asarray(sched(nan), np.float32)
            want = at_zero if np.ndim(nan) == 0 else [np.asarray(sched(2.0), np.float32), at_zero]
            np.testing.assert_array_equal(np.broadcast_to(got, np.shape(want)), want)

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*ALL_SCHEDULES)
    def test_array_nan_count_reads_as_zero(self, build):
        sched = build()
        counts = jnp.asarray([jnp.nan, 0.0, jnp.inf, -jnp.inf, 2.0], jnp.float32)
        got = self.variant(lambda c: jnp.broadcast_to(jnp.asarray(sched(c), jnp.float32), c.shape))
        got = np.asarray(got(counts))
        at_zero = float(sched(0))
        self.assertTrue(np.all(np.isfinite(got)), got)
        self.assertEqual(got[0], np.float32(at_zero))  # NaN -> count 0
        self.assertEqual(got[1], np.float32(at_zero))
        self.assertAlmostEqual(float(got[2]), float(sched(10**6)), places=6)  # +inf: the end
        self.assertEqual(got[3], np.float32(at_zero))  # -inf: the start
        self.assertAlmostEqual(float(got[4]), float(sched(2)), places=6)

    def test_optax_gives_nan(self):
        # The behaviour we replace: upstream schedules propagate a NaN count.
        nan = jnp.float32(jnp.nan)
        self.assertTrue(np.isnan(float(optax.linear_schedule(1.0, 0.1, 10)(nan))))
        self.assertTrue(np.isnan(float(optax.cosine_decay_schedule(1.0, 10)(nan))))


@pytest.mark.parametrize("name,build", ALL_SCHEDULES)
def test_int32_counts_compile_without_nan_guard(name, build):
    # The NaN guard exists only for floating counts: an int32 count's program has no isnan.
    nan_check = "compare NE"  # jnp.isnan(x) lowers to x != x
    if name != "constant":
        assert nan_check in jax.jit(build()).lower(jnp.float32(3)).as_text(), name
    assert nan_check not in jax.jit(build()).lower(jnp.int32(3)).as_text(), name


if __name__ == "__main__":
    absltest.main()
