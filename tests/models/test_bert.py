"""BERT encoder (C1.1): a tiny random BERT checked against an independent numpy forward pass, plus
pooling/normalisation oracles and the loader's errors. The real MiniLM parity test lives in
tests/retrieval/encoder/test_sentence_encoder.py."""

import json
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from jaxparadigm.models.bert import (
    BertConfig,
    BertEncoder,
    l2_normalize,
    load_bert,
    mean_pool,
    packed_mean_pool,
)

TINY = dict(
    vocab_size=11,
    hidden_size=8,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=16,
    max_position_embeddings=12,
    type_vocab_size=2,
    layer_norm_eps=1e-12,
    hidden_act="gelu",
    model_type="bert",
)


def tiny_weights(seed=0, cfg=TINY):
    rng = np.random.default_rng(seed)
    h, i = cfg["hidden_size"], cfg["intermediate_size"]

    def r(*shape):
        return rng.normal(0, 0.5, size=shape).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(cfg["vocab_size"], h),
        "embeddings.position_embeddings.weight": r(cfg["max_position_embeddings"], h),
        "embeddings.token_type_embeddings.weight": r(cfg["type_vocab_size"], h),
        "embeddings.LayerNorm.weight": 1 + r(h),
        "embeddings.LayerNorm.bias": r(h),
    }
    for n in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value"):
            w[p + name + ".weight"], w[p + name + ".bias"] = r(h, h), r(h)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = r(h, h), r(h)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r(i, h), r(i)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(h, i), r(h)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + norm + ".weight"], w[p + norm + ".bias"] = 1 + r(h), r(h)
    return w


def write_model(tmp_path, weights, cfg=TINY):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    save_file(weights, str(tmp_path / "model.safetensors"))
    return tmp_path


def numpy_bert(w, ids, mask, cfg=TINY):
    """Independent float64 numpy forward of HuggingFace BertModel (last hidden state)."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    erf = np.vectorize(math.erf)

    def ln(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + cfg["layer_norm_eps"]) * w[name + ".weight"] + w[
            name + ".bias"
        ]

    def lin(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    b, t = ids.shape
    nh = cfg["num_attention_heads"]
    d = cfg["hidden_size"] // nh
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t]
    x = ln(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for n in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        q, k, v = (
            lin(x, p + f"attention.self.{s}").reshape(b, t, nh, d).transpose(0, 2, 1, 3)
            for s in ("query", "key", "value")
        )
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + np.where(mask[:, None, None, :], 0, -1e30)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, nh * d)
        a = ln(x + lin(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        f = lin(a, p + "intermediate.dense")
        f = 0.5 * f * (1 + erf(f / math.sqrt(2)))
        x = ln(a + lin(f, p + "output.dense"), p + "output.LayerNorm")
    return x


IDS = np.array([[2, 5, 7, 9, 3, 0, 0], [2, 4, 3, 0, 0, 0, 0], [2, 1, 6, 8, 10, 6, 3]])
MASK = (IDS > 0).astype(np.int32)


class TinyBertTest(chex.TestCase):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path):
        self.tmp_path = tmp_path

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_forward_matches_numpy_oracle(self):
        w = tiny_weights()
        model = load_bert(write_model(self.tmp_path, w))
        fn = self.variant(lambda ids, mask: model(ids, mask))
        got = np.asarray(fn(jnp.asarray(IDS), jnp.asarray(MASK)))
        want = numpy_bert(w, IDS, MASK)
        chex.assert_shape(got, (3, 7, 8))
        m = MASK.astype(bool)
        np.testing.assert_allclose(got[m], want[m], atol=2e-5, rtol=1e-5)

    def test_layer_norm_epsilon_is_the_configs(self):
        """Weights scaled by 1e-3 put every LayerNorm's input variance near 1e-6, where the
        epsilon matters: each of the three norms (embeddings, attention, feed-forward) using
        flax's default 1e-6 or 1e-5 instead of the config's 1e-12 moves the output by ~30%."""
        w = {k: 1e-3 * v for k, v in tiny_weights(3).items()}
        model = load_bert(write_model(self.tmp_path, w))
        got = np.asarray(model(jnp.asarray(IDS), jnp.asarray(MASK)))
        want = numpy_bert(w, IDS, MASK)
        m = MASK.astype(bool)
        assert np.abs(want[m]).max() < 1e-2  # the regime described above
        np.testing.assert_allclose(got[m], want[m], rtol=1e-3, atol=1e-7)

    def test_qkv_is_fused_from_three_projections(self):
        w = tiny_weights(2)
        model = load_bert(write_model(self.tmp_path, w))
        kernel = np.asarray(model.layers[0].qkv.kernel[...])
        np.testing.assert_array_equal(
            kernel[:, 8:16], w["encoder.layer.0.attention.self.key.weight"].T
        )

    @chex.variants(with_jit=True, without_jit=True)
    def test_packed_rows_equal_each_sentence_alone(self):
        """Two sentences in one row (block-diagonal mask, positions restarting at 0) give the
        hidden states and mean-pooled vectors each sentence gets alone (the oracle)."""
        model = load_bert(write_model(self.tmp_path, tiny_weights(1)))
        a, b = IDS[0, :5], IDS[1, :3]  # 5 and 3 real tokens
        packed = np.zeros((1, 10), np.int32)
        packed[0, :8] = np.concatenate([a, b])
        seg = np.array([[1] * 5 + [2] * 3 + [0] * 2], np.int32)
        pos = np.array([[0, 1, 2, 3, 4, 0, 1, 2, 0, 0]], np.int32)

        def fwd(ids, seg, pos):
            h = model(ids, (seg > 0).astype(jnp.int32), position_ids=pos, segment_ids=seg)
            return h, packed_mean_pool(h, seg, max_segments=3)

        h, pooled = self.variant(fwd)(jnp.asarray(packed), jnp.asarray(seg), jnp.asarray(pos))
        want_a = numpy_bert(tiny_weights(1), a[None], np.ones((1, 5), bool))[0]
        want_b = numpy_bert(tiny_weights(1), b[None], np.ones((1, 3), bool))[0]
        np.testing.assert_allclose(h[0, :5], want_a, atol=2e-5, rtol=1e-5)
        np.testing.assert_allclose(h[0, 5:8], want_b, atol=2e-5, rtol=1e-5)
        np.testing.assert_allclose(pooled[0, 0], want_a.mean(0), atol=2e-5)
        np.testing.assert_allclose(pooled[0, 1], want_b.mean(0), atol=2e-5)
        np.testing.assert_array_equal(pooled[0, 2], 0.0)  # an unused segment pools to zeros


class PoolingTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.named_parameters(("b1", 1, 4), ("b3", 3, 6))
    def test_mean_pool_matches_numpy(self, b, t):
        rng = np.random.default_rng(b)
        h = rng.normal(size=(b, t, 5)).astype(np.float32)
        mask = (rng.random((b, t)) < 0.6).astype(np.int32)
        mask[0, :] = 0  # a row with no tokens pools to zeros, not NaN
        got = np.asarray(self.variant(mean_pool)(h, mask))
        want = (h * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(got[0], 0.0)

    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    def test_l2_normalize_matches_numpy(self):
        x = np.array([[3.0, 4.0], [0.0, 0.0], [1e-3, -2e-3]], np.float32)
        got = np.asarray(self.variant(l2_normalize)(x))
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        np.testing.assert_allclose(got, x / np.maximum(norms, 1e-12), rtol=1e-6)
        np.testing.assert_array_equal(got[1], 0.0)


@settings(max_examples=8, deadline=None)
@given(b=st.integers(1, 3), t=st.integers(1, 5), h=st.integers(1, 4))
def test_mean_pool_shape(b, t, h):
    out = mean_pool(jnp.ones((b, t, h)), jnp.ones((b, t), jnp.int32))
    assert out.shape == (b, h)
    np.testing.assert_allclose(np.asarray(out), 1.0)


# ---- config and loader errors ----------------------------------------------------------------


def test_config_from_json_reads_minilm_fields(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    cfg = BertConfig.from_json(tmp_path / "config.json")
    assert cfg.hidden_size == 8 and cfg.layer_norm_eps == 1e-12


def test_config_defaults_are_all_minilm_l6_v2():
    """``BertConfig()`` is the config.json shipped with all-MiniLM-L6-v2."""
    from jaxparadigm.retrieval.encoder.sentence_encoder import minilm_path

    assert BertConfig() == BertConfig.from_json(minilm_path() / "config.json")


@pytest.mark.parametrize(
    "patch, match",
    [
        ({"hidden_act": "relu"}, "hidden_act"),
        ({"hidden_size": 9}, "multiple of num_attention_heads"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ],
)
def test_config_errors_name_file_and_key(tmp_path, patch, match):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **patch}))
    with pytest.raises(ValueError, match=match) as err:
        BertConfig.from_json(path)
    assert str(path) in str(err.value)


def test_config_missing_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in TINY.items() if k != "vocab_size"}))
    with pytest.raises(ValueError, match="missing key 'vocab_size'"):
        BertConfig.from_json(path)


def test_missing_directory_and_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        load_bert(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_bert(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        load_bert(tmp_path)


def test_corrupt_safetensors_names_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json")
    with pytest.raises(ValueError, match="model.safetensors: not a readable safetensors"):
        load_bert(tmp_path)


def test_wrong_shape_names_tensor_and_shapes(tmp_path):
    w = tiny_weights()
    w["encoder.layer.1.intermediate.dense.weight"] = np.zeros((16, 7), np.float32)
    with pytest.raises(
        ValueError, match=r"intermediate.dense.weight' has shape \(16, 7\), expected \(16, 8\)"
    ):
        load_bert(write_model(tmp_path, w))


def test_missing_tensor_is_named(tmp_path):
    w = tiny_weights()
    del w["encoder.layer.0.attention.self.value.bias"]
    with pytest.raises(ValueError, match="attention.self.value.bias' is missing"):
        load_bert(write_model(tmp_path, w))


def test_prefixed_checkpoint_is_accepted(tmp_path):
    w = tiny_weights()
    model = load_bert(write_model(tmp_path, {"bert." + k: v for k, v in w.items()}))
    assert isinstance(model, BertEncoder)


def test_too_long_input_is_rejected(tmp_path):
    model = load_bert(write_model(tmp_path, tiny_weights()))
    ids = jnp.ones((1, 13), jnp.int32)
    with pytest.raises(ValueError, match="exceeds max_position_embeddings=12"):
        model(ids, ids)


@pytest.mark.slow
@pytest.mark.crosscheck
def test_matches_transformers_bert_model(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    w = tiny_weights(3)
    model = load_bert(write_model(tmp_path, w))
    cfg = transformers.BertConfig(**{k: v for k, v in TINY.items() if k != "model_type"})
    ref = transformers.BertModel(cfg, add_pooling_layer=False).eval()
    ref.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()}, strict=False)
    with torch.no_grad():
        want = ref(input_ids=torch.from_numpy(IDS), attention_mask=torch.from_numpy(MASK))
    got = np.asarray(model(jnp.asarray(IDS), jnp.asarray(MASK)))
    m = MASK.astype(bool)
    np.testing.assert_allclose(got[m], want.last_hidden_state.numpy()[m], atol=2e-5)
    assert jax.devices()[0].platform == "cpu"
