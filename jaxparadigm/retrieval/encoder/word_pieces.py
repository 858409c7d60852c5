"""The checks on either side of the tokenizer (C1.1): the texts it may read (str, UTF-8) and the
word-piece ids the model may embed (in the vocabulary, at most ``max_seq_length`` per row).

A lone surrogate (what a non-UTF-8 command line decodes to) is named by its byte or code point;
an id outside ``[0, vocab)`` would be gathered clamped by XLA, a silently wrong embedding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxparadigm.common.quoting import quote
from jaxparadigm.errors import InputError

__all__ = ["checked_ids", "check_utf8_texts"]


def check_utf8_texts(sentences: Sequence[str], name: str) -> None:
    """``TypeError`` for ``sentences`` that is not a list of str, :class:`InputError` naming
    ``name[i]`` for a text that is not UTF-8 (a lone surrogate)."""
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise TypeError(f"{name}: got {type(sentences).__name__}, expected a list of str")
    for i, s in enumerate(sentences):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{i}]: got {type(s).__name__} {s!r}, expected str")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(s[exc.start])  # U+DC80..U+DCFF is byte 0x80..0xFF (surrogateescape)
            what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
            raise InputError(
                f"{name}[{i}] {quote(s)}: not UTF-8 text ({what} at character "
                f"{exc.start}); expected UTF-8"
            ) from None


def checked_ids(ids: Sequence[Sequence[int]], vocab: int, max_len: int) -> list[list[int]]:
    """``ids`` as lists of ints, each row 1 to ``max_len`` ids in ``[0, vocab)``; else one
    :class:`InputError` naming ``ids[i]``, the row and what was expected."""
    out = []
    for i, row in enumerate(ids):
        values = np.asarray(row)
        ok = values.ndim == 1 and 1 <= values.size <= max_len and values.dtype.kind in "iu"
        if not (ok and values.min() >= 0 and values.max() < vocab):
            raise InputError(
                f"ids[{i}]: got {quote(row)}, expected 1 to {max_len} word-piece ids in "
                f"[0, {vocab}) (SentenceEncoder.token_ids)"
            )
        out.append(values.tolist())
    return out
