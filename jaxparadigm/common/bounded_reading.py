"""Input read with bounds, before anything large is built from it (C1.1, C5.2).

Its functions::

    read_json(data)            the one bounded JSON reader: bytes must be UTF-8, nesting deeper
                               than ``max_depth`` is refused before parsing (json_depth), each
                               integer's digits are counted before int() runs (at most
                               MAX_JSON_INT_DIGITS); one JsonLineError (a ValueError) for any of
                               these and for text that is not JSON. It reads a documents file's
                               JSON lines, the index's ``manifest.json`` and shard lines, and the
                               body of a ``POST /search`` request
    json_depth(data, limit)    the deepest ``[``/``{`` nesting outside strings, counted up to the
                               first level past ``limit`` (bounded work on hostile input)
    binary_prefix(prefix)      why a file's first SNIFF_BYTES bytes make it binary (a NUL byte, or
                               bytes that are not UTF-8), or None: the rest need not be read
    shown_name(path)           a path as printable UTF-8, bytes that are not UTF-8 as ``\\xNN``
    mode_words(st_mode)        what a file that is not a regular one is: "a FIFO", "a folder" ...
    open_regular(path)         the file at ``path`` opened for binary reading once ``fstat`` of the
                               open file says it is a regular one (opened non-blocking, so a FIFO
                               in its place cannot block); NotRegularFile (a ValueError) otherwise

Python's ``int()`` refuses a decimal string of more than 4300 digits with a bare ValueError (the
int-string limit, a guard against its quadratic conversion); ``json.loads`` calls it on every
integer, so the digits are counted first.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, BinaryIO

from jaxparadigm.common.quoting import byte_at

__all__ = [
    "MAX_JSON_INT_DIGITS",
    "SNIFF_BYTES",
    "JsonLineError",
    "NotRegularFile",
    "binary_prefix",
    "json_depth",
    "mode_words",
    "open_regular",
    "read_json",
    "shown_name",
]

#: How many leading bytes of a file decide that it is binary (git's heuristic reads 8000).
SNIFF_BYTES = 8192
#: The most digits a JSON integer may have: Python's default int-string limit, checked on the
#: digits before ``int()`` builds the number.
MAX_JSON_INT_DIGITS = 4300

_OPEN, _CLOSE, _QUOTE, _ESCAPE = frozenset(b"[{"), frozenset(b"]}"), ord('"'), ord("\\")


class JsonLineError(ValueError):
    """A JSON text that is not UTF-8 or not JSON, nested too deep, or holds too long an integer."""


def json_depth(data: bytes | str, limit: int) -> int:
    """The deepest nesting of ``[``/``{`` in the JSON text ``data`` (outside strings), counting up
    to the first level over ``limit`` (then it stops: bounded work on hostile input) (C5.2)."""
    body = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _ESCAPE:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        elif byte in _CLOSE:
            depth -= 1
    return deepest


def read_json(
    data: bytes | str,
    *,
    max_depth: int | None = None,
    max_int_digits: int = MAX_JSON_INT_DIGITS,
) -> Any:
    """``json.loads(data)`` with its input bounded first (C1.1, C5.2).

    Raises :class:`JsonLineError` (a ValueError) for bytes that are not UTF-8 (``byte 0xNN at
    offset N``), nesting deeper than ``max_depth`` (checked by :func:`json_depth` before parsing;
    None: only the recursion limit), an integer of more than ``max_int_digits`` digits (counted
    before ``int()`` builds it), text that is not JSON and nesting past the recursion limit --
    never the bare ValueError ``int()`` raises past Python's int-string limit.
    """
    if isinstance(data, (bytes, bytearray)):
        raw = bytes(data)
        try:
            data = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonLineError(f"not UTF-8: {byte_at(raw, exc.start)}") from None
    if max_depth is not None and json_depth(data, max_depth) > max_depth:
        raise JsonLineError(f"nested deeper than {max_depth} levels")

    def bounded_int(digits: str) -> int:
        n = len(digits.lstrip("-"))
        if n > max_int_digits:
            raise JsonLineError(f"an integer of {n} digits; expected at most {max_int_digits}")
        return int(digits)

    try:
        return json.loads(data, parse_int=bounded_int)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise JsonLineError(f"not JSON: {exc}") from None


def binary_prefix(prefix: bytes, whole: bool) -> str | None:
    """Why ``prefix`` (a file's first bytes; ``whole``: all of them) is binary, or None."""
    if b"\x00" in prefix:
        return "holds NUL bytes (a binary file?)"
    try:
        prefix.decode("utf-8")
    except UnicodeDecodeError as exc:
        if whole or exc.reason != "unexpected end of data":  # not a character cut by the end
            return byte_at(prefix, exc.start)
    return None


def shown_name(path: str | os.PathLike) -> str:
    """``path`` as printable UTF-8: bytes that are not UTF-8 (surrogate-escaped) as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def mode_words(mode: int) -> str:
    """What the file of ``st_mode`` ``mode`` is, for a message.

    A FIFO, a folder, a socket, a device, else "not a regular file".
    """
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


class NotRegularFile(ValueError):
    """A path that names a FIFO, a folder, a socket or a device where a regular file is read;
    ``kind`` is :func:`mode_words` of it ("a FIFO" ...)."""

    def __init__(self, path: str | os.PathLike, kind: str):
        super().__init__(f"{shown_name(path)} is {kind}, expected a regular file")
        self.kind = kind


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """``path`` opened for binary reading, checked first to be a regular file (C1.1).

    Opened ``O_RDONLY | O_NONBLOCK | O_NOCTTY``, so opening a FIFO (no writer) or a terminal
    cannot block or take it over; then ``fstat`` of the open descriptor -- the file that will be
    read, not a name that may change -- must be ``S_ISREG``, else :class:`NotRegularFile` (a
    ValueError) naming the path and what it is. A missing or unreadable path raises the OSError
    of ``os.open`` (FileNotFoundError ...). ``O_NONBLOCK`` has no effect on a regular file's reads.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, mode_words(mode))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")
