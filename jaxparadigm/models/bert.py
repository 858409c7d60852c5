"""BERT encoder in Flax NNX with mean pooling: the all-MiniLM-L6-v2 sentence pipeline (C1.1, C1.2).

The forward pass is the HuggingFace ``BertModel`` that sentence-transformers runs, followed by its
``Pooling(mean)`` and ``Normalize`` modules::

    h_0 = LayerNorm(E_word[ids] + E_pos[0..T) + E_type[type_ids])
    h_l = LayerNorm(a + FFN(a)),  a = LayerNorm(h_{l-1} + Attn(h_{l-1}))   (post-norm, l = 1..L)
    Attn(x) = W_o softmax(Q K^T / sqrt(d_head) + bias_mask) V,   FFN(x) = W_2 gelu_erf(W_1 x)
    pooled = sum_t mask_t h_L[t] / max(sum_t mask_t, 1e-9)
    embedding = pooled / max(|pooled|, 1e-12)

Weights come from a HuggingFace ``model.safetensors`` read with the safetensors numpy API; Q, K and
V are fused into one ``[H, 3H]`` projection at load time (one matmul instead of three). Nothing here
downloads anything.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxparadigm.common.numbers import check_int
from jaxparadigm.models.attention import attention, mask_bias

__all__ = [
    "BertConfig",
    "BertEncoder",
    "load_bert",
    "mean_pool",
    "packed_mean_pool",
    "l2_normalize",
]


@dataclass(frozen=True)
class BertConfig:
    """The fields of a HuggingFace BERT ``config.json`` that the forward pass needs (C1.1)."""

    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"

    def __post_init__(self):
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            check_int(f"BertConfig.{name}", getattr(self, name), 1, error=ValueError)
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"BertConfig.hidden_size: got {self.hidden_size}, expected a multiple of "
                f"num_attention_heads={self.num_attention_heads}"
            )
        if self.hidden_act != "gelu":
            raise ValueError(
                f"BertConfig.hidden_act: got {self.hidden_act!r}, expected 'gelu' (erf GELU)"
            )
        if not isinstance(self.layer_norm_eps, (int, float)) or not self.layer_norm_eps > 0:
            raise ValueError(
                f"BertConfig.layer_norm_eps: got {self.layer_norm_eps!r}, expected a float > 0"
            )

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> BertConfig:
        """Read a HuggingFace ``config.json``; a missing file or key: an error naming the file."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file; expected a BERT config.json")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"{path}: not valid JSON ({exc}); expected a BERT config.json"
            ) from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: top level is {type(raw).__name__}, expected an object")
        if raw.get("model_type", "bert") != "bert":
            raise ValueError(f"{path}: model_type is {raw['model_type']!r}, expected 'bert'")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                f"{path}: position_embedding_type is {raw['position_embedding_type']!r}, "
                "expected 'absolute'"
            )
        kwargs = {}
        for name in cls.__dataclass_fields__:
            if name not in raw:
                raise ValueError(f"{path}: missing key {name!r} (a BERT config.json has it)")
            kwargs[name] = raw[name]
        try:
            return cls(**kwargs)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None


class BertEmbeddings(nnx.Module):
    """Word + absolute position + token type embeddings, then LayerNorm (C1.1)."""

    def __init__(self, cfg: BertConfig, *, rngs: nnx.Rngs):
        self.word = nnx.Embed(cfg.vocab_size, cfg.hidden_size, rngs=rngs)
        self.position = nnx.Embed(cfg.max_position_embeddings, cfg.hidden_size, rngs=rngs)
        self.token_type = nnx.Embed(cfg.type_vocab_size, cfg.hidden_size, rngs=rngs)
        self.norm = nnx.LayerNorm(cfg.hidden_size, epsilon=cfg.layer_norm_eps, rngs=rngs)

    def __call__(
        self, input_ids: jax.Array, token_type_ids: jax.Array, position_ids: jax.Array | None
    ) -> jax.Array:
        if position_ids is None:
            t = input_ids.shape[1]
            x = self.word(input_ids) + self.position.embedding[...][:t][None]
        else:
            x = self.word(input_ids) + self.position(position_ids)
        return self.norm(x + self.token_type(token_type_ids))


class BertLayer(nnx.Module):
    """One post-norm block: fused-QKV self-attention, then a GELU feed-forward (C1.1)."""

    def __init__(self, cfg: BertConfig, *, rngs: nnx.Rngs):
        h = cfg.hidden_size
        self.num_heads = cfg.num_attention_heads
        self.qkv = nnx.Linear(h, 3 * h, rngs=rngs)
        self.attn_out = nnx.Linear(h, h, rngs=rngs)
        self.attn_norm = nnx.LayerNorm(h, epsilon=cfg.layer_norm_eps, rngs=rngs)
        self.ffn_in = nnx.Linear(h, cfg.intermediate_size, rngs=rngs)
        self.ffn_out = nnx.Linear(cfg.intermediate_size, h, rngs=rngs)
        self.ffn_norm = nnx.LayerNorm(h, epsilon=cfg.layer_norm_eps, rngs=rngs)

    def __call__(self, x: jax.Array, bias: jax.Array) -> jax.Array:
        b, t, h = x.shape
        d = h // self.num_heads
        q, k, v = jnp.split(self.qkv(x).reshape(b, t, 3, self.num_heads, d), 3, axis=2)
        ctx = attention(q[:, :, 0], k[:, :, 0], v[:, :, 0], bias).reshape(b, t, h)
        a = self.attn_norm(x + self.attn_out(ctx))
        return self.ffn_norm(a + self.ffn_out(jax.nn.gelu(self.ffn_in(a), approximate=False)))


class BertEncoder(nnx.Module):
    """Token encoder: ``(input_ids [B,T], attention_mask [B,T]) -> hidden states [B,T,H]`` (C1.1).

    Packed rows (several sentences in one row, :func:`packed_mean_pool`): pass ``segment_ids``
    ``[B,T]`` (0 = padding, ``s >= 1`` = the row's s-th sentence) and ``position_ids`` restarting
    at 0 for each sentence; token ``i`` then sees token ``j`` only when
    ``segment_ids[i] == segment_ids[j] > 0`` (a block-diagonal mask), so each sentence's hidden
    states equal those of the sentence encoded alone.
    """

    def __init__(self, cfg: BertConfig, *, rngs: nnx.Rngs):
        self.config = cfg
        self.embeddings = BertEmbeddings(cfg, rngs=rngs)
        self.layers = nnx.List([BertLayer(cfg, rngs=rngs) for _ in range(cfg.num_hidden_layers)])

    def __call__(
        self,
        input_ids: jax.Array,
        attention_mask: jax.Array,
        token_type_ids: jax.Array | None = None,
        *,
        position_ids: jax.Array | None = None,
        segment_ids: jax.Array | None = None,
    ) -> jax.Array:
        chex.assert_rank([input_ids, attention_mask], 2)
        chex.assert_equal_shape([input_ids, attention_mask])
        if input_ids.shape[1] > self.config.max_position_embeddings:
            raise ValueError(
                f"input_ids: sequence length {input_ids.shape[1]} exceeds "
                f"max_position_embeddings={self.config.max_position_embeddings}"
            )
        if token_type_ids is None:
            token_type_ids = jnp.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        if segment_ids is None:
            bias = mask_bias(attention_mask[:, None, None, :] > 0)
        else:
            chex.assert_equal_shape([input_ids, segment_ids])
            same = segment_ids[:, :, None] == segment_ids[:, None, :]
            bias = mask_bias(same & (segment_ids[:, None, :] > 0))[:, None]
        for layer in self.layers:
            x = layer(x, bias)
        return x


def mean_pool(hidden: jax.Array, attention_mask: jax.Array) -> jax.Array:
    """Mask-aware mean over tokens, ``sum_t m_t h_t / max(sum_t m_t, 1e-9)`` (C1.1).

    ``hidden`` is ``[B, T, H]`` and ``attention_mask`` ``[B, T]``; a row with no tokens gives zeros.
    """
    chex.assert_rank(hidden, 3)
    chex.assert_shape(attention_mask, hidden.shape[:2])
    m = attention_mask.astype(hidden.dtype)[..., None]
    return (hidden * m).sum(axis=1) / jnp.maximum(m.sum(axis=1), 1e-9)


def packed_mean_pool(hidden: jax.Array, segment_ids: jax.Array, max_segments: int) -> jax.Array:
    """Mean over each packed sentence: ``out[b, s-1] = mean_{t: seg[b,t]=s} h[b,t]`` (C1.1).

    ``hidden`` ``[B, T, H]``, ``segment_ids`` ``[B, T]`` (0 = padding); returns
    ``[B, max_segments, H]``, zeros for a segment number that a row does not use.
    """
    chex.assert_rank(hidden, 3)
    chex.assert_shape(segment_ids, hidden.shape[:2])
    onehot = (segment_ids[..., None] == jnp.arange(1, max_segments + 1)).astype(hidden.dtype)
    sums = jnp.einsum("bts,bth->bsh", onehot, hidden)
    return sums / jnp.maximum(onehot.sum(axis=1)[..., None], 1e-9)


def l2_normalize(x: jax.Array, eps: float = 1e-12) -> jax.Array:
    """``x / max(||x||_2, eps)`` along the last axis, as torch's ``F.normalize`` (C1.2)."""
    norm = jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))
    return x / jnp.maximum(norm, eps)


# ---------------------------------------------------------------------------------------------
# Loading HuggingFace weights.
# ---------------------------------------------------------------------------------------------


def _hf_layout(cfg: BertConfig) -> dict[str, tuple[int, ...]]:
    """HuggingFace tensor name -> the shape a checkpoint for ``cfg`` must have."""
    h, i = cfg.hidden_size, cfg.intermediate_size
    out = {
        "embeddings.word_embeddings.weight": (cfg.vocab_size, h),
        "embeddings.position_embeddings.weight": (cfg.max_position_embeddings, h),
        "embeddings.token_type_embeddings.weight": (cfg.type_vocab_size, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    for n in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{n}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value"):
            out[p + name + ".weight"] = (h, h)
            out[p + name + ".bias"] = (h,)
        out[p + "attention.output.dense.weight"] = (h, h)
        out[p + "attention.output.dense.bias"] = (h,)
        out[p + "intermediate.dense.weight"] = (i, h)
        out[p + "intermediate.dense.bias"] = (i,)
        out[p + "output.dense.weight"] = (h, i)
        out[p + "output.dense.bias"] = (h,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[p + norm + ".weight"] = (h,)
            out[p + norm + ".bias"] = (h,)
    return out


def _read_safetensors(path: Path, cfg: BertConfig) -> dict[str, np.ndarray]:
    """All tensors ``cfg`` needs, checked for presence, shape and a floating dtype."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; expected BERT weights (model.safetensors)")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ValueError(
            f"{path}: not a readable safetensors file ({exc}); expected BERT weights"
        ) from None
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    out = {}
    for name, shape in _hf_layout(cfg).items():
        arr = tensors.get(prefix + name)
        if arr is None:
            raise ValueError(f"{path}: tensor {prefix + name!r} is missing; expected shape {shape}")
        if tuple(arr.shape) != shape:
            raise ValueError(
                f"{path}: tensor {prefix + name!r} has shape {tuple(arr.shape)}, "
                f"expected {shape} (from config.json)"
            )
        if not np.issubdtype(arr.dtype, np.floating):
            raise ValueError(
                f"{path}: tensor {prefix + name!r} has dtype {arr.dtype}, expected a float dtype"
            )
        out[name] = arr.astype(np.float32)
    return out


def _to_nnx_dict(hf: dict[str, np.ndarray], cfg: BertConfig) -> dict:
    """HuggingFace ``[out, in]`` Linear weights -> NNX ``[in, out]`` kernels; Q, K, V fused."""
    e = "embeddings."
    tree: dict = {
        "embeddings": {
            "word": {"embedding": hf[e + "word_embeddings.weight"]},
            "position": {"embedding": hf[e + "position_embeddings.weight"]},
            "token_type": {"embedding": hf[e + "token_type_embeddings.weight"]},
            "norm": {"scale": hf[e + "LayerNorm.weight"], "bias": hf[e + "LayerNorm.bias"]},
        },
        "layers": {},
    }
    for n in range(cfg.num_hidden_layers):
        p = f"encoder.layer.{n}."
        qkv = [p + f"attention.self.{x}" for x in ("query", "key", "value")]

        def dense(name: str) -> dict:
            return {"kernel": hf[name + ".weight"].T.copy(), "bias": hf[name + ".bias"]}

        def norm(name: str) -> dict:
            return {"scale": hf[name + ".weight"], "bias": hf[name + ".bias"]}

        tree["layers"][n] = {
            "qkv": {
                "kernel": np.concatenate([hf[q + ".weight"].T for q in qkv], axis=1),
                "bias": np.concatenate([hf[q + ".bias"] for q in qkv]),
            },
            "attn_out": dense(p + "attention.output.dense"),
            "attn_norm": norm(p + "attention.output.LayerNorm"),
            "ffn_in": dense(p + "intermediate.dense"),
            "ffn_out": dense(p + "output.dense"),
            "ffn_norm": norm(p + "output.LayerNorm"),
        }
    return tree


def load_bert(model_dir: str | os.PathLike) -> BertEncoder:
    """A :class:`BertEncoder` from ``config.json`` + ``model.safetensors`` in ``model_dir`` (C1.1).

    Missing files, missing tensors, wrong shapes or an unreadable safetensors file raise one error
    naming the file and what was expected.
    """
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"{model_dir}: no such directory; expected a BERT model directory")
    cfg = BertConfig.from_json(model_dir / "config.json")
    weights = _read_safetensors(model_dir / "model.safetensors", cfg)
    abstract = nnx.eval_shape(lambda: BertEncoder(cfg, rngs=nnx.Rngs(0)))
    graphdef, state = nnx.split(abstract)
    nnx.replace_by_pure_dict(state, jax.tree.map(jnp.asarray, _to_nnx_dict(weights, cfg)))
    return nnx.merge(graphdef, state)
