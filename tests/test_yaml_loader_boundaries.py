"""The YAML reader's boundaries (issue 39): the line a limit names, a document that is only a
long integer, key paths whose first letters look like the separator, an anchor reused by
siblings, and the depth count over many siblings.

Each test names the boundary it pins; each killed a one-line mutant of ``config/yaml_loader.py``
that the earlier tests let through (``make mutation MODULE=config.yaml_loader``).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.config import MAX_YAML_DEPTH, MAX_YAML_NODES, YamlLimitError, parse_yaml
from jaxparadigm.config.yaml_loader import MAX_YAML_INT_DIGITS

LONG = "7" * (MAX_YAML_INT_DIGITS + 1)


def test_a_document_that_is_only_a_long_integer_names_the_value():
    """Boundary: the empty key path (the root itself) is called "the value"."""
    with pytest.raises(YamlLimitError) as err:
        parse_yaml(LONG)
    assert str(err.value).startswith("the value: an integer of 4301 digits at line 1;")


@given(
    first=st.sampled_from("X.x_-Z9"),
    rest=st.text(alphabet="abXx._", min_size=0, max_size=4),
    blank_lines=st.integers(0, 3),
)
@settings(max_examples=30, deadline=None)
def test_key_paths_keep_every_leading_letter(first, rest, blank_lines):
    """Boundary: a key that starts with the separator or a letter near it ("X", ".") keeps it
    (a key '.x' was shown as 'x' before: the path's leading "." was stripped with the key's own).
    And the line is the value's, 1-based."""
    key = first + rest
    text = "\n" * blank_lines + f"'{key}': {LONG}\n"
    with pytest.raises(YamlLimitError) as err:
        parse_yaml(text)
    assert str(err.value).startswith(f"key {key!r}: an integer of 4301 digits")
    assert f"at line {blank_lines + 1};" in str(err.value)


def test_the_composer_names_the_line_of_the_node_past_each_limit():
    """Boundary: the first node past the depth limit, and the first past the node limit, on a
    known line (1-based)."""
    deep = "\n\n" + "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1)
    with pytest.raises(YamlLimitError, match=f"deeper than {MAX_YAML_DEPTH} levels at line 3$"):
        parse_yaml(deep)
    many = "a: 1\nb:\n" + "".join(f"- {i}\n" for i in range(MAX_YAML_NODES))
    # nodes: root, a, 1, b, the list, then items: node MAX_YAML_NODES + 1 is item 9995, on
    # line 3 + 9995 (the items start on line 3, item 0 there).
    with pytest.raises(YamlLimitError) as err:
        parse_yaml(many)
    assert f"more than {MAX_YAML_NODES} nodes (keys, values and list items) by line 9998;" in str(
        err.value
    )


def test_the_expanded_limit_names_the_line_and_says_aliases():
    """Boundary: the expanded size passes the limit at a node on a known line."""
    rows = ["top:", "  - &a0 [" + ", ".join(["1"] * 9) + "]"]
    rows += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 6)]
    with pytest.raises(YamlLimitError) as err:
        parse_yaml("\n".join(rows) + "\n")
    # sizes: &a0 10, &a1 91, &a2 820, &a3 7381, &a4 (line 6) 66430: the first over the limit.
    assert str(err.value) == (
        f"the value at line 6 expands to more than {MAX_YAML_NODES} nodes through its aliases "
        f"(&anchor/*alias); expected a config of at most {MAX_YAML_NODES} nodes with aliases "
        "expanded"
    )


def test_a_recursive_alias_message():
    with pytest.raises(YamlLimitError) as err:
        parse_yaml("\n\na: &x\n  - 1\n  - *x\n")  # an alias is its anchor's node: line 3
    assert str(err.value) == (
        "recursive alias at line 3: an anchor used inside its own value; expected a finite config"
    )


@pytest.mark.parametrize("uses", [2, 3, 5])
def test_an_anchor_reused_by_siblings_is_not_recursive(uses):
    """Boundary: a node already walked and finished, met again under a later sibling, is a
    shared value, not a cycle."""
    doc = parse_yaml("[&x [1], " + ", ".join(["[*x]"] * uses) + "]")
    assert doc == [[1]] + [[[1]]] * uses


def test_the_depth_count_comes_back_after_each_sibling():
    """Boundary: after many shallow siblings, nesting one past the limit is still refused while
    composing (a count that drifted down would let PyYAML recurse into a RecursionError)."""
    doc = "[" + "[], " * 3000 + "[" * 3000 + "]" * 3000 + "]"
    with pytest.raises(YamlLimitError, match=f"deeper than {MAX_YAML_DEPTH} levels"):
        parse_yaml(doc)
    ok = "[" + "[], " * 3000 + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1) + "]"
    assert len(parse_yaml(ok)) == 3001
