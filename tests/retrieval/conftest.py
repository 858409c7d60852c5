"""One MiniLM encoder per test session (loading and jit compiles are the slow part), and a fast
stand-in encoder for the index tests (hash-seeded unit vectors, the real MiniLM tokenizer)."""

import hashlib

import numpy as np
import pytest


@pytest.fixture(scope="session")
def encoder():
    from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm

    return cached_minilm(None)


class HashEncoder:
    """``encode(texts)`` -> unit vectors seeded by each text's sha256 (same text, same vector).

    Counts the texts it encodes; ``fail_after=N`` raises KeyboardInterrupt on call N + 1 (an
    interrupted build)."""

    def __init__(self, tokenizer, dim=16, max_seq_length=64, fail_after=None):
        self.tokenizer, self.dim, self.max_seq_length = tokenizer, dim, max_seq_length
        self.fail_after, self.calls, self.encoded = fail_after, 0, []

    def encode(self, texts, batch_size=32, normalize=True):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt("simulated interrupt")
        self.calls += 1
        self.encoded += list(texts)
        out = np.stack([self.vector(t) for t in texts]).astype(np.float32)
        return out

    def check_texts(self, texts, name):
        """SentenceEncoder.check_texts's refusal, simplified: a blank text has no word piece."""
        from jaxparadigm.errors import InputError

        for i, t in enumerate(texts):
            if not t.strip():
                raise InputError(f"{name}[{i}] {t!r}: the tokenizer finds no word piece in it")

    def vector(self, text):
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)


@pytest.fixture(scope="session")
def minilm_tokenizer():
    from tokenizers import Tokenizer

    from jaxparadigm.retrieval.encoder.sentence_encoder import minilm_path

    return Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))


@pytest.fixture
def hash_encoder(minilm_tokenizer):
    return HashEncoder(minilm_tokenizer)
