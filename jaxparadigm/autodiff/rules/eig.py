"""Rules for ``eig``, the non-symmetric eigendecomposition ``A V = V diag(w)`` (C3.2).

JVP: jax's ``eig_jvp_rule`` (``jax/_src/lax/linalg.py``), first-order non-degenerate perturbation
theory. With ``P = V^-1 dA V`` (``dA`` cast to the complex dtype)::

    dw = diag(P)
    dV = U + V diag(c),   U = V (F o P),   F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it,
    c_j = -Re(v_j^H u_j) - i Im(u_{k_j j}) / Re(v_{k_j j}),   k_j = argmax_i |V_ij|

(``c`` keeps LAPACK's normalisation: unit 2-norm, real largest component). The left eigenvectors
use the same formula on ``(conj(w), V_l, dA^H)``. As in jax, eigenvector derivatives need
``enable_eigvec_derivs=True`` (``NotImplementedError`` with jax's message otherwise).

VJP: jax gets reverse mode by transposing that linear map in ``dA``; here the transpose is
written out, step by step in reverse, with jax's complex conventions (a product by a constant and
a matrix product transpose without conjugation; ``real -> complex(t, 0)``,
``imag -> complex(0, -t)``, ``complex -> (real t, -imag t)``; a real ``A``'s cotangent is the real
part)::

    ct_U = ct_V + conj(V) complex(-ct_r, 0) + mask complex(0, ct_s / den)   (ct_c = sum_i V ct_V,
           ct_r = Re ct_c, ct_s = -Im ct_c, den = Re(sum_i mask V))
    ct_P = F o (V^T ct_U) + diag(ct_w)
    ct_A = V^-T ct_P V^T
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp, register_vjp

__all__: list[str] = []

EIGVEC_DERIVS_ERROR = (
    "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input "
    "that JAX cannot check (see the enable_eigvec_derivs argument to jax.lax.linalg.eig). Pass "
    "enable_eigvec_derivs=True to jax.lax.linalg.eig to opt in. See "
    "https://github.com/jax-ml/jax/issues/2748 for discussion."
)


def _T(x):
    return jnp.swapaxes(x, -1, -2)


def _mm(a, b):
    return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def _eig_all(a, params):
    """``(w, vl or None, vr)``: the primal outputs recomputed with right eigenvectors."""
    outs = P.eig_p.bind(a, **{**params, "compute_right_eigenvectors": True})
    vl = outs[1] if params["compute_left_eigenvectors"] else None
    return outs[0], vl, outs[-1]


def _fmat(w):
    n = w.shape[-1]
    eye = jnp.eye(n, dtype=w.dtype)
    return 1.0 / (eye + w[..., None, :] - w[..., :, None]) - eye


def _argmax_mask(v):
    k = jnp.argmax(jnp.abs(v), axis=-2)
    rows = lax.broadcasted_iota(jnp.int32, v.shape, v.ndim - 2)
    return (rows == k[..., None, :]).astype(v.dtype)


def _vec_jvp(w, v, da):
    """jax's ``_eig_vec_jvp``: ``(dw, dv)`` for the eigenpairs ``(w, v)`` of ``A`` along ``da``."""
    p = _mm(jnp.linalg.solve(v, da), v)
    dw = jnp.diagonal(p, axis1=-2, axis2=-1)
    u = _mm(v, _fmat(w) * p)
    mask = _argmax_mask(v)
    c = lax.complex(
        -(jnp.conj(v) * u).sum(-2).real, -(mask * u).sum(-2).imag / (mask * v).sum(-2).real
    )
    return dw, u + v * c[..., None, :]


def _vec_transpose(w, v, ct_w, ct_v):
    """Transpose of ``da -> _vec_jvp(w, v, da)`` at the cotangents ``(ct_w, ct_v)``."""
    vinv_t = _T(jnp.linalg.inv(v))
    ct_p = jnp.zeros(v.shape, v.dtype)
    if ct_v is not None:
        mask = _argmax_mask(v)
        den = (mask * v).sum(-2).real
        ct_c = (v * ct_v).sum(-2)
        ct_r, ct_s = jnp.real(ct_c), -jnp.imag(ct_c)
        ct_u = (
            ct_v
            + jnp.conj(v) * lax.complex(-ct_r, jnp.zeros_like(ct_r))[..., None, :]
            + mask * lax.complex(jnp.zeros_like(ct_s), ct_s / den)[..., None, :]
        )
        ct_p = ct_p + _fmat(w) * _mm(_T(v), ct_u)
    if ct_w is not None:
        ct_p = ct_p + ct_w[..., None, :] * jnp.eye(v.shape[-1], dtype=v.dtype)
    return _mm(_mm(vinv_t, ct_p), _T(v))


@register_jvp(P.eig_p)
def _eig_jvp(primals, tangents, **params):
    (a,), (da,) = primals, tangents
    want_vl, want_vr = params["compute_left_eigenvectors"], params["compute_right_eigenvectors"]
    if (want_vl or want_vr) and not params["enable_eigvec_derivs"]:
        raise NotImplementedError(EIGVEC_DERIVS_ERROR)
    w, vl, vr = _eig_all(a, params)
    primal_out = [w] + ([vl] if want_vl else []) + ([vr] if want_vr else [])
    if da is None:
        return primal_out, [None] * len(primal_out)
    da = da.astype(vr.dtype)
    dw, dvr = _vec_jvp(w, vr, da)
    tangent_out = [dw]
    if want_vl:
        tangent_out.append(_vec_jvp(jnp.conj(w), vl, jnp.conj(_T(da)))[1])
    if want_vr:
        tangent_out.append(dvr)
    return primal_out, tangent_out


@register_vjp(P.eig_p)
def _eig_vjp(cts, a, **params):
    """Reverse mode: the transpose of ``_eig_jvp``'s linear map (see the module docstring)."""
    want_vl, want_vr = params["compute_left_eigenvectors"], params["compute_right_eigenvectors"]
    ct_w, ct_vl, ct_vr = cts[0], None, None
    if want_vl:
        ct_vl = cts[1]
    if want_vr:
        ct_vr = cts[-1]
    if (ct_vl is not None or ct_vr is not None) and not params["enable_eigvec_derivs"]:
        raise NotImplementedError(EIGVEC_DERIVS_ERROR)
    w, vl, vr = _eig_all(a, params)
    ct_da = _vec_transpose(w, vr, ct_w, ct_vr)
    if ct_vl is not None:
        # d(vl) is _vec_jvp(conj(w), vl, conj(da^T)); conj's transpose conjugates, T transposes
        ct_da = ct_da + jnp.conj(_T(_vec_transpose(jnp.conj(w), vl, None, ct_vl)))
    if not jnp.issubdtype(a.dtype, jnp.complexfloating):
        ct_da = jnp.real(ct_da)
    return (ct_da.astype(a.dtype),)
