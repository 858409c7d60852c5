"""A user's files as documents: which bytes are read, how they become text, what is skipped (C1.1).

File types (by suffix, case-insensitive; :mod:`~jaxparadigm.retrieval.documents.file_kinds`)::

    .txt .py                  the file's text (a .py file: docstrings, comments and code)
    .md .markdown .rst        the file's text, link-reference lines and lists of bare links blanked
    .html .htm                the readable text (markup, scripts, styles, navigation blanked)
    .jsonl                    one document per line, its "text" field (source ``path:LINE``)

    no type suffix            README, LICENSE, NEWS.Debian: text when its first SNIFF_BYTES are
                              (else skipped "not UTF-8")
    NAME.gz                   NAME's kind through gzip ("too large" past MAX_GZ_BYTES unpacked)

The files come from :func:`~jaxparadigm.retrieval.documents.walking.collect_files`; a file named
directly with another suffix is read as plain text. A file whose bytes (sha256) equal an earlier
file's, or a file's in ``known_sha256`` (the index's), is skipped as "duplicate content"
("already indexed" when it is the same real path); the document's source is the real path.

**Outline.** A file's document carries its outline (section headings, or class/def for a .py
file: :func:`~jaxparadigm.retrieval.documents.outline.outline`, read from the file's own text), from
which each passage's context is made; a JSONL line's has none (``sections`` None).

**Offsets.** Text is decoded from the file's bytes as UTF-8 with no newline translation, so a
passage's ``[start:end]`` is a span of the file's own characters (``\\r\\n`` stays two characters).
JSONL is split on ``"\\n"`` only (U+2028, U+2029 and U+0085 inside strings are content).

**Nothing blocks, nothing large is read blindly.** A file is opened non-blocking and checked to be
regular after opening. Only the first :data:`SNIFF_BYTES` of a file decide that it is binary (a
NUL byte, or bytes that are not UTF-8): a 1 GiB file of NULs named ``.txt`` is skipped without
being read whole. JSON lines are bounded before they are built (:func:`read_json`): a bad
line alone is skipped as "bad JSONL line"; a leading UTF-8 byte-order mark keeps the first record.

**Problems do not stop the reading.** An unusable file is a
:class:`~jaxparadigm.retrieval.documents.skipped.Skipped` (``strict=True``: one
:class:`~jaxparadigm.errors.InputError` listing all). A path that does not exist is an error at
once (a typo).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from jaxparadigm.common.bounded_reading import (
    MAX_JSON_INT_DIGITS,
    SNIFF_BYTES,
    JsonLineError,
    NotRegularFile,
    binary_prefix,
    open_regular,
    read_json,
    shown_name,
)
from jaxparadigm.common.quoting import byte_at, plural
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.file_kinds import FILE_TYPES, GzipSkip, file_kind, gunzip_file
from jaxparadigm.retrieval.documents.outline import outline
from jaxparadigm.retrieval.documents.passages import Document
from jaxparadigm.retrieval.documents.readable_text import html_readable, markup_boilerplate
from jaxparadigm.retrieval.documents.skipped import (
    SKIP_REASONS,
    Skipped,
    describe_skipped,
)
from jaxparadigm.retrieval.documents.walking import _bad_name, collect_files

__all__ = [
    "FILE_TYPES",
    "MAX_JSON_INT_DIGITS",
    "SKIP_REASONS",
    "SNIFF_BYTES",
    "JsonLineError",
    "Skipped",
    "SourceFile",
    "Reading",
    "collect_files",
    "read_documents",
    "read_json",
    "describe_skipped",
    "shown_name",
]


class SourceFile(NamedTuple):
    """A file that gave documents: its real path and the sha256 of its bytes."""

    path: str
    sha256: str


class Reading(NamedTuple):
    """What :func:`read_documents` found: the documents, their files, and what it skipped."""

    documents: list[Document]
    files: list[SourceFile]
    skipped: list[Skipped]


class _NotText(Exception):
    """A file that is not one to read: ``reason`` (of SKIP_REASONS) and ``detail``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(reason, detail)
        self.reason, self.detail = reason, detail


def _file_bytes(path: Path) -> bytes:
    """The bytes of the regular file at ``path`` (a ``.gz`` one decompressed, bounded:
    :func:`~jaxparadigm.retrieval.documents.file_kinds.gunzip_file`); :class:`_NotText` for a
    special file or one whose first :data:`SNIFF_BYTES` are binary (the rest is then never read).
    Opened non-blocking, so a FIFO put in a file's place cannot block."""
    try:
        opened = open_regular(path)
    except NotRegularFile as exc:
        raise _NotText("unsupported type", exc.kind) from None
    with opened as fh:
        if path.name.lower().endswith(".gz"):
            try:
                data = gunzip_file(fh)
            except GzipSkip as exc:
                raise _NotText(exc.reason, exc.detail) from None
            if binary := binary_prefix(data[:SNIFF_BYTES], whole=len(data) <= SNIFF_BYTES):
                raise _NotText("not UTF-8", f"decompressed: {binary}")
            return data
        prefix = fh.read(SNIFF_BYTES)
        rest = fh.read(1)
        binary = binary_prefix(prefix, whole=not rest)
        if binary:
            raise _NotText("not UTF-8", binary)
        return prefix + rest + fh.read() if rest else prefix


def _jsonl(path: str, text: str) -> tuple[list[Document], list[Skipped]]:
    docs, skipped = [], []
    if text.startswith("\ufeff"):  # a UTF-8 byte-order mark: not part of the first record
        text = text[1:]
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            record = read_json(line)
        except JsonLineError as exc:
            skipped.append(Skipped(where, "bad JSONL line", str(exc)))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            detail = "expected a JSON object with a string 'text' field"
            skipped.append(Skipped(where, "bad JSONL line", detail))
        elif not record["text"].strip():
            skipped.append(Skipped(where, "empty", "blank 'text'"))
        else:
            docs.append(Document(where, record["text"]))
    return docs, skipped


def _documents(path: str, kind: str, text: str) -> tuple[list[Document], list[Skipped]]:
    if kind == "jsonl":
        return _jsonl(path, text)
    python = path.lower().removesuffix(".gz").endswith(".py")
    sections = tuple(outline("python" if python else kind, text))
    if kind == "html":
        text = html_readable(text)
    elif kind == "markup":
        text = markup_boilerplate(text)
    if not text.strip():
        return [], [Skipped(path, "empty", "no text once markup and link lists are removed")]
    return [Document(path, text, sections)], []


def _new_bytes(real: Path, path: str, known: dict[str, str]) -> tuple[bytes, str]:
    """The bytes of a file not read before and their sha256 (recorded in ``known``), or
    :class:`_NotText` with the reason it is skipped: unreadable, empty, duplicate."""
    try:
        data = _file_bytes(real)
    except OSError as exc:
        raise _NotText("unreadable", exc.strerror or type(exc).__name__) from None
    if not data.strip():
        raise _NotText("empty", f"{plural(len(data), 'byte')}, no text")
    sha = hashlib.sha256(data).hexdigest()
    if sha in known:
        if known[sha] == path:
            raise _NotText("already indexed", "unchanged")
        raise _NotText("duplicate content", f"same bytes as {known[sha]}")
    known[sha] = path
    return data, sha


def _utf8(data: bytes) -> str:
    """``data`` as UTF-8 text, or :class:`_NotText` ("not UTF-8": a bad byte, or NUL bytes)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _NotText("not UTF-8", byte_at(data, exc.start)) from None
    if "\x00" in text:
        raise _NotText("not UTF-8", "holds NUL bytes (a binary file?)")
    return text


def read_documents(
    paths: Sequence[str | os.PathLike],
    *,
    strict: bool = False,
    known_sha256: Mapping[str, str] | None = None,
    skip_folder: Callable[[Path], bool] | None = None,
) -> Reading:
    """Every document under ``paths`` (see the module docstring), in a deterministic order.

    ``known_sha256`` maps the sha256 of files already indexed to their path (duplicates are
    skipped). ``strict=True`` turns any skipped input into one :class:`InputError`.
    ``skip_folder``: as for :func:`~jaxparadigm.retrieval.documents.walking.collect_files`.
    """
    files, skipped = collect_files(paths, skip_folder=skip_folder)
    known = dict(known_sha256 or {})
    docs: list[Document] = []
    used: list[SourceFile] = []
    for real in files:
        path = real.as_posix()
        if named := _bad_name(path):
            skipped.append(named)
            continue
        try:
            data, sha = _new_bytes(real, path, known)
            text = _utf8(data)
        except _NotText as exc:
            skipped.append(Skipped(path, exc.reason, exc.detail))
            continue
        kind = (file_kind(real.name) or "text").removeprefix("gz:")
        found, bad = _documents(path, "text" if kind == "sniffed" else kind, text)
        if not found and not bad:  # a JSONL file of blank lines
            bad = [Skipped(path, "empty", "no JSON line")]
        skipped += bad
        if found:
            docs += found
            used.append(SourceFile(path, sha))
    skipped.sort(key=lambda s: s.path)
    if strict and skipped:
        raise InputError("\n".join([*describe_skipped(skipped, limit=20), "(--strict: refused)"]))
    return Reading(docs, used, skipped)
