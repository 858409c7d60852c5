"""SentenceEncoder (C1.1): parity with sentence-transformers' stored output, tokenisation, bucketing,
batch-composition independence and the loader's errors."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import SentenceEncoder, load_minilm
from jaxparadigm.retrieval.encoder.length_buckets import length_buckets
from jaxparadigm.retrieval.encoder.length_buckets import row_bucket as _row_bucket
from jaxparadigm.retrieval.encoder.sentence_encoder import minilm_path

DATA = Path(__file__).resolve().parents[2] / "data" / "minilm"
SENTENCES = json.loads((DATA / "sentences.json").read_text(encoding="utf-8"))["sentences"]


def test_parity_with_sentence_transformers_reference(encoder):
    ref = np.load(DATA / "embeddings.npy")
    got = encoder.encode(SENTENCES, batch_size=8)
    assert got.shape == (20, 384) and got.dtype == np.float32
    cos = np.sum(got * ref, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.99999, cos
    # Element-wise too (measured max |got - ref| = 3.5e-7): a cosine near 1 cannot see small
    # slips such as a LayerNorm epsilon of 1e-6 instead of the config's 1e-12 (max 1.4e-5, 1-cos
    # 6e-8) or 1e-5 (1.4e-4).
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6)


def test_input_ids_equal_reference(encoder):
    want = np.load(DATA / "input_ids_first6.npy")
    got = encoder.tokenize(SENTENCES[:6])
    np.testing.assert_array_equal(got["input_ids"], want)
    np.testing.assert_array_equal(got["attention_mask"], (want != 0).astype(np.int64))


def test_long_sentence_is_truncated_to_max_seq_length(encoder):
    long = max(SENTENCES, key=len)
    assert len(long.split()) > 256
    ids = encoder.tokenize([long])["input_ids"]
    assert ids.shape == (1, 256) and ids[0, -1] == 102  # [SEP] kept after truncation


# All of these fit the 16-token bucket, so the test reuses the parity test's compiled shapes.
SHORT = ["a cat", "Broadcasting aligns shapes from the right.", "", "x " * 9, "JAX", "数据库"]


def test_batch_composition_independence(encoder):
    alone = np.stack([encoder.encode(s) for s in SHORT])
    together = encoder.encode(SHORT, batch_size=4)
    mixed = encoder.encode(["another sentence in the batch", *SHORT[::-1]], batch_size=4)[1:][::-1]
    assert np.abs(together - alone).max() <= 1e-6
    assert np.abs(mixed - alone).max() <= 1e-6


def test_single_string_and_normalize_flag(encoder):
    one = encoder.encode("The cat sat on the mat.")
    assert one.shape == (384,)
    assert abs(np.linalg.norm(one) - 1) < 1e-6
    raw = encoder.encode(["The cat sat on the mat."], normalize=False)[0]
    assert np.linalg.norm(raw) > 1.5
    np.testing.assert_allclose(raw / np.linalg.norm(raw), one, atol=1e-6)


def test_compiled_shapes_stay_bounded(encoder):
    rng = np.random.default_rng(0)
    words = ["data", "query", "index", "tensor", "gradient", "memory"]
    sents = [" ".join(rng.choice(words, size=n)) for n in rng.integers(1, 20, size=23)]
    before = set(encoder.compiled_shapes)
    got = encoder.encode(sents, batch_size=8)
    new = encoder.compiled_shapes - before
    assert {r for r, _ in new} <= {1, 2, 4, 8} and {t for _, t in new} <= {16, 24, 32, 40}
    assert len(encoder.compiled_shapes) <= len(encoder.length_buckets) * 4 + len(before)
    # every sentence came out of a bucketed batch yet equals its own single encoding
    np.testing.assert_allclose(got[:2], np.stack([encoder.encode(s) for s in sents[:2]]), atol=1e-6)


def test_length_buckets():
    assert length_buckets(256) == (16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256)
    assert length_buckets(100) == (16, 24, 32, 40, 48, 56, 64, 80, 96, 100)
    assert length_buckets(20) == (16, 20)
    assert length_buckets(8) == (8,)
    with pytest.raises(ValueError, match="max_seq_length"):
        length_buckets(0)


@settings(max_examples=300, deadline=None)
@given(max_len=st.integers(1, 512))
def test_length_buckets_pad_at_most_a_quarter_above_32(max_len):
    buckets = length_buckets(max_len)
    assert buckets[-1] == max_len and list(buckets) == sorted(set(buckets))
    assert all(b % 8 == 0 for b in buckets[:-1])
    for n in range(1, max_len + 1):
        b = next(b for b in buckets if b >= n)
        assert b <= max(16, n + 8, 1.25 * n), (n, b)


def test_large_batch_runs_as_micro_batches(encoder):
    sents = [s + " " + "word " * (i % 5) for i, s in enumerate(SHORT * 6)]  # 36, all <= 24 tokens
    before = set(encoder.compiled_shapes)
    big = encoder.encode(sents, batch_size=128)
    assert {r for r, _ in encoder.compiled_shapes - before} <= {1, 2, 4, 8, 16, 32}
    assert encoder.micro_batch == 32
    small = encoder.encode(sents, batch_size=32)
    assert np.abs(big - small).max() <= 1e-6
    # micro_batch only changes mechanics, never the numbers
    sub = SentenceEncoder(encoder.model, encoder.tokenizer, micro_batch=4)
    assert np.abs(sub.encode(sents[:8], batch_size=128) - big[:8]).max() <= 1e-6
    assert {r for r, _ in sub.compiled_shapes} == {4}


@settings(max_examples=500, deadline=None)
@given(n=st.integers(1, 300), batch=st.integers(1, 300))
def test_row_bucket_is_smallest_power_of_two_capped(n, batch):
    n = min(n, batch)
    r = _row_bucket(n, batch)
    assert n <= r <= batch
    assert r == batch or (r & (r - 1) == 0 and r // 2 < n)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"sentences": "ok", "batch_size": 0}, ValueError, "batch_size: got 0"),
        ({"sentences": "ok", "batch_size": True}, ValueError, "batch_size"),
        ({"sentences": ["ok", 3]}, TypeError, r"sentences\[1\]: got int"),
        ({"sentences": 3}, TypeError, "sentences: got int"),
    ],
)
def test_encode_bad_input(encoder, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        encoder.encode(**kwargs)


def test_constructor_type_checks(encoder):
    with pytest.raises(TypeError, match="model: got str"):
        SentenceEncoder("model", encoder.tokenizer)
    with pytest.raises(ValueError, match="max_seq_length"):
        SentenceEncoder(encoder.model, encoder.tokenizer, max_seq_length=513)
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="micro_batch: got"):
            SentenceEncoder(encoder.model, encoder.tokenizer, micro_batch=bad)


def test_installed_package_is_found():
    path = minilm_path()
    assert (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        load_minilm(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_minilm(tmp_path)
    src = minilm_path()
    shutil.copy(src / "tokenizer.json", tmp_path / "tokenizer.json")
    shutil.copy(src / "config.json", tmp_path / "config.json")
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        load_minilm(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"model.safetensors: not a readable safetensors"):
        load_minilm(tmp_path)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    with pytest.raises(ValueError, match="expected mean pooling"):
        load_minilm(tmp_path)


@pytest.mark.slow
@pytest.mark.crosscheck
def test_matches_live_sentence_transformers(encoder):
    st = pytest.importorskip("sentence_transformers")
    ref = st.SentenceTransformer(str(minilm_path()), device="cpu")
    sents = [*SHORT, "Émigré café naïve", "How do I make my database queries faster?"]
    want = ref.encode(sents, batch_size=3, convert_to_numpy=True)
    got = encoder.encode(sents, batch_size=3)
    assert np.sum(got * want, axis=1).min() >= 0.99999
    tok = ref.tokenize(sents)["input_ids"].numpy()
    np.testing.assert_array_equal(encoder.tokenize(sents)["input_ids"], tok)


# ---- tokenizer ownership, bfloat16 compute, sequence packing ---------------------------------


def test_constructor_does_not_change_the_given_tokenizer(encoder):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
    tok.enable_truncation(max_length=5)
    before = (tok.truncation, tok.padding)
    enc = SentenceEncoder(encoder.model, tok)
    assert (tok.truncation, tok.padding) == before
    assert enc.tokenizer is not tok and enc.tokenizer.truncation["max_length"] == 256
    long = " ".join(["word"] * 40)
    assert len(enc.tokenize([long])["input_ids"][0]) == 42  # the encoder's copy truncates at 256


def test_packed_rows_give_the_unpacked_embeddings(encoder):
    sents = [*SHORT, "Émigré café naïve", "How do I make my database queries faster?"]
    plain = encoder.encode(sents, batch_size=4)
    before = set(encoder.compiled_variants)
    packed = encoder.encode(sents, batch_size=4, pack=True)
    assert np.abs(packed - plain).max() <= 2e-6
    new = encoder.compiled_variants - before
    assert new and all(v[:2] == ("float32", True) for v in new)
    # several sentences really shared a row: fewer rows than sentences
    assert sum(v[2] for v in new) < len(sents)
    raw = encoder.encode(sents[:3], pack=True, normalize=False)
    np.testing.assert_allclose(raw, encoder.encode(sents[:3], normalize=False), atol=1e-5)


def test_packing_a_sentence_longer_than_the_row(encoder):
    small = SentenceEncoder(encoder.model, encoder.tokenizer, pack_length=8)
    sents = ["a much longer sentence that does not fit in eight tokens at all", "cat", "dog"]
    np.testing.assert_allclose(small.encode(sents, pack=True), encoder.encode(sents), atol=2e-6)


def test_bfloat16_stays_close_to_float32(encoder):
    want = np.load(DATA / "embeddings.npy")
    got = encoder.encode(SENTENCES[:8], batch_size=8, dtype="bfloat16")
    assert got.dtype == np.float32 and got.shape == (8, 384)
    cos = np.sum(got * want[:8], axis=1)
    assert cos.min() >= 0.999, cos
    assert cos.max() < 0.9999999  # it really computed in bfloat16
    assert ("bfloat16", False) in {v[:2] for v in encoder.compiled_variants}


@pytest.mark.parametrize(
    "kwargs, match",
    [({"dtype": "float16"}, "dtype: got 'float16'"), ({"pack": 1}, "pack: got 1")],
)
def test_encode_option_errors(encoder, kwargs, match):
    from jaxparadigm.errors import InputError

    with pytest.raises(InputError, match=match):
        encoder.encode(["x"], **kwargs)
    with pytest.raises(ValueError, match="pack_length"):
        SentenceEncoder(encoder.model, encoder.tokenizer, pack_length=1)
    with pytest.raises(InputError, match="dtype: got 'int8'"):
        SentenceEncoder(encoder.model, encoder.tokenizer, dtype="int8")


def test_encoder_level_defaults(encoder):
    bf = SentenceEncoder(encoder.model, encoder.tokenizer, dtype="bfloat16", pack=True)
    assert (bf.compute_dtype, bf.pack) == ("bfloat16", True)
    np.testing.assert_array_equal(
        bf.encode(SHORT[:2]), encoder.encode(SHORT[:2], dtype="bfloat16", pack=True)
    )
    np.testing.assert_array_equal(
        bf.encode(SHORT[:2], dtype="float32", pack=False), encoder.encode(SHORT[:2])
    )
    assert {v[:2] for v in bf.compiled_variants} == {("bfloat16", True)}


def test_micro_batches_round_robin_over_devices_give_the_same_embeddings(encoder):
    """``devices`` (issue 26): micro-batch ``b`` runs on ``devices[b % D]``; the numbers do not
    depend on it (same program, same CPU), padded and packed alike."""
    import jax

    sents = [s + " " + "word " * (i % 7) for i, s in enumerate(SHORT * 3)]  # 18 sentences
    one = SentenceEncoder(encoder.model, encoder.tokenizer, micro_batch=4)
    two = SentenceEncoder(
        encoder.model, encoder.tokenizer, micro_batch=4, devices=jax.devices()[:2]
    )
    seen = []
    forward = two._forward
    two._forward = lambda g, state, ids, *a: (
        seen.append(ids.devices()) or forward(g, state, ids, *a)
    )
    want = one.encode(sents)
    np.testing.assert_array_equal(two.encode(sents), want)
    assert seen == [{jax.devices()[b % 2]} for b in range(5)]  # 18 rows in 5 micro-batches of 4
    np.testing.assert_array_equal(two.encode(sents, pack=True), one.encode(sents, pack=True))
    assert one.devices == [jax.local_devices()[0]] and two.devices == jax.devices()[:2]
    with pytest.raises(InputError, match="devices: got"):
        SentenceEncoder(encoder.model, encoder.tokenizer, devices=[])
    with pytest.raises(InputError, match="devices: got"):
        SentenceEncoder(encoder.model, encoder.tokenizer, devices=["cpu:0"])


def test_the_progress_of_an_encode_to_a_redirected_stderr_is_plain_lines(encoder, capsys):
    """``show_progress_bar=True`` off a terminal: the first micro-batch's line (it compiles), then
    one per tenth and the last; never tqdm's carriage returns; the embeddings unchanged."""
    quiet = encoder.encode(SENTENCES[:12], batch_size=4)
    got = encoder.encode(SENTENCES[:12], batch_size=4, show_progress_bar=True)
    np.testing.assert_array_equal(got, quiet)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0].startswith("encode: ") and "sentences (compiled and ran in " in lines[0]
    assert lines[-1].startswith("encode: 12/12 sentences")
    assert all(line.startswith("encode: ") for line in lines)


def test_encode_token_ids_equals_encode_bit_for_bit(encoder):
    """A serving thread tokenizes its own query (token_ids) and the batch encodes only the ids:
    the rows must be those of encode(texts), bit for bit (same micro-batches and buckets)."""
    texts = ["how do I open a file", "x", "the optimiser state of adam " * 3]
    ids = encoder.token_ids(texts)
    assert ids[1][0] == encoder.tokenizer.token_to_id("[CLS]") and len(ids[1]) == 3
    np.testing.assert_array_equal(encoder.encode_token_ids(ids), encoder.encode(texts))
    np.testing.assert_array_equal(
        encoder.encode_token_ids([np.asarray(i, np.int64) for i in ids[:1]]),
        encoder.encode(texts[:1]),
    )


@pytest.mark.parametrize(
    "row",
    [[], [101, 30522], [101, -1, 102], [101.0, 102.0], [[101, 102]], list(range(1, 300))],
    ids=["empty", "past-vocab", "negative", "floats", "nested", "too-long"],
)
def test_encode_token_ids_refuses_ids_that_would_gather_garbage(encoder, row):
    with pytest.raises(
        InputError, match=r"^ids\[1\]: got .*, expected 1 to 256 word-piece ids in \[0, 30522\)"
    ):
        encoder.encode_token_ids([[101, 102], row])


def test_an_encode_does_not_hash_the_model_structure(encoder, monkeypatch):
    """The jitted passes close over the GraphDef (``forward_passes``): a warm
    encode hashes it no more (0.78 ms a call for MiniLM's, with the GIL held), padded or packed;
    the embeddings are those of the static-argument jit they replace."""
    import jax

    from jaxparadigm.retrieval.encoder import forward_passes as fp

    texts = ["how do I sort a list", "read a file line by line"]
    want = np.asarray(encoder.encode(texts))
    packed = np.asarray(encoder.encode(texts, pack=True))
    calls = []
    kind = type(encoder._graphdef)
    real = kind.__hash__
    monkeypatch.setattr(kind, "__hash__", lambda self: calls.append(1) or real(self))
    np.testing.assert_array_equal(encoder.encode(texts), want)
    np.testing.assert_array_equal(encoder.encode(texts, pack=True), packed)
    assert calls == []
    monkeypatch.undo()
    static = jax.jit(fp.pooled_forward, static_argnums=(0, 4))
    ids = np.asarray(encoder.tokenizer.encode(texts[0]).ids, np.int32)[None, :]
    mask = np.ones_like(ids)
    np.testing.assert_array_equal(
        np.asarray(encoder._forward(encoder._state, ids, mask, True)),
        np.asarray(static(encoder._graphdef, encoder._state, ids, mask, True)),
    )
    assert fp.forward_passes(encoder._graphdef) == (encoder._forward, encoder._packed)  # shared
