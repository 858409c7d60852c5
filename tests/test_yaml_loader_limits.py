"""The YAML reader's limits hold while a document is composed (issue 34, "Configs").

Before the fix a 2 MB flow list of 10**6 items was composed in full (28 s, 751 MB) and then refused
with a message about aliases it did not have; an integer longer than Python's int-string limit
(4300 digits) in a value or a ``key=value`` override escaped as a bare ValueError naming nothing.
"""

import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.config import MAX_YAML_NODES, load_config, parse_yaml
from jaxparadigm.config.yaml_loader import MAX_YAML_INT_DIGITS, YamlLimitError
from jaxparadigm.errors import ConfigError

CONFIG = "configs/default.yaml"


def test_a_million_item_list_is_refused_fast_with_the_node_limit(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("name: x\nmodel:\n  hidden: [" + ",".join(["1"] * 1_000_000) + "]\n")
    assert path.stat().st_size > 2_000_000
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ConfigError) as err:
            load_config(path)
        seconds, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 8.0 and peak < 40 * 2**20, (seconds, peak)  # before: 28 s, 751 MB
    msg = str(err.value)
    assert f"more than {MAX_YAML_NODES} nodes" in msg and "alias" not in msg
    assert f"at most {MAX_YAML_NODES} nodes" in msg and "\n" not in msg


def test_the_node_limit_as_written_refuses_nothing_the_expanded_limit_accepts():
    assert len(parse_yaml("[" + ",".join(["1"] * (MAX_YAML_NODES - 1)) + "]")) == MAX_YAML_NODES - 1
    with pytest.raises(YamlLimitError, match=f"more than {MAX_YAML_NODES} nodes"):
        parse_yaml("[" + ",".join(["1"] * MAX_YAML_NODES) + "]")


@pytest.mark.parametrize(
    "doc, key",
    [
        ("train:\n  steps: {n}\n", "'train.steps'"),
        ("model:\n  hidden: [4, {n}]\n", "'model.hidden[1]'"),
        ("a:\n  - b: -0x{n}\n", "'a[0].b'"),
        ("{{{n}: 1}}\n", "a mapping key"),
    ],
)
def test_a_long_integer_is_one_value_error_naming_its_key(tmp_path, doc, key):
    path = tmp_path / "c.yaml"
    path.write_text(doc.format(n="7" * 5000))
    with pytest.raises(ConfigError) as err:  # a ValueError, as every config problem
        load_config(path)
    msg = str(err.value)
    assert isinstance(err.value, ValueError) and "\n" not in msg
    assert f"{key}: an integer of " in msg and f"at most {MAX_YAML_INT_DIGITS} digits" in msg
    with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("]", r"\]")):
        parse_yaml(doc.format(n="7" * 5000))


def test_a_long_integer_in_an_override_names_the_key():
    with pytest.raises(ConfigError) as err:
        load_config(CONFIG, ["train.steps=" + "1" * 5000])
    msg = str(err.value)
    assert "train.steps=" in msg and f"at most {MAX_YAML_INT_DIGITS} digits" in msg


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
            lambda k: k not in ("null", "true", "false", "yes", "no", "on", "off")
        ),
        min_size=1,
        max_size=4,
    ),
    digits=st.integers(MAX_YAML_INT_DIGITS - 3, MAX_YAML_INT_DIGITS + 3),
    first=st.integers(1, 9),
    sign=st.sampled_from(["", "-", "+"]),
)
def test_generated_long_integers(keys, digits, first, sign):
    """Oracle: Python's int() on the same digits; over the limit, the error names the key path."""
    number = sign + str(first) + "0" * (digits - 1)
    doc = "".join(f"{'  ' * i}{k}:\n" for i, k in enumerate(keys[:-1]))
    doc += f"{'  ' * (len(keys) - 1)}{keys[-1]}: {number}\n"
    if digits <= MAX_YAML_INT_DIGITS:
        value = parse_yaml(doc)
        for k in keys:
            value = value[k]
        assert value == int(number)
    else:
        with pytest.raises(YamlLimitError, match=f"key '{'.'.join(keys)}': an integer of {digits}"):
            parse_yaml(doc)
