"""VJP rule for ``conv_general_dilated`` (``lax.conv``, ``flax.nnx.Conv``): claim C3.2.

A convolution is bilinear; each cotangent is itself a convolution (jax's transpose rules in
``jax/_src/lax/convolution.py``, ported):

    d lhs = conv(ct, rev(rhs) over its spatial dims), strides and lhs dilation swapped, the
            rhs' in/out feature dims swapped, padding from ``_vjp_lhs_padding``
    d rhs = conv(lhs, ct) with the batch dim acting as the contraction (``feature`` and
            ``batch`` group counts swapped), padding from ``_vjp_rhs_padding``

Grouped convolutions move the group axis between feature dims as jax does.

Forward mode: a convolution is bilinear, ``d conv(x, w) = conv(dx, w) + conv(x, dw)`` with the
same parameters (``tangents.bilinear_rule``).
"""

from __future__ import annotations

import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxparadigm.autodiff.registry import register_jvp, register_vjp
from jaxparadigm.autodiff.rules.tangents import bilinear_rule

__all__: list[str] = []


def _dilate(shape, dilation):
    return [0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation, strict=True)]


def _spec_transpose(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _reshape_axis_into(src, dst, x):
    """Merge axis ``src`` into axis ``dst`` (numbered after ``src`` is removed)."""
    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    new_shape = list(np.delete(x.shape, src))
    new_shape[dst] *= x.shape[src]
    return lax.reshape(x, new_shape, perm)


def _reshape_axis_out_of(src, size1, x):
    """Split axis ``src`` into ``(size1, rest)``."""
    shape = list(x.shape)
    shape[src : src + 1] = [size1, shape[src] // size1]
    return lax.reshape(x, shape)


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    lhs_d, rhs_d, out_d = (
        _dilate(in_shape, lhs_dil),
        _dilate(window, rhs_dil),
        _dilate(out_shape, strides),
    )
    before = [r - lo - 1 for r, (lo, _) in zip(rhs_d, padding, strict=True)]
    after = [a + r - 1 - o - b for a, r, o, b in zip(lhs_d, rhs_d, out_d, before, strict=True)]
    return list(zip(before, after, strict=True))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    if len(in_shape) == 0:
        return []
    lhs_d, rhs_d, out_d = (
        _dilate(in_shape, lhs_dil),
        _dilate(window, rhs_dil),
        _dilate(out_shape, strides),
    )
    lows = [lo for lo, _ in padding]
    highs = [o - a + r - lo - 1 for o, a, r, lo in zip(out_d, lhs_d, rhs_d, lows, strict=True)]
    return list(zip(lows, highs, strict=True))


def _conv(a, b, p, dilations, padding, dimension_numbers, fgc, bgc, dtype):
    """``conv_general_dilated(a, b)`` in ``dtype`` (the cotangent's), the forward's precision.

    ``dilations`` = (window strides, lhs dilation, rhs dilation) of the transposed conv.
    """
    a, b = (x if jnp.result_type(x) == dtype else jnp.asarray(x).astype(dtype) for x in (a, b))
    strides, lhs_dil, rhs_dil = dilations
    return lax.conv_general_dilated(
        a,
        b,
        window_strides=strides,
        padding=padding,
        lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil,
        dimension_numbers=dimension_numbers,
        feature_group_count=fgc,
        batch_group_count=bgc,
        precision=p["precision"],
        preferred_element_type=p["preferred_element_type"],
    )


def _conv_lhs_ct(ct, lhs, rhs, p):
    dn = p["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    fgc, bgc = p["feature_group_count"], p["batch_group_count"]
    lhs_shape, rhs_shape = jnp.shape(lhs), jnp.shape(rhs)
    if fgc > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], fgc, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    elif bgc > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], bgc, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        fgc = bgc
    trans = lax.ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec)
    padding = _vjp_lhs_padding(
        np.take(lhs_shape, lhs_spec[2:]),
        np.take(rhs_shape, rhs_spec[2:]),
        p["window_strides"],
        np.take(ct.shape, out_spec[2:]),
        p["padding"],
        p["lhs_dilation"],
        p["rhs_dilation"],
    )
    rev = lax.rev(rhs, rhs_spec[2:])
    swapped = (p["lhs_dilation"], p["window_strides"], p["rhs_dilation"])
    out = _conv(ct, rev, p, swapped, padding, trans, fgc, 1, ct.dtype)
    if bgc > 1:
        out = _reshape_axis_out_of(lhs_spec[1], bgc, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out.astype(jnp.result_type(lhs))


def _conv_rhs_ct(ct, lhs, rhs, p):
    if np.size(ct) == 0:
        return jnp.zeros(jnp.shape(rhs), jnp.result_type(rhs))
    dn = p["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    fgc, bgc = p["feature_group_count"], p["batch_group_count"]
    if bgc > 1:
        fgc, bgc = bgc, 1
    elif fgc > 1:
        fgc, bgc = 1, fgc
    trans = lax.ConvDimensionNumbers(
        _spec_transpose(lhs_spec), _spec_transpose(out_spec), _spec_transpose(rhs_spec)
    )
    padding = _vjp_rhs_padding(
        np.take(jnp.shape(lhs), lhs_spec[2:]),
        np.take(jnp.shape(rhs), rhs_spec[2:]),
        p["window_strides"],
        np.take(ct.shape, out_spec[2:]),
        p["padding"],
        p["lhs_dilation"],
        p["rhs_dilation"],
    )
    swapped = (p["rhs_dilation"], p["lhs_dilation"], p["window_strides"])
    out = _conv(lhs, ct, p, swapped, padding, trans, fgc, bgc, ct.dtype)
    return out.astype(jnp.result_type(rhs))


@register_vjp(P.conv_general_dilated_p)
def _conv_general_dilated_vjp(ct, lhs, rhs, **params):
    """Both operands' cotangents, each a convolution (see the module docstring)."""
    return _conv_lhs_ct(ct, lhs, rhs, params), _conv_rhs_ct(ct, lhs, rhs, params)


register_jvp(P.conv_general_dilated_p)(bilinear_rule(P.conv_general_dilated_p))
