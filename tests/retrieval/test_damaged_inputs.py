"""Issue 10 (retrieval): damaged index files and cache entries, empty / NUL / [UNK]-only / non-UTF-8
/ very long texts. Each reproducer from the issue is a test that failed before the fix."""

import os
import warnings

import numpy as np
import pytest

from jaxparadigm.app.retrieval_evaluation import format_search, passage_index
from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import SemanticIndex
from jaxparadigm.retrieval.sentence_encoder import UnknownWordPieceWarning

DOCS = ["the cat sat on the mat", "gradient descent with momentum", "database index design"]


@pytest.fixture(scope="module")
def index(encoder):
    return SemanticIndex(encoder, batch_size=4).add(DOCS)


@pytest.fixture
def saved(index, tmp_path):
    return index.save(tmp_path / "idx.npz")


# -- SemanticIndex.load: damaged files -----------------------------------------------------------


def test_load_truncated_zero_byte_and_bit_flipped_name_the_path(saved, encoder):
    raw = saved.read_bytes()
    cases = {
        "truncated": (raw[: len(raw) // 2], "damaged"),  # was BadZipFile without the path
        "empty": (b"", r"empty file \(0 bytes\)"),  # was EOFError
        "flipped": (raw[:3000] + bytes([raw[3000] ^ 0x10]) + raw[3001:], "damaged"),  # bad CRC
    }
    for name, (data, what) in cases.items():
        path = saved.with_name(f"{name}.npz")
        path.write_bytes(data)
        with pytest.raises(InputError, match=rf"{name}.npz: {what}"):
            SemanticIndex.load(path, encoder)


def test_every_damage_is_refused_or_harmless(saved, encoder, index):
    """One flipped bit at 400 places spread over the file, and cuts at 60 lengths: each load is
    refused with InputError or gives back exactly the saved index (a flip in a zip timestamp)."""
    raw = saved.read_bytes()
    path = saved.with_name("fuzz.npz")
    bits = np.linspace(0, 8 * len(raw) - 1, 400).astype(int)
    damaged = [
        raw[: b // 8] + bytes([raw[b // 8] ^ (1 << (b % 8))]) + raw[b // 8 + 1 :] for b in bits
    ]
    damaged += [raw[:n] for n in np.linspace(0, len(raw) - 1, 60).astype(int)]
    refused = 0
    for data in damaged:
        path.write_bytes(data)
        try:
            loaded = SemanticIndex.load(path, encoder)
        except InputError as exc:
            assert "fuzz.npz" in str(exc)
            refused += 1
            continue
        assert loaded.docs == index.docs
        np.testing.assert_array_equal(loaded.embeddings, index.embeddings)
    assert refused > len(damaged) // 2


@pytest.mark.parametrize(
    "corrupt, match",
    [
        (lambda e: e.__setitem__((1, 5), np.nan), r"1 document\(s\) hold NaN/inf \(first: row 1\)"),
        (lambda e: e.__imul__(41.0), r"not unit vectors \(row 0 has norm 41"),  # scores of 41
        (lambda e: e.__setitem__(2, 0.0), r"row 2 has norm 0"),
    ],
)
def test_load_refuses_non_finite_or_non_unit_embeddings(index, encoder, tmp_path, corrupt, match):
    embs = index.embeddings.copy()
    corrupt(embs)
    path = tmp_path / "bad.npz"
    np.savez(path, embeddings=embs, docs=np.array(DOCS))
    with pytest.raises(InputError, match=match):
        SemanticIndex.load(path, encoder)


def test_load_refuses_a_plain_npy_and_non_unicode_docs(index, encoder, tmp_path):
    npy = tmp_path / "one.npz"
    with open(npy, "wb") as f:
        np.save(f, index.embeddings)
    with pytest.raises(InputError, match="one .npy array"):
        SemanticIndex.load(npy, encoder)
    ints = tmp_path / "ints.npz"
    np.savez(ints, embeddings=index.embeddings, docs=np.arange(3))
    with pytest.raises(InputError, match="docs have shape"):
        SemanticIndex.load(ints, encoder)


def test_save_is_atomic(index, saved, monkeypatch):
    before = saved.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies mid-write

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        index.save(saved)
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == [saved.name]  # no temporary file left behind


# -- the pydoc embedding cache -------------------------------------------------------------------


def test_damaged_cache_entry_is_rebuilt_with_a_warning(encoder, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    texts = ["Topic one\nsome words here", "Topic two\nother words there"]
    first, owner = passage_index(encoder, texts, chunk_words=3, cache=True)
    (entry,) = (tmp_path / "jaxparadigm" / "retrieval").glob("*.npz")
    good = entry.read_bytes()
    for damage in (good[: len(good) // 3], b""):
        entry.write_bytes(damage)
        with pytest.warns(UserWarning, match="embedding cache entry rebuilt: .*damaged|empty"):
            again, owner2 = passage_index(encoder, texts, chunk_words=3, cache=True)
        np.testing.assert_array_equal(again.embeddings, first.embeddings)
        np.testing.assert_array_equal(owner2, owner)
        SemanticIndex.load(entry, encoder)  # rewritten whole
    nan = first.embeddings.copy()
    nan[0, 0] = np.nan  # a well-formed file with bad content
    np.savez(entry, embeddings=nan, docs=np.array(first.docs))
    with pytest.warns(UserWarning, match="NaN"):
        passage_index(encoder, texts, chunk_words=3, cache=True)


def test_unwritable_cache_is_not_fatal(encoder, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    with pytest.warns(UserWarning, match="not written"):
        index, _ = passage_index(encoder, ["Topic\nwords"], chunk_words=5, cache=True)
    assert len(index) == 1


# -- empty, NUL, [UNK]-only, non-UTF-8 and very long texts ---------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\x00", "\x00\x00\x00", "\t\n", "\x01", "\u200b"])
def test_texts_without_any_word_piece_are_refused(index, encoder, text):
    with pytest.raises(InputError, match=r"query\[0\] .*no word piece"):
        index.search(text)
    with pytest.raises(InputError, match=r"queries\[1\] .*no word piece"):
        index.scores(["fine", text])
    with pytest.raises(InputError, match=r"docs\[0\] .*no word piece"):
        SemanticIndex(encoder).add([text, "a real document"])


def test_unk_only_query_returns_results_with_a_warning(index):
    with pytest.warns(UnknownWordPieceWarning, match=r"query\[0\] .*no known word piece"):
        hits = index.search("\U0001f600\U0001f680", top_k=2)
    assert len(hits) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownWordPieceWarning)
        index.search("a cat \U0001f600")  # a known word piece: no warning


def test_unk_only_documents_get_one_warning(encoder):
    with pytest.warns(UnknownWordPieceWarning, match=r"docs: 2 of 3 texts, first docs\[0\]") as w:
        SemanticIndex(encoder).add(["\U0001f600", "a cat", "\U0001f680"])
    assert len(w) == 1


def test_non_utf8_text_is_one_clear_error(index):
    query = os.fsdecode(b"caf\xe9 au lait")  # what Python makes of a Latin-1 argv
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 0xe9 at character 3\)"):
        index.search(query)


def test_long_texts_are_not_echoed_in_full(index):
    with pytest.raises(InputError) as exc:
        index.search("\x00" * 100_000)
    assert len(str(exc.value)) < 300 and "100000 characters" in str(exc.value)


def test_cli_search_bad_queries(encoder, tmp_path, capsys):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n".join(DOCS) + "\n")
    for query, match in (
        ("", "no word piece"),
        ("\x00\x00", "no word piece"),
        (os.fsdecode(b"\xff\xfe"), "not UTF-8 text"),
    ):
        assert cli_main(["search", query, "--corpus", str(corpus)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and match in err, err
    assert cli_main(["search", "\U0001f600", "--corpus", str(corpus), "--top-k", "1"]) == 0
    out, err = capsys.readouterr()
    assert "1. [" in out
    assert err.count("\n") == 1 and "warning: query[0]" in err and "[UNK]" in err
    assert cli_main(["search", "cat " * 25_000, "--corpus", str(corpus), "--top-k", "1"]) == 0
    out = capsys.readouterr().out
    assert len(out) < 2_000 and "(100000 characters)" in out.splitlines()[0]


def test_format_search_refuses_before_indexing(encoder, tmp_path):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("one\n")
    with pytest.raises(InputError, match="top_k"):
        format_search("x", corpus=str(corpus), top_k=0)
    with pytest.raises(TypeError, match="query: got int"):
        format_search(3, corpus=str(corpus))
