"""Issue 23 item 4: VJP and JVP rules for linear algebra, against jax and finite differences.

Ports a representative set of JAX's own gradient cases (cited per case: ``tests/linalg_test.py``,
``tests/eigh_test.py``, ``tests/custom_linear_solve_test.py``); each compares our reverse mode
(vjp with a random cotangent) and forward mode (jvp with a random tangent) with jax's, and, in
float64, with a central finite difference ``<w, f(x + e t) - f(x - e t)> / 2e``. Decompositions
whose outputs are unique only up to signs are checked through sign-invariant functions, as the
upstream tests do (``_normalizing_svd``, ``qr_and_mul``). Inputs are small, well-conditioned
matrices (SPD with a margin, diagonally dominant, distinct spectra).
"""

import functools

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from jax import lax

from jaxparadigm.autodiff import (
    MissingJVPRule,
    MissingVJPRule,
    func,
    get_jvp,
    get_vjp,
    registered_jvp_primitives,
    registered_primitives,
)

R = np.random.default_rng(23)
LINALG = (
    "cholesky",
    "triangular_solve",
    "tridiagonal_solve",
    "lu",
    "custom_linear_solve",
    "eigh",
    "qr",
    "svd",
)


def gen(*shape, dtype=np.float32):
    return jnp.asarray(R.standard_normal(shape), dtype)


def spd(*batch, n=3, dtype=np.float32):
    x = R.standard_normal((*batch, n, n))
    return jnp.asarray(x @ np.swapaxes(x, -1, -2) + n * np.eye(n), dtype)


def dominant(*batch, n=3, dtype=np.float32):
    """Diagonally dominant: invertible, well conditioned, pivots away from ties."""
    return jnp.asarray(R.standard_normal((*batch, n, n)) + 2 * n * np.eye(n), dtype)


def _leaves(tree):
    return [np.asarray(x, np.float64) for x in jax.tree_util.tree_leaves(tree)]


def _close(ours, ref, rtol, atol, what):
    lo, lr = _leaves(ours), _leaves(ref)
    assert len(lo) == len(lr), what
    for a, b in zip(lo, lr, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def _like(tree, seed):
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map(
        lambda x: jnp.asarray(rng.standard_normal(jnp.shape(x)), jnp.result_type(x)), tree
    )


def check(f, args, rtol=2e-4, atol=2e-5, modes=("rev", "fwd")):
    """Our vjp / jvp of ``f`` at ``args`` equal jax's, for a random cotangent / tangent."""
    if "rev" in modes:
        ct = _like(f(*args), 1)
        _close(func.vjp(f, *args)[1](ct), jax.vjp(f, *args)[1](ct), rtol, atol, "vjp")
    if "fwd" in modes:
        ts = _like(args, 2)
        _close(func.jvp(f, args, ts), jax.jvp(f, args, ts), rtol, atol, "jvp")


def check_fd(f, args, eps=1e-5, rtol=1e-5, atol=1e-7):
    """float64: <w, J t> (J: the Jacobian in ``args[0]``) from our grad and our jvp vs a central
    finite difference; every argument is cast to float64."""
    with jax.enable_x64(True):
        x, *rest = [jnp.asarray(a, jnp.float64) for a in args]
        g = lambda z: f(z, *rest)
        w = _like(g(x), 3)
        t = _like(x, 4)
        scalar = lambda z: sum(jnp.vdot(a, b) for a, b in zip(_tl(g(z)), _tl(w), strict=True))
        fd = (scalar(x + eps * t) - scalar(x - eps * t)) / (2 * eps)
        rev = jnp.vdot(func.grad(scalar)(x), t)
        tangent_out = _tl(func.jvp(g, (x,), (t,))[1])
        fwd = sum(jnp.vdot(a, b) for a, b in zip(tangent_out, _tl(w), strict=True))
        np.testing.assert_allclose(float(rev), float(fd), rtol=rtol, atol=atol, err_msg="rev")
        np.testing.assert_allclose(float(fwd), float(fd), rtol=rtol, atol=atol, err_msg="fwd")


_tl = jax.tree_util.tree_leaves


def normalizing_svd(a, full_matrices=False):
    """Upstream ``_normalizing_svd``: signs fixed by U's first row (unique outputs)."""
    u, s, vt = jnp.linalg.svd(a, full_matrices=full_matrices)
    sign = jnp.sign(u[..., 0:1, :])
    return u * sign, s, vt * jnp.swapaxes(sign, -1, -2)


def normalizing_eigh(a):
    """Upstream ``_normalizing_eigh``: eigenvector signs fixed by their first entries."""
    w, v = jnp.linalg.eigh(a, symmetrize_input=True)
    return w, v * jnp.sign(v[..., 0:1, :])


def qr_and_mul(a, mode="reduced"):
    """Upstream ``qr_and_mul`` (testQr): Q R, an identity robust to Q's column signs; plus R's
    absolute values so R's own derivative is checked too."""
    q, r = jnp.linalg.qr(a, mode=mode)
    return q @ r, jnp.abs(r)


def posify(a):
    """Upstream ``posify``: the symmetric part (the solver reads one triangle, matvec all of A)."""
    return (a + a.T) / 2


def positive_definite_solve(a, b):
    """custom_linear_solve_test.py::test_custom_linear_solve_cholesky's solver."""
    factors = jsl.cho_factor(a)
    solve = lambda matvec, x: jsl.cho_solve(factors, x)
    return lax.custom_linear_solve(functools.partial(jnp.dot, a), b, solve, symmetric=True)


def tri_solve(a, b, **kw):
    return lax.linalg.triangular_solve(a, b, **kw)


B34 = gen(3, 4)
CASES = {
    # linalg_test.py::testCholesky (check_grads order 2 on a A^T)
    "cholesky": (jnp.linalg.cholesky, lambda: (spd(),)),
    # linalg_test.py::testTriangularSolveGrad (left_side, lower, transpose_a, unit_diagonal)
    "tri_left_lower": (
        functools.partial(tri_solve, left_side=True, lower=True),
        lambda: (jnp.tril(dominant()), gen(3, 2)),
    ),
    "tri_right_upper_T_unit": (
        functools.partial(
            tri_solve, left_side=False, lower=False, transpose_a=True, unit_diagonal=True
        ),
        lambda: (jnp.triu(dominant(n=4)), gen(3, 4)),
    ),
    # linalg_test.py::testSolve / testInv grads (jnp.linalg.solve, inv: lu + custom_linear_solve)
    "solve": (jnp.linalg.solve, lambda: (dominant(), gen(3, 2))),
    "inv": (jnp.linalg.inv, lambda: (dominant(n=4),)),
    # linalg_test.py::testLuGrad (jsp.linalg.lu: P, L, U) and lu_factor's packed output
    "lu": (jsl.lu, lambda: (dominant(n=4),)),
    "lu_factor": (lambda a: jsl.lu_factor(a)[0], lambda: (dominant(),)),
    # linalg_test.py::testDetGrad / testSlogdetGrad (custom_jvp over lu)
    "det": (jnp.linalg.det, lambda: (dominant(n=4),)),
    "slogdet": (lambda a: jnp.linalg.slogdet(a)[1], lambda: (dominant(n=4),)),
    # eigh_test.py::testEighGrad (symmetrize_input=True, normalised eigenvectors)
    "eigh": (normalizing_eigh, lambda: (spd(),)),
    # linalg_test.py::testQr (check_jvp of qr_and_mul), square and tall
    "qr": (qr_and_mul, lambda: (gen(3, 3),)),
    "qr_tall": (qr_and_mul, lambda: (gen(4, 3),)),
    # linalg_test.py::testSVDGrad (normalising svd; compute_uv=False)
    "svd": (normalizing_svd, lambda: (gen(3, 3),)),
    "svdvals": (lambda a: jnp.linalg.svd(a, compute_uv=False), lambda: (gen(4, 3),)),
    # custom_linear_solve_test.py::test_custom_linear_solve_cholesky (symmetric, no tr_solve)
    "custom_linear_solve_cholesky": (
        lambda a, b: positive_definite_solve(posify(a), b),
        lambda: (spd(n=2), gen(2)),
    ),
}

SLOW_CASES = {
    # linalg_test.py::testCholesky batched shape (2, 5, 5) -> (2, 3, 3)
    "cholesky_batched": (jnp.linalg.cholesky, lambda: (spd(2),)),
    "tri_batched": (
        functools.partial(tri_solve, left_side=True, lower=False, transpose_a=True),
        lambda: (jnp.triu(dominant(2)), gen(2, 3, 4)),
    ),
    "tri_left_upper_unit": (
        functools.partial(tri_solve, left_side=True, lower=False, unit_diagonal=True),
        lambda: (jnp.triu(dominant()), gen(3, 1)),
    ),
    "tri_right_lower": (
        functools.partial(tri_solve, left_side=False, lower=True),
        lambda: (jnp.tril(dominant()), B34.T),
    ),
    "solve_batched": (jnp.linalg.solve, lambda: (dominant(2), gen(2, 3, 1))),
    "solve_vector": (jnp.linalg.solve, lambda: (dominant(), gen(3))),
    "inv_batched": (jnp.linalg.inv, lambda: (dominant(2),)),
    # linalg_test.py::testLuGrad shapes (4, 5), (10, 5) -> (3, 4), (4, 3); batched via vmap
    "lu_wide": (lambda a: lax.linalg.lu(a)[0], lambda: (gen(3, 4),)),
    "lu_tall": (lambda a: lax.linalg.lu(a)[0], lambda: (gen(4, 3),)),
    "lu_batched": (jax.vmap(jsl.lu), lambda: (dominant(2),)),
    "eigh_batched": (normalizing_eigh, lambda: (spd(2),)),
    "eigvalsh": (jnp.linalg.eigvalsh, lambda: (spd(n=4),)),
    # linalg_test.py::testScipyQrModes / testNumpyQrModes: wide, complete, batched
    "qr_wide": (qr_and_mul, lambda: (gen(3, 4),)),
    "qr_complete": (functools.partial(qr_and_mul, mode="complete"), lambda: (gen(4, 3),)),
    "qr_batched": (qr_and_mul, lambda: (gen(2, 3, 3),)),
    # linalg_test.py::testSVDGrad shapes (2, 5), (5, 2), (2, 5, 5)
    "svd_wide": (normalizing_svd, lambda: (gen(2, 4),)),
    "svd_tall": (normalizing_svd, lambda: (gen(4, 2),)),
    "svd_full_square_batched": (
        functools.partial(normalizing_svd, full_matrices=True),
        lambda: (gen(2, 3, 3),),
    ),
    # linalg_test.py::testPinv (svd-based)
    "pinv": (jnp.linalg.pinv, lambda: (gen(4, 3),)),
    # custom_linear_solve_test.py::test_custom_linear_solve_lu (explicit transpose_solve)
    "custom_linear_solve_lu": (
        lambda a, b: lax.custom_linear_solve(
            functools.partial(jnp.dot, a),
            b,
            lambda mv, x: jsl.lu_solve(jsl.lu_factor(a), x),
            lambda vm, x: jsl.lu_solve(jsl.lu_factor(a.T), x),
        ),
        lambda: (dominant(), gen(3)),
    ),
}


# Cases whose primitives another default case already covers run under -m slow only.
COVERED = {
    "lu_factor",
    "det",
    "slogdet",
    "qr_tall",
    "inv",
    "svdvals",
    "custom_linear_solve_cholesky",
}


@pytest.mark.parametrize(
    "name",
    [
        *(pytest.param(n, marks=pytest.mark.slow) if n in COVERED else n for n in CASES),
        *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW_CASES),
    ],
)
def test_first_order_matches_jax(name):
    f, make = {**CASES, **SLOW_CASES}[name]
    check(f, make(), rtol=5e-4, atol=5e-5)


@pytest.mark.parametrize(
    "name",
    [
        "solve",
        pytest.param("cholesky", marks=pytest.mark.slow),
        pytest.param("eigh", marks=pytest.mark.slow),
        pytest.param("svd", marks=pytest.mark.slow),
        pytest.param("qr", marks=pytest.mark.slow),
        pytest.param("lu", marks=pytest.mark.slow),
        pytest.param("tri_left_lower", marks=pytest.mark.slow),
        pytest.param("custom_linear_solve_cholesky", marks=pytest.mark.slow),
    ],
)
def test_against_central_finite_differences_float64(name):
    """The oracle that is not jax: a float64 central difference of ``<w, f(x)>``."""
    f, make = CASES[name]
    check_fd(f, make())


SECOND_ORDER = {
    "cholesky": lambda a: jnp.sum(jnp.linalg.cholesky(a) ** 2),
    "eigh": lambda a: jnp.sum(jnp.sin(normalizing_eigh(a)[1])),
    "solve": lambda a: jnp.sum(jnp.linalg.solve(a, jnp.arange(3.0)) ** 2),
}


@pytest.mark.parametrize(
    "name", ["cholesky", *(pytest.param(n, marks=pytest.mark.slow) for n in ("eigh", "solve"))]
)
def test_second_order_matches_jax(name):
    """linalg_test.py::testCholesky / eigh_test.py::testEighGrad use order=2: our reverse mode
    over our own backward program (the rules composed with themselves)."""
    f, a = SECOND_ORDER[name], spd()
    g = lambda a: jnp.sum(jnp.cos(func.grad(f)(a)))
    r = lambda a: jnp.sum(jnp.cos(jax.grad(f)(a)))
    _close(func.grad(g)(a), jax.grad(r)(a), 2e-3, 2e-4, "grad of grad")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cholesky", "solve", "inv", "lu", "eigh", "qr", "svd", "svdvals"])
def test_hessian_and_jacobians_match_jax(name):
    f, make = CASES[name]
    args = make()
    x, rest = args[0], args[1:]
    g = lambda x: sum(jnp.sum(jnp.sin(o)) for o in _tl(f(x, *rest)))
    _close(func.hessian(g)(x), jax.hessian(g)(x), 2e-3, 2e-4, "hessian")
    h = lambda x: f(x, *rest)
    _close(func.jacfwd(h)(x), jax.jacfwd(h)(x), 1e-3, 1e-4, "jacfwd")
    _close(func.jacrev(h)(x), jax.jacrev(h)(x), 1e-3, 1e-4, "jacrev")


F_SOLVE = lambda a, b: jnp.sum(jnp.linalg.solve(a, b) ** 2)


def test_grad_under_jit():
    a, b = dominant(), gen(3)
    ours = jax.jit(func.grad(F_SOLVE, argnums=(0, 1)))(a, b)
    _close(ours, jax.grad(F_SOLVE, argnums=(0, 1))(a, b), 1e-4, 1e-5, "jit")


@pytest.mark.slow
def test_vmap_of_grad():
    a, b = dominant(2), gen(2, 3)
    _close(
        jax.vmap(func.grad(F_SOLVE))(a, b), jax.vmap(jax.grad(F_SOLVE))(a, b), 1e-4, 1e-5, "vmap"
    )


def test_gaussian_log_likelihood_gradient():
    """A model: the Gaussian negative log-likelihood with K = A A^T + s I via cholesky and
    triangular solves (the GP marginal likelihood pattern), grad in A, s and the mean."""
    y = gen(4)

    def nll(params):
        a, log_s, mu = params["a"], params["log_s"], params["mu"]
        k = a @ a.T + jnp.exp(log_s) * jnp.eye(4)
        chol = jnp.linalg.cholesky(k)
        alpha = jsl.solve_triangular(chol, y - mu, lower=True)
        return 0.5 * jnp.sum(alpha**2) + jnp.sum(jnp.log(jnp.diag(chol))) + 2 * jnp.log(2 * jnp.pi)

    params = {"a": gen(4, 4), "log_s": jnp.float32(0.3), "mu": gen(4)}
    _close(func.grad(nll)(params), jax.grad(nll)(params), 1e-4, 1e-5, "nll grad")


def test_ridge_least_squares_gradient():
    """A model: ridge regression solved by jnp.linalg.solve inside the loss (bilevel pattern);
    grad in the data matrix and the log-penalty vs jax.grad."""
    y = gen(6)

    def loss(x, log_lam):
        w = jnp.linalg.solve(x.T @ x + jnp.exp(log_lam) * jnp.eye(3), x.T @ y)
        return jnp.mean((x @ w - y) ** 2)

    x, lam = gen(6, 3), jnp.float32(-0.5)
    ours = func.grad(loss, argnums=(0, 1))(x, lam)
    _close(ours, jax.grad(loss, argnums=(0, 1))(x, lam), 1e-4, 1e-5, "ridge grad")


def test_rules_registered_for_every_linalg_primitive():
    assert [p for p in LINALG if p not in registered_primitives()] == []
    assert [p for p in LINALG if p not in registered_jvp_primitives()] == []


ABSENT = {
    "schur": lambda a: jnp.sum(jsl.schur(a)[0]),
    "geqrf": lambda a: jnp.sum(jnp.linalg.qr(a, mode="raw")[0]),  # Householder form
}


@pytest.mark.parametrize("name", sorted(ABSENT))
def test_absent_primitive_is_named_in_both_modes(name):
    """``schur`` and ``geqrf`` (``qr(mode="raw")``) have no rule (jax has none either): the
    error names the primitive in both modes."""
    f, a = ABSENT[name], dominant()
    with pytest.raises(NotImplementedError):
        jax.grad(f)(a)
    with pytest.raises(MissingVJPRule, match=f"'{name}'") as rev:
        func.grad(f)(a)
    assert rev.value.primitive_name == name
    with pytest.raises(MissingJVPRule, match=f"'{name}'") as fwd:
        func.jvp(f, (a,), (a,))
    assert fwd.value.primitive_name == name


@pytest.mark.slow
def test_pivots_to_permutation_carries_no_tangent():
    """``lu_pivots_to_permutation`` is integer-valued: no rule is needed for a program using it."""

    def f(a):
        lu, pivots, _ = lax.linalg.lu(a)
        perm = lax.linalg.lu_pivots_to_permutation(pivots, 3)
        return jnp.sum(jnp.sin(lu[perm]))

    check(f, (dominant(),))


def test_partial_decompositions_are_refused_like_jax():
    """jax's eigh/svd rules refuse subset_by_index (the CPU forward refuses it too, so the rule
    is called directly) and full_matrices on a non-square svd."""
    a = spd(n=4)
    params = dict(lower=True, sort_eigenvalues=True, subset_by_index=(0, 2), algorithm=None)
    with pytest.raises(NotImplementedError, match=r"subset_by_index=\(0, 2\)"):
        get_jvp("eigh")([a], [a], **params)
    with pytest.raises(NotImplementedError, match=r"subset_by_index=\(0, 2\)"):
        get_vjp("eigh")([a, None], a, **params)
    g = lambda a: jnp.sum(jnp.linalg.svd(a, full_matrices=True)[0])
    with pytest.raises(NotImplementedError, match="full_matrices=True on a 4x3 matrix"):
        func.jvp(g, (gen(4, 3),), (gen(4, 3),))
    with pytest.raises(NotImplementedError, match="full_matrices=True on a 4x3 matrix"):
        func.grad(g)(gen(4, 3))


def test_rules_never_call_jax_autodiff(monkeypatch):
    """As test_no_jax_autodiff: with jax's AD entry points, JVP tracer and transpose pass made to
    fail, our grad and jvp through every linalg rule still run and equal jax's (computed first)."""
    from jax._src import api as jax_api
    from jax._src.interpreters import ad as jax_ad

    b = gen(3)

    def f(a):
        s = a @ a.T + 3 * jnp.eye(3)
        lu_ = jsl.lu_factor(a)[0]
        return (
            jnp.sum(jnp.linalg.cholesky(s))
            + jnp.sum(jnp.linalg.solve(a, b))
            + jnp.sum(jnp.linalg.eigvalsh(s))
            + jnp.sum(jnp.abs(jnp.linalg.qr(a)[1]))
            + jnp.sum(jnp.linalg.svd(a, compute_uv=False))
            + jnp.sum(jnp.sin(lu_))
        )

    a, t = dominant(), gen(3, 3)
    expected = (jax.grad(f)(a), jax.jvp(f, (a,), (t,)))

    def forbid(name):
        def fail(*args, **kwargs):
            raise AssertionError(f"jax AD entry point {name} was called")

        return fail

    for name in ("jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev"):
        monkeypatch.setattr(jax, name, forbid(f"jax.{name}"))
        monkeypatch.setattr(jax_api, name, forbid(f"jax._src.api.{name}"))
    monkeypatch.setattr(jax_ad.JVPTrace, "process_primitive", forbid("ad.JVPTrace"))
    monkeypatch.setattr(jax_ad, "backward_pass", forbid("ad.backward_pass"))
    with pytest.raises(AssertionError, match="jax.grad"):
        jax.grad(f)(a)  # the patch is live
    _close((func.grad(f)(a), func.jvp(f, (a,), (t,))), expected, 2e-4, 2e-5, "no jax AD")
