"""Input read with bounds, before anything large is built from it (C1.1; issue 34, "Index inputs").

    read_json_line(line)       json.loads with each integer's digits counted before int() runs
                               (at most MAX_JSON_INT_DIGITS); one JsonLineError (a ValueError) for
                               a long integer, bad JSON or nesting past the recursion limit
    binary_prefix(prefix)      why a file's first SNIFF_BYTES bytes make it binary (a NUL byte, or
                               bytes that are not UTF-8), or None: the rest need not be read
    shown_name(path)           a path as printable UTF-8, bytes that are not UTF-8 as ``\\xNN``
    mode_words(st_mode)        what a file that is not a regular one is: "a FIFO", "a folder" ...

Python's ``int()`` refuses a decimal string of more than 4300 digits with a bare ValueError (the
int-string limit, a guard against its quadratic conversion); ``json.loads`` calls it on every
integer, so a 5,000-digit number in one line escaped from the reader. The readers of the index's
own files (``manifest.json``, a shard's ``.jsonl``) can use :func:`read_json_line` as well.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

__all__ = [
    "MAX_JSON_INT_DIGITS",
    "SNIFF_BYTES",
    "JsonLineError",
    "binary_prefix",
    "mode_words",
    "read_json_line",
    "shown_name",
]

#: How many leading bytes of a file decide that it is binary (git's heuristic reads 8000).
SNIFF_BYTES = 8192
#: The most digits a JSON integer may have: Python's default int-string limit, checked on the
#: digits before ``int()`` builds the number.
MAX_JSON_INT_DIGITS = 4300


class JsonLineError(ValueError):
    """A JSON text that is not JSON, nested too deep, or holds an integer that is too long."""


def read_json_line(line: str, max_int_digits: int = MAX_JSON_INT_DIGITS) -> Any:
    """``json.loads(line)`` with every integer's digits counted before ``int()`` builds it (C1.1).

    Raises :class:`JsonLineError` (a ValueError) for an integer of more than ``max_int_digits``
    digits, for text that is not JSON and for nesting past the recursion limit -- never the bare
    ValueError ``int()`` raises past Python's int-string limit. Index files (``manifest.json``,
    shard ``.jsonl``) can be read through it too.
    """

    def bounded_int(digits: str) -> int:
        n = len(digits.lstrip("-"))
        if n > max_int_digits:
            raise JsonLineError(f"an integer of {n} digits; expected at most {max_int_digits}")
        return int(digits)

    try:
        return json.loads(line, parse_int=bounded_int)
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
            return f"byte 0x{prefix[exc.start]:02x} at offset {exc.start}"
    return None


def shown_name(path: str | os.PathLike) -> str:
    """``path`` as printable UTF-8: bytes that are not UTF-8 (surrogate-escaped) as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def mode_words(mode: int) -> str:
    """What the file of ``st_mode`` ``mode`` is, for a message: a FIFO, a folder, a socket, a device,
    else "not a regular file"."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
