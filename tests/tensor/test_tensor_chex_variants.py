"""View materialisation and scatter under every chex variant, ``with_pmap`` included (4 forced CPU
devices): the view is static, the storage is the per-device argument."""

import chex
import jax.numpy as jnp
import numpy as np
from absl.testing import parameterized

from jaxparadigm.tensor import View, scatter_nd_update


class PmapVariantsTest(chex.TestCase, parameterized.TestCase):
    @chex.variants(
        with_jit=True, without_jit=True, with_device=True, without_device=True, with_pmap=True
    )
    @parameterized.named_parameters(
        ("article_c2_1", View((2, 3), (3, 1), 2)),
        ("transpose", View.contiguous((3, 4)).transpose(0, 1)),
        ("expand", View.contiguous((3, 1)).expand(3, 5)),
        ("slice_step", View.contiguous((12,)).slice(0, 1, 11, 3)),
    )
    def test_materialize_matches_numpy(self, view):
        storage = np.arange(12, dtype=np.float32)
        got = self.variant(view.materialize)(jnp.asarray(storage))
        idx = view.offset + sum(
            np.arange(n).reshape([-1 if d == i else 1 for d in range(len(view.shape))]) * s
            for i, (n, s) in enumerate(zip(view.shape, view.strides, strict=True))
        )
        chex.assert_shape(got, view.shape)
        np.testing.assert_array_equal(np.asarray(got), storage[idx])

    @chex.variants(with_jit=True, without_jit=True, with_pmap=True)
    def test_scatter_returns_new_values(self):
        x = jnp.arange(6.0).reshape(2, 3)
        fn = self.variant(
            lambda a: scatter_nd_update(a, np.array([[1, 2], [0, 0]]), jnp.array([9.0, 7.0]))
        )
        got = np.asarray(fn(x))
        expected = np.arange(6.0).reshape(2, 3)
        expected[1, 2], expected[0, 0] = 9.0, 7.0
        np.testing.assert_array_equal(got, expected)
