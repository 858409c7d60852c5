"""Every JVP rule against ``jax.jvp`` (and finite differences) on random and edge inputs (C3.2).

Each case is a small program; ``check_fwd`` compares our forward mode with ``jax.jvp`` up to second
order (forward over our own forward). ``test_every_rule_is_exercised`` proves that the cases
reach every primitive in the JVP table, so no rule goes untested.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import registered_jvp_primitives
from jaxparadigm.autodiff.registry import registered_primitives
from tests.autodiff.jvp_checks import check_fwd

RNG = np.random.default_rng(0)


def r(*shape, lo=-1.0, hi=1.0):
    return jnp.asarray(RNG.uniform(lo, hi, shape), jnp.float32)


def pos(*shape):
    return r(*shape, lo=0.5, hi=2.0)


X3, X23, P3 = r(3), r(2, 3), pos(3)
TIES = jnp.array([1.0, 3.0, 3.0, -2.0, 3.0], jnp.float32)
ZEROS = jnp.zeros(4, jnp.float32)
UNIQUE = jnp.asarray(RNG.permutation(16), jnp.float32)  # well separated: no ties under eps
DN_ROW = lax.GatherDimensionNumbers(
    offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
)
SDN = lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
IDX = jnp.array([[2], [0]], jnp.int32)
DUP = jnp.array([[1], [1]], jnp.int32)

# name -> (function, args, order); order 2 means forward over our forward mode too.
CASES = {
    "neg": (lax.neg, (X3,), 2),
    "exp": (jnp.exp, (X3,), 2),
    "exp2": (jnp.exp2, (X3,), 2),
    "expm1": (jnp.expm1, (X3,), 2),
    "log": (jnp.log, (P3,), 2),
    "log1p": (jnp.log1p, (P3,), 2),
    "sin": (jnp.sin, (X3,), 2),
    "cos": (jnp.cos, (X3,), 2),
    "tan": (jnp.tan, (X3,), 2),
    "asin": (jnp.arcsin, (X3 * 0.9,), 2),
    "acos": (jnp.arccos, (X3 * 0.9,), 2),
    "atan": (jnp.arctan, (X3,), 2),
    "sinh": (jnp.sinh, (X3,), 2),
    "cosh": (jnp.cosh, (X3,), 2),
    "asinh": (jnp.arcsinh, (X3,), 2),
    "acosh": (jnp.arccosh, (P3 + 1.0,), 2),
    "atanh": (jnp.arctanh, (X3 * 0.9,), 2),
    "tanh": (jnp.tanh, (X3,), 2),
    "logistic": (jax.nn.sigmoid, (X3,), 2),
    "sqrt": (jnp.sqrt, (P3,), 2),
    "rsqrt": (lax.rsqrt, (P3,), 2),
    "cbrt": (jnp.cbrt, (P3,), 2),
    "square": (jnp.square, (X3,), 2),
    "abs": (jnp.abs, (X3,), 2),
    "abs_at_zero": (jnp.abs, (ZEROS,), 1),
    "erf": (lax.erf, (X3,), 2),
    "erfc": (lax.erfc, (X3,), 2),
    "erf_inv": (lax.erf_inv, (X3 * 0.9,), 2),
    "lgamma": (lax.lgamma, (P3,), 2),
    "digamma": (lax.digamma, (P3,), 1),
    "polygamma": (lambda x: lax.polygamma(jnp.ones_like(x), x), (P3,), 1),
    "bessel_i0e": (lax.bessel_i0e, (X3,), 2),
    "bessel_i1e": (lax.bessel_i1e, (X3,), 2),
    "bessel_i1e_at_zero": (lax.bessel_i1e, (ZEROS,), 1),
    "integer_pow": (lambda x: x**3 + x**-2 + x**1 + x**0, (P3,), 2),
    "pow": (jnp.power, (P3, X3), 2),
    "pow_int_exponent": (lambda x: lax.pow(x, jnp.array([0, 1, 2], jnp.int32)), (X3,), 2),
    "pow_zero_base": (jnp.power, (jnp.zeros(3), jnp.array([0.0, 1.0, 2.0])), 1),
    "add_sub_mul_div": (lambda x, y: (x + y) * (x - 2.0 * y) / (y + 3.0), (X3, X3 + 0.1), 2),
    "rem": (jnp.remainder, (P3 * 3.0, P3), 1),
    "max_min": (lambda x, y: jnp.maximum(x, y) - jnp.minimum(x, 0.5 * y), (X3, r(3)), 2),
    "max_ties": (jnp.maximum, (TIES, TIES[::-1]), 1),
    "atan2": (jnp.arctan2, (X3, P3), 2),
    "clamp": (lambda lo, x, hi: lax.clamp(lo, x, hi), (X3 - 1.0, X3 * 2, X3 + 1.0), 2),
    "clamp_edges": (
        lambda x: lax.clamp(-0.5, x, 0.5),
        (jnp.array([-1.0, -0.5, 0.0, 0.5, 1.0]),),
        1,
    ),
    "select_n": (lambda x, y: jnp.where(x > 0, x * y, y), (X3, r(3)), 2),
    "comparisons": (lambda x: ((x > 0) & (x < 0.5) | (x == 1)).astype(jnp.float32) * x, (X3,), 2),
    "sign_floor_round": (
        lambda x: jnp.sign(x) + jnp.floor(x) + jnp.ceil(x) + jnp.round(x),
        (X3,),
        1,
    ),
    "is_finite": (lambda x: jnp.where(jnp.isfinite(x), x, 0.0), (X3,), 1),
    "bool_ops": (lambda x: jnp.where(~(x >= 0) ^ (x <= 0.5), x, 2 * x), (X3,), 2),
    "complex_interior": (
        lambda x, y: lax.real(lax.complex(x, y)) * lax.imag(lax.conj(lax.complex(x, y))),
        (X3, r(3)),
        2,
    ),
    "convert_element_type": (lambda x: x.astype(jnp.float16).astype(jnp.float32) * x, (X3,), 2),
    "convert_to_int": (lambda x: x.astype(jnp.int32), (X3 * 5.0,), 1),
    "copy_and_stop_gradient": (lambda x: jnp.array(x, copy=True) * lax.stop_gradient(x), (X3,), 2),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 5, 10) * x, (X3,), 2),
    "dot_general": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (r(2, 3, 4), r(2, 4, 2)), 2),
    "conv": (
        lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME"),
        (r(1, 2, 5), r(3, 2, 2)),
        2,
    ),
    "reduce_sum": (lambda x: jnp.sum(x, axis=1), (X23,), 2),
    "reduce_sum_empty_axis": (lambda x: jnp.sum(x, axis=0), (jnp.zeros((0, 3)),), 1),
    "reduce_max_ties": (lambda x: jnp.max(x), (TIES,), 1),
    "reduce_min": (lambda x: jnp.min(x, axis=0), (X23,), 1),
    "reduce_prod": (lambda x: jnp.prod(x, axis=1), (X23,), 2),
    "reduce_prod_with_zeros": (jnp.prod, (jnp.array([2.0, 0.0, 3.0, 0.0]),), 2),
    "reduce_prod_one_zero": (jnp.prod, (jnp.array([2.0, 0.0, 3.0]),), 2),
    "reduce_prod_empty": (lambda x: jnp.prod(x, axis=1), (jnp.zeros((2, 0)),), 1),
    "argmax_argmin": (lambda x: x[jnp.argmax(x)] + x[jnp.argmin(x)], (X3,), 1),
    "broadcast_reshape_transpose": (
        lambda x: jnp.broadcast_to(x, (4, 2, 3)).reshape(4, 6).T,
        (X23,),
        2,
    ),
    "reshape_with_dimensions": (lambda x: lax.reshape(x, (6,), dimensions=(1, 0)), (X23,), 2),
    "squeeze_expand": (lambda x: jnp.squeeze(x[None, :, None], (0, 2)), (X3,), 2),
    "rev": (lambda x: x[::-1] * jnp.flip(x), (X3,), 2),
    "slice_strided": (lambda x: x[:, ::2], (r(2, 5),), 2),
    "pad": (lambda x, v: lax.pad(x, v, [(1, 2, 1), (-1, 0, 0)]), (X23, jnp.float32(0.5)), 2),
    "concatenate": (lambda x, y: jnp.concatenate([x, y, x]), (X3, r(2)), 2),
    "stack": (lambda x, y: jnp.stack([x, y]), (X3, r(3)), 2),
    "split": (lambda x: jnp.split(x, [1, 3])[1] * 2.0, (r(5),), 2),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 0), (1, 3)), (X23, -8), 2),
    "dynamic_update_slice": (
        lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1)),
        (X23, r(1, 2), 1),
        2,
    ),
    "gather": (lambda x: x[jnp.array([2, 0, 2])], (X3,), 2),
    "gather_rows": (
        lambda x: lax.gather(x, IDX, DN_ROW, (1, 3), mode="clip"),
        (r(4, 3),),
        2,
    ),
    "scatter_add": (lambda x, u: x.at[jnp.array([1, 1, 0])].add(u), (X3, r(3)), 2),
    "scatter_set_unique": (lambda x, u: x.at[jnp.array([2, 0])].set(u), (X3, r(2)), 2),
    "scatter_set_duplicates": (
        lambda x, u: lax.scatter(x, DUP, u, SDN),
        (r(3, 2), r(2, 2)),
        2,
    ),
    "scatter_mul_unique": (
        lambda x, u: x.at[jnp.array([2, 0])].multiply(u, unique_indices=True),
        (X3, r(2)),
        2,
    ),
    "scatter_mul_operand_only": (lambda x: x.at[jnp.array([1, 1])].multiply(2.0), (X3,), 2),
    "scatter_max": (lambda x, u: x.at[jnp.array([1, 1, 0])].max(u), (X3, r(3)), 1),
    "scatter_min_ties": (
        lambda x, u: x.at[jnp.array([0, 0, 1])].min(u),
        (jnp.array([0.5, 0.2, 1.0]), jnp.array([0.5, 0.7, -1.0])),
        1,
    ),
    # variadic lax.reduce (two operands: the generic reduce primitive), a (sum, product) monoid
    "reduce_variadic": (
        lambda x, y: lax.reduce((x, y), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), (1,)),
        (X23, X23 + 1.5),
        2,
    ),
    "cumsum": (lambda x: jnp.cumsum(x, axis=1), (X23,), 2),
    "cumsum_reverse": (lambda x: lax.cumsum(x, axis=0, reverse=True), (X3,), 2),
    "cumprod": (lambda x: jnp.cumprod(x), (jnp.array([2.0, 0.0, 3.0, -1.0]),), 2),
    "cummax_ties": (lambda x: lax.cummax(x), (TIES,), 1),
    "cummin_reverse": (lambda x: lax.cummin(x, reverse=True), (r(5),), 1),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, axis=1), (X23,), 2),
    "sort": (jnp.sort, (r(5),), 2),
    "sort_ties_and_argsort": (lambda x: jnp.sort(x) + x[jnp.argsort(x)], (TIES,), 1),
    "sort_multi_operand": (
        lambda k, v: lax.sort((k, v), num_keys=1)[1],
        (r(4), r(4)),
        2,
    ),
    "sort_empty": (jnp.sort, (jnp.zeros(0),), 1),
    "top_k": (lambda x: lax.top_k(x, 2)[0], (r(2, 5),), 2),
    "reduce_window_sum": (
        lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID"),
        (r(3, 4),),
        2,
    ),
    "reduce_window_max": (
        lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 2), "SAME"),
        (UNIQUE.reshape(4, 4),),
        3,
    ),
    # order 1: jax's own JVP of a generic reduce_window fails on symbolic-zero tangents
    "reduce_window_generic": (
        lambda x: lax.reduce_window(x, 1.0, lax.mul, (1, 2), (1, 1), "VALID"),
        (r(2, 4),),
        1,
    ),
    "reduce_window_min": (
        lambda x: lax.reduce_window(x, jnp.inf, lax.min, (2,), (1,), "VALID"),
        (UNIQUE[:5],),
        2,
    ),
    "tile_unstack": (lambda x: jnp.unstack(jnp.tile(x, (2, 1)))[3], (X23,), 2),
    "scatter_sub": (lambda x, u: x.at[jnp.array([1, 1])].subtract(u), (X3, r(2)), 2),
    "device_put_and_sharding_constraint": (
        lambda x: jax.lax.with_sharding_constraint(
            jax.device_put(x) * x, jax.sharding.SingleDeviceSharding(jax.devices()[0])
        ),
        (X3,),
        2,
    ),
    "jit_inside": (lambda x: jax.jit(lambda y: jnp.sin(y) * y)(x), (X3,), 2),
    "optimization_barrier": (lambda x: lax.optimization_barrier((x, 2 * x))[1] * x, (X3,), 2),
}


# Second order (forward over our forward) runs by default for these; for all in the slow test.
SECOND_ORDER = {
    "tanh",
    "logistic",
    "integer_pow",
    "pow",
    "add_sub_mul_div",
    "dot_general",
    "conv",
    "reduce_prod_with_zeros",
    "cumprod",
    "sort_multi_operand",
    "top_k",
    "scatter_set_duplicates",
    "reduce_window_max",
    "select_n",
    "pad",
    "gather_rows",
}


def _check_case(name, order):
    fn, args, _ = CASES[name]
    # Finite differences are meaningless at kinks/ties and through stop_gradient.
    kinks = ("ties", "zero", "edges", "to_int", "argmax", "rem", "stop_gradient", "sign")
    numeric = None if any(s in name for s in kinks) else 5e-2
    check_fwd(fn, args, order, numeric_tol=numeric)


# One-line derivative-table entries (the unary tables of rules/elementary.py and special.py)
# beyond a representative few run under -m slow only; every bespoke rule, edge case and
# combination runs by default.
TABLE_SLOW = set(
    "exp2 expm1 log1p cos tan acos atan cosh asinh acosh atanh erfc rsqrt square sinh".split()
)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow if n in TABLE_SLOW else ()) for n in sorted(CASES)],
)
def test_jvp_rule_matches_jax(name):
    _check_case(name, CASES[name][2] if name in SECOND_ORDER else 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][2] > 1))
def test_jvp_rule_higher_order(name):
    _check_case(name, CASES[name][2])


def _primitive_names(jaxpr, out: set):
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        out.add(eqn.primitive.name)
        for v in eqn.params.values():
            subs = v if isinstance(v, (tuple, list)) else (v,)
            for s in subs:
                if hasattr(s, "eqns") or hasattr(getattr(s, "jaxpr", None), "eqns"):
                    _primitive_names(s, out)


# Exercised by their own test files: control flow and custom rules (test_control_flow_jvp.py,
# test_custom_jvp_rules.py); aliases and primitives that only integer programs reach.
ELSEWHERE = {
    "nextafter",
    "cond",
    "scan",
    "while",
    "remat2",
    "checkpoint",
    "custom_jvp_call",
    "custom_vjp_call",
    "pure_callback",
    "io_callback",
    "debug_callback",
    "debug_print",
    "pjit",
    "closed_call",
    "core_call",
    "add_any",
    "complex",
    "select_and_gather_add",
    "select_and_scatter_add",
    "eq_to",
    "le_to",
    "lt_to",
    "iota",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "population_count",
    "clz",
    "bitcast_convert_type",
    "reduce_and",
    "reduce_or",
    "reduce_xor",
    # linear algebra (issue 23): tests/autodiff/test_linalg_rules.py
    "cholesky",
    "triangular_solve",
    "lu",
    "custom_linear_solve",
    "eigh",
    "qr",
    "svd",
    "tridiagonal_solve",  # tests/autodiff/test_tridiagonal_solve_rules.py
    # issue 36: each family against jax.jvp in its own file
    "igamma",  # tests/autodiff/test_incomplete_rules.py (check_grads: both modes, order 2)
    "igammac",
    "regularized_incomplete_beta",
    "fft",  # tests/autodiff/test_fft_rules.py
    "eig",  # tests/autodiff/test_eig_rules.py
}


def test_every_rule_is_exercised():
    seen: set = set()
    for fn, args, _ in CASES.values():
        _primitive_names(jax.make_jaxpr(fn)(*args), seen)
    untested = set(registered_jvp_primitives()) - seen - ELSEWHERE
    assert not untested, f"JVP rules without a case: {sorted(untested)}"


# Names the VJP table registers that are not primitives jax 0.10 emits (old names / aliases).
NOT_A_PRIMITIVE = {"expand_dims", "scatter_add", "copy_p"}


def test_every_vjp_rule_has_a_jvp_rule():
    """Forward mode covers at least what reverse mode covers (the issue's parity requirement)."""
    missing = set(registered_primitives()) - set(registered_jvp_primitives()) - NOT_A_PRIMITIVE
    assert not missing, f"primitives with a VJP rule but no JVP rule: {sorted(missing)}"


SECTION_3 = """sinh cosh asin acos atan atan2 erf_inv bessel_i0e bessel_i1e rev reduce_prod
reduce_window_sum reduce_window_max reduce_window_min cumsum cumprod cummax cummin cumlogsumexp
sort top_k scatter scatter-add scatter-mul scatter-min scatter-max concatenate cond scan while
remat2 pure_callback io_callback custom_jvp_call custom_vjp_call""".split()


def test_scatter_mul_repeated_indices_and_zero_updates():
    """Deliberate difference: jax raises for scatter_mul's update tangent unless indices are
    unique; ours is exact. Oracle: the same product as one unique-index scatter per update."""
    from jaxparadigm.autodiff import jvp

    idx = jnp.array([1, 1, 3, 1, 7])  # a repeated slot (holding a zero update), one dropped
    x, u = jnp.arange(1.0, 6.0), jnp.array([2.0, 0.0, 3.0, 5.0, 4.0])
    tx, tu = jnp.ones(5), jnp.array([1.0, 2.0, -1.0, 0.5, 3.0])

    def one_at_a_time(x, u):
        for j in range(len(idx)):
            x = x.at[idx[j]].multiply(u[j], unique_indices=True)
        return x

    ours = jvp(lambda x, u: x.at[idx].multiply(u), (x, u), (tx, tu))
    np.testing.assert_allclose(ours[1], jax.jvp(one_at_a_time, (x, u), (tx, tu))[1], rtol=1e-6)
    second = jvp(lambda u: jvp(lambda u: x.at[idx].multiply(u), (u,), (tu,))[1], (u,), (tu,))
    ref = jax.jvp(lambda u: jax.jvp(lambda u: one_at_a_time(x, u), (u,), (tu,))[1], (u,), (tu,))
    np.testing.assert_allclose(second[1], ref[1], rtol=1e-6)


def test_products_of_others():
    from jaxparadigm.autodiff.rules.indexing import products_of_others

    u = jnp.array([2.0, 0.0, 3.0, 5.0, 4.0, 0.0])
    slot = jnp.array([1, 1, 3, 1, -1, 3])
    expected = [0.0 * 5.0, 2.0 * 5.0, 0.0, 2.0 * 0.0, 1.0, 3.0]
    np.testing.assert_array_equal(products_of_others(u, slot), expected)
    np.testing.assert_array_equal(products_of_others(jnp.zeros(0), jnp.zeros(0, int)), [])


def test_nextafter_tangent_is_zero():
    """Deliberate difference: jax has no JVP for nextafter (it raises); ours is piecewise constant."""
    from jaxparadigm.autodiff import jvp

    _, t = jvp(lambda x: jnp.nextafter(x, 1.0), (X3,), (jnp.ones(3),))
    np.testing.assert_array_equal(t, np.zeros(3))


def test_issue_primitive_list_has_jvp_rules():
    assert not [n for n in SECTION_3 if n not in registered_jvp_primitives()]
