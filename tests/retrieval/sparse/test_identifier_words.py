"""bm25_words with identifiers: runs whole, dotted parts, snake_case / camelCase words, exact lists;
BM25 over them still rank_bm25's formula (C1.1)."""

from __future__ import annotations

import numpy as np
import pytest

from jaxparadigm.retrieval.sparse.bm25 import (
    bm25_index,
    bm25_scores,
    bm25_top,
    bm25_words,
    identifier_parts,
)
from tests.retrieval.ranking.test_bm25_fusion import okapi_reference


@pytest.mark.parametrize(
    "text, want",
    [
        ("snake_case", ["snake_case", "snake", "case"]),
        ("camelCase", ["camelcase", "camel", "case"]),
        ("CliRunner", ["clirunner", "cli", "runner"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("XMLHttpRequest", ["xmlhttprequest", "xml", "http", "request"]),
        ("getURL2", ["geturl2", "get", "url2"]),
        ("os.path.join", ["os.path.join", "os", "path", "join"]),
        (
            "click.testing.CliRunner",
            ["click.testing.clirunner", "click", "testing", "clirunner", "cli", "runner"],
        ),
        (":param multiple: if set", ["param", "multiple", "set"]),
        (":param hide_input:", ["param", "hide_input", "hide", "input"]),
        ("__init__ _private x_", ["__init__", "init", "_private", "private", "x_", "x"]),
        ("Git 2.27.0 notes.", ["git", "2.27.0", "2", "27", "0", "notes"]),
        ("ABC abc A", ["abc", "abc"]),  # "a" is a stopword
        ("get_the_value", ["get_the_value", "get", "value"]),  # the part "the" is a stopword
        ("ÉtéFoo", ["étéfoo", "été", "foo"]),
        ("How do I Copy_Tree a folder?", ["copy_tree", "copy", "tree", "folder"]),
    ],
)
def test_identifier_words_exact(text, want):
    assert bm25_words(text) == want


def test_words_without_identifiers_are_the_lower_cased_runs():
    text = "How do I Copy_Tree a folder? os.path.join CliRunner 2.27.0"
    assert bm25_words(text, identifiers=False) == [
        "copy_tree",
        "folder",
        "os",
        "path",
        "join",
        "clirunner",
        "2",
        "27",
        "0",
    ]


def test_identifier_parts():
    assert identifier_parts("snake_case") == ["snake", "case"]
    assert identifier_parts("HTTPServer") == ["HTTP", "Server"]
    assert identifier_parts("ABC") == ["ABC"] and identifier_parts("abc") == ["abc"]
    assert identifier_parts("__init__") == ["init"]
    assert identifier_parts("aB") == ["a", "B"] and identifier_parts("AbC") == ["Ab", "C"]
    assert identifier_parts("___") == []
    with pytest.raises(TypeError, match="word: got int"):
        identifier_parts(3)


def test_bm25_with_identifiers_is_okapi_over_those_words():
    docs = [
        "class CliRunner: invoke a command for unit testing",
        "def invoke(cli, args): run the command",
        ":param multiple: accept the option multiple times",
        "snake_case for local variables and parameters",
        "a runner of tests",
    ]
    index = bm25_index(docs)
    for query in ["cli runner", "CliRunner", "snake case", "multiple times", "zzz"]:
        want = okapi_reference([bm25_words(d) for d in docs], bm25_words(query))
        np.testing.assert_allclose(bm25_scores(index, query), want, rtol=1e-12, atol=1e-15)
    # a query's "cli runner" meets CliRunner, "snake case" meets snake_case
    assert bm25_top(index, "cli runner", 2) == [0, 4]
    assert bm25_top(index, "snake case", 1) == [3]
    # without identifier words neither identifier is met
    plain = bm25_index(docs, identifiers=False)
    assert plain.identifiers is False and bm25_top(plain, "snake case", 3) == []
    assert bm25_top(plain, "cli runner", 3) == [4, 1]  # "runner", "cli": never CliRunner


def test_bm25_index_refuses_a_non_bool_identifiers():
    with pytest.raises(TypeError, match="identifiers: got .yes., expected True or False"):
        bm25_index(["a"], identifiers="yes")
