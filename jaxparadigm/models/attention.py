"""Scaled dot-product attention with an additive bias, the one every model here uses (C1.1, C5.1).

    attention(q, k, v, bias) = softmax(q k^T / sqrt(d_head) + bias) v

``q`` is ``[B, Tq, H, D]``, ``k`` and ``v`` are ``[B, Tk, H, D]``, ``bias`` broadcasts to
``[B, H, Tq, Tk]`` (0 where a key is visible, a very negative number where it is not: see
:func:`mask_bias`). The logits are accumulated and the softmax taken in float32 whatever the
input dtype (bfloat16 inputs keep their bfloat16 matmuls); the probabilities are cast back to
``v.dtype`` for the second matmul. A padding key gets ``exp(min_f32 - max) = 0`` exactly.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["attention", "mask_bias"]


def mask_bias(visible: jax.Array) -> jax.Array:
    """``0`` where ``visible`` is true, ``finfo(float32).min`` elsewhere (float32, same shape).

    Added to logits it removes a key: after the softmax's max shift ``exp(min - max)`` is 0.
    """
    return jnp.where(visible, 0.0, jnp.finfo(jnp.float32).min).astype(jnp.float32)


def attention(q: jax.Array, k: jax.Array, v: jax.Array, bias: jax.Array) -> jax.Array:
    """``softmax(q k^T / sqrt(d) + bias) v`` per head, ``[B, Tq, H, D]``, ``q.dtype`` (C1.1, C5.1).

    Logits and softmax in float32; ``bias`` must broadcast to ``[B, H, Tq, Tk]``.
    """
    chex.assert_rank([q, k, v], 4)
    chex.assert_equal_shape([k, v])
    chex.assert_equal_shape_prefix([q, k], 1)
    chex.assert_equal_shape_suffix([q, k], 2)
    d = q.shape[-1]
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32)
    logits = logits / np.float32(np.sqrt(d)) + bias
    probs = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, v)
