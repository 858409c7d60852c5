"""SearchService, the load generator and span-based readiness figures (C5.2)."""

import json
import urllib.error
import urllib.request

import pytest
from opentelemetry.trace import StatusCode

from jaxparadigm.claims.evidence.load_generator import plan_requests, run_load
from jaxparadigm.claims.evidence.readiness import readiness_from_spans
from jaxparadigm.errors import InputError
from jaxparadigm.retrieval import SemanticIndex
from jaxparadigm.retrieval.service.http_service import SearchService, parse_search_request

DOCS = ["index design guide", "python memory management", "sql execution plan analysis", "a cat"]
QUERIES = ["how do I make database queries faster", "garbage collection in python"]


@pytest.fixture(scope="module")
def index(encoder):
    return SemanticIndex(encoder).add(DOCS)


def _post(url, body: bytes, timeout=30):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_search_over_http_equals_the_index(index):
    with SearchService(index) as svc:
        assert svc.url.startswith("http://127.0.0.1:")
        status, payload = _post(svc.url, json.dumps({"query": QUERIES[0], "k": 3}).encode())
        bad_status, bad = _post(svc.url, b"{not json")
    assert status == 200
    want = index.search(QUERIES[0], 3)
    assert [h[0] for h in payload["hits"]] == [i for i, _ in want]
    assert [h[1] for h in payload["hits"]] == pytest.approx([s for _, s in want], abs=1e-5)
    assert bad_status == 400 and "body" in bad["error"]
    spans = svc.exported_spans()
    names = sorted(s.name for s in spans)
    full, failed = (
        ["POST /search", "parse", "tokenize", "queue", "encode", "search"],
        ["POST /search", "parse"],
    )
    assert names == sorted(full + failed)
    failed_parse = [
        s for s in spans if s.name == "parse" and s.status.status_code == StatusCode.ERROR
    ]
    assert len(failed_parse) == 1
    # the server span of the refused request says why, in the words the client got (issue 39)
    (server,) = [s for s in spans if s.name == "POST /search" and s.status.is_ok is False]
    assert server.attributes["http.status_code"] == 400
    assert server.status.status_code == StatusCode.ERROR
    assert server.status.description == bad["error"]


@pytest.mark.parametrize(
    "body, match",
    [
        (b"[1]", "expected a JSON object"),
        (b'{"k": 2}', "query"),
        (b'{"query": "  "}', "query"),
        (b'{"query": "x", "k": 0}', r"^k: got 0, expected an int >= 1$"),
        (
            b'{"query": "x", "k": 5}',
            r"^k: got 5, expected an int in \[1, 4\] \(the most this service",
        ),
        (b'{"query": "x", "k": true}', r"^k: got True, expected int$"),
        (
            b'{"query": "x", "mode": "bm25"}',
            r"^mode: got 'bm25', expected one of 'hybrid', 'dense'$",
        ),
        (b'{"query": "x", "depth": 1001}', r"^depth: got 1001, expected an int in \[1, 1000\]"),
        (
            b'{"query": "x", "extra": 1}',
            "^body key 'extra': unknown; expected one of query, mode, k",
        ),
        (b'{"query": "x", "delay_s": 1}', "'delay_s'"),  # fault injection is off
    ],
)
def test_parse_refuses_malformed_bodies(body, match):
    with pytest.raises(InputError, match=match):
        parse_search_request(body, fault_injection=False, max_k=4)


def test_parse_accepts_delay_only_with_fault_injection():
    q, k, delay = parse_search_request(b'{"query": "x", "k": 2, "delay_s": 0.5}', True)
    assert (q, k, delay) == ("x", 2, 0.5)
    with pytest.raises(InputError, match="delay_s"):
        parse_search_request(b'{"query": "x", "delay_s": -1}', True)


def test_plan_requests_shares_and_errors():
    plan = plan_requests(100, QUERIES, 0.1, 0.05, 1.0)
    kinds = [p.kind for p in plan]
    assert kinds.count("malformed") == 10 and kinds.count("timeout") == 5 and len(plan) == 100
    assert len({p.request_id for p in plan}) == 100
    assert plan == plan_requests(100, QUERIES, 0.1, 0.05, 1.0)  # seeded
    with pytest.raises(InputError, match="requests"):
        plan_requests(0, QUERIES)
    with pytest.raises(InputError, match="malformed_fraction"):
        plan_requests(10, QUERIES, 1.5)
    with pytest.raises(InputError, match="leave no room"):
        plan_requests(10, QUERIES, 0.6, 0.6)
    with pytest.raises(InputError, match="queries"):
        plan_requests(10, [])


@pytest.fixture(scope="module")
def load_run(index):
    # The service encodes the queries of concurrent requests together (up to 3 here, one per
    # client): compile those shapes first, so an "ok" request never misses its client timeout on
    # a compile (it did under a parallel test run).
    for query in QUERIES:
        for n in (1, 2, 3):
            index.encoder.encode([query] * n, normalize=True)
    plan = plan_requests(
        24, QUERIES, malformed_fraction=0.125, timeout_fraction=1 / 12, timeout_s=1.0
    )
    with SearchService(index, fault_injection=True) as svc:
        client = run_load(svc.url, plan, concurrency=3, duration_s=60.0, timeout_s=1.0)
    return plan, [*client, *svc.exported_spans()]


def test_readiness_from_spans(load_run):
    plan, spans = load_run
    r = readiness_from_spans(spans, plan)
    assert r["requests_sent"] == 24
    assert r["requests_by_kind"] == {"ok": 19, "malformed": 3, "timeout": 2}
    assert r["outcomes_by_kind"]["ok"] == {"200": 19}
    assert r["outcomes_by_kind"]["malformed"] == {"400": 3}
    assert r["outcomes_by_kind"]["timeout"] == {"timeout": 2}
    assert r["trace_completeness"] == 1.0 and r["ok_failed"] == 0
    assert 0 < r["p50_ms"] <= r["p99_ms"] and r["qps"] > 0


def test_completeness_drops_when_spans_are_missing(load_run):
    plan, spans = load_run
    one_encode = next(s for s in spans if s.name == "encode")
    r = readiness_from_spans([s for s in spans if s is not one_encode], plan)
    assert r["complete_traces"] == 23
    malformed_server = next(
        s for s in spans if s.name == "POST /search" and s.attributes["http.status_code"] == 400
    )
    r = readiness_from_spans([s for s in spans if s is not malformed_server], plan)
    assert r["complete_traces"] == 23  # a failed request's tree counts too
    no_server = [s for s in spans if s.name != "POST /search"]
    assert readiness_from_spans(no_server, plan)["trace_completeness"] == 0.0


def test_load_stops_at_the_time_limit(index):
    plan = plan_requests(50, QUERIES, 0.0, 1.0, timeout_s=0.3)  # every request is slow
    with SearchService(index, fault_injection=True) as svc:
        client = run_load(svc.url, plan, concurrency=1, duration_s=0.5, timeout_s=0.3)
    assert 1 <= len(client) <= 4
    r = readiness_from_spans([*client, *svc.exported_spans()], plan)
    assert r["requests_planned"] == 50 and r["requests_sent"] == len(client)


def test_service_argument_errors(index, encoder):
    with pytest.raises(TypeError, match="index"):
        SearchService("index")
    with pytest.raises(InputError, match="port"):
        SearchService(index, port=70000)
    with pytest.raises(InputError, match="empty"):
        SearchService(SemanticIndex(encoder))
    with pytest.raises(RuntimeError, match="not started"):
        _ = SearchService(index).url
