"""Issue 10 (retrieval): damaged index files and cache entries, empty / NUL / [UNK]-only / non-UTF-8
/ very long texts. Each reproducer from the issue is a test that failed before the fix."""

import json
import os
import shutil
import warnings

import numpy as np
import pytest

from jaxparadigm.app.search_command_output import format_search
from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import SemanticIndex
from jaxparadigm.retrieval.encoder.sentence_encoder import UnknownWordPieceWarning
from jaxparadigm.retrieval.eval.chunked_index import passage_index
from jaxparadigm.retrieval.index.store import sha256_file

DOCS = ["the cat sat on the mat", "gradient descent with momentum", "database index design"]


@pytest.fixture(scope="module")
def index(encoder):
    return SemanticIndex(encoder, batch_size=4).add(DOCS)


@pytest.fixture
def saved(index, tmp_path):
    return index.save(tmp_path / "idx")


def _files(folder):
    """The saved index's files: the manifest and the shard's embeddings and passages."""
    (npy,) = folder.glob("shard_*.npy")
    return {"manifest": folder / "manifest.json", "npy": npy, "jsonl": npy.with_suffix(".jsonl")}


def _rewrite_shard(folder, embeddings=None, jsonl=None):
    """Replace the shard's content *and* its manifest checksums: well-formed, bad content."""
    files = _files(folder)
    if embeddings is not None:
        with open(files["npy"], "wb") as fh:
            np.save(fh, embeddings)
    if jsonl is not None:
        files["jsonl"].write_bytes(jsonl)
    m = json.loads(files["manifest"].read_text())
    m["shards"][0]["sha256"] = {k: sha256_file(files[v]) for k, v in
                                (("embeddings", "npy"), ("passages", "jsonl"))}  # fmt: skip
    files["manifest"].write_text(json.dumps(m))


# -- SemanticIndex.load: damaged files -----------------------------------------------------------


def test_load_truncated_zero_byte_and_bit_flipped_name_the_path(saved, encoder):
    raw = {k: p.read_bytes() for k, p in _files(saved).items()}
    npy, jsonl = raw["npy"], raw["jsonl"]
    cases = {
        "truncated": ("npy", npy[: len(npy) // 2], "fails its checksum"),  # was BadZipFile
        "empty": ("manifest", b"", "manifest.json: not valid JSON"),  # was EOFError
        "emptyshard": ("npy", b"", "fails its checksum"),
        "flipped": ("npy", npy[:3000] + bytes([npy[3000] ^ 0x10]) + npy[3001:], "checksum"),
        "flippedtext": ("jsonl", jsonl[:30] + bytes([jsonl[30] ^ 0x01]) + jsonl[31:], "checksum"),
    }
    for name, (kind, data, what) in cases.items():
        path = shutil.copytree(saved, saved.with_name(name))
        _files(path)[kind].write_bytes(data)
        with pytest.raises(InputError, match=rf"/{name}[/:].*{what}"):
            SemanticIndex.load(path, encoder)


def test_every_damage_is_refused_or_harmless(saved, encoder, index):
    """One flipped bit at 400 places spread over the folder's three files, and cuts at 60 lengths
    of each: each load is refused with InputError naming the folder or gives back exactly the
    saved index (a flip in a field the load does not read, e.g. the model's name)."""
    path = shutil.copytree(saved, saved.with_name("fuzz"))
    files = _files(path)
    raw = {k: p.read_bytes() for k, p in files.items()}
    joined = [(k, i) for k, data in raw.items() for i in range(len(data))]
    damaged = []
    for b in np.linspace(0, 8 * len(joined) - 1, 400).astype(int):
        kind, i = joined[b // 8]
        data = raw[kind]
        damaged.append((kind, data[:i] + bytes([data[i] ^ (1 << (b % 8))]) + data[i + 1 :]))
    for kind, data in raw.items():
        damaged += [(kind, data[:n]) for n in np.linspace(0, len(data) - 1, 60).astype(int)]
    refused = 0
    for kind, data in damaged:
        files[kind].write_bytes(data)
        try:
            loaded = SemanticIndex.load(path, encoder)
        except InputError as exc:
            assert "fuzz" in str(exc)
            refused += 1
            continue
        finally:
            files[kind].write_bytes(raw[kind])
        assert loaded.docs == index.docs
        np.testing.assert_array_equal(loaded.embeddings, index.embeddings)
    assert refused > len(damaged) // 2


@pytest.mark.parametrize(
    "corrupt, match",
    [
        (lambda e: e.__setitem__((1, 5), np.nan), r"row 1 has norm nan"),
        (lambda e: e.__imul__(41.0), r"row 0 has norm 41"),  # scores of 41
        (lambda e: e.__setitem__(2, 0.0), r"row 2 has norm 0"),
    ],
)
def test_load_refuses_non_finite_or_non_unit_embeddings(saved, index, encoder, corrupt, match):
    embs = index.embeddings.copy()
    corrupt(embs)
    _rewrite_shard(saved, embeddings=embs)
    with pytest.raises(InputError, match=match):
        SemanticIndex.load(saved, encoder)


def test_load_refuses_a_plain_file_and_non_string_docs(index, encoder, saved, tmp_path):
    npy = tmp_path / "one.npz"
    with open(npy, "wb") as f:
        np.save(f, index.embeddings)
    with pytest.raises(InputError, match="one.npz: a file, not a saved index"):
        SemanticIndex.load(npy, encoder)
    lines = [json.loads(line) for line in _files(saved)["jsonl"].read_text().splitlines()]
    lines[1]["text"] = 3
    _rewrite_shard(saved, jsonl="".join(json.dumps(x) + "\n" for x in lines).encode())
    with pytest.raises(InputError, match="line 2: field 'text' is int, expected str"):
        SemanticIndex.load(saved, encoder)


def test_save_is_atomic(index, saved, monkeypatch, encoder):
    def files():  # the lock file only says who last held the lock
        return {p.name: p.read_bytes() for p in saved.iterdir() if p.name != "lock"}

    before = files()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies mid-write

    monkeypatch.setattr(np, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        SemanticIndex(encoder, batch_size=4).add(DOCS[:1]).save(saved)
    # the old index, unchanged; no temporary file left behind
    assert files() == before
    monkeypatch.undo()
    assert SemanticIndex.load(saved, encoder).docs == index.docs


# -- the pydoc embedding cache -------------------------------------------------------------------


def test_damaged_cache_entry_is_rebuilt_with_a_warning(encoder, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    texts = ["Topic one\nsome words here", "Topic two\nother words there"]
    first, owner = passage_index(encoder, texts, chunk_words=3, cache=True)
    (entry,) = (tmp_path / "jaxparadigm" / "retrieval").iterdir()
    for kind, what in (("npy", "damaged"), ("manifest", "not valid JSON")):
        file = _files(entry)[kind]
        good = file.read_bytes()
        for damage in (good[: len(good) // 3], b""):
            file.write_bytes(damage)
            with pytest.warns(UserWarning, match=f"embedding cache entry rebuilt: .*{what}"):
                again, owner2 = passage_index(encoder, texts, chunk_words=3, cache=True)
            np.testing.assert_array_equal(again.embeddings, first.embeddings)
            np.testing.assert_array_equal(owner2, owner)
            SemanticIndex.load(entry, encoder)  # rewritten whole
    nan = first.embeddings.copy()
    nan[0, 0] = np.nan  # a well-formed file with bad content
    _rewrite_shard(entry, embeddings=nan)
    with pytest.warns(UserWarning, match="norm nan"):
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
