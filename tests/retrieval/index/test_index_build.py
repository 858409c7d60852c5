"""Persistent index (C1.1): build, add, resume after an interrupt, tampered shards, refusals.

Uses the hash-seeded stand-in encoder (tests/retrieval/conftest.py) so no BERT runs here; the real
MiniLM path is covered by test_index_cli.py."""

import json

import numpy as np
import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.passages import split_passages, splitting_tokenizer
from jaxparadigm.retrieval.documents.reading import read_documents
from jaxparadigm.retrieval.index.build import NothingToAdd, add_to_index, build_index
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.index.store import read_manifest, shard_embeddings
from tests.retrieval.conftest import HashEncoder

TOPICS = ["assert", "break", "continue", "lambda", "pass", "global", "del", "return"]


@pytest.fixture
def docs(tmp_path):
    from pydoc_data.topics import topics

    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    for i, name in enumerate(TOPICS[:6]):
        (root / ("sub" if i % 2 else "") / f"{name}.md").write_text(topics[name], encoding="utf-8")
    extra = tmp_path / "extra"
    extra.mkdir()
    for name in TOPICS[6:]:
        (extra / f"{name}.txt").write_text(topics[name], encoding="utf-8")
    return root, extra


KW = {"chunk_tokens": 24, "overlap": 4, "shard_rows": 8}


def _expected_passages(enc, *paths):
    docs = read_documents(paths).documents
    return split_passages(docs, splitting_tokenizer(enc.tokenizer), 24, 4)


def _all_embeddings(index_dir):
    m = read_manifest(index_dir)
    return np.concatenate([shard_embeddings(index_dir, s, m["model"]["dim"]) for s in m["shards"]])


def test_build_writes_manifest_fixed_shards_and_passages(tmp_path, docs, hash_encoder):
    out = tmp_path / "idx"
    m = build_index([docs[0]], out, hash_encoder, **KW)
    want = _expected_passages(hash_encoder, docs[0])
    assert m == read_manifest(out) and m["status"] == "complete" and m["pending"] is None
    assert m["count"] == len(want) > 16 and m["model"] == {
        "name": "all-MiniLM-L6-v2",
        "dim": 16,
        "max_seq_length": 64,
    }
    assert [s["rows"] for s in m["shards"][:-1]] == [8] * (len(m["shards"]) - 1)
    assert m["build"] == {"chunk_tokens": 24, "overlap": 4, "batch_size": 32}
    assert sum(s["passages"] for s in m["sources"]) == m["count"]
    searcher = IndexSearcher(out)
    assert [searcher.passage(r) for r in range(m["count"])] == want
    np.testing.assert_array_equal(
        _all_embeddings(out), np.stack([hash_encoder.vector(p.text) for p in want])
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["lock", "manifest.json"] + [s["name"] + e for s in m["shards"] for e in (".npy", ".jsonl")]
    )


def test_search_returns_the_passage_the_query_was_encoded_from(tmp_path, docs, hash_encoder):
    out = tmp_path / "idx"
    build_index([docs[0]], out, hash_encoder, **KW)
    searcher = IndexSearcher(out)
    target = searcher.passage(13)
    hits = searcher.search(hash_encoder, [target.text, searcher.passage(2).text], k=3)
    assert hits[0][0].row == 13 and hits[0][0].text == target.text
    assert abs(hits[0][0].score - 1.0) < 1e-5 and hits[1][0].row == 2
    with pytest.raises(InputError, match=r"queries\[1\]"):
        searcher.search(hash_encoder, ["fine", "  "], k=3)
    emb = _all_embeddings(out)
    brute = np.argsort(-(emb @ hash_encoder.vector(target.text)), kind="stable")[:3]
    assert [h.row for h in hits[0]] == list(brute)


def test_add_fills_the_partial_shard_then_appends(tmp_path, docs, hash_encoder):
    out = tmp_path / "idx"
    first = build_index([docs[0]], out, hash_encoder, **KW)
    assert first["shards"][-1]["rows"] < 8  # the add has to complete this shard
    hash_encoder.encoded.clear()
    m = add_to_index(out, [docs[1]], hash_encoder)
    added = _expected_passages(hash_encoder, docs[1])
    assert hash_encoder.encoded == [p.text for p in added]  # old passages were not re-encoded
    assert m["count"] == first["count"] + len(added)
    assert [s["rows"] for s in m["shards"][:-1]] == [8] * (len(m["shards"]) - 1)
    assert m["shards"][: len(first["shards"]) - 1] == first["shards"][:-1]  # full shards kept
    searcher = IndexSearcher(out)
    every = _expected_passages(hash_encoder, docs[0]) + added
    assert [searcher.passage(r) for r in range(m["count"])] == every
    top = searcher.search(hash_encoder, added[-1].text, k=1)[0][0]
    assert top.row == m["count"] - 1
    assert len(list(out.glob("*.npy"))) == len(m["shards"])  # the replaced shard was removed
    with pytest.raises(NothingToAdd) as err:  # issue 47: "the documents hold no text to index"
        add_to_index(out, [docs[1]], hash_encoder)
    names = sorted(str(p.resolve()) for p in docs[1].iterdir())
    assert str(err.value) == "nothing to add: " + "; ".join(
        f"{n} is already indexed (unchanged)" for n in names
    )
    assert [s.path for s in err.value.held] == names and read_manifest(out) == m


def test_interrupted_build_resumes_without_re_encoding_finished_shards(
    tmp_path, docs, minilm_tokenizer
):
    out = tmp_path / "idx"
    broken = HashEncoder(minilm_tokenizer, fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        build_index([docs[0]], out, broken, **KW)
    m = read_manifest(out)
    assert m["status"] == "building" and m["count"] == 16 and len(m["shards"]) == 2
    with pytest.raises(InputError, match="build was interrupted"):
        IndexSearcher(out)
    with pytest.raises(InputError, match="different inputs"):
        build_index([docs[1]], out, HashEncoder(minilm_tokenizer), **KW)
    resumed = HashEncoder(minilm_tokenizer)
    m = build_index([docs[0]], out, resumed, **KW)
    want = _expected_passages(resumed, docs[0])
    assert resumed.encoded == [p.text for p in want[16:]]  # only the unfinished passages
    reference = tmp_path / "ref"
    build_index([docs[0]], reference, HashEncoder(minilm_tokenizer), **KW)
    assert m["shards"] == read_manifest(reference)["shards"]  # byte-identical shards


def test_interrupted_add_resumes(tmp_path, docs, minilm_tokenizer):
    out = tmp_path / "idx"
    build_index([docs[0]], out, HashEncoder(minilm_tokenizer), **KW)
    with pytest.raises(KeyboardInterrupt):
        add_to_index(out, [docs[1]], HashEncoder(minilm_tokenizer, fail_after=1))
    assert read_manifest(out)["status"] == "building"
    resumed = HashEncoder(minilm_tokenizer)
    m = add_to_index(out, [docs[1]], resumed)
    reference = tmp_path / "ref"
    build_index([docs[0]], reference, HashEncoder(minilm_tokenizer), **KW)
    ref = add_to_index(reference, [docs[1]], HashEncoder(minilm_tokenizer))
    assert m["shards"] == ref["shards"] and m["count"] == ref["count"]
    assert len(resumed.encoded) < len(_expected_passages(resumed, docs[1]))


@pytest.mark.parametrize("suffix", [".npy", ".jsonl"])
def test_tampered_shard_is_refused_by_name(tmp_path, docs, hash_encoder, suffix):
    out = tmp_path / "idx"
    m = build_index([docs[0]], out, hash_encoder, **KW)
    victim = m["shards"][1]["name"]
    path = out / (victim + suffix)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01  # one flipped bit in the last row / last passage
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=f"shard {victim}: {victim}{suffix} fails its checksum"):
        IndexSearcher(out).passage(8) if suffix == ".jsonl" else IndexSearcher(out)
    with pytest.raises(InputError, match=f"shard {victim}"):
        add_to_index(out, [docs[1]], hash_encoder)
    path.unlink()
    with pytest.raises(InputError, match=f"{victim}{suffix} is missing"):
        IndexSearcher(out).passage(8) if suffix == ".jsonl" else IndexSearcher(out)


def test_refusals(tmp_path, docs, hash_encoder, minilm_tokenizer):
    out = tmp_path / "idx"
    build_index([docs[0]], out, hash_encoder, **KW)
    with pytest.raises(InputError, match="already holds an index of"):
        build_index([docs[0]], out, hash_encoder, **KW)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not an empty folder"):
        build_index([docs[0]], tmp_path / "full", hash_encoder, **KW)
    with pytest.raises(InputError, match=r"chunk_tokens: got 63, expected <= 62"):
        build_index([docs[0]], tmp_path / "x", hash_encoder, chunk_tokens=63)
    other = HashEncoder(minilm_tokenizer, dim=8)
    with pytest.raises(InputError, match="index was built with"):
        add_to_index(out, [docs[1]], other)
    with pytest.raises(InputError, match="index was built with"):
        IndexSearcher(out).search(other, "q")
    (tmp_path / "empty.txt").write_text("   \n")
    with pytest.raises(InputError, match="hold no text"):
        build_index([tmp_path / "empty.txt"], tmp_path / "y", hash_encoder, **KW)
    with pytest.raises(InputError, match="no manifest.json"):
        IndexSearcher(tmp_path / "full")
    manifest = out / "manifest.json"
    m = json.loads(manifest.read_text())
    m["count"] += 1
    manifest.write_text(json.dumps(m))
    with pytest.raises(InputError, match="do not add up"):
        IndexSearcher(out)
    manifest.write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        IndexSearcher(out)
