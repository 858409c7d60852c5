"""Hostile HTML for :func:`html_readable` (issue 34, "HTML"): an element a browser ends implicitly,
and the comments a browser closes early, must not blank the rest of the page.

Before the fix ``<li role=navigation>Home<li>text</ul><p>...`` counted ``li`` nesting only, so the
navigation element never ended; ``<!--->`` (and ``<!-->``) started a comment that ran to the next
``-->``. Both gave a page of blanks, skipped as "empty".
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval.documents.readable_text import html_readable


def _words(text: str) -> list[str]:
    return html_readable(text).split()


def test_implied_li_end_inside_navigation_keeps_the_page():
    page = "<ul><li role=navigation>Home<li>kitten text</ul><p>more kitten care</p>"
    assert _words(page) == ["kitten", "text", "more", "kitten", "care"]


def test_implied_p_end_inside_navigation_keeps_the_page():
    assert _words("<p role=navigation>Home<div>the body</div>") == ["the", "body"]


@pytest.mark.parametrize("comment", ["<!--->", "<!-->"])
def test_abrupt_empty_comment_does_not_blank_the_page(comment):
    page = f"<p>first</p>{comment}<p>middle words</p><!-- real comment --><p>last</p>"
    assert _words(page) == ["first", "middle", "words", "last"]


def test_bang_comment_end_closes_the_comment():
    assert _words("<p>a</p><!-- hidden --!><p>shown</p>") == ["a", "shown"]


def test_navigation_still_blanked_to_its_real_end():
    page = (
        "<ul><li role=navigation>Home<ul><li>sub</ul>still nav</li><li>item</ul>"
        "<nav><ul><li>a<li>b</ul>nav tail</nav>ok<div role=search><p>q<p>r</div>after"
    )
    assert _words(page) == ["item", "ok", "after"]


def test_stray_end_tags_and_unclosed_elements_change_nothing():
    page = "</nav></li></div><p>one<span>two</p>three</span><nav><b>x</nav>four"
    assert _words(page) == ["one", "two", "three", "four"]


def test_deep_nesting_is_iterative():
    depth = 50_000
    page = "<div>" * depth + "deep" + "</div>" * depth + "<li role=navigation>x<li>y"
    assert _words(page) == ["deep", "y"]


# --- generated pages --------------------------------------------------------------------------

WORD = st.text("abcdefghij", min_size=3, max_size=8).map(lambda w: "w" + w)
# A navigation element, then what ends it (explicitly or as a browser ends it implicitly).
NAV_AND_END = st.sampled_from(
    [
        ("<ul><li role=navigation>{nav}", "<li>"),
        ("<ul><li role=navigation>{nav}", "</li>"),
        ("<ul><li role=navigation>{nav}", "</ul>"),
        ("<p role=navigation>{nav}", "<div>"),
        ("<p role=navigation>{nav}", "</p>"),
        ("<dl><dt role=search>{nav}", "<dd>"),
        ("<table><tr><td role=navigation>{nav}", "<td>"),
        ("<table><tr><td role=navigation>{nav}", "</table>"),
        ("<nav><span>{nav}", "</nav>"),
        ("<div role=navigation><b><i>{nav}", "</div>"),
    ]
)
COMMENT = st.sampled_from(["", "<!--->", "<!-->", "<!-- c -->", "<!---->", "<!-- c --!>"])


@settings(max_examples=150, deadline=None)
@given(NAV_AND_END, st.lists(WORD, min_size=1, max_size=4), COMMENT, st.lists(WORD, min_size=1))
def test_generated_navigation_ends_where_a_browser_ends_it(nav_end, nav_words, comment, body):
    start, end = nav_end
    nav = " ".join(nav_words).upper()  # upper case: cannot be mistaken for a body word
    page = start.format(nav=nav) + comment + end + " ".join(f"<span>{w}</span>" for w in body)
    out = html_readable(page)
    assert len(out) == len(page)
    assert out.split() == body
    assert not re.search("[A-Z]", out)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"<>!-/ ap=\"'&;#x\n", "li", "nav", "role", "<!--", "-->", "&amp;"])
    ).map("".join)
)
def test_generated_markup_soup_keeps_length_and_offsets(page):
    out = html_readable(page)
    assert len(out) == len(page)
    for i, ch in enumerate(out):  # a kept character is the file's own (or a decoded entity)
        assert ch in (" ", page[i]) or page[i] == "&"
        assert (ch == "\n") == (page[i] == "\n")
