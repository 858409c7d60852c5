"""Issue 24 (#3, #16): the config loader's size limits and run-directory checks, and generated
YAML documents/overrides: a Config or one ConfigError, never another exception, in bounded time."""

import time
import tracemalloc

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxparadigm.config import (
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    SHOWN_CHARS,
    Config,
    YamlLimitError,
    config_from_dict,
    load_config,
    parse_yaml,
    shown,
)
from jaxparadigm.errors import ConfigError


def _bomb(levels: int, width: int = 9) -> str:
    """``levels`` anchors, each a list of ``width`` aliases of the one before: width**levels."""
    rows = [f"  - &a0 [{', '.join(['1'] * width)}]"]
    rows += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "name: bomb\nmodel:\n  hidden:\n" + "\n".join(rows) + "\n"


def test_an_alias_bomb_is_refused_in_one_short_line(tmp_path):
    """Before: 412 bytes exited after 24 s with a 322 MB 'one-line' error (9**9 list items)."""
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(6))  # 9**6 = 531441 items once expanded, in 300 bytes
    assert len(path.read_bytes()) < 400
    start = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as err:
            load_config(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 2.0 and peak < 5 * 2**20
    msg = str(err.value)
    assert f"expands to more than {MAX_YAML_NODES} nodes" in msg and len(msg) < 400
    assert "\n" not in msg and str(path) in msg


def test_limits_are_on_the_expanded_document():
    ok = parse_yaml(_bomb(3))  # 9**3 = 729 items: a legal (if odd) document
    assert (
        len(ok["model"]["hidden"][2]) == 9
        and ok["model"]["hidden"][2][0] is ok["model"]["hidden"][1]
    )
    with pytest.raises(YamlLimitError, match="recursive alias"):
        parse_yaml("a: &x [1, *x]")
    deep = "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1)
    with pytest.raises(YamlLimitError, match=f"deeper than {MAX_YAML_DEPTH}"):
        parse_yaml(deep)
    with pytest.raises(YamlLimitError, match="deeper than"):
        parse_yaml("[" * 5000 + "]" * 5000)  # PyYAML's composer would hit the recursion limit
    assert parse_yaml("[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH) is not None


def test_yaml_errors_are_cut(tmp_path):
    path = tmp_path / "alias.yaml"
    path.write_text("name: *" + "a" * 100_000 + "\n")  # an undefined alias, named in full by PyYAML
    with pytest.raises(ConfigError, match="found undefined alias") as err:
        load_config(path)
    assert len(str(err.value)) < 300 + len(str(path)) + 40


def test_values_in_errors_are_cut():
    assert "..." in shown("x" * 10_000) and len(shown("x" * 10_000)) <= SHOWN_CHARS
    assert len(shown({"k": ["x" * 10_000] * 1000})) <= SHOWN_CHARS
    assert shown([1, 2]) == "[1, 2]"
    with pytest.raises(ConfigError) as err:
        config_from_dict({"name": "n", "model": {"hidden": ["y" * 100_000]}})
    assert len(str(err.value)) < 250


@pytest.mark.parametrize(
    "override, match",
    [
        ("out_dir=/proc", r"config key 'out_dir': got '/proc', but '/proc' is not writable \("),
        (
            "name=" + "n" * 300,
            r"config key 'name': got 'n{20,}\.\.\.' \(300 characters\): 300 bytes, too long; expected",
        ),
        ('name="a\\nb"', r"unprintable character U\+000A"),
        ('name="a\\u200bb"', r"unprintable character U\+200B"),
        ("name=a/b", r"expected a plain directory name"),
        (
            'out_dir="\\ud800"',
            r"config key 'out_dir': got '\\ud800', expected a directory path: not encodable",
        ),
    ],
)
def test_run_directory_problems_are_refused(tmp_path, override, match):
    """Before: /proc -> FileNotFoundError at the first write; a 300-character name -> 'File name
    too long'; a newline in a name accepted."""
    with pytest.raises(ConfigError, match=match):
        config_from_dict({"name": "ok", "out_dir": str(tmp_path)}, [override])


def test_an_unwritable_existing_run_directory_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="is not writable"):
        config_from_dict({"name": "x", "out_dir": "/proc/self"})
    assert config_from_dict({"name": "ok", "out_dir": str(tmp_path / "new" / "dir")}).name == "ok"
    assert not list(tmp_path.glob(".jaxparadigm-probe-*"))  # the probe leaves nothing behind


# --- generated inputs ----------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _text)
_data = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=30,
)
_keys = st.sampled_from(
    [
        "name",
        "task",
        "out_dir",
        "model",
        "model.hidden",
        "optim.learning_rate",
        "train.steps",
        "data.batch_size",
        "train.distributed.coordinator_address",
        "zzz",
        "model.hidden.0",
    ]
)


def _bombish(levels: int, width: int) -> str:
    return _bomb(levels, width).replace("name: bomb\n", "name: g\n")


_documents = st.one_of(
    _data.map(
        lambda d: (
            yaml.safe_dump({"name": "g", "root": d})
            if not isinstance(d, dict)
            else yaml.safe_dump({"name": "g", **d})
        )
    ),
    _data.map(yaml.safe_dump),
    st.text(max_size=200),
    st.builds(_bombish, st.integers(1, 12), st.integers(1, 12)),
)


def _contract(call) -> None:
    start = time.perf_counter()
    try:
        assert isinstance(call(), Config)
    except ConfigError as exc:
        lines = str(exc).splitlines()
        assert lines and all(len(line) < 600 for line in lines)
    assert time.perf_counter() - start < 2.0


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    doc=_documents,
    overrides=st.lists(
        st.one_of(st.builds(lambda k, v: f"{k}={v}", _keys, _text), _text), max_size=3
    ),
)
def test_generated_documents_give_a_config_or_one_config_error(tmp_path, doc, overrides):
    path = tmp_path / "g.yaml"
    path.write_text(doc, encoding="utf-8", errors="surrogatepass")
    tracemalloc.start()
    try:
        _contract(lambda: load_config(path, [*overrides, f"out_dir={tmp_path}"]))
        assert tracemalloc.get_traced_memory()[1] < 20 * 2**20  # bounded memory
    finally:
        tracemalloc.stop()
