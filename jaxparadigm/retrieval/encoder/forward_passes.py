"""The encoder's jitted forward passes: token ids -> mean-pooled (normalised) embeddings (C1.2).

For a batch of ``B`` rows of ``L`` word pieces, the model's hidden states ``h [B, L, dim]`` are
pooled over each sentence's tokens,

    pooled_s = sum_t m_st h_st / max(sum_t m_st, 1e-9),    e_s = pooled_s / max(|pooled_s|, 1e-12)

with ``m`` the attention mask of a padded row (:func:`pooled_forward`) or the segment of a packed
row (:func:`packed_forward`, several sentences a row:
:mod:`~jaxparadigm.retrieval.encoder.sequence_packing`). :func:`forward_passes` jits both for one
model structure with its :class:`flax.nnx.GraphDef` closed over rather than passed as a static
argument: jit would hash the GraphDef on every call (0.78 ms a call for MiniLM's, measured, with
the GIL held). They are cached by GraphDef, so encoders of one structure share their compiled
programs.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx

from jaxparadigm.models.bert import l2_normalize, mean_pool, packed_mean_pool

__all__ = ["forward_passes", "packed_forward", "pooled_forward"]

_PASSES: dict = {}


def pooled_forward(graphdef, state, input_ids, attention_mask, normalize):
    """``[B, dim]`` float32: each padded row's mean-pooled embedding (normalised if asked)."""
    model = nnx.merge(graphdef, state)
    hidden = model(input_ids, attention_mask).astype(jnp.float32)
    pooled = mean_pool(hidden, attention_mask)
    return l2_normalize(pooled) if normalize else pooled


def packed_forward(graphdef, state, input_ids, segment_ids, position_ids, segments, normalize):
    """``[B, segments, dim]`` float32: each packed row's sentences, mean-pooled per segment."""
    model = nnx.merge(graphdef, state)
    mask = (segment_ids > 0).astype(jnp.int32)
    hidden = model(input_ids, mask, position_ids=position_ids, segment_ids=segment_ids)
    pooled = packed_mean_pool(hidden.astype(jnp.float32), segment_ids, segments)
    return l2_normalize(pooled) if normalize else pooled


def forward_passes(graphdef) -> tuple:
    """``(pooled, packed)``: :func:`pooled_forward` and :func:`packed_forward` jitted with
    ``graphdef`` bound, ``normalize`` (and ``segments``) static; one pair per model structure."""
    if graphdef not in _PASSES:
        _PASSES[graphdef] = (
            jax.jit(functools.partial(pooled_forward, graphdef), static_argnums=(3,)),
            jax.jit(functools.partial(packed_forward, graphdef), static_argnums=(4, 5)),
        )
    return _PASSES[graphdef]
