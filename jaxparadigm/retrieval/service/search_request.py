"""The body of a ``POST /search`` request, checked before and after JSON parsing (C5.2).

A body is ``{"query": str}`` plus any fields of
:class:`~jaxparadigm.retrieval.search_options.SearchOptions` by their names (``mode``, ``k``,
``nprobe``, ``depth``, ``approx``, ``excerpts``, ``excerpt_chars``, ``dtype``, ``stream``; a key
left out takes the service's default) and, under fault injection only, ``delay_s``.
:func:`read_search_request` turns it into a :class:`SearchRequest` or one
:class:`~jaxparadigm.errors.InputError` naming the key as the body spells it: an unknown key
(listing the accepted ones, from the type), a bad value (the type's own check), a ``k`` over the
service's ``max_k`` or a ``depth`` over :data:`MAX_DEPTH` (bounded work per request). A body nested
deeper than :data:`MAX_JSON_DEPTH`, integers too long for Python's int conversion and invalid
UTF-8 are refused as "not a JSON object" by
:func:`~jaxparadigm.common.bounded_reading.read_json` before anything is built from them. Used
by :class:`jaxparadigm.retrieval.service.http_service.SearchService`.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxparadigm.common.bounded_reading import JsonLineError, json_depth, read_json
from jaxparadigm.common.numbers import check_float
from jaxparadigm.errors import InputError, short_repr
from jaxparadigm.retrieval.search_options import SearchOptions

__all__ = [
    "BODY_KEYS",
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
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
DEFAULT_K = SearchOptions().k  # a request without "k"
MAX_K = 100
#: The deepest hybrid fusion a request may ask for (each ranking's top ``depth``).
MAX_DEPTH = 1000
#: How a body spells each field of SearchOptions: by its name.
BODY_KEYS = {name: name for name in SearchOptions.keys()}


class SearchRequest(NamedTuple):
    """A checked ``POST /search`` body: the query, its :class:`SearchOptions` and the injected
    delay (0 without fault injection)."""

    query: str
    options: SearchOptions
    delay_s: float


def parse_search_request(
    body: bytes, fault_injection: bool = False, max_k: int = MAX_K
) -> tuple[str, int, float]:
    """``(query, k, delay_s)`` from a request body (:func:`read_search_request`);
    :class:`InputError` naming the key otherwise."""
    request = read_search_request(body, fault_injection, max_k)
    return request.query, request.options.k, request.delay_s


def read_search_request(
    body: bytes,
    fault_injection: bool = False,
    max_k: int = MAX_K,
    defaults: SearchOptions | None = None,
) -> SearchRequest:
    """A :class:`SearchRequest` from a request body; :class:`InputError` naming the key otherwise.

    ``query``: a non-empty string; the keys of :class:`SearchOptions` set its fields over
    ``defaults`` (the service's; None: ``SearchOptions()``), with its checks, a ``k`` the body sends
    at most ``max_k`` and a ``depth`` at most :data:`MAX_DEPTH`; ``delay_s`` (default 0, seconds in
    [0, 60]) is accepted only when ``fault_injection`` is on (load tests make requests time out
    with it). A body nested deeper than ``MAX_JSON_DEPTH`` is refused before it is parsed.
    """
    try:
        data = read_json(body, max_depth=MAX_JSON_DEPTH)
    except JsonLineError as exc:  # not UTF-8, too deep, an integer too long, not JSON
        detail = " ".join(str(exc).split())[:120]
        raise InputError(f"body: not a JSON object ({detail})") from None
    if not isinstance(data, dict):
        raise InputError(f"body: got {type(data).__name__}, expected a JSON object")
    accepted = ("query", *SearchOptions.keys())
    unknown = sorted(set(data) - {*accepted, "delay_s"})
    if unknown or ("delay_s" in data and not fault_injection):
        bad = unknown[0] if unknown else "delay_s"
        raise InputError(
            f"body key {short_repr(bad)}: unknown; expected one of {', '.join(accepted)}"
        )
    query = data.pop("query", None)
    if not isinstance(query, str) or not query.strip():
        raise InputError(f"query: got {short_repr(query)}, expected a non-empty string")
    delay = check_float("delay_s", data.pop("delay_s", 0.0), 0, 60, expected="a number of seconds")
    options = SearchOptions.read(data, base=defaults, spelled=BODY_KEYS, what="body key")
    for key, most in (("k", max_k), ("depth", MAX_DEPTH)):
        if key in data and getattr(options, key) > most:  # the body's own (serve's may be more)
            raise InputError(
                f"{key}: got {getattr(options, key)}, expected an int in [1, {most}] (the most "
                "this service answers)"
            )
    return SearchRequest(query, options, delay)
