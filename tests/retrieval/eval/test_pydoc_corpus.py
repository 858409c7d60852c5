"""Corpus reading and passage chunking (C1.1)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.claims.evidence.pydoc_queries import PYDOC_QUERIES
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.eval.pydoc_corpus import chunk_document, read_corpus, topic_title


def test_pydoc_corpus_has_all_topics():
    names, texts = read_corpus("pydoc")
    assert len(names) == len(texts) >= 70 and "assert" in names
    assert topic_title(texts[names.index("assert")]) == 'The "assert" statement'


def test_queries_are_enough_and_target_real_topics():
    names, _ = read_corpus("pydoc")
    assert len(PYDOC_QUERIES) >= 60
    assert len({q.text for q in PYDOC_QUERIES}) == len(PYDOC_QUERIES)
    assert all(set(q.targets) <= set(names) and q.targets for q in PYDOC_QUERIES)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(st.text(alphabet="abc", min_size=1, max_size=4), max_size=40),
    n=st.integers(1, 12),
)
def test_chunks_partition_the_words(words, n):
    chunks = chunk_document(" ".join(words), n, title="T")
    assert all(c.startswith("T: ") or c == "T" for c in chunks)
    body = [w for c in chunks for w in c.removeprefix("T: ").removeprefix("T").split()]
    assert body == words
    assert len(chunks) == max(1, -(-len(words) // n))


def test_file_corpus(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("first doc\n\n  second doc  \n", encoding="utf-8")
    assert read_corpus(path) == (["line 1", "line 3"], ["first doc", "second doc"])


def test_corpus_errors(tmp_path):
    with pytest.raises(InputError, match="missing.txt'?: no such file"):
        read_corpus(tmp_path / "missing.txt")
    with pytest.raises(InputError, match="not a file"):
        read_corpus(tmp_path)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n")
    with pytest.raises(InputError, match="no non-blank lines"):
        read_corpus(blank)
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputError, match="not UTF-8"):
        read_corpus(binary)
    nul = tmp_path / "nul.txt"
    nul.write_text("a doc\n\x00\x00\n")  # issue 10: a NUL-only document
    with pytest.raises(InputError, match=r"nul.txt' line 2: holds NUL characters"):
        read_corpus(nul)
    with pytest.raises(ValueError, match="chunk_words"):
        chunk_document("a b", 0)
