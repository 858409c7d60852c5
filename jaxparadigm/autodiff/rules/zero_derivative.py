"""The one list of primitives whose derivative is zero, registered in both tables (claim C3.2).

Piecewise-constant ops (sign, floor, round, comparisons), integer- or bool-valued ops (bitwise
logic, shifts, ``population_count``, ``clz``, ``argmax``, ``iota``, the boolean reductions),
``bitcast_convert_type`` (a reinterpretation of the bits: jax's ``defjvp_zero``) and
``stop_gradient``: every cotangent of their operands is zero (VJP: ``None`` for each primal),
their output tangent is zero (JVP: ``tangents.zero_rule`` binds the primitive and returns a
symbolic zero), and their outputs are constants to the reverse sweeps' activity analysis
(``registry.register_zero_derivative``), so an operand fed only through them is not differentiated.

The reverse sweep never calls a VJP rule for a node without a float output cotangent
(``Graph.backward`` skips it), so for the integer-valued entries the VJP rule is there so that
both tables list the same primitives, not because a program needs it.
"""

from __future__ import annotations

import jax.extend.core.primitives as P

from jaxparadigm.autodiff.registry import register_jvp, register_vjp, register_zero_derivative
from jaxparadigm.autodiff.rules.tangents import zero_rule

__all__ = ["ZERO_DERIVATIVE"]

ZERO_DERIVATIVE = (
    P.stop_gradient_p,
    P.sign_p,
    P.floor_p,
    P.ceil_p,
    P.round_p,
    P.is_finite_p,
    P.nextafter_p,
    P.eq_p,
    P.ne_p,
    P.lt_p,
    P.le_p,
    P.gt_p,
    P.ge_p,
    P.eq_to_p,
    P.le_to_p,
    P.lt_to_p,
    P.and_p,
    P.or_p,
    P.not_p,
    P.xor_p,
    P.shift_left_p,
    P.shift_right_arithmetic_p,
    P.shift_right_logical_p,
    P.population_count_p,
    P.clz_p,
    P.bitcast_convert_type_p,
    P.iota_p,
    P.argmax_p,
    P.argmin_p,
    P.reduce_and_p,
    P.reduce_or_p,
    P.reduce_xor_p,
)


def _zero_vjp(ct, *primals, **params):
    """Every cotangent is zero (``None``), one per primal."""
    del ct, params
    return (None,) * len(primals)


for _p in ZERO_DERIVATIVE:
    register_vjp(_p)(_zero_vjp)
    register_jvp(_p)(zero_rule(_p))
    register_zero_derivative(_p)
