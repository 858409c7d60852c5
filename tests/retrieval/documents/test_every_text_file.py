"""Every text file a user has (issue 35 item 2): no-suffix files by content, ``.gz`` read through
(bounded), the full skipped list and every build and add in ``index info`` (C1.1)."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

from jaxparadigm.app.index_command_output import index_info_text
from jaxparadigm.cli import main as cli_main
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import add_to_index, build_index
from jaxparadigm.retrieval.documents.file_kinds import (
    GzipSkip,
    file_kind,
    gunzip_bounded,
    gunzip_file,
)
from jaxparadigm.retrieval.documents.reading import read_documents
from jaxparadigm.retrieval.index.store import read_manifest

KW = {"chunk_tokens": 24, "overlap": 4}
README = "This package installs the heron tools.\nRun heron --help for the options.\n"
CHANGES = "Version 2 adds kestrel support and fixes the vole parser.\n"


@pytest.mark.parametrize(
    "name, kind",
    [
        ("README", "sniffed"),
        ("README.Debian", "sniffed"),
        ("LICENSE", "sniffed"),
        ("notes.txt", "text"),
        ("Guide.MD", "markup"),
        ("notes.txt.gz", "gz:text"),
        ("changelog.Debian.gz", "gz:sniffed"),
        ("NEWS.gz", "gz:sniffed"),
        ("page.html.gz", "gz:html"),
        ("photo.png", None),
        ("backup.tar.gz", None),
        (".gz", "sniffed"),
    ],
)
def test_file_kind(name, kind):
    assert file_kind(name) == kind


def _folder(tmp_path):
    d = tmp_path / "doc"
    d.mkdir()
    (d / "README").write_text(README)
    (d / "README.Debian").write_text("Debian notes: the heron daemon starts at boot.\n")
    (d / "BLOB").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(100))
    (d / "changelog.Debian.gz").write_bytes(gzip.compress(CHANGES.encode()))
    (d / "guide.md.gz").write_bytes(gzip.compress(b"# Guide\nFeed the heron fish.\n"))
    (d / "broken.txt.gz").write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    (d / "cut.txt.gz").write_bytes(gzip.compress(CHANGES.encode() * 50)[:-30])
    (d / "image.gz").write_bytes(gzip.compress(b"\x89PNG\r\n\x1a\n" + bytes(64)))
    (d / "backup.tar.gz").write_bytes(gzip.compress(b"x"))
    return d


def test_no_suffix_text_and_gz_are_read_binary_and_broken_are_skipped(tmp_path):
    reading = read_documents([_folder(tmp_path)])
    docs = {d.source.rsplit("/", 1)[1]: d.text for d in reading.documents}
    assert docs == {
        "README": README,
        "README.Debian": "Debian notes: the heron daemon starts at boot.\n",
        "changelog.Debian.gz": CHANGES,  # offsets are the decompressed text's
        "guide.md.gz": "# Guide\nFeed the heron fish.\n",
    }
    skipped = {s.path.rsplit("/", 1)[1]: (s.reason, s.detail) for s in reading.skipped}
    assert skipped["BLOB"][0] == "not UTF-8"
    assert skipped["broken.txt.gz"][0] == "unreadable" and "gzip" in skipped["broken.txt.gz"][1]
    assert skipped["cut.txt.gz"] == ("unreadable", "truncated gzip stream")
    assert skipped["image.gz"][0] == "not UTF-8" and skipped["image.gz"][1].startswith("decomp")
    assert skipped["backup.tar.gz"] == ("unsupported type", "suffix .gz")
    assert len(skipped) == 5


def test_gunzip_matches_gzip_module_including_several_members():
    parts = [b"first member\n", bytes(range(256)) * 300, b""]
    data = b"".join(gzip.compress(p) for p in parts)
    assert gunzip_bounded(data) == gzip.decompress(data) == b"".join(parts)
    assert gunzip_bounded(data + bytes(512)) == b"".join(parts)  # zero padding after the end


def test_a_decompression_bomb_is_refused_within_its_cap(tmp_path):
    bomb = gzip.compress(bytes(64 * 2**20), compresslevel=9)  # 64 MiB of NULs in ~64 KiB
    assert len(bomb) < 2**20
    tracemalloc.start()
    with pytest.raises(GzipSkip, match="decompresses to more than 4194304 bytes") as info:
        gunzip_bounded(bomb, limit=4 * 2**20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert info.value.reason == "too large"
    assert peak < 12 * 2**20  # the cap plus a block or two, not 64 MiB
    (tmp_path / "big.gz").write_bytes(b"\x1f\x8b" + bytes(998))
    with open(tmp_path / "big.gz", "rb") as fh, pytest.raises(GzipSkip, match="1000 bytes com"):
        gunzip_file(fh, limit=999)  # refused by its size, before it is read


def test_every_build_and_add_is_in_the_history_with_every_skipped_input(tmp_path, hash_encoder):
    docs = _folder(tmp_path)
    for i in range(12):  # more skipped inputs than the summary lists
        (docs / f"bad{i:02d}.png").write_bytes(b"x")
    idx = tmp_path / "idx"
    build_index([docs], idx, hash_encoder, **KW)
    (tmp_path / "more.txt").write_text("A kestrel hovers over the field.\n")
    add_to_index(idx, [tmp_path / "more.txt", docs / "README"], hash_encoder)
    m = read_manifest(idx)
    assert [h["command"] for h in m["history"]] == ["build", "add"]
    build, add = m["history"]
    assert build["paths"] == [str(docs)] and build["sources"] == 4 and len(build["skipped"]) == 17
    assert add["sources"] == 1 and add["passages"] == 1
    assert [(s["reason"], s["detail"]) for s in add["skipped"]] == [
        ("already indexed", "unchanged")
    ]
    assert build["passages"] + add["passages"] == m["count"]

    info = index_info_text(str(idx))
    assert "history (every build and add, oldest first):" in info
    assert f"  1. build at {build['at']} of {docs}: " in info and "17 inputs skipped" in info
    assert f"  2. add at {add['at']} of " in info and "1 passage from 1 source" in info
    assert "bad11.png" not in info and "`jaxparadigm index info" in info and "--skipped`" in info
    full = index_info_text(str(idx), skipped=True)
    for s in build["skipped"]:
        assert f"{s['path']}: {s['reason']} ({s['detail']})" in full
    assert "... and" not in full


def test_cli_info_skipped_flag(tmp_path, hash_encoder, capsys):
    docs = _folder(tmp_path)
    for i in range(12):
        (docs / f"bad{i:02d}.png").write_bytes(b"x")
    build_index([docs], tmp_path / "idx", hash_encoder, **KW)
    assert cli_main(["index", "info", str(tmp_path / "idx"), "--skipped"]) == 0
    out = capsys.readouterr().out
    assert all(f"bad{i:02d}.png: unsupported type" in out for i in range(12))


def test_a_manifest_without_history_is_still_read_and_an_add_starts_one(tmp_path, hash_encoder):
    (tmp_path / "a.txt").write_text(README)
    idx = tmp_path / "idx"
    build_index([tmp_path / "a.txt"], idx, hash_encoder, **KW)
    path = idx / "manifest.json"
    m = json.loads(path.read_text())
    del m["history"]  # as written before issue 35
    path.write_text(json.dumps(m))
    info = index_info_text(str(idx))
    assert "1. build or add (last; earlier ones were not recorded) at unknown time: " in info
    (tmp_path / "b.txt").write_text(CHANGES)
    add_to_index(idx, [tmp_path / "b.txt"], hash_encoder)
    assert [h["command"] for h in read_manifest(idx)["history"]] == ["add"]


@pytest.mark.parametrize(
    "history, match",
    [
        ([{"command": "rebuild"}], r"field history\[0\]\.at"),
        (
            [{"command": "rm", "at": "t", "paths": [], "passages": 0, "sources": 0, "skipped": []}],
            r"field history\[0\]\.command: got 'rm', expected 'build' or 'add'",
        ),
        (
            [
                {
                    "command": "add",
                    "at": "t",
                    "paths": [3],
                    "passages": 0,
                    "sources": 0,
                    "skipped": [],
                }
            ],
            r"field history\[0\]\.paths\[0\]: got 3",
        ),
        ("x", r"field history: got 'x', expected a list"),
    ],
)
def test_a_damaged_history_is_refused_naming_the_field(tmp_path, hash_encoder, history, match):
    (tmp_path / "a.txt").write_text(README)
    idx = tmp_path / "idx"
    build_index([tmp_path / "a.txt"], idx, hash_encoder, **KW)
    m = json.loads((idx / "manifest.json").read_text())
    m["history"] = history
    (idx / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(InputError, match=match):
        read_manifest(idx)
