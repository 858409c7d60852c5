"""Readiness figures computed from exported OpenTelemetry spans only (C5.2).

Given the client spans of :func:`run_load` and the server spans of :class:`SearchService`:

* a request's trace is *complete* when its client span, the server span that is its child (same
  trace, parent = the client span, same request.id) and every child span expected for its kind were
  exported: ``ok`` -> parse, tokenize, encode, search; ``timeout`` -> those and injected_delay;
  ``malformed`` -> parse. ``trace_completeness = complete / sent`` counts failed requests too.
* latency = client span duration of the ``ok`` requests (end to end, over HTTP): P50/P99 by linear
  interpolation (``np.percentile``); ``server_p99_ms`` the same over their server spans.
* ``qps`` = ``ok`` requests answered 200 / (last client span end - first client span start).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence

import numpy as np
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AnyValue

from jaxparadigm.claims.evidence.load_generator import PlannedRequest

__all__ = ["EXPECTED_CHILDREN", "readiness_from_spans"]

EXPECTED_CHILDREN = {
    "ok": frozenset({"parse", "tokenize", "encode", "search"}),
    "timeout": frozenset({"parse", "injected_delay", "tokenize", "encode", "search"}),
    "malformed": frozenset({"parse"}),
}


def _start(span: ReadableSpan) -> int:
    assert span.start_time is not None  # exported spans were started
    return span.start_time


def _end(span: ReadableSpan) -> int:
    assert span.end_time is not None  # exported spans were ended
    return span.end_time


def _attrs(span: ReadableSpan) -> Mapping[str, AnyValue]:
    # The SDK's ReadableSpan.attributes is a (possibly empty) mapping proxy, typed Optional.
    return span.attributes or {}


def _ms(span: ReadableSpan) -> float:
    return (_end(span) - _start(span)) / 1e6


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def readiness_from_spans(
    spans: Sequence[ReadableSpan], plan: Sequence[PlannedRequest]
) -> dict[str, object]:
    """P50/P99 latency, QPS, trace completeness and per-kind outcomes of ``plan`` from ``spans``."""
    clients = {
        _attrs(s).get("request.id"): s
        for s in spans
        if s.name == "search.client" and s.kind == SpanKind.CLIENT
    }
    servers = {
        (s.context.trace_id, s.parent.span_id): s
        for s in spans
        if s.kind == SpanKind.SERVER and s.parent is not None
    }
    children: collections.defaultdict[tuple[int, int], set[str]] = collections.defaultdict(set)
    for s in spans:
        if s.kind == SpanKind.INTERNAL and s.parent is not None:
            children[(s.context.trace_id, s.parent.span_id)].add(s.name)
    sent = [p for p in plan if p.request_id in clients]
    complete, ok_server_ms = 0, []
    outcomes: dict[str, collections.Counter[AnyValue]] = {
        k: collections.Counter() for k in EXPECTED_CHILDREN
    }
    for p in sent:
        client = clients[p.request_id]
        outcomes[p.kind][_attrs(client).get("outcome", "none")] += 1
        server = servers.get((client.context.trace_id, client.context.span_id))
        if server is None or _attrs(server).get("request.id") != p.request_id:
            continue
        if p.kind == "ok":
            ok_server_ms.append(_ms(server))
        names = children[(server.context.trace_id, server.context.span_id)]
        complete += EXPECTED_CHILDREN[p.kind] <= names
    ok = [clients[p.request_id] for p in sent if p.kind == "ok"]
    latencies = [_ms(s) for s in ok]
    served = sum(_attrs(s).get("outcome") == "200" for s in ok)
    window_s = (
        (max(_end(s) for s in clients.values()) - min(_start(s) for s in clients.values())) / 1e9
        if clients
        else 0.0
    )
    return {
        "requests_planned": len(plan),
        "requests_sent": len(sent),
        "requests_by_kind": dict(collections.Counter(p.kind for p in sent)),
        "outcomes_by_kind": {k: dict(c) for k, c in outcomes.items()},
        "spans_exported": len(spans),
        "complete_traces": int(complete),
        "trace_completeness": complete / len(sent) if sent else float("nan"),
        "p50_ms": _percentile(latencies, 50),
        "p99_ms": _percentile(latencies, 99),
        "server_p99_ms": _percentile(ok_server_ms, 99),
        "ok_answered": int(served),
        "ok_failed": len(ok) - int(served),
        "load_window_s": window_s,
        "qps": served / window_s if window_s > 0 else float("nan"),
    }
