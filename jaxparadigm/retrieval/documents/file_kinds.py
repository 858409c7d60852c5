"""Which files of a folder are read, and how: by suffix, by content, or through gzip (C1.1).

:func:`file_kind` maps a file name to how its text is read (``None``: not read, "unsupported
type")::

    .txt .py -> "text"; .md .markdown .rst -> "markup"; .html .htm -> "html"; .jsonl -> "jsonl"
    no type suffix (README, LICENSE, NEWS.Debian)  -> "sniffed": text when its first
                                                      SNIFF_BYTES are UTF-8 with no NUL
    NAME.gz                                         -> "gz:" + file_kind(NAME), read through gzip
    any other suffix (.png, .tar.gz, .pdf)          -> None

Suffixes compare case-insensitively (``NOTES.TXT`` is text). A name has *no type suffix* when it has
no dot, or when its last dot-part is not a file type and starts with an upper case letter
(``README.Debian``, ``INSTALL.Unix``: a name, not a type; Debian's ``/usr/share/doc`` is full of
them). A ``.gz`` file is decompressed in memory up to :data:`MAX_GZ_BYTES`::

    len(gunzip(data)) > MAX_GZ_BYTES   ->  skipped "too large" (a decompression bomb costs at most
                                          MAX_GZ_BYTES + one read block of memory)
    not a gzip stream / truncated      ->  skipped "unreadable" (what zlib said)

and its document's offsets are those of the decompressed text.
"""

from __future__ import annotations

import os
import zlib
from typing import BinaryIO

__all__ = ["FILE_TYPES", "MAX_GZ_BYTES", "GzipSkip", "file_kind", "gunzip_bounded", "gunzip_file"]

FILE_TYPES = {
    ".txt": "text",
    ".py": "text",
    ".md": "markup",
    ".markdown": "markup",
    ".rst": "markup",
    ".html": "html",
    ".htm": "html",
    ".jsonl": "jsonl",
}
#: The most bytes a ``.gz`` input may decompress to (64 MiB).
MAX_GZ_BYTES = 64 * 2**20
_BLOCK = 2**20


class GzipSkip(ValueError):
    """A ``.gz`` input that gives no text: ``reason`` (``"too large"`` or ``"unreadable"``) and
    ``detail``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason} ({detail})")
        self.reason, self.detail = reason, detail


def _plain_kind(name: str) -> str | None:
    stem, dot, suffix = name.rpartition(".")
    if dot and stem and "." + suffix.lower() in FILE_TYPES:  # case-insensitive: NOTES.TXT
        return FILE_TYPES["." + suffix.lower()]
    if not dot or not stem or suffix[:1].isupper():
        return "sniffed"
    return None


def file_kind(name: str) -> str | None:
    """How the file called ``name`` is read (module docstring), or ``None`` when it is not."""
    if not isinstance(name, str):
        raise TypeError(f"name: got {type(name).__name__}, expected str")
    if name.lower().endswith(".gz") and len(name) > 3:
        inner = _plain_kind(name[:-3])
        return None if inner is None else "gz:" + inner
    return _plain_kind(name)


def gunzip_bounded(data: bytes, limit: int = MAX_GZ_BYTES) -> bytes:
    """The decompressed bytes of the gzip file ``data`` (every member), at most ``limit`` of them;
    :class:`GzipSkip` when it would be more or is not a whole gzip stream."""
    out = bytearray()
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a gzip header and trailer
            chunk = d.decompress(rest, _BLOCK)
            while True:
                out += chunk
                if len(out) > limit:
                    raise GzipSkip(
                        "too large", f"decompresses to more than {limit} bytes (a bomb?)"
                    )
                if d.eof or (not d.unconsumed_tail and len(chunk) < _BLOCK):
                    break
                chunk = d.decompress(d.unconsumed_tail, _BLOCK)
            if not d.eof:
                raise GzipSkip("unreadable", "truncated gzip stream")
            rest = d.unused_data.lstrip(b"\0")  # next member; zero padding ends the file
    except zlib.error as exc:
        raise GzipSkip("unreadable", f"not a valid gzip file ({exc})") from None
    return bytes(out)


def gunzip_file(fh: BinaryIO, limit: int = MAX_GZ_BYTES) -> bytes:
    """:func:`gunzip_bounded` of the open regular file ``fh``; a file over ``limit`` bytes is
    "too large" before it is read (gzip does not shrink what it cannot compress)."""
    size = os.fstat(fh.fileno()).st_size
    if size > limit:
        raise GzipSkip("too large", f"{size} bytes compressed, over {limit}")
    return gunzip_bounded(fh.read(limit + 1), limit)
