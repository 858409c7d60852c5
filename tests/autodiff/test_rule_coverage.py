"""Issue 12, section 3: a VJP rule for every primitive real programs produce, each against jax.

Every case runs ``check_rev`` (our vjp vs ``jax.vjp``) at first order by default and at second
order (our reverse mode of our own backward program) under ``-m slow``, a few by default, on
random inputs and on edge inputs: zeros, ties for max/sort/top_k, empty axes.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import grad, registered_primitives
from tests.autodiff.oracle import check_rev

R = np.random.default_rng(7)


def a(*shape, lo=None, hi=None):
    if lo is not None:
        return jnp.asarray(R.uniform(lo, hi, shape), jnp.float32)
    return jnp.asarray(R.standard_normal(shape), jnp.float32)


X = a(3, 4)
U = a(3, 4, lo=-0.9, hi=0.9)
TIES = jnp.array([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5], [2.0, -1.0, 2.0, 0.0]])
ZEROS = jnp.array([[0.0, 1.5, -2.0, 0.5], [0.0, 0.0, 3.0, 1.0], [1.0, 2.0, -1.0, 0.5]])
EMPTY = jnp.zeros((3, 0), jnp.float32)
IDX = jnp.array([0, 2, 0])

CASES = {
    # elementwise: hyperbolic, inverse trigonometric, special functions
    "sinh": (lax.sinh, (X,)),
    "sinh_at_zero": (lax.sinh, (jnp.zeros(3),)),
    "cosh": (lax.cosh, (X,)),
    "asin": (lax.asin, (U,)),
    "acos": (lax.acos, (U,)),
    "atan": (lax.atan, (X,)),
    "atan_at_zero_and_large": (lax.atan, (jnp.array([0.0, 1000.0]),)),
    "asinh": (lax.asinh, (X,)),
    "acosh": (lax.acosh, (1.5 + jnp.abs(X),)),
    "atanh": (lax.atanh, (U,)),
    "atan2": (lax.atan2, (X, a(3, 4))),
    "atan2_broadcast": (lambda x, y: jnp.arctan2(x, y), (X, a(4))),
    "erf_inv": (lax.erf_inv, (U,)),
    "erf_inv_at_zero": (lax.erf_inv, (jnp.zeros(2),)),
    "bessel_i0e": (lax.bessel_i0e, (X,)),
    "bessel_i1e": (lax.bessel_i1e, (X,)),
    "bessel_i_at_zero": (lambda x: lax.bessel_i0e(x) + lax.bessel_i1e(x), (jnp.zeros(2),)),
    "lgamma_digamma": (lambda x: lax.lgamma(x) + lax.digamma(x), (1.0 + jnp.abs(X),)),
    "rem": (lax.rem, (3 * X, jnp.array([1.5, -2.0, 0.7, 3.0]) + 0 * X)),
    # movement
    "rev": (lambda x: lax.rev(x, (0, 1)), (X,)),
    "flip_slice": (lambda x: x[::-1, 1::2], (X,)),
    "concatenate": (lambda x, y: jnp.concatenate([x, y, x], axis=1), (X, a(3, 2))),
    "stack": (lambda x, y: jnp.stack([x, y, x], axis=1), (X, a(3, 4))),
    "stack_leading": (lambda x, y: jnp.stack([x, y]), (X, a(3, 4))),
    # reductions
    "reduce_prod": (lambda x: jnp.prod(x, axis=1), (X,)),
    "reduce_prod_zeros": (lambda x: jnp.prod(x, axis=1), (ZEROS,)),
    "reduce_prod_all_zeros": (jnp.prod, (ZEROS,)),
    "reduce_prod_empty": (lambda x: jnp.prod(x, axis=1), (EMPTY,)),
    "reduce_max_ties": (lambda x: jnp.max(x, axis=1), (TIES,)),
    "reduce_min_ties": (lambda x: jnp.min(x, axis=0), (TIES,)),
    "reduce_sum_empty": (lambda x: jnp.sum(x, axis=1), (EMPTY,)),
    "max_ties": (jnp.maximum, (TIES, TIES[::-1])),
    # pooling
    "avg_pool": (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 2), "SAME"), (X,)),
    "sum_pool_dilated": (
        lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 1), (1, 1), "VALID", (1, 2), (2, 1)),
        (X,),
    ),
    "max_pool": (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME"), (X,)),
    "max_pool_strided": (
        lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
        (a(2, 4, 6, 3),),
    ),
    "min_pool_padded": (
        lambda x: lax.reduce_window(x, jnp.inf, lax.min, (3, 2), (2, 1), [(1, 1), (0, 1)]),
        (X,),
    ),
    "max_pool_base_dilation": (
        lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID", (2, 1)),
        (X,),
    ),
    # cumulative
    "cumsum": (lambda x: lax.cumsum(x, 1, reverse=True), (X,)),
    "cumsum_empty": (lambda x: jnp.cumsum(x, axis=1), (EMPTY,)),
    "cumprod": (lambda x: lax.cumprod(x, 1), (X,)),
    "cumprod_zeros": (lambda x: lax.cumprod(x, 1, reverse=True), (ZEROS,)),
    "cummax": (lambda x: lax.cummax(x, 0), (X,)),
    "cummax_ties": (lambda x: lax.cummax(x, 1), (TIES,)),
    "cummin": (lambda x: lax.cummin(x, 1, reverse=True), (X,)),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 1), (X,)),
    # sorting
    "sort": (lambda x: jnp.sort(x, axis=0), (X,)),
    "sort_ties_stable": (lambda x: jnp.sort(x, axis=1, stable=True), (TIES,)),
    "sort_empty": (jnp.sort, (jnp.zeros((0,)),)),
    "sort_key_val": (lambda k, v: lax.sort_key_val(k, v, 1), (X, a(3, 4))),
    "sort_multi_operand": (lambda k, v, w: lax.sort((k, v, w), num_keys=1), (X, a(3, 4), a(3, 4))),
    "argsort_take": (lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=1), 1), (X,)),
    "top_k": (lambda x: lax.top_k(x, 2)[0], (X,)),
    "top_k_axis0": (lambda x: lax.top_k(x, 2, axis=0)[0], (X,)),
    "top_k_ties": (lambda x: lax.top_k(x, 3)[0], (TIES,)),
    # indexing / scatter
    "gather": (lambda x: x[jnp.array([2, 0, 2])], (X,)),
    "scatter_set_unique": (lambda x, v: x.at[1].set(v), (X, a(4))),
    "scatter_set_duplicates": (lambda x, v: x.at[IDX].set(v), (X, a(3, 4))),
    "scatter_add": (lambda x, v: x.at[IDX].add(v), (X, a(3, 4))),
    "scatter_mul_unique": (
        lambda x, v: x.at[jnp.array([0, 2])].mul(v, unique_indices=True),
        (X, a(2, 4)),
    ),
    "scatter_sub": (lambda x, v: x.at[IDX].subtract(v), (X, a(3, 4))),
    "scatter_max": (lambda x, v: x.at[IDX].max(v), (X, a(3, 4))),
    "scatter_min": (lambda x, v: x.at[IDX].min(v), (X, a(3, 4))),
    "scatter_max_ties": (lambda x, v: x.at[IDX].max(v), (TIES, jnp.ones((3, 4)) * 2.0)),
    "unstack": (lambda x: jnp.unstack(x, axis=1)[1:3], (X,)),
    # linear algebra (issue 23): the rules the generator and test_linalg_rules.py do not reach
    "tridiagonal_solve": (
        lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b),
        (X[0], 3.0 + jnp.abs(X[1]), X[2], a(4, 2)),
    ),
    "device_put": (lambda x: jax.device_put(x) * 2.0, (X,)),
    "sharding_constraint": (
        lambda x: lax.with_sharding_constraint(
            x * 2.0, jax.sharding.SingleDeviceSharding(jax.devices()[0])
        ),
        (X,),
    ),
    # control flow
    "cond_true": (lambda x: lax.cond(x[0, 0] < 10, jnp.sin, lambda y: y**2, x), (X,)),
    "cond_false": (lambda x: lax.cond(x[0, 0] > 10, jnp.sin, lambda y: y**2, x), (X,)),
    "switch": (lambda i, x: lax.switch(2, [jnp.sin, jnp.cos, lambda y: y**3], x * i), (2.0, X)),
    "scan": (
        lambda c, xs: lax.scan(lambda c, x: (jnp.sin(c * x) + c, c**2 * x), c, xs),
        (X[0], X),
    ),
    "scan_reverse_consts": (
        lambda w, xs: lax.scan(
            lambda c, x: (jnp.tanh(c @ w + x), c), jnp.zeros(4), xs, reverse=True
        ),
        (a(4, 4), X),
    ),
    "scan_empty": (
        lambda c, xs: lax.scan(lambda c, x: (c * x, x), c, xs),
        (X[0], jnp.zeros((0, 4))),
    ),
    "fori_static": (lambda x: lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) * (i + 1.0), x), (X,)),
    "checkpoint": (lambda x: jax.checkpoint(lambda y: jnp.sin(y) * y)(x), (X,)),
    "checkpoint_in_scan": (
        lambda xs: lax.scan(lambda c, x: (jax.checkpoint(jnp.sin)(c) * x, c), xs[0], xs),
        (X,),
    ),
}


# Second order (our reverse mode of our own backward program) for these by default, one per rule
# family; for every case under -m slow.
SECOND_ORDER_BY_DEFAULT = {
    "sinh",
    "reduce_prod",
    "max_pool",
    "scan",
    "cond_true",
    "scatter_mul_unique",
}


# Plain random-input cases whose op the lax_autodiff port already checks by default (or whose
# second order runs by default below): first order under -m slow only. Edge inputs (zeros, ties,
# empty axes), control flow and the rules without a port case always run.
FIRST_ORDER_SLOW = set(
    """sinh cosh asin acos atan asinh acosh atanh atan2 erf_inv bessel_i0e bessel_i1e rev
    concatenate stack reduce_prod cumsum cumprod cummin sort top_k gather scatter_add scatter_sub
    scatter_max scatter_min max_pool scan cond_true cond_false""".split()
)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow if n in FIRST_ORDER_SLOW else ()) for n in CASES],
)
def test_rule_matches_jax_first_order(name):
    f, args = CASES[name]
    check_rev(f, args, order=1, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=() if n in SECOND_ORDER_BY_DEFAULT else pytest.mark.slow)
        for n in CASES
    ],
)
def test_rule_matches_jax_second_order(name):
    f, args = CASES[name]
    check_rev(f, args, order=2, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name", ["scan", "cond_true", "max_pool", "scatter_set_duplicates"])
def test_rules_under_jit(name):
    f, args = CASES[name]
    check_rev(f, args, order=1, rtol=2e-4, atol=2e-5, jit=True)


def test_every_listed_primitive_has_a_vjp_rule():
    listed = """sinh cosh asin acos atan atan2 erf_inv bessel_i0e bessel_i1e rev reduce_prod
    reduce_window_sum reduce_window_max reduce_window_min cumsum cumprod cummax cummin cumlogsumexp
    sort top_k scatter scatter-add scatter-sub scatter-mul scatter-min scatter-max concatenate stack
    unstack tile cond scan while checkpoint pure_callback io_callback conv_general_dilated reduce
    device_put sharding_constraint cholesky triangular_solve lu custom_linear_solve eigh qr
    svd tridiagonal_solve""".split()
    names = set(registered_primitives())
    assert [n for n in listed if n not in names] == []


def test_scatter_mul_with_duplicate_indices_against_the_product_formula():
    """jax has no rule here (unique indices only); the oracle is the explicit product."""
    idx = jnp.array([0, 2, 0, 0])
    idx_np = np.asarray(idx)  # concrete: read by Python while jit traces
    x, v = a(3, 2), a(4, 2).at[2, 1].set(0.0).at[0, 0].set(0.0).at[3, 0].set(0.0)

    def explicit(x, v):
        rows = [
            x[r]
            * jnp.prod(jnp.stack([v[k] for k in range(4) if idx_np[k] == r] + [jnp.ones(2)]), 0)
            for r in range(3)
        ]
        return jnp.stack(rows)

    f = lambda x, v: x.at[idx].mul(v)
    np.testing.assert_allclose(f(x, v), explicit(x, v), rtol=1e-6)
    w = a(3, 2)
    ours = jax.jit(grad(lambda x, v: jnp.sum(f(x, v) * w), argnums=(0, 1)))(x, v)
    ref = jax.jit(jax.grad(lambda x, v: jnp.sum(explicit(x, v) * w), argnums=(0, 1)))(x, v)
    for o, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


def test_while_loop_reverse_mode_is_refused_like_jax():
    f = lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(f)(1.0)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        grad(f)(1.0)
    g = lambda x, n: lax.fori_loop(0, n, lambda i, v: v * 2.0, x)
    with pytest.raises(ValueError, match="fori_loop with static start/stop"):
        jax.jit(grad(g))(1.0, 3)  # n is traced: a while loop
    assert float(grad(g)(1.0, 3)) == 8.0  # n is concrete (not differentiated): a scan
    # a while loop the output does not depend on through float values is fine
    h = lambda x: x * lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0).astype(jnp.float32)
    assert float(grad(h)(2.0)) == float(jax.grad(h)(2.0)) == 3.0


@pytest.mark.parametrize("callback", ["pure", "io"])
def test_callbacks_are_refused(callback):
    from jax.experimental import io_callback

    spec = jax.ShapeDtypeStruct((), jnp.float32)
    if callback == "pure":
        f = lambda x: jax.pure_callback(lambda v: np.sin(v), spec, x)
    else:
        f = lambda x: io_callback(lambda v: np.sin(v).astype(np.float32), spec, x)
    with pytest.raises(ValueError, match="Host callbacks .* cannot be differentiated"):
        grad(f)(1.0)


def test_scatter_apply_is_refused_like_jax():
    f = lambda x: jnp.sum(x.at[1].apply(jnp.sin))
    with pytest.raises(NotImplementedError):
        jax.grad(f)(jnp.ones(2))
    with pytest.raises(NotImplementedError, match="scatter-apply"):
        grad(f)(jnp.ones(2))


def test_cond_sends_cotangents_through_the_taken_branch_only():
    """The untaken branch would give nan (log of a negative number); it must not leak."""
    f = lambda x: lax.cond(x > 0, jnp.log, lambda y: y * 3.0, x)
    assert float(grad(f)(-2.0)) == 3.0
    assert float(grad(f)(2.0)) == 0.5


def test_scan_saves_residuals_instead_of_rerunning_the_body():
    """Tracing counts: the body is traced for the forward scan once and never re-run by backward."""
    calls = []

    def body(c, x):
        calls.append(1)
        return jnp.sin(c) * x, c

    f = lambda xs: jnp.sum(lax.scan(body, 1.0, xs)[0])
    xs = jnp.arange(1.0, 4.0)
    jaxpr = jax.make_jaxpr(grad(f))(xs)
    assert len(calls) == 1  # jax traces the Python body once; our rules work on its jaxpr
    scans = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan"]
    assert len(scans) == 2  # the forward scan (stacking residuals) and the reverse scan
    assert scans[0].params["reverse"] is False and scans[1].params["reverse"] is True
    fwd_body = scans[0].params["jaxpr"].jaxpr
    bwd_body = scans[1].params["jaxpr"].jaxpr
    assert any(e.primitive.name == "sin" for e in fwd_body.eqns)
    assert not any(e.primitive.name == "sin" for e in bwd_body.eqns)  # sin(c) is a residual
    np.testing.assert_allclose(grad(f)(xs), jax.grad(f)(xs), rtol=1e-6)


def test_checkpoint_recomputes_in_the_backward_sweep_behind_a_barrier():
    f = lambda x: jnp.sum(jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)))(x))
    jaxpr = jax.make_jaxpr(grad(f))(jnp.ones(3))
    names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert "optimization_barrier" in names
    after = names[names.index("optimization_barrier") :]
    assert after.count("sin") == 2  # the block's forward is recomputed after the barrier


def test_inactive_scan_keeps_no_residuals():
    """A scan the differentiated input does not reach is bound as it is: no residual stacking."""

    def f(x, w):
        c, _ = lax.scan(lambda c, r: (jnp.tanh(c * r), None), 1.0, w)
        return jnp.sum(x * x) + c

    x, w = jnp.ones(3), jnp.arange(4.0)
    scans = [e for e in jax.make_jaxpr(grad(f))(x, w).jaxpr.eqns if e.primitive.name == "scan"]
    assert len(scans) == 1 and len(scans[0].outvars) == 1  # the original scan, carry only
    np.testing.assert_allclose(grad(f)(x, w), 2 * x)
    active = [e for e in jax.make_jaxpr(grad(f, argnums=1))(x, w).jaxpr.eqns]
    assert sum(e.primitive.name == "scan" for e in active) == 2  # forward with residuals, reverse


def test_linalg_solve_gradient():
    """Formerly a known gap (issue 12); issue 23 added lu / triangular_solve /
    custom_linear_solve rules (tests/autodiff/test_linalg_rules.py covers the family)."""
    a = jnp.eye(3) * 2.0 + 0.1
    f = lambda a: jnp.sum(jnp.linalg.solve(a, jnp.ones(3)))
    np.testing.assert_allclose(grad(f)(a), jax.grad(f)(a), rtol=1e-5)
