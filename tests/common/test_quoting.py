"""Quoting a value in a message: bounded work and length whatever the value, the plural and the
undecodable byte written once."""

import time

import pytest

from jaxparadigm.common.quoting import QUOTE_CHARS, byte_at, plural, quote
from jaxparadigm.errors import short_repr


@pytest.mark.parametrize(
    "value", ["abc", b"ab", 5, 1.5, None, [1, 2], {"a": 1}, "x" * (QUOTE_CHARS - 2), "é" * 10]
)
def test_a_short_value_is_its_repr(value):
    assert quote(value) == repr(value)


def test_a_long_string_is_cut_closed_and_sized():
    """The budget: ``limit`` less the size note and ``...`` plus the closing quote."""
    assert quote("x" * 59) == "'" + "x" * 39 + "...' (59 characters)"  # its repr: 61 > 60
    assert quote("x" * 100) == "'" + "x" * 38 + "...' (100 characters)"  # 1 + 38 + 4 + 17
    assert len(quote("x" * 100)) == QUOTE_CHARS
    assert quote("x" * 100, 80) == "'" + "x" * 58 + "...' (100 characters)"
    assert quote(b"\xff" * 100) == "b'" + "\\xff" * 10 + "...' (100 bytes)"  # no escape cut
    assert quote(bytearray(b"a" * 70)) == "b'" + "a" * 43 + "...' (70 bytes)"
    assert quote("'" * 61) == '"' + "'" * 39 + '..." (61 characters)'


def test_a_short_string_with_a_long_repr_is_cut_too():
    text = "\x00" * 20  # 20 characters, an 82-character repr
    assert quote(text) == "'" + "\\x00" * 9 + "...' (20 characters)"


def test_a_huge_string_is_quoted_without_its_full_repr():
    huge = "y" * 10**8
    start = time.perf_counter()
    shown = quote(huge)
    assert time.perf_counter() - start < 0.05  # a full repr of 100 MB takes far longer
    assert shown == "'" + "y" * 32 + "...' (100000000 characters)" and len(shown) == QUOTE_CHARS


def test_containers_and_huge_ints_are_elided():
    assert quote(list(range(10**6))) == "[0, 1, 2, 3, 4, 5, ...]"
    assert quote(10**5000) == "<int of 16610 bits>"  # repr() would raise past 4300 digits
    assert quote([10**5000]) == "[<int of 16610 bits>]"
    assert len(quote({"k": ["x" * 10_000] * 1000}, 80)) <= 80
    assert quote(10**100) == "1" + "0" * 27 + "..." + "0" * 29  # reprlib elides the middle


def test_short_repr_is_quote():
    assert short_repr is quote


def test_plural_and_the_byte_at_an_offset():
    assert [plural(n, "passage") for n in (0, 1, 2)] == ["0 passages", "1 passage", "2 passages"]
    assert byte_at(b"ab\xe9cd", 2) == "byte 0xe9 at offset 2"
    assert byte_at(b"\x00", 0) == "byte 0x00 at offset 0"
