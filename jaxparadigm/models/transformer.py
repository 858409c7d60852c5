"""A small decoder-only transformer language model in Flax NNX (pre-LayerNorm GPT block) (C5.1).

    h_0 = E[tokens] + P[positions]
    h   = h + Attn(LN(h))   with causal softmax(Q K^T / sqrt(d_head) + mask) V
    h   = h + MLP(LN(h))    with MLP(x) = gelu(x W_1) W_2, hidden 4 * d_model
    logits = LN(h) E^T      (tied embeddings)  or  LN(h) W_out  (untied)

Parameters are float32; ``dtype`` is the compute dtype. The attention softmax and the logits are
always computed in float32. Dropout is functional: pass ``dropout_rng`` to enable it.

Every parameter names its dimensions (:mod:`jaxparadigm.models.partitioning`): ``E`` is
``(vocab, embed)``, ``P`` ``(length, embed)``, LayerNorm ``(embed,)``, the fused ``qkv`` kernel
``(embed, heads)`` (its columns ``[q | k | v]``, each head-major) and ``out`` ``(heads, embed)``,
``W_1`` ``(embed, mlp)`` and ``W_2`` ``(mlp, embed)``, ``W_out`` ``(embed, vocab)``; the
activations are named where they are made (q, k, v ``(batch, length, heads, None)``, the MLP
hidden ``(batch, length, mlp)``, the residual stream ``(batch, length, None)``, the logits
``(batch, length, vocab)``). Outside a layout with logical rules (one device, or the 1-D modes)
the names change nothing.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from flax import nnx

from jaxparadigm.common.numbers import check_float, check_int
from jaxparadigm.models.attention import attention, mask_bias
from jaxparadigm.models.partitioning import axes, constrain

_DTYPES = ("float32", "bfloat16", "float16")


def causal_mask(length: int) -> jax.Array:
    """Boolean ``[length, length]`` mask, ``mask[i, j] = j <= i`` (i sees only the past)."""
    return jnp.tril(jnp.ones((length, length), dtype=bool))


def _linear(d_in: int, d_out: int, names: tuple, dtype, rngs: nnx.Rngs) -> nnx.Linear:
    """A float32 ``nnx.Linear`` whose kernel is named ``names`` and bias ``names[1:]``."""
    return nnx.Linear(
        d_in,
        d_out,
        dtype=dtype,
        param_dtype=jnp.float32,
        rngs=rngs,
        kernel_metadata=axes(*names),
        bias_metadata=axes(names[1]),
    )


def _norm(d_model: int, dtype, rngs: nnx.Rngs) -> nnx.LayerNorm:
    """A float32 ``nnx.LayerNorm`` whose scale and bias are named ``(embed,)``."""
    return nnx.LayerNorm(
        d_model,
        dtype=dtype,
        param_dtype=jnp.float32,
        rngs=rngs,
        scale_metadata=axes("embed"),
        bias_metadata=axes("embed"),
    )


def _heads(x: jax.Array) -> jax.Array:
    """``[batch, length, heads, d_head]`` laid out with the heads split (under logical rules)."""
    return constrain(x, ("batch", "length", "heads", None))


def _residual(x: jax.Array) -> jax.Array:
    """The residual stream ``[batch, length, d_model]``: the batch split, the width whole."""
    return constrain(x, ("batch", "length", None))


def _dropout(x: jax.Array, rate: float, rng: jax.Array | None) -> jax.Array:
    if rng is None or rate == 0.0:
        return x
    keep = jax.random.bernoulli(rng, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), jnp.zeros_like(x))


class CausalSelfAttention(nnx.Module):
    """Multi-head causal self-attention: ``softmax(QK^T/sqrt(d_head) + causal mask) V`` (C5.1)."""

    def __init__(
        self, d_model: int, num_heads: int, *, dtype: jax.typing.DTypeLike, rngs: nnx.Rngs
    ) -> None:
        self.num_heads = num_heads
        self.qkv = _linear(d_model, 3 * d_model, ("embed", "heads"), dtype, rngs)
        self.out = _linear(d_model, d_model, ("heads", "embed"), dtype, rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        b, t, d = x.shape
        h = self.num_heads
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        q, k, v = (_heads(a.reshape(b, t, h, d // h)) for a in (q, k, v))
        y = _heads(attention(q, k, v, mask_bias(causal_mask(t)))).reshape(b, t, d)
        return self.out(y)


class Block(nnx.Module):
    """Pre-LN transformer block: ``h + Attn(LN(h))`` then ``h + MLP(LN(h))`` (C5.1)."""

    def __init__(
        self, d_model: int, num_heads: int, *, dtype: jax.typing.DTypeLike, rngs: nnx.Rngs
    ) -> None:
        self.ln1 = _norm(d_model, dtype, rngs)
        self.attn = CausalSelfAttention(d_model, num_heads, dtype=dtype, rngs=rngs)
        self.ln2 = _norm(d_model, dtype, rngs)
        self.fc1 = _linear(d_model, 4 * d_model, ("embed", "mlp"), dtype, rngs)
        self.fc2 = _linear(4 * d_model, d_model, ("mlp", "embed"), dtype, rngs)

    def __call__(self, x: jax.Array, rate: float, rngs: tuple) -> jax.Array:
        x = _residual(x + _dropout(self.attn(self.ln1(x)), rate, rngs[0]))
        hidden = constrain(jax.nn.gelu(self.fc1(self.ln2(x))), ("batch", "length", "mlp"))
        return _residual(x + _dropout(self.fc2(hidden), rate, rngs[1]))


class TransformerLM(nnx.Module):
    """Decoder-only LM: ``tokens [batch, seq] -> logits [batch, seq, vocab_size]`` (float32) (C5.1).

    ``seq`` may be at most ``context``. ``tie_embeddings`` reuses the token embedding as the output
    projection (``logits = LN(h) E^T``).
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_layers: int,
        num_heads: int,
        context: int,
        *,
        tie_embeddings: bool = True,
        dropout: float = 0.0,
        dtype: str = "float32",
        rngs: nnx.Rngs,
    ):
        vocab_size, d_model, num_layers, num_heads, context = (
            check_int(name, value, 1, error=ValueError)
            for name, value in (
                ("vocab_size", vocab_size),
                ("d_model", d_model),
                ("num_layers", num_layers),
                ("num_heads", num_heads),
                ("context", context),
            )
        )
        if d_model % num_heads:
            raise ValueError(f"num_heads: got {num_heads}, expected a divisor of d_model={d_model}")
        dropout = check_float(
            "dropout", dropout, 0.0, 1.0, hi_open=True, error=ValueError, expected="a rate"
        )
        if dtype not in _DTYPES:
            raise ValueError(f"dtype: got {dtype!r}, expected one of {', '.join(_DTYPES)}")
        cdt = jnp.dtype(dtype)
        self.vocab_size, self.context, self.dropout = vocab_size, context, dropout
        self.num_layers, self.tie_embeddings = num_layers, tie_embeddings
        self.compute_dtype = cdt
        self.embed = nnx.Embed(
            vocab_size,
            d_model,
            dtype=cdt,
            param_dtype=jnp.float32,
            rngs=rngs,
            embedding_metadata=axes("vocab", "embed"),
        )
        self.pos = nnx.Embed(
            context,
            d_model,
            dtype=cdt,
            param_dtype=jnp.float32,
            rngs=rngs,
            embedding_metadata=axes("length", "embed"),
        )
        self.blocks = nnx.List(
            [Block(d_model, num_heads, dtype=cdt, rngs=rngs) for _ in range(num_layers)]
        )
        self.ln_f = _norm(d_model, cdt, rngs)
        self.lm_head = (
            None if tie_embeddings else _linear(d_model, vocab_size, ("embed", "vocab"), cdt, rngs)
        )

    def __call__(self, tokens: jax.Array, *, dropout_rng: jax.Array | None = None) -> jax.Array:
        chex.assert_rank(tokens, 2)
        if not jnp.issubdtype(tokens.dtype, jnp.integer):
            raise TypeError(f"tokens: got dtype {tokens.dtype}, expected an integer dtype")
        if tokens.shape[1] > self.context:
            raise ValueError(
                f"tokens: got sequence length {tokens.shape[1]}, expected <= context={self.context}"
            )
        t = tokens.shape[1]
        rngs = (
            list(jax.random.split(dropout_rng, 2 * self.num_layers))
            if dropout_rng is not None and self.dropout > 0
            else [None] * (2 * self.num_layers)
        )
        h = _residual(self.embed(tokens) + self.pos(jnp.arange(t))[None])
        for i, block in enumerate(self.blocks):
            h = block(h, self.dropout, (rngs[2 * i], rngs[2 * i + 1]))
        h = self.ln_f(h)
        logits = self.embed.attend(h) if self.lm_head is None else self.lm_head(h)  # tied or not
        return constrain(logits.astype(jnp.float32), ("batch", "length", "vocab"))
