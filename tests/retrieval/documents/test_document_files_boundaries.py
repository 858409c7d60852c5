"""Reading a folder at its edges (issue 39): the exact record of every skip (path, reason,
detail), a symlink whose target appears between two checks, a lock file holding bytes that are
not UTF-8, and the shards of an interrupted add's starting point kept by the cleaner.

Each test names the boundary it pins; each killed a one-line mutant of ``document_files.py`` or
``index_owned_files.py`` that the earlier tests let through
(``make mutation MODULE=retrieval.document_files``).
"""

import fcntl
import os

import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.reading import Skipped, read_documents
from jaxparadigm.retrieval.documents.walking import _link_problem
from jaxparadigm.retrieval.index.owned_files import index_lock, remove_unreferenced


def test_every_skip_is_recorded_with_its_path_reason_and_detail(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "kept.txt").write_text("kept words")
    (docs / "linked").symlink_to(docs / "sub", target_is_directory=True)
    (docs / "r.jsonl").write_text('{"text": "ok"}\n{"text": "  \\t"}\n\n[1]\n')
    (docs / "nav.html").write_text("<nav><a href='/'>Home</a></nav>")
    (docs / "links.md").write_text("[a]: https://example.org/a\n")
    (docs / "blank.txt").write_text("   \n")
    (docs / "gone.txt").symlink_to(docs / "nowhere.txt")
    (docs / "copy.txt").write_text("kept words")  # the same bytes as sub/kept.txt
    (docs / "weird.xyz").write_bytes(b"\x00\x01binary")
    (docs / "bom.jsonl").write_bytes("\ufeff\n\u00a0\n".encode())  # no line once the BOM goes
    reading = read_documents([docs])
    root = docs.as_posix()
    assert sorted(reading.skipped) == sorted(
        [
            Skipped(f"{root}/linked", "symlinked folder", "not followed"),
            Skipped(f"{root}/r.jsonl:2", "empty", "blank 'text'"),
            Skipped(
                f"{root}/r.jsonl:4",
                "bad JSONL line",
                "expected a JSON object with a string 'text' field",
            ),
            Skipped(f"{root}/nav.html", "empty", "no text once markup and link lists are removed"),
            Skipped(f"{root}/links.md", "empty", "no text once markup and link lists are removed"),
            Skipped(f"{root}/blank.txt", "empty", "4 bytes, no text"),
            Skipped(f"{root}/gone.txt", "dangling symlink", f"-> {docs / 'nowhere.txt'}"),
            Skipped(f"{root}/sub/kept.txt", "duplicate content", f"same bytes as {root}/copy.txt"),
            Skipped(f"{root}/weird.xyz", "unsupported type", "suffix .xyz"),
            Skipped(f"{root}/bom.jsonl", "empty", "no JSON line"),
        ]
    )
    assert [d.source for d in reading.documents] == [f"{root}/copy.txt", f"{root}/r.jsonl:1"]


def test_a_symlink_whose_target_appeared_after_the_check_is_not_a_regular_file(tmp_path):
    """Boundary: the race between "the link leads nowhere" and the stat that names why: the
    target is there now (a folder here), and the record says what the link is."""
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    got = _link_problem(tmp_path / "link")
    assert got == Skipped(f"{tmp_path}/link", "unsupported type", "not a regular file")


def test_a_lock_file_of_bytes_that_are_not_utf8_still_names_a_holder(tmp_path):
    """Boundary: the holder's text is what another process wrote: bytes that are not UTF-8 are
    shown replaced, never raised from inside the lock message."""
    (tmp_path / "lock").write_bytes(b"pid 7 (\xff\xfe add)\n")
    fd = os.open(tmp_path / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another holder
        with pytest.raises(InputError) as err, index_lock(tmp_path, "add"):
            pass
    finally:
        os.close(fd)
    assert "index is locked by pid 7 (\ufffd\ufffd add)" in str(err.value)


def test_the_cleaner_keeps_the_shards_of_an_interrupted_adds_starting_point(tmp_path):
    names = ["shard_00000-0123456789", "shard_00001-abcdef0123", "shard_00002-ffffffffff"]
    for name in names:
        for ext in (".npy", ".jsonl"):
            (tmp_path / f"{name}{ext}").write_bytes(b"x")
    manifest = {
        "shards": [{"name": names[1]}],
        "pending": {"base": {"shards": [{"name": names[0]}]}},
    }
    removed = remove_unreferenced(tmp_path, manifest)
    assert removed == [f"{names[2]}.jsonl", f"{names[2]}.npy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{n}{e}" for n in names[:2] for e in (".jsonl", ".npy")
    )
