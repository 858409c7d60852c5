"""Issue 34, "Index folder", long integers in index files, and "Progress": a writer never follows
a link and deletes only its own files, an index never reads itself, a reader is consistent with
the writer's commit protocol, index files are parsed with bounded integers, and progress written
to a non-terminal is plain lines. Each regression test failed on main a67d74e. The hash-seeded
stand-in encoder (conftest.py) is used: encoding is not the point here."""

import io
import json
import os
import threading
import time
import warnings

import pytest

from jaxparadigm.cli import main as cli_main
from jaxparadigm.common.progress import Progress
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index import reader as index_module
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.owned_files import OWNED_FILE, holds_index, index_lock
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.index.store import read_manifest, shard_passages
from tests.retrieval.conftest import HashEncoder

from .test_index_reliability import KW, _text


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"d{i}.txt").write_text(_text(50 + 7 * i, seed=i))
    return folder


@pytest.fixture
def index(tmp_path, docs, hash_encoder):
    out = tmp_path / "idx"
    build_index([docs], out, hash_encoder, **KW)
    return out


def _new_doc(tmp_path, name, seed):
    path = tmp_path / name
    path.write_text(_text(40, seed=seed) + f" {name}")
    return path


# -- a writer never follows a link -----------------------------------------------------------


def test_a_lock_that_is_a_symlink_is_refused_and_its_target_is_untouched(
    tmp_path, index, hash_encoder
):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    (index / "lock").unlink(missing_ok=True)
    (index / "lock").symlink_to(target)
    with pytest.raises(InputError, match=r"idx/lock: the index's lock file is a symlink"):
        add_to_index(index, [_new_doc(tmp_path, "n.txt", 5)], hash_encoder)
    assert target.read_text() == "keep me\n"  # was truncated and overwritten with "pid N ..."
    (index / "lock").unlink()
    (index / "lock").symlink_to(tmp_path / "nowhere")  # dangling: not created through it
    with pytest.raises(InputError, match="is a symlink"):
        add_to_index(index, [tmp_path / "n.txt"], hash_encoder)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    "make, what", [(os.mkfifo, "a FIFO"), (os.mkdir, "a folder")], ids=["fifo", "folder"]
)
def test_a_lock_that_is_not_a_regular_file_is_refused_naming_it(
    tmp_path, index, hash_encoder, make, what
):
    (index / "lock").unlink(missing_ok=True)
    make(index / "lock")  # a FIFO gave a raw OSError (Illegal seek)
    with pytest.raises(InputError, match=rf"idx/lock: the index's lock file is {what}, expected"):
        add_to_index(index, [_new_doc(tmp_path, "n.txt", 5)], hash_encoder)


def test_cli_lock_symlink_and_progress_to_a_file(tmp_path, encoder, capfd):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"d{i}.txt").write_text(_text(80, seed=i))
    idx = str(tmp_path / "idx")
    assert (
        cli_main(
            ["index", "build", str(docs), "--out", idx, "--chunk-tokens", "24", "--overlap", "4"]
        )
        == 0
    )
    err = capfd.readouterr().err  # stderr is not a terminal here
    assert "\r" not in err and "index build: " in err
    (tmp_path / "idx" / "lock").unlink(missing_ok=True)
    (tmp_path / "idx" / "lock").symlink_to(tmp_path / "victim")
    assert (
        cli_main(["index", "add", _new_doc(tmp_path, "n.txt", 3).as_posix(), "--index", idx]) == 2
    )
    err = capfd.readouterr().err
    assert "lock file is a symlink" in err and "Traceback" not in err
    assert not (tmp_path / "victim").exists()


# -- an index never reads itself -------------------------------------------------------------


def test_an_index_inside_the_folder_it_indexes_never_ingests_itself(tmp_path, docs, hash_encoder):
    out = docs / "idx"
    first = build_index([docs], out, hash_encoder, **KW)
    assert not any("/idx/" in s["source"] for s in first["sources"])
    (docs / "more.txt").write_text(_text(30, seed=9) + " more")
    m = add_to_index(out, [docs], hash_encoder)
    assert [s["source"][-8:] for s in m["sources"][len(first["sources"]) :]] == ["more.txt"]
    assert ("index folder", out.as_posix()) in {(s["reason"], s["path"]) for s in m["skipped"]}
    with pytest.raises(InputError, match="index folder"):  # named directly: skipped, so empty
        add_to_index(out, [next(out.glob("shard_*.jsonl"))], hash_encoder)


def test_a_symlink_into_the_index_folder_is_never_indexed(tmp_path, docs, index, hash_encoder):
    """Issue 47: a link in an indexed folder to a shard's .jsonl (or to the manifest, named .txt)
    was read as documents: the walk asked ``holds_index`` only of the folders it entered."""
    from jaxparadigm.retrieval.documents.walking import collect_files

    shard = next(index.glob("shard_*.jsonl"))
    (docs / "shard.jsonl").symlink_to(shard)
    (docs / "manifest.txt").symlink_to(index / "manifest.json")
    (docs / "idx_link").symlink_to(index, target_is_directory=True)
    files, skipped = collect_files([docs], skip_folder=holds_index)
    assert [f.name for f in files] == ["d0.txt", "d1.txt", "d2.txt"]
    into = "a symlink into it: holds an index's manifest.json: an index never reads itself"
    assert [(s.path, s.reason, s.detail) for s in skipped] == [
        (f"{docs}/idx_link", "symlinked folder", "not followed"),
        (f"{docs}/manifest.txt", "index folder", into),
        (f"{docs}/shard.jsonl", "index folder", into),
    ]
    (docs / "more.txt").write_text(_text(30, seed=9) + " more")
    m = add_to_index(index, [docs], hash_encoder)
    assert [s["source"].rsplit("/", 1)[-1] for s in m["sources"]] == [
        "d0.txt",
        "d1.txt",
        "d2.txt",
        "more.txt",
    ]


def test_a_killed_build_inside_its_input_folder_resumes(tmp_path, docs, minilm_tokenizer):
    for i in range(3, 8):
        (docs / f"d{i}.txt").write_text(_text(60, seed=i))
    out = docs / "idx"
    with pytest.raises(KeyboardInterrupt):
        build_index([docs], out, HashEncoder(minilm_tokenizer, fail_after=1), **KW)
    assert read_manifest(out)["status"] == "building" and list(out.glob("shard_*.jsonl"))
    again = HashEncoder(minilm_tokenizer)
    m = build_index([docs], out, again, **KW)  # was: "interrupted build of different inputs"
    whole = build_index([docs], tmp_path / "whole", HashEncoder(minilm_tokenizer), **KW)
    assert m["status"] == "complete" and m["count"] == whole["count"]
    assert len(again.encoded) < whole["count"]  # resumed, not rebuilt


def test_only_a_folder_with_an_index_manifest_counts_as_an_index(tmp_path, index):
    ext = tmp_path / "extension"
    ext.mkdir()
    (ext / "manifest.json").write_text('{"manifest_version": 3, "name": "x"}')
    assert holds_index(index) and not holds_index(ext) and not holds_index(tmp_path / "none")
    killed = tmp_path / "killed"  # a build killed after taking its lock, before its manifest
    killed.mkdir()
    for command in ("index build", "index add", "SemanticIndex.save"):
        with index_lock(killed, command):
            pass
        assert holds_index(killed), command
    (ext / "lock").write_text("pid 12 (my own notes, since today)\n")
    assert not holds_index(ext)


# -- the writer deletes only what it created -------------------------------------------------


def test_user_files_near_the_writers_names_survive_an_add(tmp_path, index, hash_encoder):
    (index / "shard_backup").mkdir()
    (index / "shard_backup" / "old.npy").write_bytes(b"x")
    (index / "shard_notes.txt").write_text("my notes\n")
    m = add_to_index(index, [_new_doc(tmp_path, "n.txt", 5)], hash_encoder)  # was IsADirectoryError
    assert m["status"] == "complete" and read_manifest(index)["count"] == m["count"]
    assert (index / "shard_notes.txt").read_text() == "my notes\n"  # was deleted
    assert (index / "shard_backup" / "old.npy").read_bytes() == b"x"
    assert len(Index(index).passages()) == m["count"]


# -- the reader is consistent with the writer's commit protocol ------------------------------


def test_a_reader_holding_a_manifest_a_writer_replaced_opens_the_newer_one(
    tmp_path, index, hash_encoder, monkeypatch
):
    old = read_manifest(index)
    assert old["shards"][-1]["rows"] < KW["shard_rows"]  # the add rewrites the last shard
    new = add_to_index(index, [_new_doc(tmp_path, "n.txt", 5)], hash_encoder)
    assert not (index / f"{old['shards'][-1]['name']}.npy").exists()
    calls = []

    def stale_first(path):  # the reader read the manifest just before the add committed
        calls.append(path)
        return old if len(calls) == 1 else read_manifest(path)

    monkeypatch.setattr(index_module, "read_manifest", stale_first)
    opened = Index(index)  # was: InputError "shard ... missing"
    assert len(opened) == new["count"] and len(calls) == 2
    assert [p.source for p in opened.passages()][-1].endswith("n.txt")


def test_an_unchanged_manifest_naming_a_missing_shard_is_refused(index):
    shard = read_manifest(index)["shards"][0]["name"]
    (index / f"{shard}.jsonl").unlink()
    with pytest.raises(InputError, match=rf"shard {shard}: {shard}.jsonl is missing"):
        Index(index)


def test_an_open_index_reads_its_passages_after_an_add_deleted_their_file(
    tmp_path, index, hash_encoder
):
    opened = Index(index)
    last = opened.manifest["shards"][-1]["name"]
    add_to_index(index, [_new_doc(tmp_path, "n.txt", 5)], hash_encoder)
    assert not (index / f"{last}.jsonl").exists()
    rows = opened.passages()  # was: "shard ... .jsonl is missing"
    assert len(rows) == len(opened) and rows == Index(index).passages()[: len(rows)]


def test_concurrent_adds_and_opens_never_fail(tmp_path, index, minilm_tokenizer):
    stop, errors, opens = threading.Event(), [], [0]
    encoder = HashEncoder(minilm_tokenizer)

    def writer():
        for i in range(200):
            if stop.is_set():
                return
            try:
                add_to_index(index, [_new_doc(tmp_path, f"w{i}.txt", 100 + i)], encoder)
            except Exception as exc:  # noqa: BLE001 - recorded, asserted below
                errors.append(f"add: {exc!r}")

    thread = threading.Thread(target=writer)
    thread.start()
    deadline = time.monotonic() + 4.0
    try:
        while time.monotonic() < deadline and thread.is_alive():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "an `index add` is running": expected
                    got = Index(index)
                    rows = got.passages()
                assert len(rows) == len(got) == got.manifest["count"]
                opens[0] += 1
            except Exception as exc:  # noqa: BLE001 - recorded, asserted below
                errors.append(f"open: {exc!r}")
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors, errors[:3]
    assert opens[0] >= 5 and read_manifest(index)["count"] > 0


# -- long integers in index files ------------------------------------------------------------


def test_a_long_integer_in_the_manifest_is_a_damaged_index_naming_it(index):
    path = index / "manifest.json"
    m = json.loads(path.read_text())
    path.write_text(json.dumps(m).replace('"count": ', '"count": ' + "9" * 5000 + ', "x": ', 1))
    with pytest.raises(InputError, match=r"manifest.json: not valid JSON .*5000 digits.*damaged"):
        read_manifest(index)  # was a bare ValueError (Python's int-string limit)
    with pytest.raises(InputError, match="manifest.json"):
        Index(index)


def test_a_long_integer_in_a_shard_line_is_a_damaged_index_naming_the_file(index):
    shard = read_manifest(index)["shards"][0]
    path = index / f"{shard['name']}.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    lines[1] = json.dumps(record).replace(f'"end": {record["end"]}', '"end": ' + "7" * 4301)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"{path.name} line 2: not a JSON line .*4301 digits"):
        shard_passages(index, shard, verify=False)


# -- progress on a non-terminal ----------------------------------------------------------------


def test_build_progress_to_a_redirected_stderr_is_plain_lines(tmp_path, docs, hash_encoder, capfd):
    for i in range(3, 30):
        (docs / f"d{i}.txt").write_text(_text(60, seed=i))
    m = build_index([docs], tmp_path / "idx", hash_encoder, progress=True, **KW)
    err = capfd.readouterr().err
    assert "\r" not in err  # was tqdm's carriage-return frames
    lines = err.splitlines()
    assert lines and all(line.startswith("index build: ") for line in lines)
    assert lines[-1].startswith(f"index build: {m['count']}/{m['count']} passages")


def test_passage_progress_lines_bar_and_off(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    out = io.StringIO()
    bar = Progress(100, "index add", unit="passage", stream=out, lines=4)
    for _ in range(10):
        bar.update(10)
    bar.close()
    got = [line.split(",")[0] for line in out.getvalue().splitlines()]
    assert got == [f"index add: {n}/100 passages" for n in (30, 50, 80, 100)]  # every 25
    resumed = io.StringIO()
    bar = Progress(100, "index add", initial=60, unit="passage", stream=resumed, lines=2)
    bar.update(20)
    bar.update(20)
    assert [x.split(",")[0] for x in resumed.getvalue().splitlines()] == [
        "index add: 80/100 passages",
        "index add: 100/100 passages",
    ]
    monkeypatch.setenv("TQDM_DISABLE", "1")
    off = io.StringIO()
    Progress(10, "index", unit="passage", stream=off).update(10)
    assert off.getvalue() == ""


def test_owned_file_pattern_matches_the_writers_names_in_full():
    assert OWNED_FILE.fullmatch("shard_00012-0123456789.npy")
    assert OWNED_FILE.fullmatch("shard_100000-abcdefabcd.jsonl")
    assert OWNED_FILE.fullmatch("shard_00001.4242.deadbeef.jsonl.tmp")
    assert OWNED_FILE.fullmatch("manifest.json.77.0011aabb.tmp")
    for name in (
        "shard_notes.txt",
        "shard_backup",
        "shard_00012-0123456789.npy.bak",
        "shard_0001-0123456789.npy",
        "shard_00012-0123456789A.npy",
        "manifest.json.77.0011aabb.tmp~",
        "manifest.json",
        "lock",
    ):
        assert not OWNED_FILE.fullmatch(name), name


def test_an_index_left_open_at_interpreter_exit_is_unmapped_quietly(index):
    import subprocess
    import sys

    code = f"from jaxparadigm.retrieval.index.reader import Index\nkept = Index({str(index)!r})\n"
    root = os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    )
    env = {**os.environ, "PYTHONPATH": root, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "Exception ignored" not in done.stderr, done.stderr
