"""Readable text and passages at their edges (issue 39): an entity at the file's own offset, a run
of link items of exactly 2 (blanked) against 1 (kept), blank lines inside a run, link-reference
lines, and the exact messages for a wrong argument type.

Each test names the boundary it pins; each killed a one-line mutant of ``readable_text.py`` or
``passages.py`` that the earlier tests let through (``make mutation MODULE=retrieval.readable_text``).
"""

import pytest

from jaxparadigm.retrieval.documents.passages import splitting_tokenizer
from jaxparadigm.retrieval.documents.readable_text import html_readable, markup_boilerplate


@pytest.mark.parametrize(
    "page, readable",
    [
        ("<p>Fish &amp; chips</p>", "   Fish &     chips    "),
        ("<p>caf&#233; &#x41;</p>", "   caf\u00e9      A" + " " * 9),
        ("<p>a&lt;b</p>", "   a<   b    "),
    ],
)
def test_entities_become_their_character_at_their_own_offset(page, readable):
    """Boundary: a reference is decoded where it starts and the rest of it blanked; the text on
    either side stays at the file's offsets (a parser converting references itself would hand
    over text that no longer matches the file, and the words around it would be lost)."""
    assert html_readable(page) == readable


LINK_A = "- [Install](install.md)"
LINK_B = "- <https://example.org/guide>"
PROSE = "Read the guide first."


@pytest.mark.parametrize(
    "lines, kept",
    [
        ([LINK_A], [True]),  # one link item: may be the answer, kept
        ([LINK_A, LINK_B], [False, False]),  # exactly 2: a link list, blanked
        ([LINK_A, "", LINK_B], [False, True, False]),  # a blank line inside the run
        ([LINK_A, "", "", LINK_B, LINK_A], [False, True, True, False, False]),
        ([LINK_A, PROSE, LINK_B], [True, True, True]),  # prose ends the run: two runs of 1
        ([PROSE, LINK_A, "", LINK_B, PROSE], [True, False, True, False, True]),
    ],
)
def test_runs_of_link_items_are_blanked_from_two(lines, kept):
    text = "\n".join(lines)
    out = markup_boilerplate(text).split("\n")
    assert len(out) == len(lines)
    for line, got, keep in zip(lines, out, kept, strict=True):
        assert got == (line if keep else " " * len(line)), (line, got)


def test_link_reference_lines_are_blanked_and_prose_kept():
    text = "[guide]: https://example.org/guide\nSee [guide].\n.. _install: https://x.org\nEnd"
    assert markup_boilerplate(text) == (" " * 34 + "\nSee [guide].\n" + " " * 26 + "\nEnd")


@pytest.mark.parametrize("function", [html_readable, markup_boilerplate])
def test_a_non_string_is_refused_naming_its_type(function):
    with pytest.raises(TypeError) as err:
        function(b"<p>bytes</p>")
    assert str(err.value) == "text: got bytes, expected str"


def test_splitting_tokenizer_refuses_a_non_tokenizer_naming_its_type():
    with pytest.raises(TypeError) as err:
        splitting_tokenizer("bert-base-uncased")
    assert str(err.value) == "tokenizer: got str, expected tokenizers.Tokenizer"
