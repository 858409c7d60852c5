"""2-D convolutions and linear algebra ops for generated programs (issue 23).

Convolutions (``lax.conv_general_dilated``) read ``h``'s last two axes as an image and its leading
axis (rank 3) as channels: NCHW with SAME padding and a constant kernel; NHWC with strides (2, 1),
explicit padding, rhs dilation and a kernel made of ``tanh(h)`` (so the kernel is differentiated
too); NCHW with ``feature_group_count=2`` when ``h`` has an even number of channels (1 otherwise).

Linear algebra builds from ``h`` of shape ``(..., n)`` a batch of ``n x n`` matrices
``B = tanh(h_i K_ij + 0.5 h_j)`` (``K`` a fixed seeded matrix scaled by ``c``; ``|B_ij| < 1``
whatever ``h``), then well-conditioned inputs (n <= 4 by the generator's size bound):

* ``M = 2 I + 0.4 B``: ``||0.4 B||_2 <= 0.4 n <= 1.6 < 2``, so ``sigma_min(M) >= 0.4`` (solve,
  inv, slogdet, qr, triangular solves on its triangles);
* ``A = M M^T + n I`` (cholesky: SPD with ``lambda_min >= n``);
* ``D + 0.2 sym(B)`` / ``D + 0.2 B`` with ``D = diag(2, 4, ..., 2n)`` (eigh, svd: Weyl bounds the
  perturbation by ``0.2 n <= 0.8``, so eigen/singular values stay >= 0.4 apart -- distinct, as the
  eigenvector derivatives need);
* ``tridiagonal_solve`` on ``d = 2.5 + tanh(h)``, ``dl = 0.5 sin(h)``, ``du = 0.5 cos(c h)``
  (diagonally dominant).

Decompositions unique only up to signs are normalised (eigenvector / singular vector / Q column
signs by the sign of the near-±1 diagonal entry), as jax's own tests do.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = ["MATRIX_STRUCTURAL"]


def _conv_nchw(h, c):
    x = h.reshape(1, -1, *h.shape[-2:])
    k = c * jnp.asarray(np.cos(np.arange(2 * x.shape[1] * 4) * 0.7).reshape(2, x.shape[1], 2, 2))
    out = lax.conv_general_dilated(x, k.astype(h.dtype), (1, 1), "SAME")
    return out[0]


def _conv_nhwc(h, c):
    x = h.reshape(1, *h.shape[-2:], -1)  # (1, H, W, C): the leading axis of a rank-3 h is C
    kh, kw = min(2, h.shape[-2]), min(2, h.shape[-1])
    k = (
        c
        * jnp.tanh(h.reshape(-1)[: kh * kw]).reshape(kh, kw, 1, 1)
        * jnp.ones((1, 1, x.shape[3], 2))
    )
    out = lax.conv_general_dilated(
        x,
        k.astype(h.dtype),
        window_strides=(2, 1),
        padding=((1, 0), (0, 1)),
        rhs_dilation=(1, 2) if kw > 1 and h.shape[-1] > 2 else (1, 1),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    return out[0]


def _conv_grouped(h, c):
    x = h.reshape(1, -1, *h.shape[-2:])
    groups = 2 if x.shape[1] % 2 == 0 else 1
    k = c * np.sin(np.arange(2 * (x.shape[1] // groups) * 2) + 0.3).reshape(2, -1, 1, 2)
    out = lax.conv_general_dilated(
        x, jnp.asarray(k, h.dtype), (1, 1), ((0, 0), (1, 0)), feature_group_count=groups
    )
    return out[0]


def _base(h, c):
    """``B = tanh(h_i K_ij + 0.5 h_j)``, ``|B_ij| < 1``, shape ``(..., n, n)``."""
    n = h.shape[-1]
    k = c * np.cos(np.arange(n * n).reshape(n, n) * 1.3 + 0.2)
    return jnp.tanh(h[..., :, None] * jnp.asarray(k, h.dtype) + 0.5 * h[..., None, :])


def _eye(h):
    return jnp.eye(h.shape[-1], dtype=h.dtype)


def _invertible(h, c):
    return 2.0 * _eye(h) + 0.4 * _base(h, c)


def _spread(h, descending=False):
    """``D = diag(2, 4, ..., 2n)`` (reversed for svd, whose values come sorted descending, so
    that U and V stay near +-I and their diagonals give the signs)."""
    d = np.arange(2, 2 * h.shape[-1] + 1, 2)
    return jnp.diag(jnp.asarray(d[::-1] if descending else d, h.dtype))


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _diag(x):
    return jnp.diagonal(x, axis1=-2, axis2=-1)


def _cholesky(h, c):
    m = _invertible(h, c)
    return jnp.linalg.cholesky(m @ _mT(m) + h.shape[-1] * _eye(h))


def _eigh(h, c):
    b = _base(h, c)
    w, v = jnp.linalg.eigh(_spread(h) + 0.1 * (b + _mT(b)))
    return v * jnp.sign(_diag(v))[..., None, :] + w[..., None, :]


def _svd(h, c):
    u, s, vt = jnp.linalg.svd(_spread(h, descending=True) + 0.2 * _base(h, c), full_matrices=False)
    sign = jnp.sign(_diag(u))
    return (u * sign[..., None, :]) * s[..., None, :] + vt * sign[..., :, None]


def _qr(h, c):
    q, r = jnp.linalg.qr(_invertible(h, c))
    sign = jnp.sign(_diag(r))
    return q * sign[..., None, :] + r * sign[..., :, None]


def _tri_solve(h, c, **kw):
    m = _invertible(h, c)
    tri = jnp.tril(m) if kw.get("lower") else jnp.triu(m)
    b = h[..., :, None] if kw.get("left_side") else h[..., None, :]
    return lax.linalg.triangular_solve(tri, b, **kw).reshape(h.shape)


def _tridiagonal(h, c):
    d, dl, du = 2.5 + jnp.tanh(h), 0.5 * jnp.sin(h), 0.5 * jnp.cos(c * h)
    x = lax.linalg.tridiagonal_solve(dl, d, du, jnp.stack([h, jnp.tanh(h)], axis=-1))
    return x[..., 0] - 0.5 * x[..., 1]


MATRIX_STRUCTURAL = {
    # name: (minimum rank, function(h, c)) as program_generator.STRUCTURAL
    "conv2d_nchw": (2, _conv_nchw),
    "conv2d_nhwc": (2, _conv_nhwc),
    "conv2d_grouped": (2, _conv_grouped),
    "cholesky": (1, _cholesky),
    "eigh": (1, _eigh),
    "svd": (1, _svd),
    "qr": (1, _qr),
    "solve": (1, lambda h, c: jnp.linalg.solve(_invertible(h, c), h[..., :, None])[..., 0]),
    "inv": (1, lambda h, c: jnp.linalg.inv(_invertible(h, c))),
    "slogdet": (1, lambda h, c: jnp.linalg.slogdet(_invertible(h, c))[1]),
    "tri_solve": (1, lambda h, c: _tri_solve(h, c, left_side=True, lower=True)),
    "tri_solve_right_t": (
        1,
        lambda h, c: _tri_solve(h, c, left_side=False, lower=False, transpose_a=True),
    ),
    "tridiagonal_solve": (1, _tridiagonal),
}
