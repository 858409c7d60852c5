"""Generated programs: every transform of ours against jax's (issue 23; claims C3.2, C3.3).

``program_generator.programs()`` draws random programs (elementwise and special functions over
broadcasting shapes, reductions, movement, indexing, scatter combiners, cumulative ops, dot,
pooling, 1-D/2-D convolutions, linear algebra, control flow, custom_jvp/custom_vjp, checkpoint,
inner jit; float32/float64/bfloat16; its docstring lists what it draws and what not);
``program_differential.compare_program`` runs grad, jacrev, jacfwd, hessian, hvp, jvp, vjp and
grad-of-grad, and their options (has_aux, argnums subsets, chunk_size), eagerly and under jit,
and vmap of our grad, against jax, and classes each comparison. A comparison may be ``equal``, ``oracle_raised`` (jax
itself refuses, e.g. reverse mode through while_loop) or ``refused`` by a documented refusal;
``different`` and ``raised`` fail.

Profiles: ``autodiff-programs-ci`` (the default run: deterministic, a bounded number of programs)
and ``autodiff-programs-long`` (``-m slow``; ``JAXPARADIGM_FUZZ_PROGRAMS`` programs, ``make fuzz``).
The regression cases are the generator's failures on the code before issue 23, shrunk.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from jaxparadigm.autodiff import register_jvp
from jaxparadigm.autodiff.registry import get_jvp
from tests.autodiff import programs as model_programs
from tests.autodiff.program_differential import (
    CLASSES,
    DOCUMENTED_REFUSALS,
    OPTIONS,
    PLAIN,
    TRANSFORMS,
    _argnums_subset,
    _close,
    compare_function,
    compare_program,
)
from tests.autodiff.program_generator import Program, programs, random_program

_COMMON = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "autodiff-programs-ci", derandomize=True, max_examples=4, phases=[Phase.generate], **_COMMON
)
settings.register_profile(
    "autodiff-programs-long",
    max_examples=int(os.environ.get("JAXPARADIGM_FUZZ_PROGRAMS", "1000")),
    **_COMMON,
)


def _check(program, **kwargs):
    outcomes = compare_program(program, **kwargs)
    bad = [o for o in outcomes if o.cls in ("different", "raised")]
    assert not bad, f"{program}\n" + "\n".join(
        f"{o.transform}{' (jit)' if o.jit else ''}: {o.cls}: {o.detail}" for o in bad
    )
    assert {o.cls for o in outcomes} <= set(CLASSES)
    return outcomes


_SEEDS = st.integers(0, 2**31 - 1)


@settings(settings.get_profile("autodiff-programs-ci"))
@given(_SEEDS.map(lambda seed: random_program(seed, max_ops=4)))
def test_generated_programs_match_jax(program):
    """CI profile: a fixed sample of uniformly drawn programs (hypothesis' own draws favour the
    simplest ones): every transform and option under jit and vmap of grad; eagerly a third of
    the plain transforms, picked by the program's seed (eager evaluation is the slow part; the
    long profile and the benchmark run options eagerly too)."""
    _check(program, eager=PLAIN[program.seed % 3 :: 3])


@pytest.mark.slow
@settings(settings.get_profile("autodiff-programs-long"))
@given(st.one_of(programs(), _SEEDS.map(random_program)))
def test_generated_programs_match_jax_long(program):
    """Long profile (``make fuzz``): JAXPARADIGM_FUZZ_PROGRAMS programs of up to 6 ops, half
    drawn by hypothesis (shrinkable), half uniformly."""
    _check(program)


def _chain(arg_shapes, *names, kind="structural"):
    return Program(arg_shapes, tuple((kind, n) for n in names))


# Every op family added to the generator for issue 23 (special functions, rem, scatter combiners,
# cummin/cumlogsumexp, 2-D convolutions, linear algebra), chained in a few fixed programs: the
# uniform CI sample of four programs cannot reach each of them.
FAMILY_PROGRAMS = {
    "special_a": _chain(((3,),), "asin", "tan", "lgamma", "cbrt", "erf_inv", kind="unary"),
    "special_b": _chain(
        ((3,),), "digamma", "bessel_i0e", "acos", "bessel_i1e", "cosh", kind="unary"
    ),
    "rem": Program(
        ((2, 3), (3,)),
        (("binary", "fmod", "arg1", (3,)), ("binary", "remainder", "const", (2, 1))),
    ),
    "scatter_cumulative": _chain(
        ((2, 3),), "scatter_mul", "cummin", "scatter_max", "cumlogsumexp", "scatter_min"
    ),
    "conv2d": _chain(((2, 2, 3),), "conv2d_grouped", "conv2d_nchw", "conv2d_nhwc"),
    "linalg_solves": _chain(
        ((3,),), "tridiagonal_solve", "tri_solve", "tri_solve_right_t", "solve", "slogdet"
    ),
    "linalg_factorizations": _chain(((3,),), "cholesky", "sum", "eigh", "sum", "svd"),
    "linalg_qr_inv": _chain(((2,),), "qr", "sum", "inv"),
    # issue 36: the incomplete gamma / beta rules, polygamma and zeta; FFT compositions
    "special_incomplete": _chain(
        ((3,),), "gammainc", "betainc", "polygamma", "gammaincc", "zeta", kind="unary"
    ),
    "fft": _chain(((2, 4),), "fft_filter", "rfft_lowpass"),
}


@pytest.mark.parametrize("name", sorted(FAMILY_PROGRAMS))
def test_op_families_match_jax(name):
    """Each family program: hessian (our jacfwd of our jacrev: both modes and second order)
    under jit by default; every transform, eager and jit, under ``-m slow``."""
    _check(FAMILY_PROGRAMS[name], transforms=("hessian",), eager=(), vmap=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAMILY_PROGRAMS))
def test_op_families_match_jax_every_transform(name):
    _check(FAMILY_PROGRAMS[name])


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=() if n == "layer_norm" else pytest.mark.slow)
        for n in model_programs.CASES
    ],
)
def test_model_programs_match_jax(name):
    """The hand-written model losses of ``programs.py`` (pytree parameters: MLP, softmax
    cross-entropy, layer norm, attention) through the same differential harness, under jit."""
    loss, params, batch = model_programs.make_case(name)
    outcomes = compare_function(lambda p: loss(p, batch), (params,), 2e-4, eager=())
    bad = [o for o in outcomes if o.cls != "equal"]
    assert not bad, bad


# --- regression cases: the generator's findings, shrunk (the code before each fix fails them) ----

REGRESSIONS = {
    # forward mode through an implicitly broadcasting add/sub: the (1, n) operand's tangent came
    # back unbroadcast ("JVP rule for 'add' returned a tangent of shape (1, 3) ...")
    "bias_hessian": (
        Program(((3,),), (("binary", "add", "const", (5, 3)), ("unary", "tanh"))),
        ("hessian",),
    ),
    "size1_sub": (Program(((1,),), (("binary", "rsub", "const", (4, 3)),)), ("jvp",)),
    "row_plus_column": (
        Program(((1, 3), (3, 1)), (("binary", "add", "const", (3, 1)),)),
        ("jacfwd",),
    ),
    # grad-of-grad through sum pooling: our reduce_window_sum VJP emitted the generic
    # reduce_window primitive (traced init value), which has no VJP rule
    "pool_sum_grad_of_grad": (
        Program(((4,),), (("structural", "pool_sum"), ("unary", "sin"))),
        ("grad_of_grad",),
    ),
    # second order through a custom_jvp whose rule is not the body's derivative: the primal
    # output was differentiated through the custom rule again instead of the rule's primal
    # expression (jax: sin(x) -> cos(x)); silently different hessian/hvp/grad-of-grad
    "custom_jvp_second_order": (
        Program(((2,),), (("structural", "custom_jvp"), ("unary", "sin"))),
        ("grad_of_grad",),
    ),
    # jacfwd / hessian with an unsorted argnums (2, 0): basis tangents were numbered in argument
    # order, the columns read back in argnums order; silently swapped blocks (issue 23, found
    # by the generator's argnums option)
    "jacfwd_unsorted_argnums": (
        Program(((2,), (1,), (1,)), (("binary", "mul", "arg2", (1,)),)),
        ("jacfwd_argnums", "hessian_argnums"),
    ),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_programs(name):
    program, transforms = REGRESSIONS[name]
    outcomes = _check(program, transforms=transforms, eager=(), vmap=False)
    assert all(o.cls == "equal" for o in outcomes), outcomes


def test_issue_23_snippets_equal_jax():
    """The two snippets of issue 23, verbatim, equal jax."""
    from jaxparadigm.autodiff import func

    x = jnp.ones((5, 3))
    f = lambda b: jnp.sum(jnp.tanh(x + b) ** 2)
    hessians = jax.jit(lambda b: (func.hessian(f)(b), jax.hessian(f)(b)))  # eager: 4x slower
    np.testing.assert_allclose(*hessians(jnp.zeros(3)), rtol=1e-6, atol=1e-6)
    x = jnp.ones((4, 3))
    g = lambda b: b - x * 0.5
    ours = func.jvp(g, (jnp.zeros(1),), (jnp.ones(1),))
    ref = jax.jvp(g, (jnp.zeros(1),), (jnp.ones(1),))
    assert _close(ours, ref, 1e-6) == ""


def test_reverse_over_forward_max_pool():
    """Our forward mode emits select_and_gather_add (windowed max tangent); reverse over it needs
    its VJP (select_and_scatter_add), and reverse over that needs select_and_scatter_add's."""
    from jax import lax

    from jaxparadigm.autodiff import func

    pool = lambda v: jnp.sum(jnp.sin(lax.reduce_window(v, -jnp.inf, lax.max, (2,), (1,), "VALID")))
    rng = np.random.default_rng(0)
    v = jnp.asarray(rng.standard_normal(4), jnp.float32)
    t = jnp.asarray(rng.standard_normal(4), jnp.float32)

    @jax.jit
    def both(v):
        def gg(grad, jvp):
            inner = grad(lambda u: jvp(pool, (u,), (t,))[1])
            return grad(lambda u: jnp.sum(inner(u) ** 2))(v)

        return gg(func.grad, func.jvp), gg(jax.grad, jax.jvp)

    ours, ref = both(v)
    assert _close(ours, ref, 1e-4) == ""
    assert np.any(np.asarray(ref) != 0)


# --- the harness itself can fail -----------------------------------------------------------------


def test_harness_sees_a_silently_wrong_rule():
    """A wrong JVP rule for sin (cos(x) + 0.5) must be classed ``different``, not ``equal``."""
    original = get_jvp("sin")

    def wrong(primals, tangents, **params):
        out, t = original(primals, tangents, **params)
        return out, t * 1.5

    program = Program(((3,),), (("unary", "sin"),))
    register_jvp("sin", overwrite=True)(wrong)
    try:
        outcomes = compare_program(program, transforms=("jvp",), eager=("jvp",), vmap=False)
    finally:
        register_jvp("sin", overwrite=True)(original)
    assert [o.cls for o in outcomes] == ["different", "different"]
    assert compare_program(program, transforms=("jvp",), eager=(), vmap=False)[0].cls == "equal"


def test_every_option_is_compared():
    """Each option of OPTIONS is one comparison (under jit), equal on a three-input program whose
    argnums subset is an unsorted tuple; the transforms are PLAIN then OPTIONS."""
    assert TRANSFORMS == PLAIN + OPTIONS and len(set(TRANSFORMS)) == len(TRANSFORMS)
    assert [_argnums_subset(n) for n in (1, 2, 3)] == [(0,), 1, (2, 0)]
    program = Program(
        ((3,), (3,), (1,)), (("binary", "mul", "arg1", (3,)), ("binary", "atan2", "arg2", (1,)))
    )
    outcomes = compare_program(program, transforms=OPTIONS, eager=(), vmap=False)
    assert [(o.transform, o.cls) for o in outcomes] == [(n, "equal") for n in OPTIONS]


def test_harness_sees_a_wrong_argnums_order(monkeypatch):
    """If our grad answered argnums=(2, 0) in sorted order (a plausible slip), grad_argnums is
    classed ``different``; grad (all inputs, already sorted) stays ``equal``."""
    from jaxparadigm.autodiff import func

    original = func.grad

    def sorted_grad(f, argnums=0, has_aux=False):
        nums = tuple(sorted(argnums)) if isinstance(argnums, tuple) else argnums
        return original(f, nums, has_aux)

    monkeypatch.setattr(func, "grad", sorted_grad)
    program = Program(
        ((3,), (3,), (3,)), (("binary", "mul", "arg1", (3,)), ("binary", "add", "arg2", (3,)))
    )
    outcomes = compare_program(program, transforms=("grad", "grad_argnums"), eager=(), vmap=False)
    assert [o.cls for o in outcomes] == ["equal", "different"], outcomes


def test_harness_sees_a_wrong_chunked_jacobian(monkeypatch):
    """If chunked Jacobian rows came back reversed, jacrev_chunk is ``different`` (jacrev, which
    is not chunked, stays ``equal``)."""
    from jaxparadigm.autodiff import func

    original = func.map_rows

    def reversed_chunks(fn, n, chunk_size=None):
        rows = original(fn, n, chunk_size)
        return rows if chunk_size is None else jax.tree_util.tree_map(lambda r: r[::-1], rows)

    monkeypatch.setattr(func, "map_rows", reversed_chunks)
    program = Program(((4,),), (("unary", "sin"),))
    outcomes = compare_program(program, transforms=("jacrev", "jacrev_chunk"), eager=(), vmap=False)
    assert [o.cls for o in outcomes] == ["equal", "different"], outcomes


def test_close_classifies_shapes_dtypes_and_values():
    a = jnp.ones(3)
    assert _close(a, a, 1e-6) == ""
    assert "max abs error" in _close(a + 1e-3, a, 1e-6)
    assert "vs jax's" in _close(a[None], a, 1e-6)
    assert "vs jax's" in _close(a.astype(jnp.bfloat16), a, 1e-6)
    assert "non-finite" in _close(a.at[0].set(jnp.nan), a, 1e-6)
    assert "tree" in _close((a, a), [a, a], 1e-6)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_programs_equal_jax(dtype):
    """Complex programs (issue 36: they were the one documented refusal) compare equal to jax in
    every transform, a non-holomorphic op (conj, abs) included."""
    ops = (("unary", "sin"), ("binary", "mul", "const", (3,)), ("unary", "conj"))
    outcomes = compare_program(Program(((3,),), ops, dtype=dtype), eager=())
    assert {o.cls for o in outcomes} == {"equal"}, [o for o in outcomes if o.cls != "equal"]
    # a real output of complex inputs: jax's jacfwd/hessian raise TypeError (holomorphic needs
    # a complex output, non-holomorphic jacfwd real inputs), and so do ours; the rest is equal
    program = Program(((3,),), (*ops, ("unary", "abs")), dtype=dtype)
    outcomes = compare_program(program, eager=())
    for o in outcomes:
        if o.cls != "equal":
            assert o.cls == "oracle_raised", o
            assert o.detail == "jax: TypeError; ours raised TypeError", o
            assert o.transform.startswith(("jacfwd", "hessian")), o
    assert sum(o.cls == "equal" for o in outcomes) >= 10


def test_close_compares_imaginary_parts():
    a = jnp.ones(3, jnp.complex64)
    assert _close(a, a, 1e-6) == ""
    assert "max abs error" in _close(a + 1e-3j, a, 1e-6)


def test_no_documented_refusal_is_left():
    """Complex numbers, the last accepted refusal, are differentiated now (issue 36)."""
    assert DOCUMENTED_REFUSALS == {}
    assert set(TRANSFORMS) >= {"grad", "jacrev", "jacfwd", "hessian", "hvp", "jvp", "vjp"}


# --- every primitive our own derivative programs emit has rules of its own ----------------------


def _float_primitives(jaxpr, acc):
    """Names of the primitives in ``jaxpr`` (and its sub-jaxprs) with a float output."""
    from jax.extend import core as jcore

    for eqn in jaxpr.eqns:
        if any(jnp.issubdtype(getattr(v.aval, "dtype", int), jnp.inexact) for v in eqn.outvars):
            acc.add(eqn.primitive.name)
        for p in eqn.params.values():
            for sub in p if isinstance(p, (tuple, list)) else (p,):
                if isinstance(sub, (jcore.ClosedJaxpr, jcore.Jaxpr)):
                    _float_primitives(getattr(sub, "jaxpr", sub), acc)
    return acc


def test_every_primitive_our_derivatives_emit_has_rules():
    """Issue 23: any order of transforms composes only if every (float) primitive that our
    backward pass (grad) and our forward mode (jvp) emit has a VJP and a JVP rule itself. Traced
    (not run) over issue 12's rule-coverage cases; before the fix, sum pooling's VJP emitted the
    generic ``reduce_window`` and max pooling's JVP ``select_and_gather_add`` (no VJP rules)."""
    from jaxparadigm.autodiff import func, grad
    from jaxparadigm.autodiff.registry import has_jvp, has_vjp
    from tests.autodiff.test_rule_coverage import CASES

    missing, traced = {}, 0
    for name, (f, args) in CASES.items():
        args = tuple(jnp.asarray(x) for x in args)
        wrt = tuple(i for i, x in enumerate(args) if jnp.issubdtype(x.dtype, jnp.floating))
        if not wrt:
            continue

        def loss(*a, f=f):
            outs = jax.tree_util.tree_leaves(f(*a))
            return sum(jnp.sum(jnp.sin(o)) for o in outs if jnp.issubdtype(o.dtype, jnp.floating))

        def tangent(x):
            if jnp.issubdtype(x.dtype, jnp.floating):
                return jnp.ones_like(x)
            return np.zeros(x.shape, jax.dtypes.float0)

        programs_ = (
            jax.make_jaxpr(grad(loss, wrt))(*args),
            jax.make_jaxpr(lambda *a, loss=loss: func.jvp(loss, a, tuple(map(tangent, a))))(*args),
        )
        for jp in programs_:
            traced += 1
            for p in _float_primitives(jp.jaxpr, set()):
                if not (has_vjp(p) and has_jvp(p)):
                    missing.setdefault(p, []).append(name)
    assert traced > 100, traced
    assert missing == {}, f"primitives without a VJP or JVP rule (case names): {missing}"
