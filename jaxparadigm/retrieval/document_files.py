"""A user's files and folders as documents: what is read, what is skipped and why (C1.1).

File types (by suffix, case-insensitive):

    .txt .py                  the file's text (a .py file: docstrings, comments and code)
    .md .markdown .rst        the file's text, link-reference lines and lists of bare links blanked
    .html .htm                the readable text (markup, scripts, styles, navigation blanked)
    .jsonl                    one document per line, its "text" field (source ``path:LINE``)

    no type suffix            README, LICENSE, NEWS.Debian: text when its first SNIFF_BYTES are
                              (else skipped "not UTF-8")
    NAME.gz                   NAME's kind through gzip ("too large" past MAX_GZ_BYTES unpacked)

(:mod:`~jaxparadigm.retrieval.readable_text`, :mod:`~jaxparadigm.retrieval.file_kinds`).
Folders: sorted, hidden entries skipped, symlinked folders not followed; a file named directly
with another suffix: plain text.

**Identity.** A file is keyed by its resolved real path (:func:`os.path.realpath`):
``docs/d0.txt``, its absolute path, ``docs/../docs/d0.txt`` and the same file named from another
working directory are one file, read once, and the document's source is that real path. A file
whose bytes (sha256) equal an earlier file's, or a file's in ``known_sha256`` (the index's), is
skipped as "duplicate content" ("already indexed" when it is the same real path).

**Offsets.** Text is decoded from the file's bytes as UTF-8 with no newline translation, so a
passage's ``[start:end]`` is a span of the file's own characters (``\\r\\n`` stays two characters).
JSONL is split on ``"\\n"`` only (U+2028, U+2029 and U+0085 inside strings are content).

**Every path the OS allows is read or skipped with a reason.** The walk is iterative (no depth
bound; a folder whose path the OS refuses, e.g. past ``PATH_MAX``, is skipped "unreadable"). A
name that is not valid UTF-8 (a bytes name) is skipped as "name not UTF-8" and shown with its bad
bytes as ``\\xNN`` (it could not be stored in the index's UTF-8 JSON). FIFOs, sockets and devices
are "unsupported type"; a symlink cycle is "symlink loop"; a file is opened non-blocking and
checked to be regular after opening, so nothing blocks. Only the first :data:`SNIFF_BYTES` of a
file decide that it is binary (a NUL byte, or bytes that are not UTF-8): a 1 GiB file of NULs
named ``.txt`` is skipped without being read whole. A folder holding an index's ``manifest.json``
(``--out docs/idx``) is skipped as "index folder": an index never reads itself.

**JSON lines are bounded before they are built** (:func:`read_json_line`, see
:mod:`~jaxparadigm.retrieval.bounded_reading`): in a ``.jsonl`` input a bad line alone is skipped as
"bad JSONL line"; a leading UTF-8 byte-order mark keeps the first record.

**Problems do not stop the reading.** An unusable file is a :class:`Skipped` (one of
:data:`SKIP_REASONS`; ``strict=True``: one :class:`~jaxparadigm.errors.InputError` listing all).
A path named on the command line that does not exist is an error at once (a typo).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.bounded_reading import (
    MAX_JSON_INT_DIGITS,
    SNIFF_BYTES,
    JsonLineError,
    binary_prefix,
    mode_words,
    read_json_line,
    shown_name,
)
from jaxparadigm.retrieval.file_kinds import FILE_TYPES, GzipSkip, file_kind, gunzip_file
from jaxparadigm.retrieval.index_owned_files import holds_index
from jaxparadigm.retrieval.passages import Document
from jaxparadigm.retrieval.readable_text import html_readable, markup_boilerplate

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
    "read_json_line",
    "describe_skipped",
    "plural",
    "shown_name",
]

SKIP_REASONS = (
    "unreadable",
    "empty",
    "duplicate content",
    "already indexed",
    "not UTF-8",
    "bad JSONL line",
    "dangling symlink",
    "unsupported type",
    "symlinked folder",
    "name not UTF-8",
    "symlink loop",
    "index folder",
    "too large",
)
_INDEX_FOLDER = "holds an index's manifest.json: an index never reads itself"


class Skipped(NamedTuple):
    """An input that gave no document: ``path`` (real path, or ``path:LINE``), reason, detail."""

    path: str
    reason: str
    detail: str


class SourceFile(NamedTuple):
    """A file that gave documents: its real path and the sha256 of its bytes."""

    path: str
    sha256: str


class Reading(NamedTuple):
    """What :func:`read_documents` found: the documents, their files, and what it skipped."""

    documents: list[Document]
    files: list[SourceFile]
    skipped: list[Skipped]


def plural(n: int, word: str) -> str:
    """``"1 passage"``, ``"2 passages"`` (``word`` + "s" unless ``n == 1``) (C1.1)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _bad_name(path: str) -> Skipped | None:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return Skipped(shown_name(path), "name not UTF-8", "rename it to UTF-8 to index it")
    return None


def _link_problem(p: Path) -> Skipped:
    """Why the symlink ``p`` leads to no file: a cycle, or nothing there."""
    try:
        target = os.readlink(p)
        os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Skipped(p.as_posix(), "symlink loop", "a cycle of symlinks")
        return Skipped(p.as_posix(), "dangling symlink", f"-> {shown_name(target)}")
    return Skipped(p.as_posix(), "unsupported type", "not a regular file")  # pragma: no cover


def _entry(entry: os.DirEntry, top: Path, dirs: list, found: list, skipped: list) -> None:
    """Sort one folder entry into ``dirs`` (to walk), ``found`` (to read) or ``skipped``."""
    p = top / entry.name
    try:
        is_dir = entry.is_dir()
    except OSError:  # a symlink cycle: ELOOP, told apart below
        is_dir = False
    if bad := _bad_name(p.as_posix()):
        skipped.append(bad)
    elif is_dir:
        if entry.is_symlink():
            skipped.append(Skipped(p.as_posix(), "symlinked folder", "not followed"))
        else:
            dirs.append(p)
    elif entry.is_symlink() and not p.exists():
        skipped.append(_link_problem(p))
    elif not entry.is_file():
        skipped.append(Skipped(p.as_posix(), "unsupported type", mode_words(entry.stat().st_mode)))
    elif file_kind(entry.name) is None:
        skipped.append(Skipped(p.as_posix(), "unsupported type", f"suffix {p.suffix}"))
    else:
        found.append(p)


def _walk(root: Path) -> tuple[list[Path], list[Skipped]]:
    """The files under ``root`` (hidden entries skipped, symlinked folders not followed), with an
    explicit stack: no recursion, so no depth bound but the OS's own (``PATH_MAX``)."""
    found: list[Path] = []
    skipped: list[Skipped] = []
    stack = [root]
    while stack:
        top = stack.pop()
        if holds_index(top):  # issue 34: `index build docs --out docs/idx`, then `add docs`
            skipped.append(Skipped(shown_name(top), "index folder", _INDEX_FOLDER))
            continue
        dirs: list[Path] = []
        try:
            with os.scandir(top) as it:
                entries = sorted(
                    (e for e in it if not e.name.startswith(".")), key=lambda e: e.name
                )
            for entry in entries:
                try:
                    _entry(entry, top, dirs, found, skipped)
                except OSError as exc:
                    path = shown_name(top / entry.name)
                    skipped.append(Skipped(path, "unreadable", exc.strerror or type(exc).__name__))
        except OSError as exc:
            skipped.append(
                Skipped(shown_name(top), "unreadable", exc.strerror or type(exc).__name__)
            )
        stack += reversed(dirs)
    found.sort(key=lambda p: p.relative_to(root).parts)
    return found, skipped


def collect_files(paths: Sequence[str | os.PathLike]) -> tuple[list[Path], list[Skipped]]:
    """``(files, skipped)``: the real paths of the files in ``paths`` (folders expanded), each once
    (C1.1).

    A path that does not exist, or that is neither a file nor a folder, raises
    :class:`InputError`; what a folder holds that cannot be indexed is returned in ``skipped``.
    """
    if isinstance(paths, (str, os.PathLike)) or not paths:
        raise InputError(f"paths: got {paths!r}, expected a non-empty list of files or folders")
    out: list[Path] = []
    skipped: list[Skipped] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found, bad = _walk(path)
            out += [_real(p) for p in found]
            skipped += bad
        elif path.is_file() and holds_index(_real(path).parent):
            skipped.append(Skipped(shown_name(_real(path)), "index folder", _INDEX_FOLDER))
        elif path.is_file():
            out.append(_real(path))
        elif path.is_symlink():
            raise InputError(
                f"{path}: a dangling symlink (-> {os.readlink(path)}); expected a file"
            )
        elif path.exists():
            raise InputError(f"{path}: not a regular file or folder; expected documents to index")
        else:
            raise InputError(f"{path}: no such file or folder; expected documents to index")
    return list(dict.fromkeys(out)), skipped  # one real path, one read


class _NotText(Exception):
    """A file that is not one to read: ``reason`` (of SKIP_REASONS) and ``detail``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(reason, detail)
        self.reason, self.detail = reason, detail


def _file_bytes(path: Path) -> bytes:
    """The bytes of the regular file at ``path`` (a ``.gz`` one decompressed, bounded:
    :func:`~jaxparadigm.retrieval.file_kinds.gunzip_file`); :class:`_NotText` for a special file
    or one whose first :data:`SNIFF_BYTES` are binary (the rest is then never read). Opened
    non-blocking, so a FIFO put in a file's place cannot block."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    with open(fd, "rb", closefd=True) as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _NotText("unsupported type", mode_words(mode))
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
            record = read_json_line(line)
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
    if kind == "html":
        text = html_readable(text)
    elif kind == "markup":
        text = markup_boilerplate(text)
    if not text.strip():
        return [], [Skipped(path, "empty", "no text once markup and link lists are removed")]
    return [Document(path, text)], []


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
        raise _NotText("not UTF-8", f"byte 0x{data[exc.start]:02x} at offset {exc.start}") from None
    if "\x00" in text:
        raise _NotText("not UTF-8", "holds NUL bytes (a binary file?)")
    return text


def read_documents(
    paths: Sequence[str | os.PathLike],
    *,
    strict: bool = False,
    known_sha256: Mapping[str, str] | None = None,
) -> Reading:
    """Every document under ``paths`` (see the module docstring), in a deterministic order.

    ``known_sha256`` maps the sha256 of files already indexed to their path (duplicates are
    skipped). ``strict=True`` turns any skipped input into one :class:`InputError`.
    """
    files, skipped = collect_files(paths)
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


def describe_skipped(skipped: Sequence[Skipped], limit: int = 10) -> list[str]:
    """Lines for a report: ``skipped N inputs (reason: count, ...)`` then up to ``limit`` items
    (C1.1)."""
    if not skipped:
        return []
    counts = Counter(s.reason for s in skipped)
    head = f"skipped {plural(len(skipped), 'input')} (" + ", ".join(
        f"{reason}: {counts[reason]}" for reason in SKIP_REASONS if reason in counts
    )
    lines = [head + ")"]
    lines += [f"  {s.path}: {s.reason} ({s.detail})" for s in skipped[:limit]]
    if len(skipped) > limit:
        lines.append(f"  ... and {len(skipped) - limit} more")
    return lines
