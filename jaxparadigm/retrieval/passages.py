"""A user's documents as passages: read text/Markdown/JSONL files or folders, cut token windows (C1.1).

MiniLM reads at most ``max_seq_length`` word pieces (256, [CLS] and [SEP] included), so a long
document is cut into windows of ``chunk_tokens`` word pieces that overlap by ``overlap``:

    window w covers pieces [w * (chunk_tokens - overlap), w * (chunk_tokens - overlap) + chunk_tokens)

until a window reaches the last piece. Each :class:`Passage` keeps its ``source`` and the
character offsets ``[start, end)`` of its window in that document's text (from the tokenizer's
offset mapping), and ``text == document[start:end]``. Files: ``.txt``, ``.md``, ``.markdown``,
``.rst`` are one document each; ``.jsonl`` holds one document per line in its ``text`` field
(source ``path:LINE``). A folder is searched recursively for those suffixes (hidden entries
skipped), in sorted order, so the same inputs always give the same passages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from tokenizers import Tokenizer

from jaxparadigm.errors import InputError

__all__ = [
    "Document",
    "Passage",
    "TEXT_SUFFIXES",
    "collect_files",
    "read_documents",
    "split_passages",
    "splitting_tokenizer",
]

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")
JSONL_SUFFIX = ".jsonl"


class Document(NamedTuple):
    """One document: where it came from (``path`` or ``path:LINE`` for JSONL) and its text."""

    source: str
    text: str


class Passage(NamedTuple):
    """A window of a document: ``text == document_text[start:end]`` (character offsets)."""

    source: str
    start: int
    end: int
    text: str


def collect_files(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Files named in ``paths``, folders expanded recursively (known suffixes, no hidden entries).

    A path that does not exist, or a folder holding no indexable file, raises :class:`InputError`.
    """
    if isinstance(paths, (str, os.PathLike)) or not paths:
        raise InputError(f"paths: got {paths!r}, expected a non-empty list of files or folders")
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix.lower() in (*TEXT_SUFFIXES, JSONL_SUFFIX)
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                raise InputError(
                    f"{path}: folder holds no {', '.join((*TEXT_SUFFIXES, JSONL_SUFFIX))} file"
                )
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise InputError(f"{path}: no such file or folder; expected documents to index")
    return list(dict.fromkeys(out))  # a file named twice is read once


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc}); expected a text file") from None


def _jsonl_documents(path: Path) -> list[Document]:
    docs = []
    for n, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{n}: not a JSON object ({exc})") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise InputError(f"{path}:{n}: expected a JSON object with a string 'text' field")
        docs.append(Document(f"{path.as_posix()}:{n}", record["text"]))
    return docs


def read_documents(paths: Sequence[str | os.PathLike]) -> list[Document]:
    """Every document under ``paths`` (see :func:`collect_files`), in a deterministic order."""
    docs: list[Document] = []
    for path in collect_files(paths):
        if path.suffix.lower() == JSONL_SUFFIX:
            docs += _jsonl_documents(path)
        else:
            docs.append(Document(path.as_posix(), _read_text(path)))
    return docs


def splitting_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """A copy of ``tokenizer`` with truncation and padding off (the given one is not changed)."""
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer: got {type(tokenizer).__name__}, expected tokenizers.Tokenizer")
    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


def _check_window(chunk_tokens: int, overlap: int) -> None:
    if isinstance(chunk_tokens, bool) or not isinstance(chunk_tokens, int) or chunk_tokens < 2:
        raise InputError(f"chunk_tokens: got {chunk_tokens!r}, expected an int >= 2")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < chunk_tokens:
        raise InputError(f"overlap: got {overlap!r}, expected an int in [0, {chunk_tokens})")


def split_passages(
    docs: Sequence[Document], tokenizer: Tokenizer, chunk_tokens: int, overlap: int
) -> list[Passage]:
    """Token windows of every document (module docstring); a blank document gives no passage.

    ``tokenizer`` should be a :func:`splitting_tokenizer` (no truncation, no padding).
    """
    _check_window(chunk_tokens, overlap)
    step = chunk_tokens - overlap
    encodings = tokenizer.encode_batch([d.text for d in docs], add_special_tokens=False)
    out: list[Passage] = []
    for doc, enc in zip(docs, encodings, strict=True):
        offsets = enc.offsets
        n = len(offsets)
        for first in range(0, max(n - overlap, 1), step) if n else ():
            last = min(first + chunk_tokens, n) - 1
            start, end = offsets[first][0], offsets[last][1]
            out.append(Passage(doc.source, start, end, doc.text[start:end]))
    return out
