"""Passages (C1.1): file collection, JSONL records, token windows with overlap and exact offsets."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.outline import Section
from jaxparadigm.retrieval.documents.passages import Document, split_passages, splitting_tokenizer
from jaxparadigm.retrieval.documents.reading import collect_files, read_documents

WORDS = "broadcasting aligns shapes from the right while gradients flow back through views".split()


def _doc(n_words, seed=0):
    words = [WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n_words)]
    return Document("d.txt", "  " + " ".join(words) + ".\n")


def test_collect_files_recurses_sorted_skips_hidden_and_reports_unknown_suffixes(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    names = (
        "z.md",
        "a.txt",
        "b/c.rst",
        "b/d.jsonl",
        "e.py",
        "f.gz",
        "g.png",
        ".git/x.md",
        ".hidden.md",
    )
    for name in names:
        (tmp_path / name).write_text("x")
    files, skipped = collect_files([tmp_path])
    got = [p.relative_to(tmp_path.resolve()).as_posix() for p in files]
    assert got == ["a.txt", "b/c.rst", "b/d.jsonl", "e.py", "f.gz", "z.md"]  # .gz: issue 35
    assert [(s.path.rsplit("/", 1)[1], s.reason) for s in skipped] == [
        ("g.png", "unsupported type")
    ]
    # an explicitly named file is taken whatever its suffix; a file named twice is read once
    assert collect_files([tmp_path / "f.gz", tmp_path / "f.gz"]) == ([tmp_path / "f.gz"], [])


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda p: [p / "missing"], "no such file or folder"),
        (lambda p: [], "expected a non-empty list"),
        (lambda p: str(p), "expected a non-empty list"),
    ],
)
def test_collect_files_errors(tmp_path, make, match):
    with pytest.raises(InputError, match=match):
        collect_files(make(tmp_path))


def test_read_documents_text_and_jsonl(tmp_path):
    (tmp_path / "a.md").write_text("# Title\nbody", encoding="utf-8")
    lines = [json.dumps({"text": "first"}), "", json.dumps({"text": "second", "id": 7})]
    (tmp_path / "r.jsonl").write_text("\n".join(lines), encoding="utf-8")
    reading = read_documents([tmp_path])
    src = tmp_path.resolve().as_posix()
    assert reading.documents == [
        Document(f"{src}/a.md", "# Title\nbody", (Section(0, 12, 1, "Title"),)),  # its outline
        Document(f"{src}/r.jsonl:1", "first"),  # a JSONL line: no outline (sections None)
        Document(f"{src}/r.jsonl:3", "second"),
    ]
    assert [f.path for f in reading.files] == [f"{src}/a.md", f"{src}/r.jsonl"]
    assert reading.skipped == []


@pytest.mark.parametrize(
    "content, where, match",
    [
        (b"{not json\n", "r.jsonl:1", r"bad JSONL line \(not JSON"),
        (b'{"body": "x"}\n', "r.jsonl:1", r"bad JSONL line \(expected a JSON object with a string"),
        (b'[1, 2]\n{"text": "ok"}\n', "r.jsonl:1", r"bad JSONL line \(expected a JSON object"),
        (b"\xff\xfe binary", "r.jsonl", r"not UTF-8 \(byte 0xff at offset 0\)"),
    ],
)
def test_bad_jsonl_is_skipped_by_line_or_refused_with_strict(tmp_path, content, where, match):
    (tmp_path / "r.jsonl").write_bytes(content)
    reading = read_documents([tmp_path / "r.jsonl"])
    (skip,) = reading.skipped
    assert skip.path.endswith(where)
    assert [d.text for d in reading.documents] == (["ok"] if b"ok" in content else [])
    with pytest.raises(InputError, match=match):
        read_documents([tmp_path / "r.jsonl"], strict=True)


def test_splitting_tokenizer_is_a_copy(minilm_tokenizer):
    minilm_tokenizer.enable_truncation(max_length=7)
    try:
        copy = splitting_tokenizer(minilm_tokenizer)
        assert copy.truncation is None and copy.padding is None
        assert minilm_tokenizer.truncation["max_length"] == 7  # the given one is untouched
        long = " ".join(WORDS * 3)
        assert len(copy.encode(long).ids) > 7
    finally:
        minilm_tokenizer.no_truncation()


def test_windows_on_a_known_document(minilm_tokenizer):
    tok = splitting_tokenizer(minilm_tokenizer)
    doc = _doc(25)
    n = len(tok.encode(doc.text, add_special_tokens=False).ids)
    got = split_passages([doc], tok, chunk_tokens=10, overlap=3)
    # windows start every 7 pieces until one reaches the last piece
    assert len(got) == len(range(0, n - 3, 7))
    for p in got:
        assert p.source == "d.txt" and p.text == doc.text[p.start : p.end]
        assert (
            not p.text[0].isspace() and len(tok.encode(p.text, add_special_tokens=False).ids) <= 10
        )
    assert got[0].start == 2 and got[-1].end == len(doc.text.rstrip())


@settings(max_examples=40, deadline=None)
@given(
    n_words=st.integers(0, 60),
    chunk=st.integers(2, 20),
    overlap_frac=st.floats(0, 0.9),
    seed=st.integers(0, 10),
)
def test_windows_cover_every_piece_with_the_given_overlap(
    minilm_tokenizer, n_words, chunk, overlap_frac, seed
):
    tok = splitting_tokenizer(minilm_tokenizer)
    overlap = min(int(chunk * overlap_frac), chunk - 1)
    doc = _doc(n_words, seed)
    enc = tok.encode(doc.text, add_special_tokens=False)
    got = split_passages([doc], tok, chunk, overlap)
    if not enc.ids:
        assert got == []
        return
    starts = [o[0] for o in enc.offsets]
    first = [starts.index(p.start) for p in got]
    assert first == list(range(0, len(first) * (chunk - overlap), chunk - overlap))
    ends = [o[1] for o in enc.offsets]
    last = [len(ends) - 1 - ends[::-1].index(p.end) for p in got]
    assert all(b - a + 1 == min(chunk, len(ends) - a) for a, b in zip(first, last, strict=True))
    assert last[-1] == len(ends) - 1  # the last window reaches the last piece
    assert len(got) == 1 or last[-2] < len(ends) - 1  # and no window after it


@pytest.mark.parametrize(
    "chunk, overlap, match",
    [(1, 0, "chunk_tokens: got 1"), (8, 8, r"overlap: got 8, expected an int in \[0, 7\]"),
     (8, -1, "overlap: got -1"), (True, 0, "chunk_tokens")],
)  # fmt: skip
def test_window_argument_errors(minilm_tokenizer, chunk, overlap, match):
    with pytest.raises(InputError, match=match):
        split_passages([_doc(3)], splitting_tokenizer(minilm_tokenizer), chunk, overlap)


@settings(max_examples=40, deadline=None)
@given(
    parts=st.lists(
        st.tuples(st.sampled_from(["a", "bc", "déf", "g.h"]),
                  st.sampled_from([" ", "\n\t", "\u00a0", "\u2003", "\x1c", "\u3000"])),
        max_size=25,
    ),
    lead=st.sampled_from(["", " ", "\n"]),
    chunk=st.integers(1, 6),
    overlap_frac=st.floats(0, 0.9),
)  # fmt: skip
def test_word_windows_match_str_split(parts, lead, chunk, overlap_frac):
    # tokenizer=None: the units are str.split's words (the pydoc corpus's chunker); oracle below
    overlap = min(int(chunk * overlap_frac), chunk - 1)
    text = lead + "".join(w + s for w, s in parts)
    got = split_passages([Document("t", text)], None, chunk, overlap)
    words, step = text.split(), chunk - overlap
    firsts = range(0, max(len(words) - overlap, 1), step) if words else []
    assert [p.text.split() for p in got] == [words[i : i + chunk] for i in firsts]
    assert all(p.text == text[p.start : p.end] and p.source == "t" for p in got)


def test_word_windows_take_chunk_one_and_refuse_zero():
    assert [p.text for p in split_passages([Document("t", " x  y ")], None, 1, 0)] == ["x", "y"]
    with pytest.raises(InputError, match="chunk_tokens: got 0"):
        split_passages([Document("t", "x")], None, 0, 0)


def test_passage_contexts_come_from_the_outline_and_a_document_without_one_has_none():
    from jaxparadigm.retrieval.documents.outline import Section
    from jaxparadigm.retrieval.documents.passages import Document, Passage, passage_contexts

    text = "intro words\nbody words"
    outlined = Document("guide.md", text, (Section(0, len(text), 1, "Usage"),))
    plain = Document("rows.jsonl:3", text, None)  # a JSONL line: no outline, no context
    got = passage_contexts(
        [outlined, plain],
        [Passage("guide.md", 12, 22, text[12:22]), Passage("rows.jsonl:3", 0, 5, text[:5])],
    )
    assert got == ["guide.md > Usage", ""]
