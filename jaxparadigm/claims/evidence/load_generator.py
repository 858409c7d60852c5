"""A bounded, fault-injecting load generator for :class:`SearchService` (C5.2).

``plan_requests(n, queries, malformed_fraction, timeout_fraction, timeout_s, seed)`` fixes what will
be sent: ``round(n * malformed_fraction)`` malformed bodies (bad JSON, a missing or non-string
query, a bad ``k``), ``round(n * timeout_fraction)`` requests asking the server for a delay of
``2 * timeout_s`` (so the client times out), the rest ordinary queries; their order is a seeded
permutation. ``run_load(url, plan, concurrency, duration_s, timeout_s)`` sends them from
``concurrency`` threads and stops sending once ``duration_s`` has passed. Each request is a client
span "search.client" (attributes request.id, request.kind, outcome: the HTTP status or "timeout"),
whose W3C ``traceparent`` is sent so the server's span becomes its child. The spans are the only
record.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.error
import urllib.request
from typing import NamedTuple

import numpy as np
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from jaxparadigm.common.numbers import check_float, check_int
from jaxparadigm.errors import InputError

__all__ = ["PlannedRequest", "plan_requests", "run_load"]

KINDS = ("ok", "malformed", "timeout")
_MALFORMED_BODIES = (
    b"{not json",
    json.dumps({"k": 5}).encode(),
    json.dumps({"query": 42, "k": 5}).encode(),
    json.dumps({"query": "a query", "k": 0}).encode(),
)


class PlannedRequest(NamedTuple):
    """One request to send: its id, kind (ok / malformed / timeout) and raw JSON body."""

    request_id: str
    kind: str
    body: bytes


def _fraction(name: str, value: float) -> float:
    return check_float(name, value, 0, 1, expected="a number")


def plan_requests(
    n: int,
    queries: list[str],
    malformed_fraction: float = 0.05,
    timeout_fraction: float = 0.02,
    timeout_s: float = 2.0,
    seed: int = 0,
) -> list[PlannedRequest]:
    """``n`` requests: malformed and delayed ones in given shares, the rest cycling ``queries``."""
    n = check_int("requests", n, 1)
    if not queries or not all(isinstance(q, str) and q.strip() for q in queries):
        raise InputError("queries: expected a non-empty list of non-empty strings")
    n_bad = round(n * _fraction("malformed_fraction", malformed_fraction))
    n_slow = round(n * _fraction("timeout_fraction", timeout_fraction))
    if n_bad + n_slow > n:
        raise InputError(
            f"malformed_fraction + timeout_fraction: {malformed_fraction} + {timeout_fraction} "
            "leave no room; expected a sum <= 1"
        )
    kinds = ["malformed"] * n_bad + ["timeout"] * n_slow + ["ok"] * (n - n_bad - n_slow)
    kinds = [kinds[i] for i in np.random.default_rng(seed).permutation(n)]
    plan = []
    for i, kind in enumerate(kinds):
        query = queries[i % len(queries)]
        if kind == "malformed":
            body = _MALFORMED_BODIES[i % len(_MALFORMED_BODIES)]
        elif kind == "timeout":
            body = json.dumps({"query": query, "k": 5, "delay_s": 2.0 * timeout_s}).encode()
        else:
            body = json.dumps({"query": query, "k": 5}).encode()
        plan.append(PlannedRequest(f"r{i:05d}", kind, body))
    return plan


def _send(tracer, url: str, req: PlannedRequest, timeout_s: float) -> None:
    with tracer.start_as_current_span("search.client", kind=SpanKind.CLIENT) as span:
        span.set_attribute("request.id", req.request_id)
        span.set_attribute("request.kind", req.kind)
        headers = {"Content-Type": "application/json", "X-Request-Id": req.request_id}
        TraceContextTextMapPropagator().inject(headers, context=set_span_in_context(span))
        http = urllib.request.Request(url, data=req.body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(http, timeout=timeout_s) as resp:
                resp.read()
                outcome = str(resp.status)
        except urllib.error.HTTPError as exc:
            exc.read()
            outcome = str(exc.code)
        except (TimeoutError, urllib.error.URLError) as exc:
            timed_out = isinstance(exc, TimeoutError) or isinstance(
                getattr(exc, "reason", None), TimeoutError
            )
            outcome = "timeout" if timed_out else f"error: {exc}"
        span.set_attribute("outcome", outcome)
        if outcome != "200":
            span.set_status(Status(StatusCode.ERROR, outcome))


def run_load(
    url: str,
    plan: list[PlannedRequest],
    concurrency: int = 4,
    duration_s: float = 60.0,
    timeout_s: float = 2.0,
) -> tuple[ReadableSpan, ...]:
    """Send ``plan`` to ``url`` from ``concurrency`` threads until done or ``duration_s`` is over.

    Returns the exported client spans (one per request actually sent).
    """
    concurrency = check_int("concurrency", concurrency, 1)
    for name, value in (("duration_s", duration_s), ("timeout_s", timeout_s)):
        check_float(name, value, 0, lo_open=True, finite=False, expected="a number of seconds")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("jaxparadigm.retrieval.load_generator")
    todo: queue.SimpleQueue[PlannedRequest] = queue.SimpleQueue()
    for req in plan:
        todo.put(req)
    deadline = time.monotonic() + duration_s

    def worker():
        while time.monotonic() < deadline:
            try:
                req = todo.get_nowait()
            except queue.Empty:
                return
            _send(tracer, url, req, timeout_s)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return exporter.get_finished_spans()
