"""Documents as passages: token windows with the document's own character offsets (C1.1).

The one text chunker of the package: the persistent index cuts a user's documents into windows of
word pieces, the pydoc corpus (:func:`~jaxparadigm.retrieval.eval.pydoc_corpus.chunk_document`) cuts
its topics into windows of whitespace-separated words. MiniLM reads at most ``max_seq_length`` word
pieces (256, [CLS] and [SEP] included), so a long document is cut into windows of ``chunk_tokens``
units (word pieces, or words when no tokenizer is given) that overlap by ``overlap``:

    window w covers pieces [w * s, w * s + chunk_tokens),   s = chunk_tokens - overlap

until a window reaches the last piece. Each :class:`Passage` keeps its ``source`` and the
character offsets ``[start, end)`` of its window in that document's text (from the tokenizer's
offset mapping), and ``text == document[start:end]``. Files and folders become documents in
:mod:`~jaxparadigm.retrieval.documents.reading`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from tokenizers import Tokenizer

from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.documents.outline import Section, context_at

__all__ = [
    "Document",
    "Passage",
    "PassageFields",
    "passage_contexts",
    "split_passages",
    "splitting_tokenizer",
]


class Document(NamedTuple):
    """One document: where it came from (``path`` or ``path:LINE`` for JSONL), its text and its
    outline (:func:`~jaxparadigm.retrieval.documents.outline.outline`; ``None``: not a file's, no
    context)."""

    source: str
    text: str
    sections: tuple[Section, ...] | None = None


class Passage(NamedTuple):
    """A window of a document: ``text == document_text[start:end]`` (character offsets)."""

    source: str
    start: int
    end: int
    text: str


class PassageFields:
    """A record that holds a :class:`Passage` as its ``passage`` (a search hit) reads its fields
    directly: ``record.source``, ``.start``, ``.end``, ``.text`` are ``record.passage``'s."""

    __slots__ = ()
    passage: Passage

    @property
    def source(self) -> str:
        """The passage's document (``path`` or ``path:LINE``)."""
        return self.passage.source

    @property
    def start(self) -> int:
        """The passage's first character in its document."""
        return self.passage.start

    @property
    def end(self) -> int:
        """One past the passage's last character in its document."""
        return self.passage.end

    @property
    def text(self) -> str:
        """The passage's text, ``document[start:end]``."""
        return self.passage.text


def splitting_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """A copy of ``tokenizer`` with truncation and padding off (the given one is not changed)."""
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer: got {type(tokenizer).__name__}, expected tokenizers.Tokenizer")
    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


_WORD = re.compile(r"\S+")  # the words of str.split(): runs of non-whitespace (str.isspace)


def _check_window(chunk_tokens: int, overlap: int, smallest: int) -> None:
    chunk_tokens = require_int("chunk_tokens", chunk_tokens, smallest)
    overlap = require_int("overlap", overlap, 0, chunk_tokens - 1)


def _unit_offsets(docs: Sequence[Document], tokenizer: Tokenizer | None) -> list[list[tuple]]:
    """Each document's units as character spans: word pieces, or ``str.split`` words if no
    tokenizer."""
    if tokenizer is None:
        return [[m.span() for m in _WORD.finditer(d.text)] for d in docs]
    encodings = tokenizer.encode_batch([d.text for d in docs], add_special_tokens=False)
    return [enc.offsets for enc in encodings]


def split_passages(
    docs: Sequence[Document], tokenizer: Tokenizer | None, chunk_tokens: int, overlap: int
) -> list[Passage]:
    """Token windows of every document (module docstring); a blank document gives no passage.

    ``tokenizer`` should be a :func:`splitting_tokenizer` (no truncation, no padding); ``None``
    windows whitespace-separated words instead (the words of ``str.split``; ``chunk_tokens >= 1``,
    while word-piece windows need ``chunk_tokens >= 2``). Either way
    ``passage.text == document.text[start:end]``.
    """
    _check_window(chunk_tokens, overlap, 1 if tokenizer is None else 2)
    step = chunk_tokens - overlap
    out: list[Passage] = []
    for doc, offsets in zip(docs, _unit_offsets(docs, tokenizer), strict=True):
        n = len(offsets)
        for first in range(0, max(n - overlap, 1), step) if n else ():
            last = min(first + chunk_tokens, n) - 1
            start, end = offsets[first][0], offsets[last][1]
            out.append(Passage(doc.source, start, end, doc.text[start:end]))
    return out


def passage_contexts(docs: Sequence[Document], passages: Sequence[Passage]) -> list[str]:
    """Each passage's context (:func:`~jaxparadigm.retrieval.documents.outline.context_at`: file
    name and the titles of the sections holding its first character), from its document's
    outline; ``""`` for a document without one (``sections`` None: a JSONL line)."""
    by_source = {d.source: d for d in docs}
    out = []
    for p in passages:
        doc = by_source.get(p.source)
        if doc is None:
            raise ValueError(f"passages: {p.source!r} is not the source of any of docs")
        known = doc.sections is not None
        out.append(context_at(p.source, list(doc.sections or ()), p.start) if known else "")
    return out
