"""VJP and JVP rules for linear solves: triangular_solve, tridiagonal_solve, cholesky, lu,
custom_linear_solve (C3.2).

Real matrices only (complex values are refused by the engine, see ``complex_refusal``); ``op(A)``
is ``A`` or ``A^T`` (``transpose_a``), leading axes are batch axes. Each primitive's VJP and JVP
sit side by side:

triangular_solve  X = op(A)^{-1} B (left) / B op(A)^{-1} (right), A masked to its triangle:
                  dX = op(A)^{-1} (dB - op(dA) X)      ct_B = op(A)^{-T} ct_X   (left)
                  dX = (dB - X op(dA)) op(A)^{-1}      ct_B = ct_X op(A)^{-T}   (right)
                  ct_op(A) = -ct_B X^T (left) / -X^T ct_B (right), then transposed back and
                  masked to the triangle (strict when ``unit_diagonal``)
tridiagonal_solve X = A^{-1} B, A = tridiag(dl, d, du) read as A[i,i-1] = dl[i] (i >= 1),
                  A[i,i] = d[i], A[i,i+1] = du[i] (i < m-1); dl[0], du[m-1] are never read:
                  dX = A^{-1} (dB - dA X),  ct_B = A^{-T} ct_X (A^T = tridiag([0, du[:-1]],
                  d, [dl[1:], 0])),  ct_d[i] = -<ct_B[i], X[i]>, ct_dl[i] = -<ct_B[i], X[i-1]>,
                  ct_du[i] = -<ct_B[i], X[i+1]> (zero at the unread ends)
cholesky          A = L L^T (Murray 2016, arXiv:1602.07527; jax's ``_cholesky_jvp_rule``):
                  dL = L Phi(L^{-1} dA L^{-T}),  ct_A = L^{-T} Phi(L^T ct_L) L^{-1},
                  Phi(X) = tril(X) with its diagonal halved (self-adjoint, so the VJP is the
                  exact transpose of the JVP, as jax's transposed JVP is)
lu                P A = L U packed as tril(L, -1) + U (de Hoog, Anderssen & Lukas; jax's
                  ``_lu_jvp_rule``): with S = L^{-1} (P dA) U^{-1},
                  d(lu) = L tril(S, -1) + triu(S) U; the pivots get no tangent. VJP: the
                  transpose of that linear map (``transpose_jvp``)
custom_linear_solve  x = A^{-1} b with A given by ``matvec`` (jax's implicit differentiation):
                  dx = A^{-1} (db - dA x)  (the solve bound again on a new right-hand side),
                  ct_b = A^{-T} ct_x (the transposed solve, bound as a custom_linear_solve),
                  ct_matvec_consts = -(d/dconsts <ct_b, matvec(consts, x)>). Tangents of the
                  solvers' own constants are ignored, as in jax (``jnp.linalg.solve`` passes
                  them through ``stop_gradient``)

``transpose_jvp`` turns a JVP rule into a VJP rule (Autodidax's linearize + transpose): the rule's
tangent program ``t -> J(a) t`` is linear in ``t``; our reverse sweep over it with only ``t``
differentiated returns ``J(a)^T ct``. ``lu_pivots_to_permutation`` is integer-valued and never
carries a tangent, so it needs no rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.graph import Graph
from jaxparadigm.autodiff.jvp_interpreter import eval_jvp_closed, is_float
from jaxparadigm.autodiff.registry import register_forward, register_jvp, register_vjp

__all__ = ["mT", "transpose_jvp"]

_HI = lax.Precision.HIGHEST


def mT(x: jax.Array) -> jax.Array:
    """Swap the last two axes: the transpose of every matrix in a batch (used by the C3.2 rules)."""
    return jnp.swapaxes(x, -1, -2)


def _mm(a, b):
    return jnp.matmul(a, b, precision=_HI)


def transpose_jvp(
    jvp_rule: Callable[..., Any], ct: Any, primals: Sequence[Any], params: dict
) -> tuple:
    """VJP from a JVP rule: ``J(a)^T ct`` by our reverse sweep over ``t -> jvp_rule(a, t)``. C3.2.

    ``ct`` is one cotangent or a list (``None`` = zero) matching the primitive's outputs; integer
    outputs (lu's pivots) have ``None`` tangents and are dropped from the tangent program.
    Returns one cotangent per primal (``None`` for integer primals).
    """
    n = len(primals)
    floats = [is_float(jnp.result_type(p)) for p in primals]
    kept: dict = {}

    def tangent_program(*args):
        ts = [t if f else None for t, f in zip(args[n:], floats, strict=True)]
        _, outs = jvp_rule(list(args[:n]), ts, **params)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        kept["mask"] = [o is not None for o in outs]
        return [o for o in outs if o is not None]

    zeros = [jnp.zeros(jnp.shape(p), jnp.result_type(p)) for p in primals]
    closed = jax.make_jaxpr(tangent_program)(*primals, *zeros)
    cts = ct if isinstance(ct, (list, tuple)) else [ct]
    cts = [c for c, k in zip(cts, kept["mask"], strict=True) if k]
    cts = [
        jnp.zeros(a.shape, a.dtype) if c is None else c
        for c, a in zip(cts, closed.out_avals, strict=True)
    ]
    graph = Graph(closed)
    wrt = [False] * n + floats
    env = graph.forward([*primals, *zeros], wrt)
    return tuple(graph.backward(env, cts, wrt)[n:])


def _tri_mask(x, lower: bool, unit_diagonal: bool):
    """The part of ``x`` a triangular solve reads: tril/triu, strict when the diagonal is unit."""
    k = 1 if unit_diagonal else 0
    return jnp.tril(x, -k) if lower else jnp.triu(x, k)


def _tri_solve(a, b, **params):
    return lax.linalg.triangular_solve(a, b, **params)


@register_jvp(P.triangular_solve_p)
def _triangular_solve_jvp(primals, tangents, **params):
    """dX = op(A)^{-1} (dB - op(dA) X) (left) or (dB - X op(dA)) op(A)^{-1} (right). C3.2."""
    a, b = primals
    da, db = tangents
    x = _tri_solve(a, b, **params)
    rhs = jnp.zeros_like(x) if db is None else db
    if da is not None:
        op_da = _tri_mask(da, params["lower"], params["unit_diagonal"])
        op_da = mT(op_da) if params["transpose_a"] else op_da
        op_da = jnp.conj(op_da) if params.get("conjugate_a") and jnp.iscomplexobj(a) else op_da
        rhs = rhs - (_mm(op_da, x) if params["left_side"] else _mm(x, op_da))
    return x, _tri_solve(a, rhs, **params)


@register_vjp(P.triangular_solve_p)
def _triangular_solve_vjp(ct, a, b, **params):
    """ct_B = op(A)^{-T} ct (left) / ct op(A)^{-T} (right); ct_A = the triangle of -ct_B X^T
    (left) or -X^T ct_B (right), transposed back when ``transpose_a`` and conjugated when
    ``conjugate_a`` (complex A). C3.2."""
    ct_b = _tri_solve(a, ct, **{**params, "transpose_a": not params["transpose_a"]})
    x = _tri_solve(a, b, **params)
    ct_op_a = -_mm(ct_b, mT(x)) if params["left_side"] else -_mm(mT(x), ct_b)
    ct_a = mT(ct_op_a) if params["transpose_a"] else ct_op_a
    if params.get("conjugate_a") and jnp.iscomplexobj(a):  # the transpose of conj is conj
        ct_a = jnp.conj(ct_a)
    return _tri_mask(ct_a, params["lower"], params["unit_diagonal"]), ct_b


def _tri_diag_solve(dl, d, du, b, params):
    return lax.linalg.tridiagonal_solve_p.bind(dl, d, du, b, **params)


def _tridiagonal_matvec(dl, d, du, x):
    """A X for A = tridiag(dl, d, du) (``None`` = a zero diagonal); dl[0], du[-1] unread."""
    y = jnp.zeros_like(x)
    if d is not None:
        y = y + d[..., :, None] * x
    if dl is not None:
        y = y.at[..., 1:, :].add(dl[..., 1:, None] * x[..., :-1, :])
    if du is not None:
        y = y.at[..., :-1, :].add(du[..., :-1, None] * x[..., 1:, :])
    return y


@register_jvp(P.tridiagonal_solve_p)
def _tridiagonal_solve_jvp(primals, tangents, **params):
    """dX = A^{-1} (dB - dA X), dA = tridiag(d dl, d d, d du), one more solve. C3.2."""
    dl, d, du, b = primals
    ddl, dd, ddu, db = tangents
    x = _tri_diag_solve(dl, d, du, b, params)
    rhs = jnp.zeros_like(x) if db is None else db
    if not (ddl is None and dd is None and ddu is None):
        rhs = rhs - _tridiagonal_matvec(ddl, dd, ddu, x)
    return x, _tri_diag_solve(dl, d, du, rhs, params)


@register_vjp(P.tridiagonal_solve_p)
def _tridiagonal_solve_vjp(ct, dl, d, du, b, **params):
    """ct_B = A^{-T} ct (A^T: the off-diagonals swapped and shifted); ct of each diagonal is
    -<ct_B, X> along its band, zero at the entries the solve never reads. C3.2."""
    zero = jnp.zeros_like(dl[..., :1])
    dl_t = jnp.concatenate([zero, du[..., :-1]], axis=-1)
    du_t = jnp.concatenate([dl[..., 1:], zero], axis=-1)
    ct_b = _tri_diag_solve(dl_t, d, du_t, ct, params)
    x = _tri_diag_solve(dl, d, du, b, params)
    ct_d = -jnp.sum(ct_b * x, axis=-1)
    ct_dl = jnp.concatenate([zero, -jnp.sum(ct_b[..., 1:, :] * x[..., :-1, :], axis=-1)], -1)
    ct_du = jnp.concatenate([-jnp.sum(ct_b[..., :-1, :] * x[..., 1:, :], axis=-1), zero], -1)
    return ct_dl, ct_d, ct_du, ct_b


def _phi(x):
    """Phi(X): the lower triangle of X with its diagonal halved."""
    return jnp.tril(x) - 0.5 * jnp.eye(x.shape[-1], dtype=x.dtype) * x


def _lower_solve(low, b, *, left: bool, transpose: bool, conjugate: bool = False):
    """``low^{-1} b`` and kin; ``conjugate`` (complex ``low`` only) solves with ``conj(low)``."""
    extra = {"conjugate_a": True} if conjugate and jnp.iscomplexobj(low) else {}
    return _tri_solve(low, b, left_side=left, lower=True, transpose_a=transpose, **extra)


@register_jvp(P.cholesky_p)
def _cholesky_jvp(primals, tangents, **params):
    """dL = L Phi(L^{-1} dA L^{-H}) (Murray 2016; jax's ``_cholesky_jvp_rule``). C3.2."""
    (a,), (da,) = primals, tangents
    out = lax.linalg.cholesky_p.bind(a, **params)
    low = jnp.tril(out)
    right = _lower_solve(low, da, left=False, transpose=True, conjugate=True)
    inner = _lower_solve(low, right, left=True, transpose=False)
    return out, _mm(low, _phi(inner))


@register_vjp(P.cholesky_p)
def _cholesky_vjp(ct, a, **params):
    """ct_A = L^{-T} Phi(L^T ct_L) conj(L)^{-1}: the transpose of the JVP (Phi is an elementwise
    mask, its own transpose; no conjugate on ``ct``, jax's convention). C3.2."""
    low = jnp.tril(lax.linalg.cholesky_p.bind(a, **params))
    inner = _phi(_mm(mT(low), ct))
    left = _lower_solve(low, inner, left=True, transpose=True)
    return (_lower_solve(low, left, left=False, transpose=False, conjugate=True),)


def _lu_jvp_matrix(lu, da, perm):
    """d(lu) for one batch of square or rectangular P A = L U (jax's ``_lu_jvp_inner``)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    batch = lu.shape[:-2]
    low = jnp.tril(lu[..., :, :k], -1)
    low = jnp.concatenate([low, jnp.zeros((*batch, m, m - k), lu.dtype)], axis=-1) + jnp.eye(
        m, dtype=lu.dtype
    )
    u = jnp.triu(lu[..., :k, :])
    u_eye = jnp.pad(jnp.eye(n - k, dtype=lu.dtype), ((k, 0), (k, 0)))
    u = jnp.concatenate([u, jnp.zeros((*batch, n - k, n), lu.dtype)], axis=-2) + u_eye
    pda = jnp.take_along_axis(da, perm[..., :, None], axis=-2)
    la = _tri_solve(low, pda, left_side=True, lower=True, transpose_a=False, unit_diagonal=True)
    lau = _tri_solve(u, la, left_side=False, lower=False, transpose_a=False)
    return _mm(low, jnp.tril(lau, -1)) + _mm(jnp.triu(lau), u)


@register_jvp(P.lu_p)
def _lu_jvp(primals, tangents, **params):
    """d(lu) = L tril(S, -1) + triu(S) U with S = L^{-1} (P dA) U^{-1}; pivots: no tangent. C3.2."""
    (a,), (da,) = primals, tangents
    lu, pivots, perm = lax.linalg.lu_p.bind(a, **params)
    return [lu, pivots, perm], [_lu_jvp_matrix(lu, da, perm), None, None]


@register_vjp(P.lu_p)
def _lu_vjp(cts, a, **params):
    """ct_A = the transpose of the JVP's linear map dA -> d(lu), applied to ct_lu. C3.2."""
    return transpose_jvp(_lu_jvp, cts, [a], params)


def _split(args, const_lengths):
    """(matvec, vecmat, solve, transpose_solve) constants and the right-hand side leaves."""
    out, i = [], 0
    for n in const_lengths:
        out.append(list(args[i : i + n]))
        i += n
    return out, list(args[i:])


def _bind_solve(consts, rhs, const_lengths, jaxprs):
    flat = [c for group in consts for c in group]
    return list(lax.linear_solve_p.bind(*flat, *rhs, const_lengths=const_lengths, jaxprs=jaxprs))


@register_forward(P.linear_solve_p)
def _custom_linear_solve_forward(*args, const_lengths, jaxprs):
    """Bind the solve; keep its outputs as residuals (the VJP needs the solution x). C2.2/C3.2."""
    outs = list(lax.linear_solve_p.bind(*args, const_lengths=const_lengths, jaxprs=jaxprs))
    return outs, outs


@register_jvp(P.linear_solve_p)
def _custom_linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
    """dx = A^{-1} (db - dA x): dA x is our JVP of ``matvec`` in its constants at x. C3.2.

    Auxiliary outputs (``has_aux``) get no tangent; tangents of the solvers' constants are
    ignored (implicit differentiation, as in jax).
    """
    consts, b = _split(primals, const_lengths)
    dconsts, db = _split(tangents, const_lengths)
    outs = _bind_solve(consts, b, const_lengths, jaxprs)
    x = outs[: len(b)]
    rhs = [jnp.zeros_like(v) if t is None else t for v, t in zip(b, db, strict=True)]
    if any(t is not None for t in dconsts[0]):
        _, da_x = eval_jvp_closed(jaxprs.matvec, [*consts[0], *x], [*dconsts[0], *[None] * len(x)])
        rhs = [r if t is None else r - t for r, t in zip(rhs, da_x, strict=True)]
    dx = _bind_solve(consts, rhs, const_lengths, jaxprs)[: len(b)]
    return outs, dx + [None] * (len(outs) - len(b))


@register_vjp(P.linear_solve_p)
def _custom_linear_solve_vjp(cts, *args, const_lengths, jaxprs, residuals=None):
    """ct_b = A^{-T} ct_x (the transposed solve); ct_matvec_consts = -(matvec's VJP in its
    constants at x, applied to ct_b). Needs ``transpose_solve`` (as jax does). C3.2."""
    if jaxprs.transpose_solve is None:
        raise TypeError(
            "custom_linear_solve: transpose_solve is None; reverse mode needs it (pass "
            "transpose_solve= or symmetric=True), as in jax"
        )
    consts, b = _split(args, const_lengths)
    x = residuals if residuals is not None else _bind_solve(consts, b, const_lengths, jaxprs)
    x = x[: len(b)]
    if any(c is not None for c in cts[len(b) :]):
        raise NotImplementedError(
            "custom_linear_solve: a cotangent reaches an auxiliary output (has_aux=True); as in "
            "jax, only the solution can be differentiated"
        )
    ct_x = [jnp.zeros_like(v) if c is None else c for v, c in zip(x, cts, strict=True)]
    ct_b = _bind_solve(
        [consts[1], consts[0], consts[3], consts[2]],
        ct_x,
        const_lengths.transpose(),
        jaxprs.transpose(),
    )[: len(b)]
    nm = len(consts[0])
    ct_matvec = [None] * nm
    if any(is_float(jnp.result_type(c)) for c in consts[0]):
        graph = Graph(jaxprs.matvec)
        wrt = [is_float(jnp.result_type(c)) for c in consts[0]] + [False] * len(x)
        env = graph.forward([*consts[0], *x], wrt)
        got = graph.backward(env, ct_b, wrt)[:nm]
        ct_matvec = [None if g is None else -g for g in got]
    rest = [None] * (len(args) - nm - len(b))
    return (*ct_matvec, *rest, *ct_b)
