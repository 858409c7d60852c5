"""safe_increment: saturating counters (C4.3), checked against optax and plain int32 arithmetic."""

import chex
import jax.numpy as jnp
import numpy as np
import optax
from absl.testing import absltest, parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.optim import safe_increment

INT32_MAX = 2**31 - 1


class SafeIncrementTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.parameters(0, 1, 41, INT32_MAX - 2, INT32_MAX - 1, INT32_MAX, -5)
    def test_int32_matches_optax_and_saturates(self, value):
        count = jnp.asarray(value, jnp.int32)
        ours = self.variant(safe_increment)(count)
        chex.assert_type(ours, jnp.int32)
        chex.assert_shape(ours, ())
        self.assertEqual(int(ours), int(optax.safe_increment(count)))
        self.assertEqual(int(ours), min(value + 1, INT32_MAX))

    def test_plain_increment_wraps_where_safe_increment_stops(self):
        count = jnp.asarray(INT32_MAX, jnp.int32)
        self.assertEqual(int(count + jnp.int32(1)), -(2**31))  # the hazard C4.3 is about
        self.assertEqual(int(safe_increment(count)), INT32_MAX)

    @parameterized.parameters(jnp.int8, jnp.int16, jnp.uint8, jnp.float16, jnp.float32)
    def test_other_dtypes_saturate_at_their_max(self, dtype):
        info = jnp.iinfo(dtype) if jnp.issubdtype(dtype, jnp.integer) else jnp.finfo(dtype)
        top = jnp.asarray(info.max, dtype)
        out = safe_increment(top)
        chex.assert_type(out, dtype)
        self.assertEqual(float(out), float(info.max))
        self.assertEqual(float(safe_increment(jnp.asarray(3, dtype))), 4.0)

    def test_works_elementwise_on_arrays(self):
        counts = jnp.asarray([0, INT32_MAX - 1, INT32_MAX], jnp.int32)
        np.testing.assert_array_equal(
            safe_increment(counts), np.asarray([1, INT32_MAX, INT32_MAX], np.int32)
        )

    def test_rejects_bool(self):
        with self.assertRaisesRegex(TypeError, "bool"):
            safe_increment(jnp.asarray(True))

    @settings(max_examples=300, deadline=None)
    @given(st.integers(-(2**31), INT32_MAX))
    def test_property_never_decreases_never_wraps(self, value):
        out = int(safe_increment(np.int32(value)))
        self.assertGreaterEqual(out, value)
        self.assertEqual(out, min(value + 1, INT32_MAX))


if __name__ == "__main__":
    absltest.main()
