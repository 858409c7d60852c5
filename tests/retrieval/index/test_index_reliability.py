"""Issue 24 (findings 1, 2, 6, 8-14, 18's BrokenPipe) and issue 25 (indexing real folders): the
persistent index holds to the input contract. Each test reproduces a finding that failed on main
0a67870. The hash-seeded stand-in encoder (conftest.py) is used: encoding is not the point here."""

import json
import os
import re
import shutil
import sys
import warnings

import numpy as np
import pytest

from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents import reading as document_files
from jaxparadigm.retrieval.documents.reading import read_documents
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.index.store import (
    index_lock,
    read_manifest,
    sha256_file,
    shard_passages,
    verify_shards,
)
from tests.retrieval.conftest import HashEncoder

KW = {"chunk_tokens": 24, "overlap": 4, "shard_rows": 8}
WORDS = "broadcasting aligns shapes from the right while gradients flow back through views".split()


def _text(n, seed=0):
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n)) + "."


def _every_passage(index_dir):
    m = read_manifest(index_dir)
    return [p for s in m["shards"] for p in shard_passages(index_dir, s)]


def _rewrite(index_dir, edit):
    """Apply ``edit`` to the manifest dict and write it back."""
    path = index_dir / "manifest.json"
    m = json.loads(path.read_text())
    edit(m)
    path.write_text(json.dumps(m))


# -- 1: canonical identity -----------------------------------------------------------------------


def test_one_file_spelled_four_ways_is_indexed_once(tmp_path, hash_encoder, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "d0.txt").write_text(_text(60))
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    spellings = ["docs/d0.txt", str(docs / "d0.txt"), "docs/../docs/d0.txt", "elsewhere/../docs"]
    m = build_index(spellings, tmp_path / "idx", hash_encoder, **KW)
    single = build_index([docs / "d0.txt"], tmp_path / "single", hash_encoder, **KW)
    assert [s["source"] for s in m["sources"]] == [os.path.realpath(docs / "d0.txt")]
    assert m["count"] == single["count"] > 2  # was 4x: one passage listed per spelling
    monkeypatch.chdir(other)  # the same file from another working directory
    with pytest.raises(InputError) as err:
        add_to_index(tmp_path / "idx", ["../docs/d0.txt"], hash_encoder)
    real = os.path.realpath(docs / "d0.txt")
    assert str(err.value) == f"nothing to add: {real} is already indexed (unchanged)"
    shutil.copy(docs / "d0.txt", other / "copy.txt")  # same bytes, new path: a reported duplicate
    (other / "new.txt").write_text(_text(30, seed=3))
    m = add_to_index(tmp_path / "idx", ["."], hash_encoder)
    assert [(s["path"][-8:], s["reason"]) for s in m["skipped"]] == [
        ("copy.txt", "duplicate content")
    ]
    assert m["skipped"][0]["detail"].endswith("docs/d0.txt")
    assert [s["source"][-7:] for s in m["sources"]] == ["/d0.txt", "new.txt"]


# -- 2 and 10: bytes-exact reading ---------------------------------------------------------------


def test_crlf_passages_point_at_the_files_own_characters(tmp_path, hash_encoder):
    path = tmp_path / "crlf.txt"
    path.write_bytes("\r\n".join(_text(8, seed=i) for i in range(12)).encode())
    build_index([path], tmp_path / "idx", hash_encoder, **KW)
    own = path.read_bytes().decode("utf-8")
    passages = _every_passage(tmp_path / "idx")
    assert len(passages) > 3 and "\r\n" in "".join(p.text for p in passages)
    assert all(own[p.start : p.end] == p.text for p in passages)  # 0 of 12 matched before


def test_jsonl_with_line_separators_inside_strings_is_accepted(tmp_path):
    texts = ["one\u2028two", "three\u2029four", "five\u0085six", "plain"]
    lines = [json.dumps({"text": t}, ensure_ascii=False) for t in texts]
    (tmp_path / "r.jsonl").write_bytes("\r\n".join(lines).encode("utf-8"))
    reading = read_documents([tmp_path / "r.jsonl"], strict=True)
    assert [d.text for d in reading.documents] == texts
    assert [d.source.rsplit(":", 1)[1] for d in reading.documents] == ["1", "2", "3", "4"]


# -- 6: an interrupted add never locks the index -------------------------------------------------


def test_interrupted_add_whose_input_moved_rolls_back(tmp_path, minilm_tokenizer):
    a, b, c = (tmp_path / n for n in ("a.txt", "b.txt", "c.txt"))
    for i, p in enumerate((a, b, c)):
        p.write_text(_text(90, seed=i))
    out = tmp_path / "idx"
    base = build_index([a], out, HashEncoder(minilm_tokenizer), **KW)
    with pytest.raises(KeyboardInterrupt):
        add_to_index(out, [b], HashEncoder(minilm_tokenizer, fail_after=1))
    assert read_manifest(out)["status"] == "building"
    b.rename(tmp_path / "moved.txt")
    with pytest.warns(UserWarning, match=f"searching the {base['count']} passages indexed before"):
        searcher = IndexSearcher(out)  # was: "the build was interrupted", search refused
    assert len(searcher) == base["count"]
    with pytest.raises(InputError, match="already holds an index of"):
        build_index([c], out, HashEncoder(minilm_tokenizer), **KW)
    with pytest.warns(UserWarning, match="rolled back an interrupted `index add`"):
        m = add_to_index(out, [c], HashEncoder(minilm_tokenizer))
    ref = tmp_path / "ref"
    build_index([a], ref, HashEncoder(minilm_tokenizer), **KW)
    want = add_to_index(ref, [c], HashEncoder(minilm_tokenizer))
    assert m["shards"] == want["shards"] and m["sources"] == want["sources"]
    assert list(verify_shards(out, m)) and sorted(p.name for p in out.glob("shard_*")) == sorted(
        s["name"] + e for s in m["shards"] for e in (".npy", ".jsonl")
    )


# -- 8, 9, 11: the manifest and shards are untrusted input ---------------------------------------


@pytest.fixture
def small_index(tmp_path, hash_encoder):
    (tmp_path / "d.txt").write_text(_text(300))
    out = tmp_path / "idx"
    build_index([tmp_path / "d.txt"], out, hash_encoder, **KW)
    return out


@pytest.mark.parametrize("name", ["../outside/secret", "ABSOLUTE"])
def test_shard_names_must_be_plain_file_names_inside_the_index(small_index, tmp_path, name):
    outside = tmp_path / "outside"
    outside.mkdir()
    first = read_manifest(small_index)["shards"][0]["name"]
    for ext in (".npy", ".jsonl"):
        shutil.copy(small_index / (first + ext), outside / ("secret" + ext))
    name = str(outside / "secret") if name == "ABSOLUTE" else name
    _rewrite(small_index, lambda m: m["shards"][0].__setitem__("name", name))
    with pytest.raises(
        InputError, match=r"field shards\[0\].name: got '(\.\./|/).*expected a file name"
    ):
        IndexSearcher(small_index)


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda e: e.__setitem__((3, 1), np.nan), r"row 3 has norm nan"),
        (lambda e: e.__setitem__(5, e[5] * 1000), r"row 5 has norm 1000"),
        (lambda e: e.__setitem__(0, e[0] * 1.01), r"row 0 has norm 1.01"),
    ],
)
def test_nan_or_non_unit_rows_are_refused_naming_shard_and_row(small_index, damage, match):
    shard = read_manifest(small_index)["shards"][1]
    path = small_index / (shard["name"] + ".npy")
    emb = np.load(path)
    damage(emb)
    np.save(path, emb)
    digest = sha256_file(path)  # the checksum recomputed: only the schema check can catch it
    _rewrite(small_index, lambda m: m["shards"][1]["sha256"].__setitem__("embeddings", digest))
    with pytest.raises(InputError, match=rf"shard {shard['name']}: {match}"):
        IndexSearcher(small_index)


MANIFEST_DAMAGE = {
    "shard_rows": (lambda m: m.pop("shard_rows"), r"field shard_rows: got '\(missing\)'"),
    "shard name": (lambda m: m["shards"][0].pop("name"), r"field shards\[0\].name"),
    "sha256": (lambda m: m["shards"][1].pop("sha256"), r"field shards\[1\].sha256"),
    "model": (lambda m: m.pop("model"), r"field model"),
    "count type": (lambda m: m.__setitem__("count", "16"), r"field count: got '16'"),
    "rows type": (lambda m: m["shards"][0].__setitem__("rows", 8.0), r"field shards\[0\].rows"),
    "model type": (lambda m: m.__setitem__("model", []), r"field model: got \[\]"),
    "empty pending": (
        lambda m: m.update(status="building", pending={}),
        r"field pending.plan_sha256",
    ),
    "source type": (lambda m: m["sources"].__setitem__(0, 3), r"field sources\[0\]: got 3"),
    "dim": (lambda m: m["model"].__setitem__("dim", True), r"field model.dim: got True"),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_DAMAGE))
def test_damaged_manifest_is_one_input_error_naming_the_field(small_index, case):
    edit, match = MANIFEST_DAMAGE[case]
    _rewrite(small_index, edit)
    with pytest.raises(InputError, match=match):
        read_manifest(small_index)


@pytest.mark.parametrize(
    "line, match",
    [
        (b"{bad", r"line 2: not a JSON line"),
        (b'{"source": 1, "start": 0, "end": 1, "text": "x"}', r"line 2: field 'source' is int"),
        (b'{"source": "s", "start": 0, "end": 1}', r"line 2: got \['end', 'source', 'start'\]"),
        (b'{"source": "s", "start": 5, "end": 1, "text": "x"}', r"line 2: offsets \[5:1\]"),
    ],
)
def test_damaged_passages_file_with_recomputed_sha_names_the_line(small_index, line, match):
    shard = read_manifest(small_index)["shards"][0]
    path = small_index / (shard["name"] + ".jsonl")
    lines = path.read_bytes().split(b"\n")
    lines[1] = line
    path.write_bytes(b"\n".join(lines))
    digest = sha256_file(path)
    _rewrite(small_index, lambda m: m["shards"][0]["sha256"].__setitem__("passages", digest))
    with pytest.raises(InputError, match=match):
        shard_passages(small_index, read_manifest(small_index)["shards"][0])


def test_cli_damaged_manifest_exits_2_with_one_line(small_index, capsys):
    _rewrite(small_index, lambda m: m["shards"][0].pop("name"))
    assert cli_main(["index", "info", str(small_index)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field shards[0].name" in err


# -- 12, 25: a real folder: problems collected, build continues ----------------------------------

HTML = (
    "<html><head><title>Kitten care</title><style>p {color: red}</style></head><body>"
    "<nav><a href='/'>Home</a> <a href='/about'>About navigation</a></nav>\n"
    "<p>A kitten sleeps most of the day.</p><script>var tracking = 1;</script>"
    "<div role='navigation'><ul><li>sidebar link</li></ul></div>"
    "<footer>copyright boilerplate</footer></body></html>"
)
MD = (
    "# Views\n\nBroadcasting aligns shapes from the right.\n\n- [Home](index.md)\n"
    "- [API](api.md)\n- <https://example.org/docs>\n\n[api]: https://example.org/api\n"
    ".. _ref: https://example.org/rst\n"
)


@pytest.fixture
def mixed_folder(tmp_path):
    root = tmp_path / "mixed"
    (root / "sub").mkdir(parents=True)
    (root / "guide.md").write_text(MD)
    (root / "page.html").write_text(HTML)
    (root / "tool.py").write_text('def f():\n    """Return the gradient."""\n    return 1  # ok\n')
    (root / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (root / "empty.txt").write_bytes(b"")
    (root / "records.jsonl").write_text('{"text": "a good record"}\n{oops\n')
    (root / "image.png").write_bytes(b"\x89PNG\r\n")
    (root / "sub" / "copy.md").write_text(MD)
    (root / "secret.txt").write_text("no access")
    (root / "secret.txt").chmod(0)
    (root / "gone.md").symlink_to(root / "missing.md")
    return root


def _deny(monkeypatch, name):
    """chmod 000 does not stop root: make reading ``name`` fail as it does for other users."""
    real = document_files._file_bytes

    def reader(path):
        if path.name == name:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(document_files, "_file_bytes", reader)


def test_mixed_folder_builds_and_reports_every_skipped_file(
    mixed_folder, tmp_path, hash_encoder, monkeypatch
):
    if os.geteuid() == 0:
        _deny(monkeypatch, "secret.txt")
    m = build_index([mixed_folder], tmp_path / "idx", hash_encoder, **KW)
    reasons = {s["path"].rsplit("/mixed/", 1)[1]: s["reason"] for s in m["skipped"]}
    assert reasons == {
        "latin1.txt": "not UTF-8",
        "empty.txt": "empty",
        "records.jsonl:2": "bad JSONL line",
        "image.png": "unsupported type",
        "sub/copy.md": "duplicate content",
        "secret.txt": "unreadable",
        "gone.md": "dangling symlink",
    }
    passages = _every_passage(tmp_path / "idx")
    by_file = {}
    for p in passages:
        by_file.setdefault(p.source.rsplit("/", 1)[1], []).append(p)
    assert sorted(by_file) == ["guide.md", "page.html", "records.jsonl:1", "tool.py"]
    html_text = " ".join(" ".join(p.text.split()) for p in by_file["page.html"])
    assert "kitten sleeps" in html_text and "Kitten care" in html_text
    for junk in ("Home", "navigation", "tracking", "color", "sidebar", "copyright", "<"):
        assert junk not in html_text
    for p in by_file["page.html"]:  # offsets into the file's own characters
        assert all(c == HTML[p.start + i] for i, c in enumerate(p.text) if not c.isspace())
    md = " ".join(p.text for p in by_file["guide.md"])
    assert "Broadcasting" in md and "http" not in md and "](" not in md
    assert "gradient" in " ".join(p.text for p in by_file["tool.py"])
    # the same folder with --strict: refused, listing every problem, nothing written
    with pytest.raises(InputError, match=r"skipped 7 inputs \(unreadable: 1, empty: 1") as exc:
        build_index([mixed_folder], tmp_path / "strict", hash_encoder, strict=True, **KW)
    assert "(--strict: refused)" in str(exc.value) and not (tmp_path / "strict").exists()


def test_html_and_py_files_named_directly_read_as_in_a_folder(mixed_folder):
    named = read_documents([mixed_folder / "page.html", mixed_folder / "tool.py"]).documents
    walked = [
        d for d in read_documents([mixed_folder]).documents if d.source in {n.source for n in named}
    ]
    assert named == walked and len(named) == 2


# -- 13: arguments checked before anything is written --------------------------------------------


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"batch_size": 0}, "batch_size: got 0, expected an int >= 1"),
        ({"batch_size": -3}, "batch_size: got -3"),
        ({"shard_rows": 0}, "shard_rows: got 0"),
        ({"overlap": 24}, r"overlap: got 24, expected an int in \[0, 23\]"),
        ({"chunk_tokens": 1}, "chunk_tokens: got 1"),
    ],
)
def test_bad_build_arguments_write_nothing(tmp_path, hash_encoder, kw, match):
    (tmp_path / "d.txt").write_text(_text(40))
    out = tmp_path / "idx"
    with pytest.raises(InputError, match=match):
        build_index([tmp_path / "d.txt"], out, hash_encoder, **{**KW, **kw})
    assert not out.exists()
    build_index([tmp_path / "d.txt"], out, hash_encoder, **KW)  # the corrected command works


def test_out_below_a_regular_file_is_an_input_error(tmp_path, hash_encoder):
    (tmp_path / "d.txt").write_text(_text(40))
    with pytest.raises(InputError, match=r"d.txt is a file, not a folder"):
        build_index([tmp_path / "d.txt"], tmp_path / "d.txt" / "idx", hash_encoder, **KW)
    with pytest.raises(InputError, match="exists and is not a folder"):
        build_index([tmp_path / "d.txt"], tmp_path / "d.txt", hash_encoder, **KW)


# -- 14: one writer at a time ---------------------------------------------------------------------


def test_a_held_lock_refuses_a_second_writer_and_a_dead_ones_is_taken_over(
    small_index, tmp_path, hash_encoder
):
    (tmp_path / "new.txt").write_text(_text(30, seed=5))
    with index_lock(small_index, "index add"):
        with pytest.raises(InputError, match=rf"index is locked by pid {os.getpid()} \(index add"):
            add_to_index(small_index, [tmp_path / "new.txt"], hash_encoder)
    (small_index / "lock").write_text("pid 999999999 (index add, since 2026-01-01 00:00:00)\n")
    m = add_to_index(small_index, [tmp_path / "new.txt"], hash_encoder)  # no live holder
    assert m["status"] == "complete" and m["sources"][-1]["source"].endswith("new.txt")
    assert (small_index / "lock").read_text().startswith(f"pid {os.getpid()} (index add")
    assert not list(small_index.glob("*.tmp"))


# -- 18: a reader that goes away -----------------------------------------------------------------


def test_index_info_into_a_closed_pipe_is_quiet(small_index, monkeypatch):
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # `index info DIR | true`: the reader is gone
    with open(write_fd, "w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        assert cli_main(["index", "info", str(small_index)]) == 141  # was: BrokenPipeError
        monkeypatch.undo()


# -- one check for "an int in [lo, hi]" ----------------------------------------------------------


def test_every_k_argument_is_refused_the_same_way(small_index):
    from jaxparadigm.app.index_command_output import index_search_text
    from jaxparadigm.retrieval.eval.pydoc_corpus import chunk_document
    from jaxparadigm.retrieval.eval.ranking_metrics import recall_at_k
    from jaxparadigm.retrieval.sparse.keyword import keyword_search

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        searcher = IndexSearcher(small_index)
    calls = {
        "k": lambda v: searcher.vectors.search(np.ones((1, 16), np.float32), v),
        "top_k": lambda v: keyword_search("a", ["a b"], v),
        "chunk_words": lambda v: chunk_document("a b", v),
    }
    calls["recall k"] = lambda v: recall_at_k([1], v)
    for call in calls.values():
        for bad in (0, -1, True, 2.0, "3"):
            with pytest.raises(InputError, match=rf": got {bad!r}, expected an int >= 1"):
                call(bad)
        assert call(1) is not None
    # search --index's k is a SearchOptions field: the one check of every door (search.k)
    for bad in (0, -1, True, 2.0, "3"):
        want = "an int >= 1" if type(bad) is int else "int"
        with pytest.raises(
            InputError, match=rf"^search\.k: got {re.escape(repr(bad))}, expected {want}$"
        ):
            index_search_text("q", str(small_index), bad)
