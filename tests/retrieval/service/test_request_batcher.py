"""RequestBatcher with a fake encoder and search that record their calls (issue 37): concurrent
requests share one encode and one search per (k, nprobe), each gets exactly its own row back.

The fake encoder maps query ``"q7"`` to the vector ``[7, 1, 0, 0]``; the fake search answers row
``i`` with ids ``100 * Q[i, 0] + [0, 1, ..., k-1]`` and scores ``Q[i, 0]``: a request handed
another request's row (or a padded zero row) sees the wrong ids."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.service.request_batcher import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_WAIT_MS,
    RequestBatcher,
    ServiceUnavailable,
    embed,
    padded_size,
    padded_sizes,
)


class FakeEncoder:
    def __init__(self, error: Exception | None = None):
        self.calls: list[list[str]] = []
        self.error = error

    def encode(self, texts, normalize=True):
        assert normalize is True and isinstance(texts, list)
        self.calls.append(list(texts))
        if self.error is not None:
            raise self.error
        return np.array([[float(t[1:]), 1.0, 0.0, 0.0] for t in texts], np.float32)


class FakeSearch:
    def __init__(self, error: Exception | None = None, gate: threading.Event | None = None):
        self.calls: list[tuple[np.ndarray, int, int | None]] = []
        self.error, self.gate = error, gate

    def __call__(self, q, k, nprobe=None):
        self.calls.append((q.copy(), k, nprobe))
        if self.gate is not None:
            assert self.gate.wait(30)
        if self.error is not None:
            raise self.error
        ids = (100 * q[:, :1]).astype(np.int64) + np.arange(k)
        return SimpleNamespace(scores=np.repeat(q[:, :1], k, axis=1), ids=ids)


def _batcher(encoder=None, search=None, **options):
    return RequestBatcher(encoder or FakeEncoder(), search or FakeSearch(), **options)


def _submit_together(batcher, requests):
    """Submit ``(query, k, nprobe)`` each from its own thread, released together by a barrier;
    return each one's BatchResult or exception, in order."""
    out: list = [None] * len(requests)
    barrier = threading.Barrier(len(requests))

    def one(i, query, k, nprobe):
        barrier.wait()
        try:
            out[i] = batcher.submit(query, k, nprobe)
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=one, args=(i, *r)) for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a request never returned"
    return out


def _assert_own_rows(requests, results):
    for (query, k, _), result in zip(requests, results, strict=True):
        n = int(query[1:])
        assert result.ids.tolist() == [100 * n + j for j in range(k)], (query, result.ids)
        assert result.scores.tolist() == [float(n)] * k


def test_concurrent_requests_share_one_encode_and_one_search():
    encoder, search = FakeEncoder(), FakeSearch()
    batcher = _batcher(encoder, search, max_batch=8, max_wait_ms=1000)
    requests = [(f"q{i}", 3, None) for i in range(1, 9)]
    results = _submit_together(batcher, requests)
    batcher.close()
    assert len(encoder.calls) == 1 and sorted(encoder.calls[0]) == sorted(r[0] for r in requests)
    assert len(search.calls) == 1 and search.calls[0][0].shape == (8, 4)
    _assert_own_rows(requests, results)
    assert {r.batch_size for r in results} == {8}
    for r in results:  # the batch's real times, in order
        assert r.encode_start_ns <= r.encode_end_ns <= r.search_start_ns <= r.search_end_ns


def test_a_batch_holds_at_most_max_batch_requests():
    encoder, search = FakeEncoder(), FakeSearch()
    batcher = _batcher(encoder, search, max_batch=4, max_wait_ms=300)
    requests = [(f"q{i}", 2, None) for i in range(1, 11)]
    results = _submit_together(batcher, requests)
    batcher.close()
    assert max(len(c) for c in encoder.calls) <= 4
    assert sorted(t for c in encoder.calls for t in c) == sorted(r[0] for r in requests)
    assert all(q.shape[0] <= 4 for q, _, _ in search.calls)
    assert len(encoder.calls) >= 3
    _assert_own_rows(requests, results)


def test_a_lone_request_waits_about_max_wait_ms_then_is_served():
    batcher = _batcher(max_batch=16, max_wait_ms=100)
    start = time.perf_counter()
    result = batcher.submit("q5", 2)
    waited = time.perf_counter() - start
    batcher.close()
    assert 0.09 <= waited < 5.0
    assert result.ids.tolist() == [500, 501] and result.batch_size == 1
    quick = _batcher(max_wait_ms=0)
    start = time.perf_counter()
    assert quick.submit("q3", 1).ids.tolist() == [300]
    assert time.perf_counter() - start < 5.0
    quick.close()


def test_different_k_and_nprobe_are_searched_apart_after_one_encode():
    encoder, search = FakeEncoder(), FakeSearch()
    batcher = _batcher(encoder, search, max_batch=5, max_wait_ms=1000)
    requests = [("q1", 2, None), ("q2", 3, None), ("q3", 2, None), ("q4", 2, 5), ("q5", 3, None)]
    results = _submit_together(batcher, requests)
    batcher.close()
    assert len(encoder.calls) == 1
    groups = sorted((k, nprobe or 0, q.shape[0]) for q, k, nprobe in search.calls)
    assert groups == [(2, 0, 2), (2, 5, 1), (3, 0, 2)]  # padded: 2 rows, 1 row, 2 rows
    searched = {(k, nprobe): sorted(q[:, 0].tolist()) for q, k, nprobe in search.calls}
    assert searched == {(2, None): [1.0, 3.0], (3, None): [2.0, 5.0], (2, 5): [4.0]}
    _assert_own_rows(requests, results)


def test_groups_are_padded_to_a_power_of_two_and_the_padded_rows_dropped():
    encoder, search = FakeEncoder(), FakeSearch()
    batcher = _batcher(encoder, search, max_batch=8, max_wait_ms=300)
    requests = [(f"q{i}", 2, None) for i in (3, 6, 9)]
    results = _submit_together(batcher, requests)
    batcher.close()
    ((q, k, _),) = search.calls
    assert q.shape == (4, 4) and k == 2
    assert sorted(q[:3, 0].tolist()) == [3.0, 6.0, 9.0] and q[3].tolist() == [0, 0, 0, 0]
    _assert_own_rows(requests, results)  # no request got the zero row's ids [0, 1]
    assert [padded_size(n, 8) for n in range(1, 9)] == [1, 2, 4, 4, 8, 8, 8, 8]
    assert [padded_size(n, 6) for n in (5, 6)] == [6, 6]
    assert padded_sizes(16) == [1, 2, 4, 8, 16] and padded_sizes(6) == [1, 2, 4, 6]
    assert padded_sizes(1) == [1]


@pytest.mark.parametrize("where", ["encode", "search"])
def test_an_error_reaches_every_request_of_the_batch(where):
    boom = RuntimeError(f"{where} failed")
    encoder = FakeEncoder(boom if where == "encode" else None)
    search = FakeSearch(boom if where == "search" else None)
    batcher = _batcher(encoder, search, max_batch=4, max_wait_ms=1000)
    results = _submit_together(batcher, [(f"q{i}", 2, None) for i in range(1, 5)])
    assert len(encoder.calls) == 1
    assert all(r is boom for r in results), results
    batcher.close()


def test_the_worker_goes_on_after_a_failed_batch():
    search = FakeSearch(RuntimeError("once"))
    batcher = _batcher(search=search, max_wait_ms=0)
    with pytest.raises(RuntimeError, match="once"):
        batcher.submit("q1", 1)
    search.error = None
    assert batcher.submit("q2", 2).ids.tolist() == [200, 201]
    batcher.close()


def test_close_answers_queued_requests_with_service_unavailable():
    gate = threading.Event()
    search = FakeSearch(gate=gate)
    batcher = _batcher(search=search, max_batch=1, max_wait_ms=0)
    out: dict = {}

    def submit(query):
        try:
            out[query] = batcher.submit(query, 1)
        except Exception as exc:
            out[query] = exc

    first = threading.Thread(target=submit, args=("q1",))
    first.start()
    deadline = time.monotonic() + 10
    while not search.calls and time.monotonic() < deadline:  # q1's search is running (held)
        time.sleep(0.005)
    queued = [threading.Thread(target=submit, args=(q,)) for q in ("q2", "q3")]
    for t in queued:
        t.start()
    while len(batcher._queue) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    closer = threading.Thread(target=batcher.close)
    closer.start()
    while not batcher.closed and time.monotonic() < deadline:
        time.sleep(0.005)
    gate.set()  # q1's batch finishes; the queued ones are refused
    for t in (first, *queued, closer):
        t.join(10)
        assert not t.is_alive()
    assert out["q1"].ids.tolist() == [100]
    for q in ("q2", "q3"):
        assert isinstance(out[q], ServiceUnavailable), out[q]
    assert len(search.calls) == 1
    with pytest.raises(ServiceUnavailable, match="stopping"):
        batcher.submit("q4", 1)
    batcher.close()  # twice: nothing happens


@pytest.mark.parametrize(
    "options, match",
    [
        ({"max_batch": 0}, r"max_batch: got 0, expected an int in \[1, 1024\]"),
        ({"max_batch": 1025}, r"max_batch: got 1025, expected an int in \[1, 1024\]"),
        ({"max_batch": 2.0}, r"max_batch: got 2.0, expected an int"),
        ({"max_batch": True}, r"max_batch: got True, expected an int"),
        ({"max_wait_ms": -1}, r"max_wait_ms: got -1, expected milliseconds in \[0, 1000\]"),
        ({"max_wait_ms": 1000.5}, r"max_wait_ms: got 1000.5, expected milliseconds"),
        ({"max_wait_ms": float("nan")}, r"max_wait_ms: got nan, expected milliseconds"),
        ({"max_wait_ms": "2"}, r"max_wait_ms: got '2', expected milliseconds"),
        ({"idle_s": 0}, r"idle_s: got 0, expected seconds > 0"),
        ({"workers": 0}, r"workers: got 0, expected an int in \[1, 64\]"),
    ],
)
def test_bad_options_are_refused_naming_them(options, match):
    with pytest.raises(InputError, match=match):
        _batcher(**options)


def test_on_idle_is_called_while_no_request_arrives():
    calls: list[float] = []
    batcher = _batcher(on_idle=lambda: calls.append(time.monotonic()), idle_s=0.05)
    deadline = time.monotonic() + 10
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(calls) >= 2
    assert batcher.submit("q4", 1).ids.tolist() == [400]  # and requests are still served
    batcher.close()
    n = len(calls)
    time.sleep(0.2)
    assert len(calls) == n  # closed: no more calls


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_failing_on_idle_stops_the_batcher_and_requests_get_503_not_a_hang():
    def broken():
        raise OSError("group lost")

    batcher = _batcher(on_idle=broken, idle_s=0.02)
    deadline = time.monotonic() + 10
    while not batcher.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(ServiceUnavailable, match="OSError: group lost"):
        batcher.submit("q1", 1)
    batcher.close()


def test_the_defaults_are_valid_and_the_cli_shows_them():
    from jaxparadigm import cli

    assert (DEFAULT_MAX_BATCH, DEFAULT_MAX_WAIT_MS) == (16, 0.0)
    args = cli.build_parser().parse_args(["serve", "--index", "x"])
    assert (args.max_batch, args.max_wait_ms) == (DEFAULT_MAX_BATCH, DEFAULT_MAX_WAIT_MS)
    args = cli.build_parser().parse_args(
        ["serve", "--index", "x", "--batch-size", "4", "--batch-wait-ms", "0.5"]
    )
    assert (args.max_batch, args.max_wait_ms) == (4, 0.5)


def test_two_workers_run_two_batches_at_once():
    """With workers=2 a second batch is searched while the first one's search still runs (the
    gate holds the first); with the default one worker it waits (checked below)."""
    gate = threading.Event()
    search = FakeSearch(gate=gate)
    batcher = _batcher(search=search, max_batch=1, workers=2)
    first = threading.Thread(target=batcher.submit, args=("q1", 1))
    first.start()
    deadline = time.monotonic() + 10
    while not search.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    second = threading.Thread(target=batcher.submit, args=("q2", 1))
    second.start()
    while len(search.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(search.calls) == 2  # both batches inside search together
    gate.set()
    first.join(10), second.join(10)
    batcher.close()


def test_one_worker_serves_one_batch_at_a_time():
    gate = threading.Event()
    search = FakeSearch(gate=gate)
    batcher = _batcher(search=search, max_batch=1)
    threads = [threading.Thread(target=batcher.submit, args=(f"q{i}", 1)) for i in (1, 2)]
    for t in threads:
        t.start()
        time.sleep(0.2)
    assert len(search.calls) == 1  # the second batch waits for the first
    gate.set()
    for t in threads:
        t.join(10)
    assert len(search.calls) == 2
    batcher.close()


def test_a_request_without_an_answer_in_time_gets_service_unavailable():
    gate = threading.Event()
    batcher = _batcher(search=FakeSearch(gate=gate))
    t0 = time.monotonic()
    with pytest.raises(ServiceUnavailable, match="no answer within 0.2 s"):
        batcher.submit("q1", 1, timeout_s=0.2)
    assert time.monotonic() - t0 < 5
    gate.set()
    batcher.close()


def test_serve_alone_answers_one_request_on_the_calling_thread():
    from jaxparadigm.retrieval.service.request_batcher import serve_alone

    encoder, search = FakeEncoder(), FakeSearch()
    got = serve_alone(encoder, search, "q7", 3, nprobe=4)
    _assert_own_rows([("q7", 3, 4)], [got])
    assert got.batch_size == 1 and encoder.calls == [["q7"]]
    ((q, k, nprobe),) = search.calls
    assert q.shape == (1, 4) and (k, nprobe) == (3, 4)
    with pytest.raises(RuntimeError, match="search broke"):
        serve_alone(encoder, FakeSearch(error=RuntimeError("search broke")), "q1", 1)


def test_a_request_wakes_the_worker_without_an_idle_call():
    """on_idle runs only after idle_s with no request, never for the wake-up a request causes."""
    calls: list[float] = []
    batcher = _batcher(on_idle=lambda: calls.append(time.monotonic()), idle_s=30)
    for i in range(3):
        _assert_own_rows([(f"q{i}", 1, None)], [batcher.submit(f"q{i}", 1)])
    assert calls == []
    batcher.close()


class TokenEncoder(FakeEncoder):
    """A FakeEncoder that also embeds token ids: ``[n]`` -> ``[n, 1, 0, 0]`` (recorded apart)."""

    def __init__(self):
        super().__init__()
        self.token_calls: list[list[list[int]]] = []
        self.packs: list[bool | None] = []  # each call's pack argument (None: not given)

    def encode_token_ids(self, ids, normalize=True, pack=None):
        assert normalize is True
        self.token_calls.append([list(i) for i in ids])
        self.packs.append(pack)
        return np.array([[float(i[0]), 1.0, 0.0, 0.0] for i in ids], np.float32)


def test_a_batch_of_pre_tokenized_requests_encodes_their_ids_not_their_texts():
    encoder, search = TokenEncoder(), FakeSearch()
    batcher = _batcher(encoder, search, max_batch=4, max_wait_ms=1000)
    out: list = [None] * 4
    barrier = threading.Barrier(4)

    def one(i):
        barrier.wait()
        out[i] = batcher.submit(f"q{i + 1}", 2, tokens=[i + 1, 7])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    batcher.close()
    assert encoder.calls == [] and len(encoder.token_calls) == 1
    assert sorted(encoder.token_calls[0]) == [[n, 7] for n in range(1, 5)]
    assert encoder.packs == [True]  # several queries: packed rows
    _assert_own_rows([(f"q{i + 1}", 2, None) for i in range(4)], out)


def test_a_batch_with_a_request_without_tokens_encodes_the_texts():
    encoder = TokenEncoder()
    batcher = _batcher(encoder, max_batch=1)
    first = batcher.submit("q3", 1, tokens=[3])
    second = batcher.submit("q5", 1)  # no tokens: its text is encoded
    batcher.close()
    assert encoder.token_calls == [[[3]]] and encoder.calls == [["q5"]]
    assert encoder.packs == [None]  # one query: the encoder's own rows
    assert first.ids.tolist() == [300] and second.ids.tolist() == [500]


def test_embed_packs_a_batch_of_minilm_queries_and_keeps_each_querys_row(encoder):
    """MiniLM: a batch's rows (packed, several queries a row) are each query's lone embedding to
    float32 rounding, in the batch's order; a lone query's row is its own encode bit for bit."""
    texts = ["open a file", "how do I catch several exceptions in one except clause", "yield"]
    alone = np.stack([encoder.encode([t])[0] for t in texts])
    tokens = encoder.token_ids(texts)
    rows = embed(encoder, texts, tokens)
    assert rows.shape == (3, encoder.dim) and rows.dtype == np.float32
    np.testing.assert_allclose(rows, alone, atol=2e-6)
    assert np.all(np.argmax(rows @ alone.T, 1) == [0, 1, 2])
    np.testing.assert_array_equal(embed(encoder, texts[1:2], tokens[1:2]), alone[1:2])
    np.testing.assert_array_equal(embed(encoder, texts, [None] * 3), encoder.encode(texts))


def test_embed_packs_from_two_queries_with_tokens_and_encodes_texts_otherwise():
    encoder = TokenEncoder()
    rows = embed(encoder, ["a", "b"], [[4, 7], [5]])
    assert encoder.packs == [True] and encoder.token_calls == [[[4, 7], [5]]]
    np.testing.assert_array_equal(rows[:, 0], [4.0, 5.0])  # each query its own row, in order
    embed(encoder, ["c"], [[6]])
    assert encoder.packs == [True, None]
    embed(encoder, ["q8", "q9"], [[6], None])  # a query without tokens: the texts
    assert encoder.packs == [True, None] and encoder.calls == [["q8", "q9"]]
