"""The bounded JSON-line reader and the binary-prefix sniff (issue 34, "Index inputs")."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.common.bounded_reading import (
    MAX_JSON_INT_DIGITS,
    JsonLineError,
    binary_prefix,
    json_depth,
    read_json,
    shown_name,
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_ordinary_json_reads_as_json_loads_does(value):
    """Oracle: the standard library's json.loads on the same line."""
    line = json.dumps(value)
    assert read_json(line) == json.loads(line)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 9000),
    st.sampled_from(["", "-"]),
    st.sampled_from(["{}", "[1, {}]", '{{"a": {}}}']),
)
def test_integers_are_bounded_by_their_digits(digits, sign, shape):
    line = shape.format(sign + "1" + "0" * (digits - 1))
    if digits <= MAX_JSON_INT_DIGITS:
        assert read_json(line) == json.loads(line)
    else:
        with pytest.raises(JsonLineError, match=f"an integer of {digits} digits; expected at most"):
            read_json(line)


@pytest.mark.parametrize(
    "line, match",
    [("{", "not JSON"), ("[" * 100_000 + "]" * 100_000, "not JSON"), ("\ufeff{}", "not JSON")],
)
def test_bad_json_is_one_json_line_error(line, match):
    with pytest.raises(JsonLineError, match=match) as err:
        read_json(line)
    assert isinstance(err.value, ValueError)


def test_the_limit_is_a_parameter():
    assert read_json("[123]", max_int_digits=3) == [123]
    with pytest.raises(JsonLineError, match="an integer of 4 digits; expected at most 3"):
        read_json("[-1234]", max_int_digits=3)


@pytest.mark.parametrize(
    "prefix, whole, why",
    [
        (b"plain text", True, None),
        (b"a\x00b", False, "holds NUL bytes (a binary file?)"),
        (b"ab\xe9cd", False, "byte 0xe9 at offset 2"),
        (b"abcd\xe2\x82", False, None),  # a character cut by the prefix's end
        (b"abcd\xe2\x82", True, "byte 0xe2 at offset 4"),  # ... unless the file ends there
    ],
)
def test_binary_prefix(prefix, whole, why):
    assert binary_prefix(prefix, whole) == why


def test_shown_name_escapes_bytes_that_are_not_utf8():
    assert shown_name(b"/d/a\xffb.txt".decode("utf-8", "surrogateescape")) == "/d/a\\xffb.txt"
    assert shown_name("/d/caf\u00e9.txt") == "/d/caf\u00e9.txt"


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_characters="\x00")), st.integers(0, 64))
def test_valid_utf8_cut_anywhere_is_not_binary(text, cut):
    """Oracle: the bytes decode as UTF-8; no prefix of them is binary."""
    data = text.encode("utf-8")
    cut = min(cut, len(data))
    assert binary_prefix(data[:cut], whole=cut == len(data)) is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_whole_bytes_are_binary_exactly_when_they_hold_nul_or_bad_utf8(data):
    try:
        data.decode("utf-8")
        text_ok = b"\x00" not in data
    except UnicodeDecodeError:
        text_ok = False
    assert (binary_prefix(data, whole=True) is None) == text_ok


def test_read_json_takes_bytes_and_refuses_what_is_not_utf8():
    assert read_json(b'{"a": [1, 2]}') == {"a": [1, 2]}
    assert read_json(bytearray(b"[3]")) == [3]
    with pytest.raises(JsonLineError) as err:
        read_json(b'{"a": "\xe9"}')
    assert str(err.value) == "not UTF-8: byte 0xe9 at offset 7"
    with pytest.raises(JsonLineError, match="^not UTF-8"):  # json.loads would read UTF-16
        read_json('{"a": 1}'.encode("utf-16"))


def test_read_json_refuses_nesting_past_max_depth_before_parsing():
    assert read_json("[[[1]]]", max_depth=3) == [[[1]]]
    with pytest.raises(JsonLineError) as err:
        read_json(b"[" * 4 + b"]" * 4, max_depth=3)
    assert str(err.value) == "nested deeper than 3 levels"
    assert read_json('["[[[[", {"b": "{{{{"}]', max_depth=2) == ["[[[[", {"b": "{{{{"}]
    with pytest.raises(JsonLineError, match="^not JSON: "):  # no max_depth: the recursion limit
        read_json("[" * 100_000 + "]" * 100_000)


def test_json_depth_counts_outside_strings_and_stops_past_the_limit():
    assert json_depth(b'{"a": [1, {"b": "[[[{{"}]}', 10) == 3
    assert json_depth('"\\"[["', 10) == 0
    assert json_depth(b"[" * 1000, 8) == 9
    assert json_depth("[é, [", 5) == 2
