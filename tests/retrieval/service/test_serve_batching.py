"""SearchService batches concurrent requests (issue 37) over the tests' hash index: the same hits as
one request at a time, a complete trace per request with the batch's size on its spans, a failed
batch answered 500 in every request, a closed batcher 503."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict

import pytest

from jaxparadigm import cli
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.retrieval.service.http_service import SearchService
from tests.retrieval.service.hash_service import hash_index, hash_service

QUERIES = [
    "open a file for reading",
    "pause the program",
    "merge two sets",
    "configure logging handlers",
    "truncate a file opened for writing",
    "wait between retries",
    "unique elements",
    "where records go",
]
BATCH_SPANS = ("queue", "encode", "search")


def _post(url, body: dict, timeout=30):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _post_together(url, bodies):
    """POST every body from its own thread, released together; the (status, payload) of each."""
    out: list = [None] * len(bodies)
    barrier = threading.Barrier(len(bodies))

    def one(i):
        barrier.wait()
        out[i] = _post(url, bodies[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(o is not None for o in out), "a request got no answer"
    return out


def _spans(svc, servers: int):
    """The exported spans once ``servers`` server spans have ended (a server span ends just after
    its answer was written, so the client may read it first)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        spans = svc.exported_spans()
        if sum(s.name == "POST /search" for s in spans) >= servers:
            return spans
        time.sleep(0.01)
    raise AssertionError(f"fewer than {servers} server spans were exported")


def _children(spans):
    """server span -> its child spans by name (one request's trace)."""
    by_parent = defaultdict(dict)
    for s in spans:
        if s.parent is not None:
            by_parent[s.parent.span_id][s.name] = s
    servers = [s for s in spans if s.name == "POST /search"]
    return [(server, by_parent[server.context.span_id]) for server in servers]


@pytest.fixture(scope="module")
def service(tmp_path_factory, minilm_tokenizer):
    svc = hash_service(
        tmp_path_factory.mktemp("svc"), minilm_tokenizer, max_batch=8, max_wait_ms=300
    )
    yield svc
    svc.stop()


def test_concurrent_requests_are_batched_and_answer_as_sequential_ones(service):
    bodies = [{"query": q, "k": 1 + i % 3} for i, q in enumerate(QUERIES)]
    service.exporter.clear()
    sequential = [_post(service.url, body) for body in bodies]
    _spans(service, len(bodies))  # every sequential server span ended: none leaks into the count
    service.exporter.clear()
    concurrent = _post_together(service.url, bodies)
    assert all(status == 200 for status, _ in sequential + concurrent)
    for (_, one), (_, batched), body in zip(sequential, concurrent, bodies, strict=True):
        assert len(one["hits"]) == body["k"]
        assert batched == one, body  # rows, scores and passages: each request its own
    traces = _children(_spans(service, len(bodies)))
    assert len(traces) == len(bodies)
    sizes = []
    for server, children in traces:
        assert server.attributes["http.status_code"] == 200
        assert set(children) == {"parse", "tokenize", *BATCH_SPANS}, sorted(children)
        size = {children[name].attributes["batch.size"] for name in BATCH_SPANS}
        assert len(size) == 1  # queue, encode and search of one batch
        sizes.append(size.pop())
        queue, encode, search = (children[name] for name in BATCH_SPANS)
        assert queue.end_time == encode.start_time <= encode.end_time <= search.start_time
        assert server.start_time <= queue.start_time and search.end_time <= server.end_time
        assert search.attributes["k"] in (1, 2, 3)
    assert max(sizes) > 1, sizes  # some requests were encoded together
    # the requests of one batch share its encode's times
    encodes = defaultdict(set)
    for _, children in traces:
        encode = children["encode"]
        encodes[(encode.start_time, encode.end_time)].add(encode.attributes["batch.size"])
    assert sum(next(iter(s)) for s in encodes.values()) == len(bodies)


def test_a_lone_request_is_served_alone(service):
    service.exporter.clear()
    status, payload = _post(service.url, {"query": QUERIES[0], "k": 2})
    assert status == 200 and len(payload["hits"]) == 2
    ((_, children),) = _children(_spans(service, 1))
    assert {children[name].attributes["batch.size"] for name in BATCH_SPANS} == {1}


class _FailingSearcher(IndexSearcher):
    """An IndexSearcher whose search raises while ``failing`` (after the service's warm-up)."""

    failing = False
    failed_calls = 0

    def search_vectors(self, queries, k, nprobe=None):
        if self.failing:
            self.failed_calls += 1
            raise RuntimeError("device lost")
        return super().search_vectors(queries, k, nprobe)


def test_a_search_error_answers_500_to_every_request_of_its_batch(tmp_path, minilm_tokenizer):
    index_dir, encoder = hash_index(tmp_path, minilm_tokenizer)
    searcher = _FailingSearcher(index_dir)
    svc = SearchService(searcher, encoder=encoder, max_batch=4, max_wait_ms=500).start()
    try:
        searcher.failing = True
        answers = _post_together(svc.url, [{"query": q, "k": 2} for q in QUERIES[:4]])
    finally:
        svc.stop()
    assert answers == [(500, {"error": "internal error (RuntimeError)"})] * 4
    assert 1 <= searcher.failed_calls < 4  # batched: fewer searches than requests
    servers = [s for s in svc.exported_spans() if s.name == "POST /search"]
    assert len(servers) == 4
    for server in servers:
        assert server.attributes["http.status_code"] == 500
        assert [e.attributes["exception.message"] for e in server.events] == ["device lost"]


def test_a_closed_batcher_answers_503_with_a_json_error(tmp_path, minilm_tokenizer):
    svc = hash_service(tmp_path, minilm_tokenizer)
    try:
        svc._batcher.close()  # what a stopping service's queued requests get
        status, payload = _post(svc.url, {"query": "open a file", "k": 1})
    finally:
        svc.stop()
    assert (status, payload) == (503, {"error": "the search service is stopping"})
    (server,) = [s for s in svc.exported_spans() if s.name == "POST /search"]
    assert server.attributes["http.status_code"] == 503
    assert server.status.description == payload["error"]
    assert [e.attributes["exception.type"].rsplit(".")[-1] for e in server.events] == [
        "ServiceUnavailable"
    ]


@pytest.mark.parametrize(
    "options, match",
    [
        ({"max_batch": 0}, r"^max_batch: got 0, expected an int in \[1, 1024\]$"),
        ({"max_batch": "8"}, r"^max_batch: got '8', expected an int in \[1, 1024\]$"),
        ({"max_wait_ms": 1e4}, r"^max_wait_ms: got 10000.0, expected milliseconds in \[0, 1000\]$"),
    ],
)
def test_service_refuses_bad_batching_options(tmp_path, minilm_tokenizer, options, match):
    index_dir, encoder = hash_index(tmp_path, minilm_tokenizer)
    with pytest.raises(InputError, match=match):
        SearchService(IndexSearcher(index_dir), encoder=encoder, **options)


def test_serve_refuses_a_bad_batch_size_in_the_options_words(tmp_path, capsys):
    assert cli.main(["serve", "--index", str(tmp_path), "--batch-size", "0"]) == 2
    assert "--batch-size: got 0, expected an int in [1, 1024]" in capsys.readouterr().err
    assert cli.main(["serve", "--index", str(tmp_path), "--batch-wait-ms", "-1"]) == 2
    assert "--batch-wait-ms: got -1.0, expected milliseconds" in capsys.readouterr().err
