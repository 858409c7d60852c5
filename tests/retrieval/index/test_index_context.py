"""Passages that know where they are: each passage's context (file name, section titles,
class/def) is stored beside it in the shard line and keyword-indexed with it, never in its text,
offsets or embedding; an index built without contexts still opens and searches (C1.1)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.outline import with_context
from jaxparadigm.retrieval.documents.passages import (
    passage_contexts,
    split_passages,
    splitting_tokenizer,
)
from jaxparadigm.retrieval.documents.reading import read_documents
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.index.store import read_manifest, shard_embeddings, write_manifest
from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index
from jaxparadigm.retrieval.sparse.bm25 import bm25_index
from tests.retrieval.conftest import HashEncoder

KW = {"chunk_tokens": 24, "overlap": 4, "shard_rows": 4}
FILES = {
    "guide.md": "# Guide\n\nSome intro words here.\n\n## Install\n\nRun the installer with care "
    "and then check the version it prints.\n",
    "run.py": 'class CliRunner:\n    """Invoke a command for unit testing."""\n\n'
    "    def invoke(self, cli):\n        return cli(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)\n",
    "manual.html": "<html><head><title>Manual</title></head><body><h2>1. Options</h2>"
    "<p>Use --log-file to write the commentary to a file instead.</p></body></html>",
}


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def _expected(enc, *paths):
    docs = read_documents(paths).documents
    passages = split_passages(docs, splitting_tokenizer(enc.tokenizer), 24, 4)
    return passages, passage_contexts(docs, passages)


def _lines(out):
    m = read_manifest(out)
    return [json.loads(x) for s in m["shards"] for x in (out / f"{s['name']}.jsonl").open()]


def _embeddings(out):
    m = read_manifest(out)
    return np.concatenate([shard_embeddings(out, s, m["model"]["dim"]) for s in m["shards"]])


def _same(a, b) -> bool:
    """Two BM25 indexes hold the same statistics."""
    same = a.idf == b.idf and a.postings.keys() == b.postings.keys()
    same = same and all(
        np.array_equal(a.postings[w][i], b.postings[w][i]) for w in a.postings for i in (0, 1)
    )
    return same and np.array_equal(a.lengths, b.lengths) and a[3:] == b[3:]


def test_build_stores_contexts_beside_unchanged_passages(tmp_path, folder, hash_encoder):
    out = tmp_path / "idx"
    m = build_index([folder], out, hash_encoder, **KW)
    passages, contexts = _expected(hash_encoder, folder)
    assert m["build"]["context"] == "outline"
    index = Index(out)
    assert index.passages() == passages  # text and offsets: the file's own characters
    for p in passages:
        assert p.text == (folder / p.source.rsplit("/", 1)[1]).read_text()[p.start : p.end] or (
            p.source.endswith(".html")  # html: the readable text, same offsets
        )
    assert [index.context(r) for r in range(len(passages))] == contexts
    by_file = {p.source.rsplit("/", 1)[1]: c for p, c in zip(passages, contexts, strict=True)}
    assert by_file["run.py"].startswith("run.py > class CliRunner")
    # the passage starts at the readable <title> text: the <h2> after it is in its text
    assert by_file["manual.html"] == "manual.html > Manual"
    assert {c.split(" > ")[0] for c in contexts} == set(FILES)
    # the shard lines: the four fields and the context; the encoder saw the text
    lines = _lines(out)
    assert [line["context"] for line in lines] == contexts
    assert [{k: v for k, v in line.items() if k != "context"} for line in lines] == [
        p._asdict() for p in passages
    ]
    # the embedding is the text's alone (encoding the context measured worse)
    want = [hash_encoder.vector(p.text) for p in passages]
    np.testing.assert_array_equal(_embeddings(out), np.stack(want))
    # BM25 reads each passage with its context
    searcher = IndexSearcher(out)
    texts = [with_context(c, p.text) for p, c in zip(passages, contexts, strict=True)]
    assert _same(keyword_index(searcher), bm25_index(texts))
    assert not _same(keyword_index(searcher), bm25_index([p.text for p in passages]))


def test_an_index_built_without_contexts_opens_and_searches(tmp_path, folder, hash_encoder):
    out = tmp_path / "idx"
    m = build_index([folder], out, hash_encoder, context=False, **KW)
    passages, _ = _expected(hash_encoder, folder)
    assert "context" not in m["build"]
    assert [sorted(line) for line in _lines(out)] == [["end", "source", "start", "text"]] * len(
        passages
    )  # the format before contexts, line for line
    np.testing.assert_array_equal(
        _embeddings(out), np.stack([hash_encoder.vector(p.text) for p in passages])
    )
    searcher = IndexSearcher(out)
    assert [searcher.index.context(r) for r in range(len(searcher))] == [""] * len(passages)
    assert _same(keyword_index(searcher), bm25_index([p.text for p in passages]))
    hits = hybrid_search(searcher, hash_encoder, "installer version", k=3)[0]
    assert len(hits) == 3 and "installer" in hits[0].text
    # an add follows the index: no contexts either
    more = tmp_path / "more"
    more.mkdir()
    (more / "notes.md").write_text("# Notes\n\nA line about kestrels and herons.\n")
    add_to_index(out, [more], hash_encoder)
    assert all("context" not in line for line in _lines(out))


def test_add_and_resume_keep_every_context(tmp_path, folder, hash_encoder, minilm_tokenizer):
    more = tmp_path / "more"
    more.mkdir()
    (more / "notes.md").write_text("# Notes\n\nA line about kestrels and herons.\n")
    out = tmp_path / "idx"
    build_index([folder], out, hash_encoder, **KW)
    add_to_index(out, [more], hash_encoder)  # the last shard is partial: rewritten with its rows
    passages, contexts = _expected(hash_encoder, folder)
    added, added_contexts = _expected(hash_encoder, more)
    index = Index(out)
    assert index.passages() == passages + added
    assert [index.context(r) for r in range(len(index))] == contexts + added_contexts
    assert added_contexts == ["notes.md > Notes"]
    # an interrupted build resumes to the same shards
    broken = HashEncoder(minilm_tokenizer, fail_after=1)
    with pytest.raises(KeyboardInterrupt):
        build_index([folder], tmp_path / "r", broken, **KW)
    build_index([folder], tmp_path / "r", hash_encoder, **KW)
    assert _lines(tmp_path / "r") == _lines(tmp_path / "idx")[: len(passages)]


def test_damaged_contexts_are_refused(tmp_path, folder, hash_encoder):
    out = tmp_path / "idx"
    build_index([folder], out, hash_encoder, **KW)
    m = read_manifest(out)
    m["build"]["context"] = "headers"
    write_manifest(out, m)
    with pytest.raises(InputError, match=r"field build.context: got 'headers', expected 'outline'"):
        Index(out)
    with pytest.raises(TypeError, match="context: got .+, expected True or False"):
        build_index([folder], tmp_path / "x", hash_encoder, context="yes", **KW)


def test_a_context_of_the_wrong_type_is_refused(tmp_path, folder, hash_encoder):
    from jaxparadigm.retrieval.index.store import _passage

    line = b'{"source": "a", "start": 0, "end": 1, "text": "x", "context": 3}'
    with pytest.raises(InputError, match="field 'context' is int, expected str"):
        _passage("here", line)
    with pytest.raises(InputError, match=r"got \['context', 'end', 'source', 'start', 'texts'\]"):
        _passage("here", b'{"source": "a", "start": 0, "end": 1, "texts": "x", "context": ""}')
    assert _passage("here", line.replace(b"3", b'"f.md > A"'))[1] == "f.md > A"


def test_contexts_need_their_documents_and_one_per_row(tmp_path):
    from jaxparadigm.retrieval.documents.passages import Document, Passage
    from jaxparadigm.retrieval.index.store import write_shard

    docs = [Document("/d/a.md", "# A\n\nx", ()), Document("/d/r.jsonl:1", "y")]
    passages = [Passage("/d/a.md", 5, 6, "x"), Passage("/d/r.jsonl:1", 0, 1, "y")]
    assert passage_contexts(docs, passages) == ["a.md", ""]  # sections () vs None (JSONL)
    with pytest.raises(ValueError, match="passages: '/d/b.md' is not the source of any of docs"):
        passage_contexts(docs, [Passage("/d/b.md", 0, 1, "z")])
    emb = np.eye(2, dtype=np.float32)
    with pytest.raises(ValueError, match=r"contexts: got 1, expected 2 \(one per row\)"):
        write_shard(tmp_path, 0, emb, passages, ["a.md"])
