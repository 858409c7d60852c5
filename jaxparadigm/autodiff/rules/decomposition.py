"""VJP and JVP rules for spectral and orthogonal decompositions: eigh, qr, svd (claim C3.2).

Real matrices only; leading axes are batch axes. Distinct eigenvalues / singular values are
assumed, as in jax (a repeated one gives inf/nan in the eigenvector / singular vector parts). The
formulas::

    eigh   A = V diag(w) V^T (Giles 2008, NA-08-01; jax's ``_eigh_jvp_rule``): with
           F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it, and S = V^T dA V:
           dw = diag(S),  dV = V (F o S);
           VJP (its exact transpose): ct_A = V (diag(ct_w) + F o (V^T ct_V)) V^T
    qr     X = Q R (Townsend, "Differentiating the QR decomposition"; jax's ``qr_jvp_rule``), m >= n
           thin: C = Q^T dX R^{-1}, Omega = tril(C, -1) - tril(C, -1)^T,
           dQ = Q (Omega - C) + dX R^{-1},  dR = (C - Omega) R; m < n: the square block X1 = Q R1
           as above and dR2 = dQ^T X2 + Q^T dX2; full_matrices with m > n: the completion of
           arXiv:2409.13374 (eqs. 32-33) as jax does
    svd    A = U diag(s) V^T (Townsend 2016; jax's ``_svd_jvp_rule``): dS = U^T dA V, ds = diag(dS),
           F_ij = 1 / (s_j^2 - s_i^2) off the diagonal, dU = U (F o (dS s + s dS^T)) (+ the
           orthogonal-complement term (I - U U^T) dA V / s when m > n), dV likewise with dS^T;
           full_matrices on a non-square matrix is refused, as in jax

VJPs of qr and svd are the transposes of these JVPs through our reverse sweep
(``linalg.transpose_jvp``: Autodidax's linearize + transpose). ``jnp.linalg.qr`` emits the
``qr`` primitive (``geqrf``/``householder_product`` appear only in its lowering); ``geqrf``, which
``qr(mode="raw")`` emits, has no rule here, as it has none in jax.
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.linalg import mT, transpose_jvp

__all__: list[str] = []

_HI = lax.Precision.HIGHEST


def _mm(a, b):
    return jnp.matmul(a, b, precision=_HI)


def _H(x):
    """The conjugate transpose of every matrix in a batch (``mT`` for real matrices)."""
    return mT(jnp.conj(x)) if jnp.iscomplexobj(x) else mT(x)


def _diag(x):
    return jnp.diagonal(x, axis1=-2, axis2=-1)


def _check_full_subset(name, subset_by_index, n):
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError(
            f"{name}: subset_by_index={subset_by_index!r}; derivatives are defined only for the "
            f"full decomposition (None or (0, {n})), as in jax"
        )


def _inverse_gaps(w):
    """F_ij = 1 / (w_j - w_i) for i != j, 0 on the diagonal (jax's careful form: no 1/0)."""
    shape = (*w.shape, w.shape[-1])
    eye = jnp.broadcast_to(jnp.eye(w.shape[-1], dtype=w.dtype), shape)
    w_j = jnp.broadcast_to(w[..., None, :], shape)
    w_i = jnp.broadcast_to(w[..., :, None], shape)
    return 1.0 / (eye + w_j - w_i) - eye


def _eigh(a, params):
    _check_full_subset("eigh", params.get("subset_by_index"), a.shape[-1])
    return lax.linalg.eigh_p.bind(a, **params)


@register_jvp(P.eigh_p)
def _eigh_jvp(primals, tangents, **params):
    """dw = diag(re V^H dA V), dV = V (F o V^H dA V) (Giles 2008; jax's, complex included). C3.2."""
    (a,), (da,) = primals, tangents
    v, w = _eigh(a, params)
    s = _mm(_mm(_H(v), da), v)
    return [v, w], [_mm(v, _inverse_gaps(w).astype(a.dtype) * s), _diag(jnp.real(s))]


@register_vjp(P.eigh_p)
def _eigh_vjp(cts, a, **params):
    """ct_A = V (diag(ct_w) + F o (V^T ct_V)) V^T, the transpose of the JVP; a complex ``A``
    goes through ``transpose_jvp`` of the complex JVP above. C3.2."""
    if jnp.iscomplexobj(a):
        return transpose_jvp(_eigh_jvp, list(cts), [a], params)
    ct_v, ct_w = cts
    v, w = _eigh(a, params)
    inner = jnp.zeros(a.shape, a.dtype)
    if ct_v is not None:
        inner = inner + _inverse_gaps(w) * _mm(mT(v), ct_v)
    if ct_w is not None:
        inner = inner + ct_w[..., :, None] * jnp.eye(a.shape[-1], dtype=a.dtype)
    return (_mm(_mm(v, inner), mT(v)),)


def _thin_qr_jvp(q, r, dx):
    """dQ, dR of a thin X = Q R (m >= n): C = Q^H dX R^{-1}, Omega = tril(C,-1) - tril(C,-1)^H
    (plus ``i im diag C`` for complex X, jax's correction)."""
    dx_rinv = lax.linalg.triangular_solve(r, dx)  # dX R^{-1}: right side, upper
    c = _mm(_H(q), dx_rinv)
    low = jnp.tril(c, -1)
    omega = low - _H(low)
    if jnp.iscomplexobj(c):
        omega = omega + jnp.eye(c.shape[-1], dtype=c.dtype) * (c - jnp.real(c).astype(c.dtype))
    return _mm(q, omega - c) + dx_rinv, _mm(c - omega, r)


@register_jvp(P.qr_p)
def _qr_jvp(primals, tangents, *, pivoting, full_matrices, **params):
    """Townsend's QR JVP (jax's ``qr_jvp_rule``), wide and full-matrices cases included. C3.2."""
    (x,), (dx,) = primals, tangents
    outs = list(lax.linalg.qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, **params))
    q, r = outs[0], outs[1]
    m, n = x.shape[-2:]
    if pivoting:
        dx = jnp.take_along_axis(dx, outs[2][..., None, :], axis=-1)
        x = jnp.take_along_axis(x, outs[2][..., None, :], axis=-1)
    if m < n:
        dq, dr1 = _thin_qr_jvp(q, r[..., :, :m], dx[..., :, :m])
        dr2 = _mm(_H(dq), x[..., :, m:]) + _mm(_H(q), dx[..., :, m:])
        tans = [dq, jnp.concatenate([dr1, dr2], axis=-1)]
    elif not full_matrices or m == n:
        tans = list(_thin_qr_jvp(q, r, dx))
    else:
        q_mn, r_nn = q[..., :, :n], r[..., :n, :n]
        dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
        q_nn, q_pn, q_mp = q_mn[..., :n, :], q_mn[..., n:, :], q[..., :, n:]
        dq_nn, dq_pn = dq_mn[..., :n, :], dq_mn[..., n:, :]
        # Z_pn = Q_pn (Q_nn - I)^{-1}, from (Q_nn - I)^H Z_pn^H = Q_pn^H (eq. 33)
        z_pn_t = jnp.linalg.solve(_H(q_nn - jnp.eye(n, dtype=x.dtype)), _H(q_pn))
        z_pn = _H(z_pn_t)
        dq_mp = _mm(dq_mn, z_pn_t) - _mm(q_mn + _mm(q_mp, z_pn), _H(dq_pn - _mm(z_pn, dq_nn)))
        zeros = jnp.zeros((*dr_nn.shape[:-2], m - n, n), dr_nn.dtype)
        tans = [
            jnp.concatenate([dq_mn, dq_mp], axis=-1),
            jnp.concatenate([dr_nn, zeros], axis=-2),
        ]
    return outs, tans + ([None] if pivoting else [])


@register_vjp(P.qr_p)
def _qr_vjp(cts, x, **params):
    """ct_X = the transpose of the QR JVP's linear map dX -> (dQ, dR), applied to the cts. C3.2."""
    return transpose_jvp(_qr_jvp, cts, [x], params)


@register_jvp(P.svd_p)
def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, **params):
    """Townsend's SVD JVP (jax's ``_svd_jvp_rule``); singular values only when not compute_uv."""
    (a,), (da,) = primals, tangents
    m, n = a.shape[-2:]
    _check_full_subset("svd", subset_by_index, min(m, n))
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            f"svd: full_matrices=True on a {m}x{n} matrix; the derivative is implemented for "
            "square matrices or full_matrices=False, as in jax"
        )
    s, u, vt = lax.linalg.svd_p.bind(
        a, full_matrices=False, compute_uv=True, subset_by_index=subset_by_index, **params
    )
    v = _H(vt)
    ds_mat = _mm(_mm(_H(u), da), v)
    ds = _diag(jnp.real(ds_mat))
    if not compute_uv:
        return [s], [ds]
    s_row = s[..., None, :]
    eye = jnp.eye(s.shape[-1], dtype=s.dtype)
    f = (1.0 / ((s_row + mT(s_row)) * (s_row - mT(s_row)) + eye) - eye).astype(a.dtype)
    s_c = s_row.astype(a.dtype)
    dss, sds = s_c * ds_mat, mT(s_c) * ds_mat
    du = _mm(u, f * (dss + _H(dss)))
    if jnp.iscomplexobj(a):  # jax's extra diagonal term, zero for real matrices
        s_inv = jnp.where(s == 0, jnp.zeros_like(s), 1.0 / jnp.where(s == 0, 1.0, s))
        s_inv_mat = (s_inv[..., None, :] * eye).astype(a.dtype)
        du = du + _mm(u, 0.5 * (ds_mat - _H(ds_mat)) * s_inv_mat)
    dv = _mm(v, f * (sds + _H(sds)))
    if m > n:
        dav = _mm(da, v)
        du = du + (dav - _mm(u, _mm(_H(u), dav))) / s_c
    if n > m:
        dau = _mm(_H(da), u)
        dv = dv + (dau - _mm(v, _mm(vt, dau))) / s_c
    return [s, u, vt], [ds, du, _H(dv)]  # thin == full here: square or full_matrices=False


@register_vjp(P.svd_p)
def _svd_vjp(cts, a, **params):
    """ct_A = the transpose of the SVD JVP's linear map dA -> (ds, dU, dV^T). C3.2."""
    return transpose_jvp(_svd_jvp, cts, [a], params)
