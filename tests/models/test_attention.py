"""attention(q, k, v, bias) (C1.1, C5.1): numpy oracle, torch's scaled_dot_product_attention, float32
softmax under bfloat16 inputs, and the one place we deliberately differ from torch (fully masked rows)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized

from jaxparadigm.models.attention import attention, mask_bias


def numpy_attention(q, k, v, visible):
    """float64 oracle, heads looped explicitly: softmax over visible keys only."""
    b, tq, h, d = q.shape
    out = np.zeros((b, tq, h, d))
    for bi in range(b):
        for hi in range(h):
            s = q[bi, :, hi] @ k[bi, :, hi].T / np.sqrt(d)
            s = np.where(visible[bi], s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            out[bi, :, hi] = (w / w.sum(-1, keepdims=True)) @ v[bi, :, hi]
    return out


def _qkv(seed, b=2, tq=5, tk=5, h=3, d=4):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(b, tq, h, d)),
        rng.normal(size=(b, tk, h, d)),
        rng.normal(size=(b, tk, h, d)),
    )


class AttentionTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(("causal", "causal"), ("padding", "padding"))
    def test_matches_numpy(self, kind):
        q, k, v = _qkv(0)
        if kind == "causal":
            visible = np.broadcast_to(np.tril(np.ones((5, 5), bool)), (2, 5, 5))
            bias = mask_bias(jnp.tril(jnp.ones((5, 5), bool)))  # [Tq, Tk] broadcasts
        else:
            keys = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
            visible = np.broadcast_to(keys[:, None, :], (2, 5, 5))
            bias = mask_bias(jnp.asarray(keys)[:, None, None, :])
        got = self.variant(attention)(*(jnp.asarray(a, jnp.float32) for a in (q, k, v)), bias)
        chex.assert_shape(got, (2, 5, 3, 4))
        np.testing.assert_allclose(got, numpy_attention(q, k, v, visible), rtol=1e-5, atol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    def test_bfloat16_inputs_keep_a_float32_softmax(self):
        q, k, v = _qkv(1)
        bf = [jnp.asarray(a, jnp.bfloat16) for a in (q, k, v)]
        got = self.variant(attention)(*bf, jnp.zeros((), jnp.float32))
        chex.assert_type(got, jnp.bfloat16)
        # oracle on the same bf16-rounded inputs: only the bf16 products/output differ
        want = numpy_attention(*(np.asarray(a, np.float64) for a in bf), np.ones((2, 5, 5), bool))
        np.testing.assert_allclose(np.asarray(got, np.float32), want, atol=3e-2)


def test_masked_key_gets_exactly_zero_weight():
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(2, b=1, tk=3, tq=1, h=1))
    v_changed = v.at[0, 2].set(1e6)  # a masked key's value must not leak into the output
    bias = mask_bias(jnp.array([True, True, False]))
    np.testing.assert_array_equal(attention(q, k, v, bias), attention(q, k, v_changed, bias))


def test_mask_bias_values():
    b = mask_bias(jnp.array([True, False]))
    assert b.dtype == jnp.float32
    assert b[0] == 0.0 and b[1] == jnp.finfo(jnp.float32).min


def test_fully_masked_row_is_uniform_like_huggingface_bert_not_zero_like_torch():
    """Deliberate difference: the bias is finite (HF BERT's ``finfo.min``), so a query row with no
    visible key averages all values uniformly; torch's SDPA with a boolean mask returns zeros."""
    q, k, v = (jnp.asarray(a, jnp.float32) for a in _qkv(3, b=1, tq=1, tk=3, h=1))
    got = attention(q, k, v, mask_bias(jnp.zeros((3,), bool)))
    np.testing.assert_allclose(got[0, 0, 0], v[0, :, 0].mean(0), rtol=1e-6)


@pytest.mark.crosscheck
@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_scaled_dot_product_attention(causal):
    # Ported from pytorch test/test_transformers.py (TestSDPA: the fused kernels are compared with
    # the math reference ``F.scaled_dot_product_attention`` under ``attn_mask`` / ``is_causal``);
    # here torch's float64 math path is the reference.
    torch = pytest.importorskip("torch")
    q, k, v = _qkv(4, b=2, tq=6, tk=6, h=2, d=8)
    keys = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
    visible = keys[:, None, None, :] & (np.tril(np.ones((6, 6), bool)) if causal else True)
    t = [torch.tensor(a).transpose(1, 2) for a in (q, k, v)]  # torch wants [B, H, T, D]
    want = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=torch.tensor(visible))
    want = want.transpose(1, 2).numpy()
    bias = mask_bias(jnp.asarray(visible))
    got = jax.jit(attention)(*(jnp.asarray(a, jnp.float32) for a in (q, k, v)), bias)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_shape_checks():
    q, k, v = (jnp.zeros((1, 2, 2, 4)),) * 3
    with pytest.raises(AssertionError):
        attention(q, k[..., :3], v[..., :3], 0.0)
    with pytest.raises(AssertionError):
        attention(q[0], k, v, 0.0)
