"""Issue 34, "Index folder", generated: an index folder holding extra files, folders and symlinks
whose names are near the writer's own (a valid prefix, a bad suffix) keeps every one of them
through ``index add``, and the index reads back; regular files named in full by the writer's
pattern and not in the manifest are the only ones an add deletes."""

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.owned_files import OWNED_FILE, remove_unreferenced
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.index.store import read_manifest
from tests.retrieval.conftest import HashEncoder

from .test_index_reliability import KW, _text

PREFIXES = st.sampled_from(
    [
        "shard_",
        "shard_00000",
        "shard_00000-",
        "shard_00000-0123456789",
        "shard_00001-abcdefabcd",
        "shard_00000.4242.deadbeef",
        "shard_00002.1.0badc0de.npy",
        "manifest.json",
        "manifest.json.17.0011aabb",
        "manifest.json.17.0011aabb.tmp",
    ]
)
SUFFIXES = st.one_of(
    st.sampled_from(
        ["", ".npy", ".jsonl", ".tmp", ".npy.bak", ".jsonl~", "~", ".txt", ".npy.tmp.old", "_x"]
    ),
    st.text(st.sampled_from("abcdef0123456789._-~"), min_size=1, max_size=6),
)
KINDS = st.sampled_from(["file", "folder", "link_to_file", "link_to_folder", "dangling_link"])
ENTRIES = st.lists(
    st.tuples(PREFIXES, SUFFIXES, KINDS), min_size=1, max_size=6, unique_by=lambda e: e[0] + e[1]
)


def _user_name(prefix, suffix):
    name = prefix + suffix
    return None if name in ("manifest.json", "lock") or OWNED_FILE.fullmatch(name) else name


def _place(folder: Path, outside: Path, name: str, kind: str) -> None:
    path = folder / name
    if kind == "file":
        path.write_text(f"user file {name}\n")
    elif kind == "folder":
        path.mkdir()
        (path / "inside.npy").write_bytes(b"user bytes")
    elif kind == "link_to_file":
        path.symlink_to(outside / "target.txt")
    elif kind == "link_to_folder":
        path.symlink_to(outside)
    else:
        path.symlink_to(outside / "missing")


def _snapshot(folder: Path, names) -> dict:
    out = {}
    for name in names:
        path = folder / name
        if path.is_symlink():
            out[name] = ("link", os.readlink(path))
        elif path.is_dir():
            out[name] = ("folder", sorted((p.name, p.read_bytes()) for p in path.iterdir()))
        else:
            out[name] = ("file", path.read_bytes())
    return out


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=ENTRIES)
def test_user_entries_near_the_writers_names_survive_an_add(minilm_tokenizer, entries):
    encoder = HashEncoder(minilm_tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        outside = root / "outside"
        outside.mkdir()
        (outside / "target.txt").write_text("outside, never touched\n")
        (root / "a.txt").write_text(_text(50, seed=1))
        (root / "b.txt").write_text(_text(40, seed=2) + " b")
        index = root / "idx"
        build_index([root / "a.txt"], index, encoder, **KW)
        names = []
        for prefix, suffix, kind in entries:
            if (name := _user_name(prefix, suffix)) is not None:
                _place(index, outside, name, kind)
                names.append(name)
        before = _snapshot(index, names)
        m = add_to_index(index, [root / "b.txt"], encoder)
        assert _snapshot(index, names) == before
        assert (outside / "target.txt").read_text() == "outside, never touched\n"
        assert sorted(os.listdir(outside)) == ["target.txt"]
        assert read_manifest(index)["count"] == m["count"] == len(Index(index).passages())


@settings(max_examples=25, deadline=None)
@given(
    numbers=st.lists(st.integers(0, 10**6), min_size=1, max_size=5),
    kinds=st.lists(st.sampled_from(["file", "link"]), min_size=5, max_size=5),
)
def test_only_regular_files_matching_the_writers_pattern_in_full_are_removed(numbers, kinds):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "elsewhere.txt").write_text("x")
        manifest = {"shards": [], "pending": None}
        expected_removed, kept = [], []
        for i, (n, kind) in enumerate(zip(numbers, kinds, strict=False)):
            for name in (f"shard_{n:05d}-{i:010x}.npy", f"shard_{n:05d}.{i}.{i:08x}.jsonl.tmp"):
                if (folder / name).exists() or (folder / name).is_symlink():
                    continue
                if kind == "file":
                    (folder / name).write_bytes(b"stale")
                    expected_removed.append(name)
                else:
                    (folder / name).symlink_to(folder / "elsewhere.txt")
                    kept.append(name)
        assert remove_unreferenced(folder, manifest) == sorted(expected_removed)
        assert sorted(p.name for p in folder.iterdir()) == sorted([*kept, "elsewhere.txt"])
        assert (folder / "elsewhere.txt").read_text() == "x"
