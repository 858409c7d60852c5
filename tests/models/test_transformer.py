"""TransformerLM: causality, attention vs a numpy oracle, tied embeddings, dropout, errors."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from flax import nnx

from jaxparadigm.models.transformer import CausalSelfAttention, TransformerLM, causal_mask


def _lm(**kw):
    args = dict(vocab_size=32, d_model=16, num_layers=2, num_heads=4, context=8)
    args.update(kw)
    rngs = nnx.Rngs(0)
    return TransformerLM(
        args.pop("vocab_size"),
        args.pop("d_model"),
        args.pop("num_layers"),
        args.pop("num_heads"),
        args.pop("context"),
        rngs=rngs,
        **args,
    )


class TransformerTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.parameters((True, 1), (False, 2))
    def test_logits_shape_and_causality(self, tie, layers):
        model = _lm(tie_embeddings=tie, num_layers=layers)
        graphdef, state = nnx.split(model)
        params = nnx.to_pure_dict(state)
        fwd = self.variant(lambda p, t: nnx.merge(graphdef, p)(t))
        tokens = jax.random.randint(jax.random.PRNGKey(0), (2, 8), 0, 32)
        logits = fwd(params, tokens)
        chex.assert_shape(logits, (2, 8, 32))
        chex.assert_type(logits, jnp.float32)
        chex.assert_tree_all_finite(logits)
        changed = tokens.at[:, 5].set((tokens[:, 5] + 1) % 32)
        logits2 = fwd(params, changed)
        np.testing.assert_allclose(logits2[:, :5], logits[:, :5], atol=1e-6)  # past unaffected
        assert not np.allclose(logits2[:, 5:], logits[:, 5:])  # the future is

    def test_attention_matches_numpy(self):
        attn = CausalSelfAttention(8, 2, dtype=jnp.float32, rngs=nnx.Rngs(3))
        x = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (1, 5, 8)), np.float64)
        wqkv, bqkv = np.asarray(attn.qkv.kernel[...]), np.asarray(attn.qkv.bias[...])
        wo, bo = np.asarray(attn.out.kernel[...]), np.asarray(attn.out.bias[...])
        q, k, v = np.split(x[0] @ wqkv + bqkv, 3, axis=-1)
        heads = []
        for h in range(2):
            sl = slice(4 * h, 4 * h + 4)
            s = q[:, sl] @ k[:, sl].T / 2.0
            s = np.where(np.tril(np.ones((5, 5))) > 0, s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            heads.append((w / w.sum(-1, keepdims=True)) @ v[:, sl])
        want = np.concatenate(heads, -1) @ wo + bo
        got = nnx.jit(lambda m, x: m(x))(attn, jnp.asarray(x, jnp.float32))[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    def test_tied_embeddings_have_no_output_matrix(self):
        count = lambda m: sum(x.size for x in jax.tree_util.tree_leaves(nnx.state(m)))
        assert count(_lm(tie_embeddings=False)) - count(_lm(tie_embeddings=True)) == 16 * 32 + 32

    def test_dropout_only_with_rng_and_deterministic_per_key(self):
        model = _lm(dropout=0.5, num_layers=1)
        tokens = jnp.zeros((1, 8), jnp.int32)
        plain = nnx.jit(lambda m, t: m(t))
        drop = nnx.jit(lambda m, t, r: m(t, dropout_rng=r))
        np.testing.assert_array_equal(plain(model, tokens), plain(model, tokens))
        a = drop(model, tokens, jax.random.PRNGKey(0))
        b = drop(model, tokens, jax.random.PRNGKey(0))
        c = drop(model, tokens, jax.random.PRNGKey(1))
        np.testing.assert_array_equal(a, b)
        assert not np.allclose(a, c)
        assert not np.allclose(a, plain(model, tokens))


def test_causal_mask():
    np.testing.assert_array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_heads": 3}, "num_heads"),
        ({"d_model": 0}, "d_model"),
        ({"dropout": 1.0}, "dropout"),
        ({"dtype": "int8"}, "dtype"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _lm(**kwargs)


def test_bad_tokens():
    model = _lm()
    with pytest.raises(ValueError, match="context=8"):
        model(jnp.zeros((1, 9), jnp.int32))
    with pytest.raises(TypeError, match="tokens: got dtype float32"):
        model(jnp.zeros((1, 4), jnp.float32))
