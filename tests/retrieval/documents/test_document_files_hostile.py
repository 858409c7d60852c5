"""Every path the OS allows, and hostile ``.jsonl`` lines, are read or skipped with a reason
(issue 34, "Index inputs").

Before the fix (b953ab2): a file name that is not UTF-8 aborted ``index build`` with
UnicodeEncodeError; a folder tree deeper than about 1000 levels raised RecursionError (``os.walk``
recursed); a JSON integer over 4300 digits escaped from the reader as a bare ValueError and killed
the build; a ``.jsonl`` saved with a byte-order mark lost its first record; a file of NULs named
``.txt`` was read whole (and decoded) before being skipped; a FIFO that took a file's place blocked
the reader forever.
"""

import json
import os
import signal
import socket
import tempfile
import tracemalloc
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.common.bounded_reading import SNIFF_BYTES, shown_name
from jaxparadigm.retrieval.documents import reading as document_files
from jaxparadigm.retrieval.documents.reading import SKIP_REASONS, read_documents
from jaxparadigm.retrieval.index.build import build_index
from jaxparadigm.retrieval.index.store import read_manifest

KW = {"chunk_tokens": 24, "overlap": 4, "shard_rows": 8}


def _reasons(reading, root):
    return {s.path.rsplit(f"{root.name}/", 1)[1]: s.reason for s in reading.skipped}


def _sources(reading, root):
    return sorted(d.source.rsplit(f"{root.name}/", 1)[1] for d in reading.documents)


@contextmanager
def _deadline(seconds):
    """Raise TimeoutError if the block runs longer than ``seconds`` (a blocked open() included)."""

    def expire(signum, frame):
        raise TimeoutError(f"blocked for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _deep(root, depth, name="d"):
    """``root/name/name/.../leaf.txt``, ``depth`` folders deep, made through folder descriptors
    (the whole path may be longer than PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"the deepest document")
        os.close(leaf)
    finally:
        os.close(fd)


def _remove_deep(root, depth, name="d"):
    """Remove what :func:`_deep` made, bottom up, without recursion (shutil.rmtree recurses)."""
    fds = [os.open(root, os.O_RDONLY)]
    for _ in range(depth):
        fds.append(os.open(name, os.O_RDONLY, dir_fd=fds[-1]))
    os.unlink("leaf.txt", dir_fd=fds[-1])
    for parent, child in zip(reversed(fds[:-1]), reversed(fds[1:]), strict=True):
        os.close(child)
        os.rmdir(name, dir_fd=parent)
    os.close(fds[0])


# -- file names ---------------------------------------------------------------------------------


def test_a_bytes_file_name_is_skipped_and_the_build_goes_on(tmp_path, hash_encoder):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ok.txt").write_text("broadcasting aligns shapes from the right")
    with open(os.fsencode(root) + b"/bad\xffname.txt", "wb") as fh:
        fh.write(b"gradients flow back through views")
    os.mkdir(os.fsencode(root) + b"/folder\xfe")
    with open(os.fsencode(root) + b"/folder\xfe/inner.txt", "wb") as fh:
        fh.write(b"inner text")
    m = build_index([root], tmp_path / "idx", hash_encoder, **KW)
    assert [f["path"].rsplit("/", 1)[1] for f in m["files"]] == ["ok.txt"]
    skipped = {s["path"].rsplit("/docs/", 1)[1]: s["reason"] for s in m["skipped"]}
    assert skipped == {"bad\\xffname.txt": "name not UTF-8", "folder\\xfe": "name not UTF-8"}
    assert read_manifest(tmp_path / "idx")["skipped"] == m["skipped"]  # stored as UTF-8 JSON


# -- depth --------------------------------------------------------------------------------------


def test_a_folder_tree_deeper_than_the_recursion_limit_is_walked(tmp_path):
    depth = 1500  # os.walk recursed once per level: RecursionError near 1000
    _deep(tmp_path, depth)
    try:
        reading = read_documents([tmp_path])
    finally:
        _remove_deep(tmp_path, depth)
    assert [d.text for d in reading.documents] == ["the deepest document"]
    assert reading.documents[0].source.split("/").count("d") == depth


def test_a_folder_past_path_max_is_skipped_with_a_reason(tmp_path):
    depth, name = 600, "x" * 10  # 6600 characters: past Linux's PATH_MAX of 4096
    _deep(tmp_path, depth, name)
    (tmp_path / "top.txt").write_text("a shallow document")
    try:
        reading = read_documents([tmp_path])
    finally:
        _remove_deep(tmp_path, depth, name)
    assert [d.text for d in reading.documents] == ["a shallow document"]
    assert [s.reason for s in reading.skipped] == ["unreadable"]
    assert "too long" in reading.skipped[0].detail


# -- JSON lines ---------------------------------------------------------------------------------


def test_a_jsonl_line_with_a_huge_integer_is_skipped_alone(tmp_path):
    lines = ['{"text": "first"}', '{"text": "huge", "n": ' + "9" * 5000 + "}", '{"text": "third"}']
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n")
    reading = read_documents([tmp_path])
    assert [d.text for d in reading.documents] == ["first", "third"]
    [skip] = reading.skipped
    assert skip.path.endswith("r.jsonl:2") and skip.reason == "bad JSONL line"
    assert skip.detail == "an integer of 5000 digits; expected at most 4300"


def test_a_jsonl_with_a_byte_order_mark_keeps_its_first_record(tmp_path):
    text = "\n".join(json.dumps({"text": t}) for t in ("first", "second"))
    (tmp_path / "r.jsonl").write_text(text, encoding="utf-8-sig")
    reading = read_documents([tmp_path / "r.jsonl"])
    assert [(d.source.rsplit("/", 1)[1], d.text) for d in reading.documents] == [
        ("r.jsonl:1", "first"),
        ("r.jsonl:2", "second"),
    ]
    assert reading.skipped == []


# -- binary prefix ------------------------------------------------------------------------------


def test_a_huge_file_of_nuls_is_skipped_from_its_prefix(tmp_path):
    path = tmp_path / "zeros.txt"
    with open(path, "wb") as fh:
        fh.truncate(200 * 2**20)  # a sparse 200 MB file of NULs
    tracemalloc.start()
    try:
        reading = read_documents([tmp_path])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(s.reason, s.detail) for s in reading.skipped] == [
        ("not UTF-8", "holds NUL bytes (a binary file?)")
    ]
    assert peak < 4 * 2**20, peak  # before: the 200 MB bytes and their 200 MB decoding


def test_binary_past_the_prefix_and_utf8_cut_by_it(tmp_path):
    (tmp_path / "late_nul.txt").write_bytes(b"a" * (SNIFF_BYTES + 10) + b"\x00")
    (tmp_path / "late_bad.txt").write_bytes(b"a" * (SNIFF_BYTES + 10) + b"\xe9")
    # a 3-byte character straddling the prefix's end is no reason to skip
    (tmp_path / "cut.txt").write_bytes(b"a" * (SNIFF_BYTES - 1) + "\u20ac tail".encode())
    (tmp_path / "early_bad.txt").write_bytes(b"ok \xe9 text")
    reading = read_documents([tmp_path])
    assert _sources(reading, tmp_path) == ["cut.txt"]
    details = {s.path.rsplit("/", 1)[1]: (s.reason, s.detail) for s in reading.skipped}
    assert details == {
        "early_bad.txt": ("not UTF-8", "byte 0xe9 at offset 3"),
        "late_bad.txt": ("not UTF-8", f"byte 0xe9 at offset {SNIFF_BYTES + 10}"),
        "late_nul.txt": ("not UTF-8", "holds NUL bytes (a binary file?)"),
    }


# -- special files and links ------------------------------------------------------------------


def test_special_files_and_symlink_loops_are_skipped_with_reasons(tmp_path):
    os.mkfifo(tmp_path / "pipe.txt")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.txt"))
    (tmp_path / "loop_a.txt").symlink_to(tmp_path / "loop_b.txt")
    (tmp_path / "loop_b.txt").symlink_to(tmp_path / "loop_a.txt")
    (tmp_path / "dir_loop").symlink_to(tmp_path)
    (tmp_path / "ok.md").write_text("readable words")
    try:
        with _deadline(20):
            reading = read_documents([tmp_path])
    finally:
        sock.close()
    assert _sources(reading, tmp_path) == ["ok.md"]
    assert _reasons(reading, tmp_path) == {
        "dir_loop": "symlinked folder",
        "loop_a.txt": "symlink loop",
        "loop_b.txt": "symlink loop",
        "pipe.txt": "unsupported type",
        "sock.txt": "unsupported type",
    }
    assert {s.detail for s in reading.skipped if s.reason == "unsupported type"} == {
        "a FIFO",
        "a socket",
    }
    assert set(SKIP_REASONS) >= {s.reason for s in reading.skipped}


def test_a_fifo_in_a_files_place_never_blocks(tmp_path, monkeypatch):
    """A file replaced by a FIFO between the walk and the read (or a /dev node named .txt)."""
    fifo = tmp_path / "swapped.txt"
    os.mkfifo(fifo)
    monkeypatch.setattr(document_files, "collect_files", lambda paths, **_: ([fifo], []))
    with _deadline(10):
        reading = read_documents([tmp_path])
    assert [(s.reason, s.detail) for s in reading.skipped] == [("unsupported type", "a FIFO")]


# -- generated trees ----------------------------------------------------------------------------

KINDS = (
    "text",
    "bytes name",
    "nul prefix",
    "bom jsonl",
    "long int jsonl",
    "fifo",
    "loop",
    "dangling",
)
ENTRY = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, 3),  # folder depth
    st.binary(min_size=1, max_size=6).filter(lambda b: b"/" not in b and b"\x00" not in b),
    st.integers(1, 6000),  # NUL bytes / integer digits
)


def _make(root: str, k: int, entry) -> dict:
    """Create one entry under ``root``; return {shown relative path: expected outcome}."""
    kind, depth, raw, size = entry
    folder = os.path.join(root, *[f"f{i}" for i in range(depth)])
    os.makedirs(folder, exist_ok=True)
    rel = "/".join([*(f"f{i}" for i in range(depth)), f"e{k}"])
    base = os.path.join(folder, f"e{k}")
    if kind == "text":
        with open(base + ".txt", "w") as fh:
            fh.write(f"entry {k} text")
        return {rel + ".txt": "document"}
    if kind == "bytes name":
        name = os.fsencode(base) + b"_" + raw + b".txt"
        with open(name, "wb") as fh:
            fh.write(f"entry {k} named in bytes".encode())
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return {shown_name(name)[len(root) + 1 :]: "name not UTF-8"}
        return {os.fsdecode(name)[len(root) + 1 :]: "document"}
    if kind == "nul prefix":
        with open(base + ".txt", "wb") as fh:
            fh.write(b"\x00" * size + f"entry {k}".encode())
        return {rel + ".txt": "not UTF-8"}
    if kind == "bom jsonl":
        with open(base + ".jsonl", "w", encoding="utf-8-sig") as fh:
            fh.write(json.dumps({"text": f"entry {k} one"}) + "\n" + json.dumps({"text": "two"}))
        return {rel + ".jsonl:1": "document", rel + ".jsonl:2": "document"}
    if kind == "long int jsonl":
        with open(base + ".jsonl", "w") as fh:
            fh.write(
                json.dumps({"text": f"entry {k}"}) + '\n{"text": "n", "n": ' + "7" * size + "}"
            )
        return {
            rel + ".jsonl:1": "document",
            rel + ".jsonl:2": "document" if size <= 4300 else "bad JSONL line",
        }
    if kind == "fifo":
        os.mkfifo(base + ".txt")
        return {rel + ".txt": "unsupported type"}
    if kind == "loop":
        os.symlink(f"e{k}.txt", base + ".txt")
        return {rel + ".txt": "symlink loop"}
    os.symlink(f"e{k}_missing.txt", base + ".txt")
    return {rel + ".txt": "dangling symlink"}


@settings(max_examples=40, deadline=None)
@given(st.lists(ENTRY, min_size=1, max_size=8), st.sampled_from([0, 0, 0, 1100]))
def test_generated_trees_give_each_entry_its_outcome(entries, chain):
    """Oracle: each entry's outcome follows from how it was made (the name's bytes decode as UTF-8,
    the integer's digits against 4300, ...), independently of the reader."""
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.realpath(tmp)
        want = {}
        for k, entry in enumerate(entries):
            want.update(_make(root, k, entry))
        if chain:
            _deep(root, chain, "c")
            want["/".join(["c"] * chain + ["leaf.txt"])] = "document"
        try:
            with _deadline(60):
                reading = read_documents([root])
        finally:
            if chain:
                _remove_deep(root, chain, "c")
    got = {d.source[len(root) + 1 :]: "document" for d in reading.documents}
    got.update({s.path[len(root) + 1 :]: s.reason for s in reading.skipped})
    assert len(got) == len(reading.documents) + len(reading.skipped)  # each path once
    assert got == want
    for s in reading.skipped:
        s.path.encode("utf-8")  # every reported path can be written to the manifest
