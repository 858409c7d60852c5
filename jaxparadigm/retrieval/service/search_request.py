"""The body of a ``POST /search`` request, checked before and after JSON parsing (C5.2).

:func:`parse_search_request` turns ``{"query": str, "k": int}`` (plus ``delay_s`` under fault
injection; :func:`read_search_request` also reads ``excerpts`` and ``nprobe``) into ``(query, k, delay_s)`` or one :class:`~jaxparadigm.errors.InputError` naming the
field. The body is read by :func:`~jaxparadigm.common.bounded_reading.read_json`: nesting deeper
than :data:`MAX_JSON_DEPTH` is refused before ``json.loads`` sees it; integers too long for
Python's int conversion and invalid UTF-8 are refused as "not a JSON object". Used by
:class:`jaxparadigm.retrieval.service.http_service.SearchService`.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxparadigm.common.bounded_reading import JsonLineError, json_depth, read_json
from jaxparadigm.common.numbers import check_float
from jaxparadigm.errors import InputError, require_int, short_repr

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_K",
    "json_depth",
    "SearchRequest",
    "parse_search_request",
    "read_search_request",
    "short_repr",
]

MAX_BODY_BYTES = 64 * 1024
MAX_JSON_DEPTH = 8  # the body is a flat object: {"query": ..., "k": ...}
DEFAULT_K = 5  # a request without "k"
MAX_K = 100


class SearchRequest(NamedTuple):
    """A checked ``POST /search`` body."""

    query: str
    k: int
    delay_s: float
    excerpts: bool  # each passage also carries its best excerpt (the search page asks for it)
    nprobe: int | None = None  # inverted lists to scan (an IVF index); None: the service's default


def parse_search_request(
    body: bytes, fault_injection: bool = False, max_k: int = MAX_K
) -> tuple[str, int, float]:
    """``(query, k, delay_s)`` from a request body (:func:`read_search_request` without
    ``excerpts``); :class:`InputError` naming the field otherwise."""
    request = read_search_request(body, fault_injection, max_k)
    return request.query, request.k, request.delay_s


def read_search_request(
    body: bytes, fault_injection: bool = False, max_k: int = MAX_K
) -> SearchRequest:
    """A :class:`SearchRequest` from a request body; :class:`InputError` naming the field otherwise.

    ``delay_s`` (default 0) is accepted only when ``fault_injection`` is on (used by load tests to
    make requests time out); ``k`` defaults to 5 and must be an int in ``[1, max_k]``;
    ``excerpts`` (default false) must be a JSON boolean; ``nprobe`` (absent: the service's
    default) an int >= 1 (the service checks it against the index's lists). A body nested deeper than
    ``MAX_JSON_DEPTH`` is refused before it is parsed.
    """
    try:
        data = read_json(body, max_depth=MAX_JSON_DEPTH)
    except JsonLineError as exc:  # not UTF-8, too deep, an integer too long, not JSON
        detail = " ".join(str(exc).split())[:120]
        raise InputError(f"body: not a JSON object ({detail})") from None
    if not isinstance(data, dict):
        raise InputError(f"body: got {type(data).__name__}, expected a JSON object")
    unknown = sorted(set(data) - {"query", "k", "excerpts", "nprobe", "delay_s"})
    if unknown or ("delay_s" in data and not fault_injection):
        bad = unknown[0] if unknown else "delay_s"
        raise InputError(
            f"body key {short_repr(bad)}: unknown; expected query, k, excerpts, nprobe"
        )
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InputError(f"query: got {short_repr(query)}, expected a non-empty string")
    k = require_int("k", data.get("k", DEFAULT_K), 1, max_k)
    delay = check_float("delay_s", data.get("delay_s", 0.0), 0, 60, expected="a number of seconds")
    excerpts = data.get("excerpts", False)
    if not isinstance(excerpts, bool):
        raise InputError(f"excerpts: got {short_repr(excerpts)}, expected true or false")
    nprobe = data.get("nprobe")
    if nprobe is not None:
        nprobe = require_int("nprobe", nprobe, 1)
    return SearchRequest(query, k, delay, excerpts, nprobe)
