"""What a search service searches with (ServedSearch): a request's body keys are SearchOptions
fields; serve ranks hybrid by default, "mode": "dense" ranks dense, each the library's ranking;
bad keys and what the index or a process group cannot do are one 400 line naming the key."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index.memory_index import SemanticIndex
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.ranking.search_results import SCORE_MEANING, search_with_excerpts
from jaxparadigm.retrieval.search_options import SearchOptions
from jaxparadigm.retrieval.service.http_service import SearchService
from jaxparadigm.retrieval.service.served_search import SERVICE_DEFAULTS, ServedSearch
from jaxparadigm.retrieval.sparse.bm25 import bm25_index, bm25_top
from tests.retrieval.service.hash_service import hash_service

QUERIES = ["open a file for reading", "pause the program", "where records go", "merge two sets"]


def _post(url, body: dict):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def served(tmp_path_factory, minilm_tokenizer):
    """A started service over the hash index with serve's defaults (SearchOptions(): hybrid)."""
    svc = hash_service(
        tmp_path_factory.mktemp("served"), minilm_tokenizer, options=SearchOptions(), max_batch=1
    )
    yield svc
    svc.stop()


def test_serve_ranks_hybrid_by_default_and_dense_on_request_as_the_library(served):
    searcher, encoder = served.index, served.encoder
    differ = 0
    for query in QUERIES:
        status, default = _post(served.url, {"query": query, "k": 4})
        status_h, hybrid = _post(served.url, {"query": query, "k": 4, "mode": "hybrid"})
        status_d, dense = _post(served.url, {"query": query, "k": 4, "mode": "dense"})
        assert status == status_h == status_d == 200 and default == hybrid
        for mode, answer in (("hybrid", hybrid), ("dense", dense)):
            want = search_with_excerpts(
                searcher, encoder, query, options=SearchOptions(mode=mode, k=4)
            )
            assert answer["hits"] == [[h.row, h.score] for h in want]
            assert (answer["mode"], answer["score"]) == (mode, SCORE_MEANING[mode])
            records = [
                {k: p[k] for k in ("source", "start", "end", "text")} for p in answer["passages"]
            ]
            assert records == [h.passage._asdict() for h in want]
            assert all("excerpt" in p for p in answer["passages"])  # serve's default: excerpts
        differ += [r for r, _ in hybrid["hits"]] != [r for r, _ in dense["hits"]]
    assert differ >= 2  # the two modes rank differently here: the test can tell them apart
    status, bare = _post(served.url, {"query": QUERIES[0], "k": 4, "excerpts": False})
    assert status == 200 and all("excerpt" not in p for p in bare["passages"])


@pytest.mark.parametrize(
    "body, error",
    [
        ({"mode": "bm25"}, "mode: got 'bm25', expected one of 'hybrid', 'dense'"),
        ({"mode": None}, "mode: got None, expected one of 'hybrid', 'dense'"),
        ({"k": 0}, "k: got 0, expected an int >= 1"),
        ({"k": 101}, "k: got 101, expected an int in [1, 100] (the most this service answers)"),
        (
            {"depth": 5000},
            "depth: got 5000, expected an int in [1, 1000] (the most this service answers)",
        ),
        ({"nprobe": 2}, "nprobe: got 2, but "),
        ({"mode": "hybrid", "approx": True}, "approx=True: approximates the dense ranking alone"),
        (
            {"dtype": "int8"},
            "dtype='int8': this service's index was opened with dtype 'float32' (it applies to "
            "the whole index, not to one search); expected 'float32'",
        ),
        (
            {"top_k": 3},
            "body key 'top_k': unknown; expected one of query, mode, k, nprobe, depth, approx, "
            "excerpts, excerpt_chars, dtype, stream",
        ),
    ],
)
def test_a_bad_key_is_one_400_line_naming_it_the_value_and_what_was_expected(served, body, error):
    status, answer = _post(served.url, {"query": "open a file", **body})
    assert status == 400 and set(answer) == {"error"} and answer["error"].startswith(error)
    assert "\n" not in answer["error"]


def test_the_accepted_body_keys_come_from_the_type(served):
    status, answer = _post(served.url, {"query": "x", "nope": 1})
    keys = answer["error"].split("expected one of ")[1].split(", ")
    assert status == 400 and keys == ["query", *SearchOptions.keys()]


def test_a_service_without_options_answers_the_engines_dense_cosine(tmp_path, minilm_tokenizer):
    svc = hash_service(tmp_path, minilm_tokenizer, max_batch=1)
    try:
        assert svc.options == SERVICE_DEFAULTS and svc.nprobe is None
        status, answer = _post(svc.url, {"query": QUERIES[1], "k": 3})
        q = svc.encoder.vector(QUERIES[1])
        want = svc.index.search_vectors(q[None], 3)
        assert answer["hits"] == [
            [int(i), float(s)] for i, s in zip(want.ids[0], want.scores[0], strict=True)
        ]
        assert answer["mode"] == "dense" and all("excerpt" not in p for p in answer["passages"])
    finally:
        svc.stop()


class _GroupIndex:
    """An index split over 3 processes, as ServedSearch sees it (opened, group, resolve_nprobe)."""

    opened = SearchOptions()
    group = type("Group", (), {"processes": 3})()

    def resolve_nprobe(self, options):
        return None

    def __len__(self):
        return 10


def test_a_process_group_refuses_hybrid_requests_naming_the_body_key():
    with pytest.raises(InputError, match=r"^search\.mode='hybrid': the BM25 ranking"):
        ServedSearch(_GroupIndex(), SearchOptions(), None, None)  # serve's own options
    served = ServedSearch(_GroupIndex(), SearchOptions(mode="dense"), None, None)
    assert served.request_nprobe(SearchOptions(mode="dense", k=9)) is None
    with pytest.raises(InputError) as info:
        served.request_nprobe(SearchOptions(mode="hybrid"))
    assert str(info.value) == (
        "mode='hybrid': the BM25 ranking of hybrid needs every passage, but in a search split "
        "over 3 processes each holds only its own shards; expected mode='dense'"
    )
    with pytest.raises(InputError, match=r"^approx=True: a search split over 3 processes"):
        served.request_nprobe(SearchOptions(mode="dense", approx=True))


def test_hybrid_over_an_in_memory_index_fuses_its_documents_bm25(encoder):
    docs = [
        "The heron waits in shallow water for fish to pass.",
        "Compilers turn source code into machine instructions.",
        "A kestrel hovers over the field before it dives.",
        "The kestrel and the heron are both birds of open country.",
    ]
    index = SemanticIndex(encoder).add(docs)
    service = SearchService(index, options=SearchOptions(mode="hybrid", depth=3, excerpts=False))
    for query in ("kestrel", "machine code"):
        status, answer = service.handle("/search", json.dumps({"query": query, "k": 2}).encode())
        dense = [row for row, _ in index.search(query, 3)]
        want = reciprocal_rank_fusion([dense, bm25_top(bm25_index(docs), query, 3)], 60, top=2)
        assert status == 200 and answer["hits"] == [[r, s] for r, s in want]
    status, answer = service.handle("/search", b'{"query": "kestrel", "nprobe": 2}')
    assert (status, answer) == (
        400,
        {"error": "nprobe=2: this index has no IVF lists (an in-memory SemanticIndex); "
         "expected 'default' or None"},
    )  # fmt: skip
    assert isinstance(service.index, SemanticIndex) and not isinstance(service.index, IndexSearcher)
