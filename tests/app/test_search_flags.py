"""``search``/``serve``'s search flags set SearchOptions fields (app.cli.SEARCH_FLAGS): every field
has a flag, a flag not given leaves its field's default, the help states the type's defaults, and
a bad value is the type's one line naming the flag (exit 2) before any index or model loads."""

from __future__ import annotations

import argparse
import dataclasses
import re

import pytest

from jaxparadigm.app.search_flags import SEARCH_FLAGS
from jaxparadigm.cli import build_parser, main
from jaxparadigm.retrieval.search_options import MODES, SEARCH_DTYPES, SearchOptions


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", ["search", "serve"])
def test_every_field_has_one_flag_whose_dest_is_the_field(command):
    actions = {a.option_strings[0]: a for a in _subparser(command)._actions if a.option_strings}
    assert list(SEARCH_FLAGS) == list(SearchOptions.keys())
    for field, flag in SEARCH_FLAGS.items():
        assert actions[flag].dest == field and actions[flag].default is argparse.SUPPRESS


@pytest.mark.parametrize("command", ["search", "serve"])
def test_the_help_states_the_types_defaults_and_choices(command):
    helps = {
        a.option_strings[0]: " ".join((a.help or "").split())
        for a in _subparser(command)._actions
        if a.option_strings
    }
    defaults = SearchOptions()
    assert f"{defaults.mode} (default:" in helps["--mode"]
    assert "|".join(MODES) == _subparser(command)._option_string_actions["--mode"].metavar
    assert f"(default: {defaults.k})" in helps["--top-k"]
    assert f"(default: {defaults.depth})" in helps["--depth"]
    assert f"(default: {defaults.excerpt_chars})" in helps["--excerpt-chars"]
    assert helps["--dtype"].endswith(f"(default: {defaults.dtype})")
    assert "|".join(SEARCH_DTYPES) == _subparser(command)._option_string_actions["--dtype"].metavar
    assert (
        defaults.excerpts and "default: each hit carries its best excerpt" in helps["--no-excerpts"]
    )
    assert not defaults.approx and not defaults.stream and defaults.nprobe == "default"


def test_flags_not_given_leave_the_defaults_and_given_ones_set_their_fields():
    from jaxparadigm.app.search_flags import given_options, option_argv, search_options

    args = build_parser().parse_args(["search", "q", "--index", "idx"])
    assert given_options(args) == {} and search_options(args, None) == SearchOptions()
    argv = ["search", "q", "--index", "i", "--mode", "dense", "--top-k", "7", "--nprobe", "3"]
    argv += ["--depth", "9", "--no-excerpts", "--excerpt-chars", "80", "--dtype", "int8"]
    args = build_parser().parse_args([*argv, "--stream"])
    want = SearchOptions(
        mode="dense", k=7, nprobe=3, depth=9, excerpts=False, excerpt_chars=80, dtype="int8"
    )
    assert search_options(args, None) == dataclasses.replace(want, stream=True)
    again = build_parser().parse_args(["search", "q", "--index", "i", *option_argv(args)])
    assert search_options(again, None) == search_options(args, None)  # a worker's argv
    group = build_parser().parse_args(["serve", "--index", "i", "--top-k", "3"])
    assert search_options(group, 2) == SearchOptions(mode="dense", k=3)  # a group: dense


@pytest.mark.parametrize(
    "argv, line",
    [
        (["--top-k", "0"], "--top-k: got 0, expected an int >= 1"),
        (["--mode", "bm25"], "--mode: got 'bm25', expected one of 'hybrid', 'dense'"),
        (["--dtype", "f16"], "--dtype: got 'f16', expected one of 'float32', 'bfloat16', 'int8'"),
        (["--depth", "-2"], "--depth: got -2, expected an int >= 1"),
        (
            ["--approx"],
            "--approx=True: approximates the dense ranking alone, but --mode='hybrid'; "
            "expected --mode='dense'",
        ),
    ],
)
@pytest.mark.parametrize("command", ["search", "serve"])
def test_a_bad_flag_is_the_types_one_line_before_anything_loads(command, argv, line, capsys):
    head = ["search", "q"] if command == "search" else ["serve"]
    assert main([*head, "--index", "/nonexistent/idx", *argv]) == 2
    err = capsys.readouterr().err
    assert err == f"jaxparadigm {command}: error: {line}\n"


def test_a_search_option_without_an_index_is_refused_naming_it(capsys):
    assert main(["search", "q", "--depth", "5"]) == 2
    assert capsys.readouterr().err == (
        "jaxparadigm search: error: --depth: searches an index; add --index DIR (built by "
        "`index build`)\n"
    )


@pytest.mark.parametrize("command", ["search", "serve"])
def test_a_group_refuses_hybrid_with_the_types_one_line(command, capsys):
    head = ["search", "q"] if command == "search" else ["serve"]
    argv = [*head, "--index", "/nonexistent/idx", "--num-processes", "2", "--mode", "hybrid"]
    assert main(argv) == 2
    with pytest.raises(Exception) as want:
        SearchOptions.for_process_group({"mode": "hybrid"}, 2, spelled=SEARCH_FLAGS)
    assert capsys.readouterr().err == f"jaxparadigm {command}: error: {want.value}\n"
    assert re.match(
        r"--mode='hybrid': the BM25 ranking of hybrid needs every passage", str(want.value)
    )
