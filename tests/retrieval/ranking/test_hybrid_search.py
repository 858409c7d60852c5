"""hybrid_search = RRF of the index's dense top-depth and BM25 top-depth, on a real index built with
the hash-seeded stand-in encoder (C1.1)."""

from __future__ import annotations

import pytest

from jaxparadigm.retrieval import IndexSearcher, build_index
from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index
from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.sparse.bm25 import bm25_index, bm25_top

TEXTS = [
    "The heron waits in shallow water for fish to pass.",
    "Compilers turn source code into machine instructions.",
    "A kestrel hovers over the field before it dives.",
    "Sourdough needs a starter, flour, water and salt.",
    "Tectonic plates drift a few centimetres every year.",
    "The kestrel and the heron are both birds of open country.",
]


@pytest.fixture
def searcher(tmp_path, hash_encoder):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, t in enumerate(TEXTS):
        (folder / f"d{i}.txt").write_text(t)
    build_index([folder], tmp_path / "idx", hash_encoder, chunk_tokens=24, overlap=4, shard_rows=4)
    return IndexSearcher(tmp_path / "idx")


def test_hybrid_equals_rrf_of_dense_and_bm25(searcher, hash_encoder):
    keyword = keyword_index(searcher)
    texts = [searcher.passage(r).text for r in range(len(searcher))]
    assert sorted(texts) == sorted(TEXTS)
    queries = ["kestrel", "water for the heron", "nothing matches zzz"]
    got = hybrid_search(searcher, hash_encoder, queries, k=4, keyword=keyword, depth=5)
    dense = searcher.search(hash_encoder, queries, k=5)
    for q, hits, d in zip(queries, got, dense, strict=True):
        want = reciprocal_rank_fusion([[h.row for h in d], bm25_top(bm25_index(texts), q, 5)])[:4]
        assert [(h.row, h.score) for h in hits] == want
        for h in hits:
            assert (h.source, h.start, h.end, h.text) == tuple(searcher.passage(h.row))
    # the keyword side lifts both kestrel passages above any passage that only dense ranked
    kestrel = {r for r, t in enumerate(texts) if "kestrel" in t}
    assert {h.row for h in got[0][:2]} == kestrel
    # no query word in the corpus: the dense order, fused scores 1 / (60 + rank)
    assert [h.score for h in got[2]] == [1 / 61, 1 / 62, 1 / 63, 1 / 64]
    assert hybrid_search(searcher, hash_encoder, "kestrel", k=4, depth=5) == got[:1]


def test_hybrid_bad_input(searcher, hash_encoder):
    with pytest.raises(ValueError, match=r"^search\.k: got 0, expected an int >= 1$"):
        hybrid_search(searcher, hash_encoder, "kestrel", k=0)
    with pytest.raises(ValueError, match=r"^search\.depth: got 0, expected an int >= 1$"):
        hybrid_search(searcher, hash_encoder, "kestrel", depth=0)
    with pytest.raises(ValueError, match="keyword: got a BM25 index of 2 passages, expected 6"):
        hybrid_search(searcher, hash_encoder, "kestrel", keyword=bm25_index(["a", "b"]))
