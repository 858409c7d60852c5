"""Keyword search, rank fusion and excerpts at their edges (issue 39): where a long segment's cut
begins, a long first segment when no query word matches, mark offsets reported in the passage's
own coordinates, and arguments of the wrong kind named exactly.

Each test names the boundary it pins; each killed a one-line mutant of ``bm25.py``,
``rank_fusion.py`` or ``excerpt.py`` that the earlier tests let through
(``make mutation MODULE=retrieval.keyword_search``).
"""

import pytest

from jaxparadigm.retrieval.ranking.excerpt import best_excerpt, mark_text
from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.sparse.bm25 import bm25_words

# 100 words of 4 characters and a space: word i starts at 5 * i.
WORDS = " ".join(f"w{i:03d}" for i in range(100))


@pytest.mark.parametrize(
    "max_chars, first_word",
    [
        (40, "w048"),  # 250 - 10 = 240: a word start
        (60, "w047"),  # 250 - 15 = 235: a word start
        (100, "w045"),  # 250 - 25 = 225: a word start (a fifth, 20, would start at w046)
        (120, "w044"),  # 250 - 30 = 220
        (18, "w049"),  # 250 - 4 = 246 falls inside w049 (245-249): back to its start, 245
    ],
)
def test_a_long_segment_is_cut_a_quarter_before_the_match(max_chars, first_word):
    """Boundary: the cut begins ``max_chars // 4`` before the matched word, moved back to the start
    of the word it falls in; the excerpt then holds the match and at most ``max_chars``."""
    ex = best_excerpt(WORDS, "w050", max_chars=max_chars)
    assert ex.start == WORDS.index(first_word), (ex.start, ex.text)
    assert len(ex.text) <= max_chars and "w050" in ex.text


def test_no_matching_word_in_a_long_first_segment_cuts_from_its_start():
    """Boundary: no query word at all: the first segment, cut to ``max_chars`` from its start."""
    ex = best_excerpt(WORDS, "zebra", max_chars=42)
    assert ex.start == 0 and ex.text == WORDS[: len(ex.text)] and ex.marks == ()
    assert ex.text == WORDS[:39]  # w000 ... w007: " w008" would end past 42


def test_a_segment_of_exactly_max_chars_is_whole():
    text = "alpha beta gamma"
    ex = best_excerpt(text, "beta", max_chars=len(text))
    assert (ex.start, ex.end, ex.text) == (0, len(text), text)


def test_a_bad_mark_is_reported_in_the_passage_offsets():
    """Boundary: ``offset`` > 0: the message gives the mark as the caller gave it (passage
    offsets), and the range of the text in the same offsets."""
    with pytest.raises(ValueError) as err:
        mark_text("abcdef", [(12, 20)], offset=10)
    assert str(err.value) == ("marks: got (12, 20), expected non-overlapping spans inside [10, 16)")
    assert mark_text("abcdef", [(12, 14)], offset=10) == "ab**cd**ef"


@pytest.mark.parametrize(
    "rankings, kind",
    [
        (iter([[1, 2]]), "list_iterator"),
        ({(1, 2)}, "set"),
        ("ab", "str"),
        ({"a": [1]}, "dict"),
    ],
)
def test_rankings_that_are_not_a_sequence_are_refused(rankings, kind):
    with pytest.raises(TypeError) as err:
        reciprocal_rank_fusion(rankings)
    assert str(err.value) == f"rankings: got {kind}, expected a list of rankings"


def test_bm25_words_names_the_type_and_value():
    with pytest.raises(TypeError) as err:
        bm25_words(b"bytes")
    assert str(err.value) == "text: got bytes b'bytes', expected str"
