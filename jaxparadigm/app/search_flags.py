"""The flags of ``jaxparadigm search`` and ``serve`` that set the fields of the search's
:class:`~jaxparadigm.retrieval.search_options.SearchOptions` (C1.1, C5.2): the parser's flags
(:func:`add_search_flags`), the one ``SearchOptions`` a command line builds from them
(:func:`search_options`: the flags given over the type's defaults, checked by the type, a bad
value named by its flag) and the flags again for a process group's workers (:func:`option_argv`).
Importing this module loads no JAX (the parser's ``--help`` stays fast); ``search_options``
imports the retrieval package when it runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxparadigm.retrieval.search_options import SearchOptions

__all__ = ["SEARCH_FLAGS", "add_search_flags", "given_options", "option_argv", "search_options"]

#: The flags of ``search`` and ``serve`` that set a field of
#: :class:`~jaxparadigm.retrieval.search_options.SearchOptions`, by field: each flag's ``dest``
#: is its field; a flag not given sets no attribute (the field's default).
SEARCH_FLAGS = {
    "mode": "--mode",
    "k": "--top-k",
    "nprobe": "--nprobe",
    "depth": "--depth",
    "approx": "--approx",
    "excerpts": "--no-excerpts",
    "excerpt_chars": "--excerpt-chars",
    "dtype": "--dtype",
    "stream": "--stream",
}


def given_options(args: argparse.Namespace) -> dict[str, object]:
    """The SearchOptions fields the command line set (:data:`SEARCH_FLAGS`)."""
    return {f: getattr(args, f) for f in SEARCH_FLAGS if getattr(args, f, None) is not None}


def search_options(args: argparse.Namespace, processes: int | None) -> SearchOptions:
    """The one :class:`SearchOptions` of this ``search``/``serve``: its flags over the defaults
    (``processes``: split over that many processes, :meth:`SearchOptions.for_process_group`);
    a bad one is one :class:`InputError` naming its flag."""
    from jaxparadigm.retrieval.search_options import SearchOptions

    given = given_options(args)
    if processes is None:
        return SearchOptions.read(given, spelled=SEARCH_FLAGS, what="option")
    return SearchOptions.for_process_group(given, processes, spelled=SEARCH_FLAGS, what="option")


def option_argv(args: argparse.Namespace) -> list[str]:
    """The SearchOptions flags this command line gave, again (a group's workers get them)."""
    argv: list[str] = []
    for field, value in given_options(args).items():
        flag = SEARCH_FLAGS[field]
        argv += [flag] if isinstance(value, bool) else [flag, str(value)]
    return argv


def add_search_flags(p: argparse.ArgumentParser, serve: bool = False) -> None:
    """The flags of :data:`SEARCH_FLAGS` on ``p`` (``serve``: worded for serve's defaults): each
    sets one field of the search's ``SearchOptions`` (dest = the field; not given: no attribute,
    the field's default, written in the help; tests/app/test_search_flags.py checks they agree
    with ``SearchOptions()``). ``SearchOptions`` itself checks the values, for every door."""
    index = "" if serve else "with --index: "
    what = "a request without it" if serve else "the search"

    def add(*names: str, **kw) -> None:  # not given: no attribute (SearchOptions' default)
        p.add_argument(*names, default=argparse.SUPPRESS, **kw)

    add(
        "--mode",
        metavar="hybrid|dense",
        help=f"{index}how {what} ranks: hybrid (default: BM25 and dense ranks fused by "
        "reciprocal rank fusion; the score is the fused 1/(60 + rank) sum, the cosine is "
        "printed beside it) or dense (MiniLM cosine alone; the score is the cosine); with "
        "--num-processes: dense",
    )
    add("--top-k", dest="k", type=int, metavar="K", help=f"hits {what} returns (default: 5)")
    add(
        "--nprobe",
        type=int,
        metavar="P",
        help=f"{index}an index with IVF lists (`index ivf`): {what} scans the P lists nearest "
        "the query (default: the larger of lists/16 and the lists holding 1,024 rows; P = the "
        "number of lists gives the exact result); an index without: exact search",
    )
    add("--depth", type=int, metavar="N", help="hybrid fuses each ranking's top N (default: 100)")
    add(
        "--approx",
        action="store_true",
        help="lax.approx_max_k per block (--mode dense)",
    )
    add(
        "--no-excerpts",
        dest="excerpts",
        action="store_false",
        help="no best excerpt per hit (default: each hit carries its best excerpt)",
    )
    add("--excerpt-chars", type=int, metavar="N", help="the longest excerpt (default: 240)")
    add(
        "--dtype",
        metavar="float32|bfloat16|int8",
        help=f"{index}the embeddings' search copy (bfloat16/int8: less memory, the best "
        "candidates rescored in float32) (default: float32)",
    )
    add(
        "--stream",
        action="store_true",
        help="read shards per search (low memory)",
    )
