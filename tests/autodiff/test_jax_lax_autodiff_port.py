"""Port of jax's ``tests/lax_autodiff_test.py`` (class ``LaxAutodiffTest``), forward mode.

Each upstream test calls ``check_grads(f, args, order, modes=["fwd", "rev"])``; here the "fwd"
half runs on our engine: ``check_fwd`` (tests/autodiff/jvp_checks.py) compares our ``jvp`` with
``jax.jvp`` and with finite differences, recursively up to ``order`` (forward over our forward).
The "rev" half is reverse mode's port. Upstream test names are in each test's docstring; inputs
follow the upstream ``rng_factory`` choices (``jtu.rand_default`` = normal * 3, ...). Dtypes are
float32 (x64 is off in our tests) and the float16/bfloat16 ``out_dtype`` cases; complex dtypes
are not ported: our engine refuses complex inputs (a deliberate difference, tested elsewhere).
The full parameter products are ``slow``; a representative slice runs by default.
"""

import itertools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import jacfwd
from tests.autodiff.jvp_checks import check_fwd
from tests.autodiff.lax_autodiff_cases import (
    COMPATIBLE_SHAPES,
    F32,
    LAX_GRAD_OPS,
    REDUCE_SHAPES,
    SPECIAL_VALUES,
    rand_default,
    rand_small,
    rand_unique_int,
)

ORACLE = 1e-4  # our jvp vs jax.jvp (float32, different op order)
NUMERIC = 1.5e-1  # vs finite differences: upstream's float32 tolerance


def _rng(seed):
    return np.random.default_rng(seed)


def _op_cases():
    for op, nargs, order, rng_factory in LAX_GRAD_OPS:
        for group in COMPATIBLE_SHAPES:
            for shapes in itertools.combinations_with_replacement(group, nargs):
                yield pytest.param(
                    op, shapes, order, rng_factory, id=f"{op.__name__}-{shapes}".replace(" ", "")
                )


OP_CASES = list(_op_cases())
FAST_OP_NAMES = ("exp", "tanh", "pow", "div", "max", "bessel_i1e")
FAST_OPS = {c.id for c in OP_CASES if c.id.split("-")[0] in FAST_OP_NAMES and "(3,)" in c.id}


def _maybe_slow(cases, fast_ids):
    return [
        c if c.id in fast_ids else pytest.param(*c.values, id=c.id, marks=pytest.mark.slow)
        for c in cases
    ]


def fast_first(params, n=1):
    """The first ``n`` cases run by default, the rest are ``slow`` (the full upstream product)."""
    out = []
    for i, p in enumerate(params):
        values = p if isinstance(p, tuple) else (p,)
        out.append(pytest.param(*values, marks=() if i < n else pytest.mark.slow))
    return out


@pytest.mark.parametrize("op,shapes,order,rng_factory", _maybe_slow(OP_CASES, FAST_OPS))
def test_op_grad(op, shapes, order, rng_factory):
    """LaxAutodiffTest.testOpGrad (float32)."""
    rng = _rng(hash(op.__name__) % 1000)
    args = tuple(rng_factory(rng, s) for s in shapes)
    check_fwd(op, args, order, tol=ORACLE, numeric_tol=NUMERIC, eps=1e-3)


OUT_DTYPES = [np.float16, jnp.bfloat16, np.float32]


@pytest.mark.parametrize(
    "lhs,rhs,out", fast_first(list(itertools.product(OUT_DTYPES, repeat=3)), 2)
)
def test_op_grad_out_dtype(lhs, rhs, out):
    """LaxAutodiffTest.testOpGradOutDtype: lax.mul(out_dtype=...), shapes (3, 4) x (3, 1)."""
    rng = _rng(1)
    args = (rand_default(rng, (3, 4), lhs), rand_default(rng, (3, 1), rhs))
    tol = 1e-1 if min(jnp.finfo(d).bits for d in (lhs, rhs, out)) == 16 else ORACLE
    check_fwd(partial(lax.mul, out_dtype=out), args, 2, tol=tol, numeric_tol=None)


@pytest.mark.parametrize(
    "op,value",
    fast_first([(op, v) for op, vs in SPECIAL_VALUES for v in vs], 3),
)
def test_op_grad_special_value(op, value):
    """LaxAutodiffTest.testOpGradSpecialValue."""
    check_fwd(op, (F32(value),), 2, tol=5e-3, numeric_tol=5e-2, eps=1e-3)


@pytest.mark.parametrize(
    "from_dtype,to_dtype", fast_first(list(itertools.product(OUT_DTYPES, repeat=2)), 2)
)
def test_convert_element_type_grad(from_dtype, to_dtype):
    """LaxAutodiffTest.testConvertElementTypeGrad (real dtypes)."""
    args = (rand_default(_rng(2), (2, 3), from_dtype),)
    f = lambda x: lax.convert_element_type(x, to_dtype)
    check_fwd(f, args, 2, tol=1e-2, numeric_tol=None)


@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_clamp_grad(shape):
    """LaxAutodiffTest.testClampGrad."""
    operand = rand_default(_rng(3), shape)
    low, high = operand - F32(10), operand + F32(10)
    for args in ((operand, low, high), (low, operand, high), (low, high, operand)):
        check_fwd(lax.clamp, args, 2, tol=ORACLE, numeric_tol=NUMERIC, eps=1e-2)


@pytest.mark.parametrize(
    "base_shape,dim",
    fast_first([(s, d) for s in [(4,), (3, 4), (2, 3, 4)] for d in range(len(s))], 2),
)
def test_concatenate_grad(base_shape, dim):
    """LaxAutodiffTest.testConcatenateGrad."""
    rng = _rng(4)
    shapes = [base_shape[:dim] + (n,) + base_shape[dim + 1 :] for n in (3, 1, 4)]
    operands = tuple(rand_default(rng, s) for s in shapes)
    check_fwd(lambda *a: lax.concatenate(a, dim), operands, 2, numeric_tol=NUMERIC, eps=1.0)


@pytest.mark.parametrize(
    "base_shape,axis,num_pieces",
    fast_first(
        [(s, a, n) for s in [(4,), (3, 4), (2, 3, 4)] for a in range(len(s)) for n in range(3)], 2
    ),
)
def test_split_grad(base_shape, axis, num_pieces):
    """LaxAutodiffTest.testSplitGrad."""
    rng = _rng(5)
    sizes = rng.integers(0, 5, num_pieces + 1)
    shape = list(base_shape)
    shape[axis] = int(np.sum(sizes))
    x = rand_default(rng, tuple(shape))
    check_fwd(lambda x: lax.split(x, sizes, axis), (x,), 2, numeric_tol=NUMERIC, eps=1.0)


CONV_CASES = [
    ((b, i, 3, 4), (j, i, 1, 2), s, p)
    for b, i, j in [(2, 2, 3), (3, 2, 2)]
    for s in [(1, 1), (1, 2), (2, 1)]
    for p in ["VALID", "SAME"]
] + [((4, 2, 1), (3, 2, 1), (1,), p) for p in ["VALID", "SAME"]]


@pytest.mark.parametrize("lhs_shape,rhs_shape,strides,padding", fast_first(CONV_CASES, 2))
def test_conv_grad(lhs_shape, rhs_shape, strides, padding):
    """LaxAutodiffTest.testConvGrad (check_grads_bilinear: one argument at a time)."""
    rng = _rng(6)
    lhs, rhs = rand_small(rng, lhs_shape), rand_small(rng, rhs_shape)
    conv = partial(
        lax.conv, window_strides=strides, padding=padding, precision=lax.Precision.HIGHEST
    )
    check_fwd(lambda a: conv(a, rhs), (lhs,), 2, tol=1e-2, numeric_tol=1e-2, eps=1.0)
    check_fwd(lambda b: conv(lhs, b), (rhs,), 2, tol=1e-2, numeric_tol=1e-2, eps=1.0)


@pytest.mark.parametrize(
    "fgc,bgc,dnums,perms",
    fast_first(
        [
            (f, b, dn, pm)
            for f, b in [(1, 1), (2, 1), (1, 2)]
            for dn, pm in [
                (("NCHW", "OIHW", "NCHW"), ([0, 1, 2, 3], [0, 1, 2, 3])),
                (("NHWC", "HWIO", "NHWC"), ([0, 2, 3, 1], [2, 3, 1, 0])),
            ]
        ],
        2,
    ),
)
def test_conv_general_dilated_grad(fgc, bgc, dnums, perms):
    """LaxAutodiffTest.testConvGeneralDilatedGrad (b = i = j = 1, strides (1, 2), dilations 2)."""
    rng = _rng(7)
    lhs_shape = np.take((1 * bgc, 1 * fgc, 6, 7), perms[0])
    rhs_shape = np.take((1 * bgc * fgc, 1, 1, 2), perms[1])
    lhs, rhs = rand_default(rng, tuple(lhs_shape)), rand_default(rng, tuple(rhs_shape))
    conv = partial(
        lax.conv_general_dilated,
        window_strides=(1, 2),
        padding=((1, 0), (0, 1)),
        lhs_dilation=(2, 1),
        rhs_dilation=(2, 2),
        dimension_numbers=dnums,
        feature_group_count=fgc,
        batch_group_count=bgc,
        precision=lax.Precision.HIGHEST,
    )
    check_fwd(lambda a: conv(a, rhs), (lhs,), 2, tol=1e-3, numeric_tol=None)
    check_fwd(lambda b: conv(lhs, b), (rhs,), 2, tol=1e-3, numeric_tol=None)


@pytest.mark.parametrize(
    "lhs_shape,rhs_shape,dn",
    fast_first(
        [((2,), (2,), None), ((3, 2), (2, 4), None)]
        + [
            ((3, 2), (2, 4), (([1], [0]), ([], []))),
            ((3, 5), (2, 5), (([1], [1]), ([], []))),
            ((5, 3), (5, 2), (([0], [0]), ([], []))),
            ((3, 3, 2), (3, 2, 4), (([2], [1]), ([0], [0]))),
            ((3, 5, 2), (2, 4, 5), (([2], [0]), ([1], [2]))),
            ((7, 3, 5, 2), (2, 2, 4, 5), (([3], [0]), ([2], [3]))),
        ],
        3,
    ),
)
def test_dot_general_grads(lhs_shape, rhs_shape, dn):
    """LaxAutodiffTest.testDotGrad and testDotGeneralContractAndBatchGrads."""
    rng = _rng(8)
    lhs, rhs = rand_small(rng, lhs_shape), rand_small(rng, rhs_shape)
    prec = lax.Precision.HIGHEST
    dot = (
        partial(lax.dot, precision=prec)
        if dn is None
        else partial(lax.dot_general, dimension_numbers=dn, precision=prec)
    )
    check_fwd(lambda a: dot(a, rhs), (lhs,), 2, numeric_tol=None)
    check_fwd(lambda b: dot(lhs, b), (rhs,), 2, numeric_tol=None)
    # upstream checks the precision config survives differentiation: our tangent program too
    from jaxparadigm.autodiff import jvp

    text = str(jax.make_jaxpr(lambda a, t: jvp(lambda x: dot(x, rhs), (a,), (t,)))(lhs, lhs))
    assert "Precision.HIGHEST" in text or "HIGHEST" in text


SHAPE_OP_CASES = {
    # testBroadcastGrad
    "broadcast": [
        (lambda x, b=b: lax.broadcast(x, b), (s,)) for s in [(), (2, 3)] for b in [(), (2,), (1, 2)]
    ],
    # testBroadcastInDimGrad
    "broadcast_in_dim": [
        (lambda x, o=o, d=d: lax.broadcast_in_dim(x, o, d), (i,))
        for i, o, d in [
            ([2], [2, 2], [0]),
            ([2], [2, 2], [1]),
            ([2], [2, 3], [0]),
            ([], [2, 3], []),
        ]
    ],
    # testReshapeGrad
    "reshape": [
        (lambda x, o=o, p=p: lax.reshape(x, o, p), (a,))
        for a, o, p in [
            [(3, 4), (12,), None],
            [(2, 1, 4), (8,), None],
            [(2, 2, 4), (2, 8), None],
            [(3, 4), (12,), (0, 1)],
            [(3, 4), (12,), (1, 0)],
            [(2, 1, 4), (8,), (0, 2, 1)],
            [(2, 1, 4), (8,), (2, 0, 1)],
            [(2, 2, 4), (2, 8), (0, 2, 1)],
            [(2, 2, 4), (2, 8), (2, 0, 1)],
        ]
    ],
    # testPadGrad (operand only, and operand + padding value)
    "pad": [
        (lambda x, p=p: lax.pad(x, F32(0), p), (s,))
        for s, p in [((), []), ((2, 3), [(1, 2, 1), (0, 1, 0)]), ((2, 3), [(-1, 0, 0), (-1, 0, 2)])]
    ]
    + [
        (lambda x, v, p=p: lax.pad(x, v, p), (s, ()))
        for s, p in [((2, 3), [(1, 2, 1), (0, 1, 0)]), ((2, 3), [(-1, 0, 0), (-1, 0, 2)])]
    ],
    # testReverseGrad
    "rev": [(lambda x: lax.rev(x, [0]), ((3,),)), (lambda x: lax.rev(x, [0, 1]), ((2, 3),))],
    # testSliceGrad
    "slice": [
        (lambda x, a=a, b=b, c=c: lax.slice(x, a, b, c), (s,))
        for s, a, b, c in [
            [(3,), (1,), (2,), None],
            [(7,), (4,), (7,), None],
            [(5,), (1,), (5,), (2,)],
            [(8,), (1,), (6,), (2,)],
            [(5, 3), (1, 1), (3, 2), None],
            [(5, 3), (1, 1), (3, 1), None],
            [(7, 5, 3), (4, 0, 1), (7, 1, 3), None],
            [(5, 3), (1, 1), (2, 1), (1, 1)],
            [(5, 3), (1, 1), (5, 3), (2, 1)],
            [(3, 3, 5), (0, 2, 0), (3, 2, 5), (1, 2, 1)],
        ]
    ],
    # testDynamicSliceGrad
    "dynamic_slice": [
        (lambda x, a=a, b=b: lax.dynamic_slice(x, a, b), (s,))
        for s, a, b in [
            [(3,), (1,), (1,)],
            [(5, 3), (1, 1), (3, 1)],
            [(7, 5, 3), (4, 1, 0), (2, 0, 1)],
        ]
    ],
    # testDynamicUpdateSliceGrad (both, operand only, update only via closures below)
    "dynamic_update_slice": [
        (lambda x, y, a=a: lax.dynamic_update_slice(x, y, np.array(a)), (s, u))
        for s, a, u in [
            [(3,), (1,), (1,)],
            [(5, 3), (1, 1), (3, 1)],
            [(7, 5, 3), (4, 1, 0), (2, 0, 1)],
        ]
    ],
    # testTransposeGrad
    "transpose": [
        (lambda x, p=p: lax.transpose(x, p), (s,))
        for s, p in [
            [(3, 4), (1, 0)],
            [(3, 4), (0, 1)],
            [(3, 4, 5), (2, 1, 0)],
            [(3, 4, 5), (1, 0, 2)],
        ]
    ],
    # testTileAutodiff (order 3 upstream)
    "tile": [
        (lambda x, r=r: lax.tile(x, r), (s,))
        for s, r in [[(3,), (2,)], [(2, 3), (1, 2)], [(1, 1, 4), (1, 3, 1)]]
    ],
}
SHAPE_CASES = [
    pytest.param(fn, shapes, id=f"{name}{i}", marks=() if i == 0 else pytest.mark.slow)
    for name, cases in SHAPE_OP_CASES.items()
    for i, (fn, shapes) in enumerate(cases)
]


@pytest.mark.parametrize("fn,shapes", SHAPE_CASES)
def test_shape_op_grads(fn, shapes):
    """testBroadcastGrad, testBroadcastInDimGrad, testReshapeGrad, testPadGrad, testReverseGrad,
    testSliceGrad, testDynamicSliceGrad, testDynamicUpdateSliceGrad, testTransposeGrad,
    testTileAutodiff (order 3)."""
    rng = _rng(9)
    args = tuple(rand_default(rng, s) for s in shapes)
    check_fwd(fn, args, 3, numeric_tol=NUMERIC, eps=1.0)


def test_select_grad():
    """LaxAutodiffTest.testSelectGrad."""
    rng = _rng(10)
    for arg_shape in [(), (3,), (2, 3)]:
        for pred_shape in [(), arg_shape] if arg_shape else [()]:
            pred = rng.random(pred_shape) > 0.5
            t, f = rand_default(rng, arg_shape), rand_default(rng, arg_shape)
            check_fwd(lambda a, b, p=pred: lax.select(p, a, b), (t, f), 2, numeric_tol=NUMERIC)


REDUCERS = [
    (0.0, lax.add, rand_default),
    (-np.inf, lax.max, rand_unique_int),
    (np.inf, lax.min, rand_unique_int),
    (1.0, lax.mul, partial(rand_default)),
]


@pytest.mark.parametrize(
    "init,op,rng_factory,shape,dims",
    [
        pytest.param(i, op, r, s, d, marks=() if d == (1,) else pytest.mark.slow)
        for i, op, r in REDUCERS
        for s, d in REDUCE_SHAPES
        if op not in (lax.max, lax.min) or all(n > 0 for n in s)
    ],
)
def test_reduce_grad(init, op, rng_factory, shape, dims):
    """LaxAutodiffTest.testReduceGrad (float32)."""
    operand = rng_factory(_rng(11), shape)
    if op is lax.mul:
        operand = operand / 3.0  # upstream uses rand_default(scale=1)
    f = lambda x: lax.reduce(x, F32(init), op, dims)
    check_fwd(f, (operand,), 2, tol=1e-3, numeric_tol=NUMERIC, eps=1e-2)


def test_reduce_pair_grad():
    """LaxAutodiffTest.testReducePairGrad (one shape): generic variadic reduce, forward mode."""
    rng = _rng(26)
    operands = (rand_default(rng, (3, 4, 5)) / 3, rand_default(rng, (3, 4, 5)) / 3)
    init_vals = (F32(0), F32(1))
    op = lambda xs, ys: (xs[0] + ys[0], xs[1] * ys[1])
    check_fwd(lambda xs, ys: lax.reduce((xs, ys), init_vals, op, (1,)), operands, 2)


def _window_cases():
    for init, op, rng_factory in [
        (0.0, lax.add, rand_small),
        (-np.inf, lax.max, rand_unique_int),
        (np.inf, lax.min, rand_unique_int),
    ]:
        wdil = [(1, 1), (1, 2)] if op is lax.add else [(1, 1)]
        grid = itertools.product(
            [(2, 1), (1, 2)],
            [(1, 1), (2, 1), (1, 2)],
            ["VALID", "SAME", [(0, 3), (1, 2)]],
            [(1, 1), (2, 3)],
            wdil,
        )
        for dims, strides, padding, bdil, wd in grid:
            fast = strides == (1, 1) and bdil == (1, 1) and dims == (2, 1)
            yield pytest.param(
                init,
                op,
                rng_factory,
                dims,
                strides,
                padding,
                bdil,
                wd,
                marks=() if fast else pytest.mark.slow,
                id=f"{op.__name__}-{dims}-{strides}-{padding}-{bdil}-{wd}".replace(" ", ""),
            )


@pytest.mark.parametrize("init,op,rng_factory,dims,strides,padding,bdil,wdil", _window_cases())
def test_reduce_window_grad(init, op, rng_factory, dims, strides, padding, bdil, wdil):
    """LaxAutodiffTest.testReduceWindowGrad, shape (4, 6), order 3."""
    operand = rng_factory(_rng(12), (4, 6))
    fun = lambda x: lax.reduce_window(x, F32(init), op, dims, strides, padding, bdil, wdil)
    eps, tol = (1.0, 1e-3) if op is lax.add else (1e-2, 6e-2)
    check_fwd(fun, (operand,), 3, tol=1e-3, numeric_tol=tol, eps=eps)


@pytest.mark.parametrize(
    "op,shape,axis,reverse",
    [
        pytest.param(op, s, a, r, marks=() if s == (10,) else pytest.mark.slow)
        for op in (lax.cumsum, lax.cumprod)
        for s in [(10,), (3, 4, 5)]
        for a in range(len(s))
        for r in (False, True)
    ],
)
def test_cumulative_reduce_grad(op, shape, axis, reverse):
    """LaxAutodiffTest.testCumulativeReduceGrad (float32)."""
    x = rand_small(_rng(13), shape) * 1e3  # upstream rand_small; scaled so cumprod is not ~0
    check_fwd(partial(op, axis=axis, reverse=reverse), (x,), 2, tol=1e-3, numeric_tol=NUMERIC)


@pytest.mark.parametrize(
    "shape,is_stable",
    fast_first([(s, st) for s in [(0,), (5,), (5, 7), (4, 9, 3)] for st in (False, True)], 4),
)
def test_sort_grad(shape, is_stable):
    """LaxAutodiffTest.testSortGrad."""
    x = rand_unique_int(_rng(14), shape)
    sort = lambda x: lax.sort(x, dimension=len(shape) - 1, is_stable=is_stable)
    check_fwd(sort, (x,), 2, numeric_tol=NUMERIC, eps=1e-2)


@pytest.mark.parametrize(
    "shape,is_stable",
    fast_first([(s, st) for s in [(3,), (5, 3), (4, 9, 3)] for st in (False, True)], 2),
)
def test_sort_key_val_grad(shape, is_stable):
    """LaxAutodiffTest.testSortKeyValGrad."""
    rng = _rng(15)
    keys = rng.permutation(np.arange(math.prod(shape), dtype=F32)).reshape(shape)
    values = rand_default(rng, shape)
    fun = lambda k, v: lax.sort_key_val(k, v, len(shape) - 1, is_stable)
    check_fwd(fun, (keys, values), 2, tol=1e-2, numeric_tol=1e-2, eps=1e-2)


@pytest.mark.parametrize(
    "shape,k,axis",
    fast_first([(s, k, a) for s in [(4,), (5, 5), (3, 1, 4)] for k in (1, 3) for a in (0, -1)], 2),
)
def test_top_k_grad(shape, k, axis):
    """LaxAutodiffTest.testTopKGrad."""
    values = rand_unique_int(_rng(16), shape)
    check_fwd(
        lambda v: lax.top_k(v, k=k, axis=axis)[0], (values,), 2, numeric_tol=NUMERIC, eps=1e-2
    )


@pytest.mark.parametrize(
    "shape,idxs,axes",
    [
        [(3, 4, 5), (np.array([0, 2, 1]),), (0,)],
        [(3, 4, 5), (np.array([-1, -2]),), (0,)],
        [(3, 4, 5), (np.array([0, 2]), np.array([1, 3])), (0, 1)],
        [(3, 4, 5), (np.array([0, 2]), np.array([1, 3])), (0, 2)],
    ],
    ids=str,
)
def test_index_take_grad(shape, idxs, axes):
    """LaxAutodiffTest.testIndexTakeGrad."""
    src = rand_default(_rng(17), shape)
    check_fwd(lambda s: lax.index_take(s, idxs, axes), (src,), 2, numeric_tol=NUMERIC, eps=1.0)


MODE_CASES = [
    (c, m, i) for c in range(3) for m in ("clip", "fill", "promise_in_bounds") for i in range(2)
]


def _indices_for_mode(rng, mode, max_idx, shape):
    """In bounds for "promise_in_bounds"; else out of bounds too (modes that define them)."""
    low, high = (0, max_idx) if mode == "promise_in_bounds" else (-max_idx, 2 * max_idx)
    return rng.integers(low, high, shape).astype(np.int32)


GATHER = [
    ((5,), (2, 1), lax.GatherDimensionNumbers((), (0,), (0,)), (1,), 5),
    ((10,), (3, 1), lax.GatherDimensionNumbers((1,), (), (0,)), (2,), 9),
    ((10, 5), (3, 1), lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 3), 3),
]


@pytest.mark.parametrize(
    "case,mode,it",
    fast_first(MODE_CASES, 4),
)
def test_gather_grad(case, mode, it):
    """LaxAutodiffTest.testGatherGrad (2 of upstream's 5 random iterations)."""
    shape, idx_shape, dnums, sizes, max_idx = GATHER[case]
    rng = _rng(18 + it)
    idxs = _indices_for_mode(rng, mode, max_idx, idx_shape)
    gather = lambda x: lax.gather(
        x, idxs, dimension_numbers=dnums, slice_sizes=sizes, mode=mode, fill_value=-1
    )
    check_fwd(gather, (rand_default(rng, shape),), 2, tol=1e-2, numeric_tol=1e-2, eps=1.0)


SCATTER = [
    ((5,), (2, 1), (2,), lax.ScatterDimensionNumbers((), (0,), (0,)), 4, 1),
    ((10,), (3, 1), (3, 2), lax.ScatterDimensionNumbers((1,), (), (0,)), 9, 2),
    ((10, 5), (3, 1), (3, 3), lax.ScatterDimensionNumbers((1,), (0,), (0,)), 3, 1),
]


@pytest.mark.parametrize(
    "case,mode,it",
    fast_first(MODE_CASES, 3),
)
def test_scatter_add_grad(case, mode, it):
    """LaxAutodiffTest.testScatterAddGrad (2 of upstream's 5 random iterations)."""
    shape, idx_shape, upd_shape, dnums, max_idx, _ = SCATTER[case]
    rng = _rng(20 + it)
    idxs = _indices_for_mode(rng, mode, max_idx, idx_shape)
    fn = lambda x, y: lax.scatter_add(x, idxs, y, dimension_numbers=dnums, mode=mode)
    args = (rand_default(rng, shape), rand_default(rng, upd_shape))
    check_fwd(fn, args, 2, tol=1e-2, numeric_tol=1e-2, eps=1.0)


@pytest.mark.parametrize("case", range(3))
def test_scatter_grad(case):
    """LaxAutodiffTest.testScatterGrad (non-colliding indices)."""
    shape, idx_shape, upd_shape, dnums, _, mult = SCATTER[case]
    max_idx = (4, 4, 9)[case]
    rng = _rng(22)
    idxs = (rng.permutation(max_idx)[: idx_shape[0]].reshape(idx_shape) * mult).astype(np.int32)
    fn = lambda x, y: lax.scatter(x, idxs, y, dimension_numbers=dnums)
    args = (rand_default(rng, shape), rand_default(rng, upd_shape))
    check_fwd(fn, args, 2, tol=1e-2, numeric_tol=1e-2, eps=1.0)


def test_scatter_grad_symbolic_zero_update():
    """LaxAutodiffTest.testScatterGradSymbolicZeroUpdate."""

    def f(x):
        n = x.shape[0]
        return x.at[np.diag_indices(n)].set(np.arange(n, dtype=x.dtype))

    check_fwd(f, (rand_default(_rng(23), (5, 5)),), 2, tol=1e-2, numeric_tol=1e-2, eps=1.0)


@pytest.mark.parametrize("which,case", [(w, c) for w in ("max", "min") for c in range(3)])
def test_scatter_extremal(which, case):
    """LaxAutodiffTest.testScatterMax / testScatterMin."""
    shape, idx_shape, upd_shape, dnums, _, _ = SCATTER[case]
    rng = _rng(24)
    idxs = rng.integers(0, max(shape), idx_shape).astype(np.int32)
    op = lax.scatter_max if which == "max" else lax.scatter_min
    args = (rand_default(rng, shape), rand_default(rng, upd_shape))
    check_fwd(lambda x, y: op(x, idxs, y, dnums), args, 2, tol=1e-2, numeric_tol=1e-2, eps=1e-3)


def test_stop_gradient():
    """LaxAutodiffTest.testStopGradient, forward mode: d/dx sin(x) cos(sg(x)) = cos(x) cos(x)."""
    f = lambda x: lax.sin(x) * lax.cos(lax.stop_gradient(x))
    f2 = lambda x, y: lax.sin(x) * lax.cos(y)
    x = F32(3.14)
    np.testing.assert_allclose(jacfwd(f)(x), jax.grad(f2)(x, x), rtol=1e-6)
    np.testing.assert_allclose(jacfwd(jacfwd(f))(x), jax.grad(jax.grad(f2))(x, x), rtol=1e-6)
    assert float(jacfwd(lambda x: lax.stop_gradient({"foo": x})["foo"])(3.0)) == 0.0


@pytest.mark.parametrize("x_shape,y_shape", [((5, 8), (1, 8)), ((1, 8), (5, 8))])
def test_remainder(x_shape, y_shape):
    """LaxAutodiffTest.testRemainder."""
    rng = _rng(25)
    x = rng.uniform(-9, 9, x_shape).astype(F32)
    y = (rng.uniform(0.1, 5, y_shape) * rng.choice([-1, 1], y_shape)).astype(F32)
    check_fwd(lax.rem, (x, y), 2, tol=1e-3, numeric_tol=None)


def test_higher_order_gradient_of_reciprocal():
    """LaxAutodiffTest.testHigherOrderGradientOfReciprocal: 6th derivative of 1/x at 4."""
    d = lambda x: 1 / x
    for _ in range(6):
        d = jacfwd(d)
    np.testing.assert_allclose(d(F32(4.0)), F32(0.0439453125), rtol=1e-6)


def test_pow_second_derivative():
    """LaxAutodiffTest.testPowSecondDerivative (jacfwd of jacfwd; 0 ** 0 gives nan as jax)."""
    x, y = 4.0, 0.0
    expected = ((0.0, 1 / x), (1 / x, np.log(x) ** 2))
    result = jacfwd(jacfwd(lax.pow, (0, 1)), (0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(result, np.float64), expected, rtol=1e-6)
    assert np.isnan(jacfwd(lax.pow)(0.0, 0.0))


def test_pow_int_power_at_zero():
    """LaxAutodiffTest.testPowIntPowerAtZero and testPowIntPowerAtZero2 (forward mode)."""
    assert float(jacfwd(jax.jit(lambda x, n: x**n))(0.0, 0)) == 0.0
    fns = [
        lambda z: jnp.sum(z ** jnp.arange(0, 2, dtype=int)),
        lambda z: jnp.sum(z ** jnp.arange(0, 2, dtype=float)),
        lambda z: 1 + z,
        lambda z: z**0 + z,
        lambda z: z**0.0 + z,
    ]
    for f in fns:
        np.testing.assert_allclose(jacfwd(f)(3.14), 1.0, rtol=1e-6)


def test_pow_shape_mismatch():
    """LaxAutodiffTest.testPowShapeMismatch, forward mode."""
    x = lax.iota("float32", 4)
    np.testing.assert_array_equal(jacfwd(jax.jit(lax.pow))(x, 2), jnp.diag(2 * x))


def test_scatter_apply_jvp():
    """LaxAutodiffTest.test_scatter_apply_jvp: NotImplementedError, as jax."""
    with pytest.raises(NotImplementedError):
        jacfwd(lambda x: x.at[1].apply(jnp.sin))(jnp.array([1.0, 2.0]))
