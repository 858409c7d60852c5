"""The index folder's store and writer at their edges (issue 39): a shard file that cannot be
read, a shard with one passage fewer than its rows, an encoder missing a part, progress off and
on, and ``add`` on a manifest written before ``files``/``history`` existed.

Each test killed a one-line mutant of ``index_store.py`` or ``index_build.py`` that the earlier
tests let through (``make mutation MODULE=retrieval.index_store``, ``retrieval.index_build``).
"""

import json

import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index import store as index_store
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.ivf_build import train_ivf
from jaxparadigm.retrieval.index.store import (
    new_manifest,
    open_passages,
    read_manifest,
    shard_passages,
    verify_shards,
)
from tests.retrieval.conftest import HashEncoder


def _built(tmp_path, encoder, **kw):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("alpha beta gamma delta. " * 6)
    (docs / "b.txt").write_text("epsilon zeta eta theta. " * 6)
    build_index([docs], tmp_path / "idx", encoder, chunk_tokens=16, overlap=4, **kw)
    return tmp_path / "idx"


def test_shard_rows_below_one_is_refused_naming_it():
    with pytest.raises(InputError, match=r"^shard_rows: got 0"):
        new_manifest({"name": "m", "dim": 4, "max_seq_length": 8}, 0, {})


def test_a_shard_file_that_cannot_be_read_names_the_shard_and_why(
    tmp_path, hash_encoder, monkeypatch
):
    idx = _built(tmp_path, hash_encoder)
    shard = read_manifest(idx)["shards"][0]
    npy = idx / f"{shard['name']}.npy"
    npy.unlink()
    npy.mkdir()  # a folder where the file was: said "is missing" before the regular-file check
    with pytest.raises(InputError) as err:
        list(verify_shards(idx, read_manifest(idx)))
    assert str(err.value) == (
        f"{idx}: shard {shard['name']}: {npy.name} is a folder, expected a regular file; the "
        "shard is damaged: restore the file or rebuild the index"
    )
    npy.rmdir()
    npy.write_bytes(b"x")

    def failing_disk(fh, chunk=0):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(index_store, "_digest", failing_disk)  # as root, modes stop nothing
    with pytest.raises(InputError) as err:
        list(verify_shards(idx, read_manifest(idx)))
    assert str(err.value) == (
        f"{idx}: shard {shard['name']}: {npy.name} cannot be read (Input/output error)"
    )


def test_a_shard_with_one_passage_fewer_than_its_rows(tmp_path, hash_encoder):
    idx = _built(tmp_path, hash_encoder)
    shard = read_manifest(idx)["shards"][0]
    assert shard["rows"] >= 2
    path = idx / f"{shard['name']}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    opened = open_passages(idx, shard)
    assert opened[:] == b"".join(lines)  # read as bytes, exactly the file
    path.write_bytes(b"".join(lines[:-1]))
    with pytest.raises(InputError) as err:
        shard_passages(idx, shard, verify=False)
    assert str(err.value) == (
        f"{idx}: shard {shard['name']}: {shard['rows'] - 1} passages, expected {shard['rows']}"
    )


def test_an_encoder_without_a_part_is_named_by_its_type(tmp_path):
    class Half:
        def encode(self, texts):
            return None

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("words")
    with pytest.raises(TypeError) as err:
        build_index([tmp_path / "d"], tmp_path / "idx", Half())
    assert str(err.value) == (
        "encoder: got Half without 'dim', expected a SentenceEncoder (load_minilm())"
    )


@pytest.mark.parametrize("progress", [False, True])
def test_progress_is_reported_only_when_asked(tmp_path, hash_encoder, capsys, progress):
    _built(tmp_path, hash_encoder, progress=progress)
    err = capsys.readouterr().err
    if progress:
        assert "index build" in err and "passages" in err
    else:
        assert err == ""


def _older_manifest_and_new_docs(tmp_path, idx):
    """Drop the optional ``files``/``history`` from ``idx``'s manifest (as written before them)
    and return a folder of one new document to add."""
    m = json.loads((idx / "manifest.json").read_text())
    del m["files"], m["history"]
    (idx / "manifest.json").write_text(json.dumps(m))
    more = tmp_path / "more"
    more.mkdir()
    (more / "c.txt").write_text("iota kappa lambda mu. " * 6)
    return more


def test_add_to_a_manifest_from_before_files_and_history(tmp_path, hash_encoder):
    """Boundary: ``files`` and ``history`` are optional (manifests written before them): an add
    starts both from empty."""
    idx = _built(tmp_path, hash_encoder)
    more = _older_manifest_and_new_docs(tmp_path, idx)
    added = add_to_index(idx, [more], hash_encoder)
    assert [h["command"] for h in added["history"]] == ["add"]
    assert [f["path"] for f in added["files"]] == [(more / "c.txt").as_posix()]
    assert read_manifest(idx)["history"] == added["history"]


def test_an_interrupted_add_on_an_older_manifest_stays_readable(tmp_path, minilm_tokenizer):
    """Boundary: the add is interrupted after its manifest is committed: its ``pending.base``
    records the missing ``files``/``history`` as empty lists (a null would be refused on every
    later read), and the same add then resumes."""
    encoder = HashEncoder(minilm_tokenizer)
    idx = _built(tmp_path, encoder)
    more = _older_manifest_and_new_docs(tmp_path, idx)
    with pytest.raises(KeyboardInterrupt):
        add_to_index(idx, [more], HashEncoder(minilm_tokenizer, fail_after=0))
    pending = read_manifest(idx)["pending"]
    assert pending["base"]["files"] == [] and pending["base"]["history"] == []
    added = add_to_index(idx, [more], encoder)
    assert added["status"] == "complete" and [h["command"] for h in added["history"]] == ["add"]


def test_a_new_manifest_holds_exactly_the_fields_of_an_empty_building_index():
    """new_manifest: status building, no pending plan yet, no rows (the fields check_manifest
    reads, by name: a misspelt key would only show when a build is interrupted)."""
    from jaxparadigm.retrieval.index.store import new_manifest

    model = {"name": "all-MiniLM-L6-v2", "dim": 384, "max_seq_length": 256}
    build = {"chunk_tokens": 8, "overlap": 0, "batch_size": 16}
    m = new_manifest(model, 4, build)
    assert m == {
        "format": "jaxparadigm-index",
        "version": 1,
        "model": model,
        "dtype": "float32",
        "shard_rows": 4,
        "count": 0,
        "status": "building",
        "pending": None,
        "build": build,
        "sources": [],
        "shards": [],
    }


def test_an_add_keeps_the_history_before_it(tmp_path, hash_encoder):
    """``index add`` appends its entry to the manifest's history: the build's entry stays first."""
    idx = _built(tmp_path, hash_encoder)
    before = read_manifest(idx)["history"]
    more = tmp_path / "more"
    more.mkdir()
    (more / "c.txt").write_text("iota kappa lambda mu. " * 6)
    added = add_to_index(idx, [more], hash_encoder)
    assert [h["command"] for h in added["history"]] == ["build", "add"]
    assert added["history"][0] == before[0]
    assert read_manifest(idx)["history"] == added["history"]


def test_ivf_refuses_an_interrupted_add_naming_its_status(tmp_path, minilm_tokenizer):
    """``index ivf`` on a folder whose add did not finish: one line, the status, what to do."""
    idx = _built(tmp_path, HashEncoder(minilm_tokenizer))
    more = _older_manifest_and_new_docs(tmp_path, idx)
    with pytest.raises(KeyboardInterrupt):
        add_to_index(idx, [more], HashEncoder(minilm_tokenizer, fail_after=0))
    with pytest.raises(InputError) as err:
        train_ivf(idx, 2)
    assert str(err.value) == (
        f"{idx}: an `index build`/`add` was interrupted (status 'building'); "
        "rerun it to finish, then train the IVF lists"
    )
