"""Values quoted in messages: bounded work and bounded length, whatever the value (C1.1, C5.1).

Its functions::

    quote(value, limit=60)   repr(value) for a message, at most ``limit`` characters. A string or
                             bytes longer than that is sliced BEFORE repr (a 1 GB string costs
                             what ``limit`` characters cost) and shown as ``'abc...' (N
                             characters)``; containers are elided by :mod:`reprlib`; an int too
                             long for Python's int-to-str limit is shown by its size in bits
    plural(n, word)          ``"1 passage"``, ``"2 passages"``
    byte_at(data, offset)    ``"byte 0xe9 at offset 3"``: the byte a UTF-8 decoder stopped at

Every message of the project that quotes a value the user sent goes through :func:`quote`, so an
error stays one readable line whatever was sent.
"""

from __future__ import annotations

import reprlib

__all__ = ["QUOTE_CHARS", "byte_at", "plural", "quote"]

#: The default length of a quoted value.
QUOTE_CHARS = 60
# An int longer than this many bits may pass Python's 4300-digit int-to-str limit.
_INT_BITS = 4000


class _BoundedRepr(reprlib.Repr):
    """``reprlib.Repr`` whose ints never run into the int-to-str limit."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > _INT_BITS:
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)


def _repr_of(limit: int) -> reprlib.Repr:
    r = _BoundedRepr()
    r.maxstring = r.maxother = r.maxlong = limit
    r.maxlevel = 3
    return r


_REPRS: dict[int, reprlib.Repr] = {}


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` for a message, at most ``limit`` (>= 30) characters, in bounded work.

    ``str``/``bytes``: ``repr`` when it fits; else ``repr(value[:limit])`` cut and closed, then the
    length: ``'abcd...' (100000 characters)``. Anything else: :mod:`reprlib`'s elided repr (an int
    of more than 4000 bits as ``<int of N bits>``), cut to ``limit`` with ``...``.
    """
    if isinstance(value, (str, bytes, bytearray)):
        part = value[: limit + 1] if isinstance(value, str) else bytes(value[: limit + 1])
        head = repr(part)
        if len(value) <= limit and len(head) <= limit:
            return head
        size = f" ({len(value)} {'characters' if isinstance(value, str) else 'bytes'})"
        budget = max(limit - len(size) - 4, 8)  # 4: "..." and the closing quote
        n = budget
        while n > 0 and len(repr(part[:n])) - 1 > budget:  # never cut inside an escape
            n -= 1
        head = repr(part[:n])
        return f"{head[:-1]}...{head[-1]}{size}"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _INT_BITS:
        return f"<int of {value.bit_length()} bits>"
    r = _REPRS.get(limit) or _REPRS.setdefault(limit, _repr_of(limit))
    text = r.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def plural(n: int, word: str) -> str:
    """``"1 passage"``, ``"2 passages"`` (``word`` + "s" unless ``n == 1``)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def byte_at(data: bytes, offset: int) -> str:
    """``"byte 0xNN at offset N"``: the byte of ``data`` at ``offset`` (where a decoder stopped)."""
    return f"byte 0x{data[offset]:02x} at offset {offset}"
