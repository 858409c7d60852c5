"""Outlines and contexts: HTML headings, Markdown/RST/plain-text headings, Python class/def, and
the context string of a passage (exact sections and strings) (C1.1)."""

from __future__ import annotations

import pytest

from jaxparadigm.retrieval.documents.outline import (
    CONTEXT_CHARS,
    Section,
    context_at,
    outline,
    with_context,
)

HTML = (
    "<html><head><title>Guide &amp; Manual</title></head><body>\n"
    "<h1>Guide &amp; Manual</h1><p>intro</p>\n"
    "<h2>1. Setup</h2><p>setup text</p>\n"
    "<h3>1.1 <code>-g</code> flag</h3><p>compile with -g</p>\n"
    "<h2>2. Run</h2><p>run text</p>\n"
    "</body></html>"
)


def test_html_sections_exact():
    got = outline("html", HTML)
    end = len(HTML)
    h1, s1, s11, s2 = (HTML.index(t) for t in ("<h1>", "<h2>1.", "<h3>", "<h2>2."))
    assert got == [
        Section(0, end, 0, "Guide & Manual"),
        Section(h1, end, 1, "Guide & Manual"),
        Section(s1, s2, 2, "1. Setup"),
        Section(s11, s2, 3, "1.1 -g flag"),
        Section(s2, end, 2, "2. Run"),
    ]
    at = HTML.index("compile with")
    # the <h1> repeating the <title> is named once
    assert (
        context_at("/d/guide.html", got, at)
        == "guide.html > Guide & Manual > 1. Setup > 1.1 -g flag"
    )
    assert context_at("/d/guide.html", got, HTML.index("run text")) == (
        "guide.html > Guide & Manual > 2. Run"
    )


def test_html_abrupt_comment_does_not_hide_headings():
    text = "<!--><h2>Kept</h2><p>x</p>"
    assert outline("html", text) == [Section(5, len(text), 2, "Kept")]


MARKDOWN = """# Title

Intro.

```
# not a heading (code)
```

## Part A

text a

Sub part
--------

text sub

### Deep `x`

deep text

## Part B
"""


def test_markdown_sections_exact():
    got = outline("markup", MARKDOWN)
    at = MARKDOWN.index
    assert got == [
        Section(0, len(MARKDOWN), 1, "Title"),
        Section(at("## Part A"), at("Sub part"), 2, "Part A"),  # a setext "---" is level 2 too
        Section(at("Sub part"), at("## Part B"), 2, "Sub part"),
        Section(at("### Deep"), at("## Part B"), 3, "Deep `x`"),
        Section(at("## Part B"), len(MARKDOWN), 2, "Part B"),
    ]
    assert context_at("x/a.md", got, at("deep text")) == "a.md > Title > Sub part > Deep `x"


RELNOTES = """Git 2.27 Release Notes
======================

Updates since v2.26
-------------------

Backward compatibility notes

 * item one.

UI, Workflows & Features

 * item two.

Fixes since v2.26
-----------------

 * fix.
"""


def test_plain_text_setext_and_title_lines():
    got = outline("text", RELNOTES)
    at = RELNOTES.index
    n = len(RELNOTES)
    assert got == [
        Section(0, n, 1, "Git 2.27 Release Notes"),
        Section(at("Updates"), at("Fixes"), 2, "Updates since v2.26"),
        Section(at("Backward"), at("UI,"), 7, "Backward compatibility notes"),
        Section(at("UI,"), at("Fixes"), 7, "UI, Workflows & Features"),
        Section(at("Fixes"), n, 2, "Fixes since v2.26"),
    ]
    assert context_at("/r/2.27.0.txt", got, at("item two")) == (
        "2.27.0.txt > Git 2.27 Release Notes > Updates since v2.26 > UI, Workflows & Features"
    )
    # a sentence line (ends with a period) or an indented line is no title; markup has none
    assert outline("text", "a\n\nNot a title.\n\n  indented\n\nword\n") == [
        Section(0, 29, 7, "a"),  # to the next title line
        Section(29, 34, 7, "word"),  # to the end (34 characters)
    ]
    assert outline("markup", "\nBackward notes\n\n") == []


PYTHON = '''"""Module."""
import os


class Runner:
    """Runs things."""

    @staticmethod
    def invoke(cli):
        """Invoke it."""
        return cli

    async def later(self):
        pass


def top():
    def inner():
        return 1
    return inner
'''


def test_python_class_and_def_sections():
    got = outline("python", PYTHON)
    at = PYTHON.index
    after_pass = at("        pass\n") + len("        pass\n")  # a section ends after its last line
    assert got == [
        Section(at("class Runner"), after_pass, 1, "class Runner"),
        Section(at("    @staticmethod"), at("\n\n    async def") + 1, 2, "def invoke"),
        Section(at("    async def"), after_pass, 2, "def later"),
        Section(at("def top"), len(PYTHON), 1, "def top"),
        Section(at("    def inner"), at("    return inner"), 2, "def inner"),
    ]
    assert context_at("/p/run.py", got, at("Invoke it")) == "run.py > class Runner > def invoke"
    assert context_at("/p/run.py", got, 0) == "run.py"  # module level: the file name
    assert outline("python", "def broken(:\n") == []  # not Python: no sections
    assert outline("jsonl", "{}") == [] and outline("text", "") == []


def test_context_is_capped_dropping_outer_titles_first():
    long = [Section(0, 10, lv, f"T{lv} " + "x" * 70) for lv in range(1, 5)]
    got = context_at("f.md", long, 0)
    assert len(got) <= CONTEXT_CHARS
    assert got == "f.md > " + " > ".join(f"T{lv} " + "x" * 70 for lv in (3, 4))
    cut = context_at("f.md", [Section(0, 10, 1, "y" * 300)], 0)
    assert cut == "f.md > " + "y" * 80  # a title is cut to TITLE_CHARS
    assert context_at("f.md", [Section(5, 10, 1, "Later")], 4) == "f.md"  # not yet started
    assert context_at("f.md", [Section(5, 10, 1, "Later")], 10) == "f.md"  # ended


def test_with_context():
    assert with_context("a.md > Intro", "text") == "a.md > Intro\ntext"
    assert with_context("", "text") == "text"
    with pytest.raises(TypeError, match="text: got int"):
        outline("html", 3)
