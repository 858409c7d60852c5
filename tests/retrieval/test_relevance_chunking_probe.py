"""benchmarks/relevance_chunking_probe.py: the structured cuts keep the library's offsets rule
(``text == document[start:end]``), never cross a cut, pack within the window, and window a long
piece on the grid (C1.1)."""

from __future__ import annotations

from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit

from jaxparadigm.retrieval.documents.outline import Section
from jaxparadigm.retrieval.documents.passages import Document
from tests.benchmark_module import load_benchmark

probe = load_benchmark("relevance_chunking_probe")


def words_tokenizer() -> Tokenizer:
    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    return tok


# three sections: "A" (2 words), "B" (3 words, then a blank line and 2 more), "C" (7 words)
TEXT = "a1 a2\nb1 b2 b3\n\nb4 b5\nc1 c2 c3 c4 c5 c6 c7"
A, B, C = 0, TEXT.index("b1"), TEXT.index("c1")
DOC = Document(
    "f.txt",
    TEXT,
    (Section(A, B, 1, "A"), Section(B, C, 1, "B"), Section(C, len(TEXT), 1, "C")),
)


def texts(mode: str, window: int, overlap: int) -> list[str]:
    out = probe.structured([DOC], words_tokenizer(), mode, window, overlap)
    for p in out:
        assert p.text == TEXT[p.start : p.end] and p.source == "f.txt"
    return [p.text for p in out]


def test_cuts_are_section_bounds_and_blank_lines():
    assert probe.cuts(DOC, "sections") == [A, B, C]
    assert probe.cuts(DOC, "paragraphs") == [A, B, TEXT.index("b4"), C]


def test_sections_pack_while_they_fit_and_window_a_long_piece():
    # A + B = 7 words fit in 7; C (7 words) fits alone
    assert texts("sections", 7, 2) == ["a1 a2\nb1 b2 b3\n\nb4 b5", "c1 c2 c3 c4 c5 c6 c7"]
    # window 4: A alone (B would overflow), B (5 words) windowed 4/2, C windowed 4/2
    assert texts("sections", 4, 2) == [
        "a1 a2",
        "b1 b2 b3\n\nb4",
        "b3\n\nb4 b5",
        "c1 c2 c3 c4",
        "c3 c4 c5 c6",
        "c5 c6 c7",
    ]


def test_alone_never_packs_and_paragraphs_cut_at_blank_lines():
    assert texts("alone", 7, 2) == ["a1 a2", "b1 b2 b3\n\nb4 b5", "c1 c2 c3 c4 c5 c6 c7"]
    assert texts("paragraphs", 5, 2) == [
        "a1 a2\nb1 b2 b3",
        "b4 b5",
        "c1 c2 c3 c4 c5",
        "c4 c5 c6 c7",
    ]


def test_the_table_counts_by_hand_and_keeps_by_the_benchs_rule(capsys):
    rows = [
        {"corpus": "prose", "ranks": {"a": [1, 4], "b": [1, 2]}, "passages": {"a": 5, "b": 6}},
        {"corpus": "click", "ranks": {"a": [2], "b": [None]}, "passages": {"a": 3, "b": 4}},
    ]
    probe.print_table(rows, ["a", "b"], "cut", "a")
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[1] == "| cut | prose guides | source code with docstrings | all | passages | kept |"
    )
    assert lines[3] == (
        "| a | 1/2 (0.625, 1.00) | 1/1 (0.500, 1.00) | 2/3 (0.583, 1.00) | 8 | base |"
    )
    # b answers more prose in the top 3 but loses click's only answer: not kept
    assert lines[4] == (
        "| b | 2/2 (0.750, 1.00) | 0/1 (0.000, 0.00) | 2/3 (0.500, 0.67) | 10 | no |"
    )
