"""First and second derivatives of the roots and powers at +-inf and +-0, against jax (C3.2, C3.3).

At these points a rule written as a quotient of infinities (``ct / (3 cbrt(x)^2)``: its own
derivative multiplies ``inf * 0``) gives NaN where jax's form (``ct / 3 * integer_pow(y, -2)``)
gives a signed zero or an infinity. Each function is checked elementwise on
``[inf, -inf, 0, -0, 8]`` in reverse mode, reverse over reverse, forward over reverse and forward
over forward; values must equal jax's at the four limits (NaN where jax is NaN; zeros of either
sign are equal) and agree to 1e-6 at 8 (where the order of roundings may differ by an ulp).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import func

POINTS = jnp.asarray([np.inf, -np.inf, 0.0, -0.0, 8.0], jnp.float32)
FUNCTIONS = {
    "cbrt": jnp.cbrt,
    "sqrt": jnp.sqrt,
    "rsqrt": lax.rsqrt,
    "reciprocal": lambda x: 1.0 / x,
    "integer_pow_-2": lambda x: lax.integer_pow(x, -2),
    "integer_pow_3": lambda x: lax.integer_pow(x, 3),
    "pow_x_0.5": lambda x: lax.pow(x, 0.5),
    "pow_x_-0.5": lambda x: lax.pow(x, -0.5),
    "pow_x_third": lambda x: lax.pow(x, 1.0 / 3.0),
    "exp": jnp.exp,
    "log": jnp.log,
}


def _d1(grad, f):
    return grad(lambda x: jnp.sum(f(x)))


def _derivatives(grad, jvp, f):
    d1 = _d1(grad, f)
    ones = jnp.ones_like(POINTS)
    return {
        "d1": d1(POINTS),
        "d2 reverse over reverse": _d1(grad, d1)(POINTS),
        "d2 forward over reverse": jvp(d1, (POINTS,), (ones,))[1],
        "d2 forward over forward": jvp(lambda x: jvp(f, (x,), (ones,))[1], (POINTS,), (ones,))[1],
    }


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_derivatives_at_infinities_and_zeros_match_jax(name):
    f = FUNCTIONS[name]
    ours = _derivatives(func.grad, func.jvp, f)
    theirs = _derivatives(jax.grad, jax.jvp, f)
    for order, value in ours.items():
        np.testing.assert_array_equal(value[:4], theirs[order][:4], err_msg=f"{name}: {order}")
        np.testing.assert_allclose(value[4], theirs[order][4], rtol=1e-6, err_msg=name)


def test_cbrt_second_derivative_at_infinity_is_a_signed_zero():
    """jax: d2 cbrt = -2/9 y^-5 -> -0 at +inf, +0 at -inf, -inf at +0, +inf at -0."""
    d2 = func.grad(lambda x: jnp.sum(func.grad(lambda x: jnp.sum(jnp.cbrt(x)))(x)))(POINTS)
    np.testing.assert_array_equal(d2[:4], [-0.0, 0.0, -np.inf, np.inf])
    assert list(np.signbit(d2[:2])) == [True, False]
