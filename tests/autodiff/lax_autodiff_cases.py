"""Inputs and the op table shared by both ports of jax's ``tests/lax_autodiff_test.py``.

The forward half (``test_jax_lax_autodiff_port.py``) and the reverse half
(``test_port_lax_autodiff.py``) draw their arguments from these generators, which mimic
``jax._src.test_util``'s (``rand_default`` = 3 * normal, ``rand_small`` = 1e-3 * normal, ...), and
run upstream's ``LAX_GRAD_OPS`` entries with a real dtype (complex dtypes are refused by our
engine). With jax as the oracle the exact distribution only has to keep the functions smooth.
"""

import math
import zlib

import numpy as np
from jax import lax

F32 = np.float32


def keyed_rng(*key):
    """A generator seeded by ``key`` (crc32 of its repr: the same inputs in every process)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def rand_default(rng, shape, dtype=F32):
    return np.asarray(3 * rng.standard_normal(shape), dtype)


def rand_small(rng, shape, dtype=F32):
    return np.asarray(1e-3 * rng.standard_normal(shape), dtype)


def rand_positive(rng, shape, dtype=F32):
    return np.asarray(2 * rng.random(shape) + 1, dtype)


def rand_not_small(rng, shape, dtype=F32):
    x = 3 * rng.standard_normal(shape)
    return np.asarray(x + np.where(x > 0, 1.0, -1.0), dtype)


def rand_uniform(low, high):
    return lambda rng, shape, dtype=F32: np.asarray(rng.uniform(low, high, shape), dtype)


def rand_unique_int(rng, shape, dtype=F32, high=None):
    """Distinct integers (no ties) from ``[0, high)``, ``high`` defaulting to the element count."""
    n = math.prod(shape)
    high = n if high is None else high
    return rng.choice(np.arange(high), size=n, replace=False).reshape(shape).astype(dtype)


COMPATIBLE_SHAPES = [[(3,)], [(), (3, 4), (3, 1), (1, 4)], [(2, 3, 4), (2, 1, 4)]]

# (op, nargs, order, rng): upstream's LAX_GRAD_OPS entries with a real dtype. lax.conj is left out
# (on a float it returns a complex number, refused). asin/acos use (-1.3, 1.3) upstream; outside
# [-1, 1] both jax and we give nan, which assert_allclose treats as equal, so the ports keep to the
# domain (and away from its edges, where finite differences blow up) to test something.
LAX_GRAD_OPS = [
    (lax.neg, 1, 2, rand_default),
    (lax.floor, 1, 2, rand_uniform(0.1, 0.4)),
    (lax.ceil, 1, 2, rand_uniform(0.1, 0.4)),
    (lax.round, 1, 2, rand_uniform(0.1, 0.4)),
    (lax.exp, 1, 2, rand_small),
    (lax.exp2, 1, 2, rand_small),
    (lax.expm1, 1, 2, rand_default),
    (lax.log, 1, 2, rand_positive),
    (lax.log1p, 1, 2, rand_positive),
    (lax.sinh, 1, 2, rand_default),
    (lax.cosh, 1, 2, rand_default),
    (lax.tanh, 1, 2, rand_default),
    (lax.sin, 1, 2, rand_default),
    (lax.cos, 1, 2, rand_default),
    (lax.tan, 1, 2, rand_uniform(-1.3, 1.3)),
    (lax.asin, 1, 2, rand_uniform(-0.9, 0.9)),
    (lax.acos, 1, 2, rand_uniform(-0.9, 0.9)),
    (lax.atan2, 2, 2, rand_default),
    (lax.erf, 1, 2, rand_small),
    (lax.erfc, 1, 2, rand_small),
    (lax.erf_inv, 1, 2, rand_small),
    (lax.bessel_i0e, 1, 2, rand_default),
    (lax.bessel_i1e, 1, 2, rand_default),
    (lax.abs, 1, 2, rand_positive),
    (lax.pow, 2, 2, rand_positive),
    (lax.sqrt, 1, 2, rand_positive),
    (lax.rsqrt, 1, 2, rand_positive),
    (lax.cbrt, 1, 2, rand_not_small),
    (lax.logistic, 1, 2, rand_default),
    (lax.add, 2, 2, rand_default),
    (lax.sub, 2, 2, rand_default),
    (lax.mul, 2, 2, rand_default),
    (lax.div, 2, 1, rand_not_small),
    (lax.max, 2, 2, rand_default),
    (lax.min, 2, 2, rand_default),
]

# upstream's special_values_test_cases: (op, points where the derivative is checked)
SPECIAL_VALUES = [
    (lax.sinh, [0.0]),
    (lax.cosh, [0.0]),
    (lax.tanh, [0.0, 1000.0]),
    (lax.sin, [0.0, np.pi, np.pi / 2.0, np.pi / 4.0]),
    (lax.cos, [0.0, np.pi, np.pi / 2.0, np.pi / 4.0]),
    (lax.tan, [0.0]),
    (lax.asin, [0.0]),
    (lax.acos, [0.0]),
    (lax.atan, [0.0, 1000.0]),
    (lax.erf, [0.0, 10.0]),
    (lax.erfc, [0.0, 10.0]),
]

# upstream's testReduceGrad shapes: [operand shape, reduced dimensions]
REDUCE_SHAPES = [
    [(), ()],
    [(3, 4, 5), ()],
    [(3, 4, 5), (0,)],
    [(3, 4, 5), (1, 2)],
    [(3, 4, 5), (0, 2)],
    [(3, 4, 5), (0, 1, 2)],
    [(3, 1), (1,)],
    [(3, 0, 5), (1,)],
]
