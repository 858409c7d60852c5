"""The ``jaxparadigm`` command (console script and ``python -m jaxparadigm``): its parser and
``main``; each subcommand's handler is in :data:`jaxparadigm.app.cli.COMMANDS`. Usage::

    jaxparadigm run CONFIG [key.path=value ...]     run an experiment config (train, retrieval, ...)
        [--num-processes N [--devices-per-process K]]  as N local jax.distributed processes
        [--cpu-devices N|auto]                       N CPU devices (JAXPARADIGM_CPU_DEVICES)
    jaxparadigm claims [--only ID ...] [--json] [--report DIR] [--config FILE]
                       [claims.key=value ...]
    jaxparadigm search "query" [--corpus FILE|pydoc] [--top-k 5]
    jaxparadigm search "query" --index DIR [--top-k 5] [--mode hybrid|dense] [--json]
                       [--dtype float32|bfloat16|int8] [--approx] [--stream] [--nprobe P]
                       [--depth 100] [--no-excerpts] [--excerpt-chars 240]
                       [--num-processes N [--devices-per-process K]]  split over N processes
    jaxparadigm index build PATH... --out DIR [--chunk-tokens N] [--overlap 32] [--strict]
                       [--cpu-devices N|auto] [--ivf N]
    jaxparadigm index add PATH... --index DIR [--strict] [--cpu-devices N|auto]
    jaxparadigm index ivf DIR --lists N [--seed 0] [--iters 10]
    jaxparadigm index info DIR [--skipped]
    jaxparadigm serve --index DIR [--host 127.0.0.1] [--port 8765] [--mode hybrid|dense]
                      [--top-k 5] [--nprobe P] [--dtype ...] [--stream] ... (search's options)
                      [--num-processes N [--devices-per-process K]]
                      [--batch-size 16] [--batch-wait-ms 0]  HTTP search until Ctrl-C
    jaxparadigm bench NAME [args ...]                run benchmarks/NAME_bench.py (source checkout)
    jaxparadigm --version

Exit status: 0 done; 2 bad input (:class:`~jaxparadigm.errors.InputError`, e.g. a config
problem: one stderr line per problem naming the key path or file); 3 a training run gave up
(:class:`~jaxparadigm.errors.TrainingAborted`: one line with the step, counts and last finite
loss) or a process of a group died (``--num-processes``: one line naming it); 130 Ctrl-C (SIGINT,
from ``main``'s first line, also in the background: one line, :mod:`jaxparadigm.app.interrupts`).
Any other exception is a bug and keeps its traceback (``JAXPARADIGM_DEBUG=1``: input errors too).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from jaxparadigm import __version__
from jaxparadigm.app.cli import COMMANDS
from jaxparadigm.app.command_words import command_named, line_start
from jaxparadigm.app.interrupts import (
    interrupt_reported,
    interrupts_raised,
    raised_by_interrupt,
)
from jaxparadigm.app.search_flags import add_search_flags
from jaxparadigm.common.native_stdout import keep_stdout_for_python
from jaxparadigm.errors import InputError, TrainingAborted

__all__ = ["BENCHES", "build_parser", "main"]

DESCRIPTION = """\
jaxparadigm: five deep-learning concepts rebuilt in JAX and checked against oracles.

commands:
  run CONFIG [key=value ...]   train or evaluate what a YAML config describes (configs/*.yaml);
                               writes runs/NAME/report.md (rerun the same name to resume)
  claims                       run the article's claims as experiments and print the verdicts
  search "QUERY"               keyword vs semantic search over pydoc (or --index DIR: your files)
  index build|add|ivf|info     build, extend, cluster (IVF) or describe an index of your documents
  serve --index DIR            keep an index loaded and answer HTTP searches on 127.0.0.1
  bench NAME                   run a benchmark (`bench --help` lists them: index, ivf, serve, ...)

Run `jaxparadigm COMMAND --help` for a command's options."""

EPILOG = """\
exit status: 0 done; 2 bad input (one stderr line per problem); 3 a training run gave up, or a
process of a --num-processes group died.
JAXPARADIGM_DEBUG=1 shows the traceback of input errors; TQDM_DISABLE=1 (or a command's
--no-progress) turns progress output off."""

#: Benchmarks of a source checkout (benchmarks/NAME_bench.py), for `bench --help`.
BENCHES = {
    "tensor": "strided views vs copies, host<->device transfers",
    "autodiff": "our reverse/forward mode vs jax.grad: run time, compile time, graph growth",
    "optim": "our Adam and clip+schedule chain vs optax (and torch when installed); --cpu-devices",
    "retrieval": "MiniLM encode throughput vs sentence-transformers (if there); --cpu-devices",
    "train": "train-step throughput; --sharding modes; --num-processes groups; --cpu-devices",
    "index": "persistent-index search vs FAISS (faiss-cpu if installed), build and encode rates",
    "search": "exact search per dtype as fractions of measured read bandwidth and peak FLOP/s",
    "relevance": "top 3, MRR, recall@10 per kind of third-party text; each ranking change",
    "ivf": "IVF recall@10 vs q/s over nprobe against exact search and FAISS IndexIVFFlat",
    "serve": "serve under 1-32 clients: q/s, p50/p99 ms, trace completeness; vs ST + FAISS flat",
}


INDEX_FILE_TYPES = """File types: .txt and .py (the text as is), .md .markdown .rst (link-reference
lines and lists of bare links left out), .html .htm (readable text: markup, scripts, styles and
navigation left out), .jsonl (one document a line, its "text" field). Folders are read recursively
(hidden entries skipped); a file named directly with another suffix is read as text. Files that
cannot be used (not UTF-8, bad JSONL lines, unreadable, empty, duplicates, dangling symlinks, other
types) are skipped and listed at the end by reason; --strict fails instead. A build or add holds
DIR/lock: a second writer is refused."""


def _add_run(sub) -> None:
    """``jaxparadigm run CONFIG [key.path=value ...]``: one task of a config."""
    p = sub.add_parser("run", help="run an experiment config")
    p.add_argument("config", help="YAML config file, e.g. configs/default.yaml")
    p.add_argument("overrides", nargs="*", help="key.path=value overrides")
    p.add_argument(
        "--num-processes",
        type=int,
        metavar="N",
        help="launch N local processes on jax.distributed (task train; sharding mode data, "
        "zero1, fsdp or fsdp_tensor)",
    )
    p.add_argument(
        "--devices-per-process",
        type=int,
        metavar="K",
        help="with --num-processes: K forced CPU devices per process",
    )
    from jaxparadigm.app.cpu_devices import DEFAULT_CPU_DEVICES, ENV_CPU_DEVICES  # no JAX

    p.add_argument(
        "--cpu-devices",
        metavar="N|auto",
        help=f"CPU devices this process asks XLA for (auto: one per usable core; default "
        f"{ENV_CPU_DEVICES}, else {DEFAULT_CPU_DEVICES}); with N > 1, task train splits each "
        "batch over them (train.sharding.mode=data) unless the config sets train.sharding.mode. "
        "A count in XLA_FLAGS wins",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="start afresh over a run of the same name, finished or not (by default an unfinished "
        "run resumes from its newest checkpoint and a finished one prints its report's path); "
        "the old run is kept as NAME.old-<timestamp> until the new one finishes",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar or progress lines (same as TQDM_DISABLE=1; a bar is only drawn on "
        "a terminal, a log file gets a line per tenth of the run)",
    )


def _add_claims(sub) -> None:
    """``jaxparadigm claims``: the claims ledger (table, JSON, report, README section)."""
    p = sub.add_parser("claims", help="run the claims ledger")
    p.add_argument("--only", nargs="+", metavar="ID", help="claim IDs, e.g. C2.5 C4.3")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument("--report", metavar="DIR", help="write a report with plots into DIR")
    p.add_argument(
        "--update-readme", metavar="FILE", help="rewrite the 'What the article gets wrong' section"
    )
    p.add_argument("--config", metavar="FILE", help="YAML config whose claims section is used")
    p.add_argument("overrides", nargs="*", help="key.path=value, e.g. claims.c5_2.p99_ms=500")
    p.add_argument("--no-progress", action="store_true", help="no line per experiment")


def _add_group_options(p, what: str) -> None:
    """``--num-processes N`` and ``--devices-per-process K`` of ``search``/``serve``."""
    p.add_argument(
        "--num-processes",
        type=int,
        metavar="N",
        help=f"with --index: {what} as N local jax.distributed processes, each holding its own "
        "shards (exact dense search; the same launcher and variables as `run --num-processes`)",
    )
    p.add_argument(
        "--devices-per-process",
        type=int,
        metavar="K",
        help="with --num-processes: K forced CPU devices per process",
    )


def _add_search(sub) -> None:
    """``jaxparadigm search QUERY``: keyword vs semantic search over a corpus or an index."""
    p = sub.add_parser(
        "search",
        help="keyword vs semantic search over a corpus",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("query", help='what to look for, in words (e.g. "how do I open a file")')
    p.add_argument("--corpus", default="pydoc", help="'pydoc' or a text file, one document a line")
    p.add_argument("--index", metavar="DIR", help="search an index built by `index build`")
    p.add_argument(
        "--json",
        action="store_true",
        help='with --index: print serve\'s JSON answer, {"hits": [[row, score], ...], "passages": '
        '[{"source", "start", "end", "text", "cosine", "excerpt"}, ...]} plus "mode" and "score"',
    )
    add_search_flags(p)
    _add_group_options(p, "search")


def _add_index_build(isub, fmt) -> None:
    """``jaxparadigm index build PATH ... --out DIR``."""
    b = isub.add_parser(
        "build",
        help="index files or folders (.txt .md .markdown .rst .py .html .htm .jsonl)",
        description=INDEX_FILE_TYPES,
        formatter_class=fmt,
    )
    b.add_argument("paths", nargs="+", metavar="PATH", help="files and folders to index")
    b.add_argument("--out", required=True, metavar="DIR", help="new (or empty) index folder")
    b.add_argument(
        "--chunk-tokens",
        type=int,
        default=None,
        help="window in word pieces (None: max_seq_length - 2 = 254)",
    )
    b.add_argument("--overlap", type=int, default=32, help="word pieces shared by windows")
    b.add_argument("--shard-rows", type=int, default=4096, help="passages per shard file")
    b.add_argument("--batch-size", type=int, default=32, help="passages per encoder batch")
    b.add_argument("--strict", action="store_true", help="fail on any skipped input")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.add_argument(
        "--ivf",
        type=int,
        metavar="N",
        default=None,
        help="then train N inverted lists (as `index ivf DIR --lists N`)",
    )
    _add_encode_devices(b)


def _add_encode_devices(p) -> None:
    """``--cpu-devices`` of ``index build|add``: the encoder's micro-batches go to them in turn."""
    from jaxparadigm.app.cpu_devices import DEFAULT_CPU_DEVICES, ENV_CPU_DEVICES  # no JAX

    p.add_argument(
        "--cpu-devices",
        metavar="N|auto",
        default=None,
        help=f"CPU devices the encoder's micro-batches go to in turn (auto: one per usable core; "
        f"default {ENV_CPU_DEVICES}, else {DEFAULT_CPU_DEVICES}). A count in XLA_FLAGS wins",
    )


def _add_index(sub) -> None:
    """``jaxparadigm index build|add|info``: a persistent passage index."""
    p = sub.add_parser("index", help="build, extend or describe a persistent passage index")
    isub = p.add_subparsers(dest="index_command", required=True)
    fmt = argparse.ArgumentDefaultsHelpFormatter
    _add_index_build(isub, fmt)
    a = isub.add_parser(
        "add",
        help="append files to an index",
        description=INDEX_FILE_TYPES,
        formatter_class=fmt,
    )
    a.add_argument("paths", nargs="+", metavar="PATH", help="files and folders to add")
    a.add_argument("--index", required=True, metavar="DIR", help="an index built by `index build`")
    a.add_argument("--strict", action="store_true", help="fail on any skipped input")
    a.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_encode_devices(a)
    v = isub.add_parser(
        "ivf",
        help="train inverted lists (IVF) for approximate search with --nprobe",
        formatter_class=fmt,
        description="Cluster the index's rows into N lists by k-means (in JAX; seeded, at most "
        "256 training rows per list) and write the centroids and the lists into DIR. `search "
        '--nprobe P` and serve\'s "nprobe" then scan the P nearest lists; `index add` puts new '
        "rows in their nearest lists. Run it again to retrain.",
    )
    v.add_argument("index_dir", metavar="DIR", help="an index built by `index build`")
    v.add_argument("--lists", type=int, required=True, metavar="N", help="how many lists")
    v.add_argument("--seed", type=int, default=0, help="k-means seed (sample and init)")
    v.add_argument("--iters", type=int, default=10, help="k-means iterations")
    i = isub.add_parser("info", help="print an index's manifest and every build and add")
    i.add_argument("index_dir", metavar="DIR")
    i.add_argument(
        "--skipped",
        action="store_true",
        help="list every input each build and add skipped, with its reason (not only the first 10)",
    )


def _add_serve(sub) -> None:
    """``jaxparadigm serve --index DIR``: an index over HTTP."""
    p = sub.add_parser(
        "serve",
        help="serve an index over HTTP until Ctrl-C",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Load an index built by `jaxparadigm index build` once and answer "
        'POST /search {"query": "...", "k": 5, "mode": "hybrid", ...} with {"mode", "score", '
        '"hits": [[row, score], ...], "passages": [{"source", "start", "end", "text", '
        '"excerpt"}, ...]}, traced with OpenTelemetry; repeated queries cost milliseconds. The '
        "body's other keys are the search options (mode, k, nprobe, depth, approx, excerpts, "
        "excerpt_chars, dtype, stream), as the flags below set them for a request that leaves "
        "them out. Ctrl-C (or SIGTERM) stops it.",
    )
    p.add_argument("--index", required=True, metavar="DIR", help="an index directory")
    _add_group_options(p, "serve")
    p.add_argument("--host", default="127.0.0.1", help="bind address (loopback only)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (0: a free one)")
    add_search_flags(p, serve=True)
    # defaults: request_batcher's DEFAULT_MAX_BATCH, DEFAULT_MAX_WAIT_MS (not imported: the
    # retrieval package loads JAX; tests/retrieval/service/test_request_batcher.py checks they
    # agree)
    batching = [
        ("--batch-size", "max_batch", int, 16, "B", "most requests encoded and searched at once"),
        ("--batch-wait-ms", "max_wait_ms", float, 0.0, "T", "ms a batch waits for more requests"),
    ]
    for flag, dest, kind, default, meta, what in batching:
        p.add_argument(flag, dest=dest, type=kind, default=default, metavar=meta, help=what)


def _add_bench(sub) -> None:
    """``jaxparadigm bench NAME``: a benchmark of a source checkout."""
    p = sub.add_parser(
        "bench",
        help="run a benchmark of a source checkout",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run benchmarks/NAME_bench.py (a source checkout). Each finishes in about two "
        "minutes by default and prints how to run its full size.\n\nbenchmarks:\n"
        + "\n".join(f"  {k:<10} {v}" for k, v in BENCHES.items()),
    )
    p.add_argument("name", help=f"one of: {', '.join(BENCHES)}")
    p.add_argument("bench_args", nargs=argparse.REMAINDER)


def build_parser() -> argparse.ArgumentParser:
    """The ``jaxparadigm`` argument parser: subcommands run, claims, search, index, serve, bench."""
    parser = argparse.ArgumentParser(
        prog="jaxparadigm",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jaxparadigm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_run, _add_claims, _add_search, _add_index, _add_serve, _add_bench):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The console script: parse ``argv``, run the subcommand; exit 0, 2 (input error), 3 (gave
    up), 130 (Ctrl-C, from its first line: one stderr line, also in the background)."""
    command = command_named(sys.argv[1:] if argv is None else argv)
    with interrupts_raised():  # before the parser, which imports JAX
        try:
            keep_stdout_for_python()  # a worker of a launched group: C++ prints to stderr
            parser = build_parser()
            args, extra = parser.parse_known_args(argv)
            command = args.command
            if extra and command == "run" and not any(e.startswith("-") for e in extra):
                args.overrides += extra  # after an option: run CONFIG --num-processes 2 a=b
            elif extra:
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
            with warnings.catch_warnings():  # restores showwarning on exit
                warnings.showwarning = lambda message, *_, **__: print(
                    f"{line_start(command)}: warning: {' '.join(str(message).split())}",
                    file=sys.stderr,
                )
                return COMMANDS[command](args)
        except KeyboardInterrupt as exc:  # Ctrl-C: one line, exit 130, no traceback
            if os.environ.get("JAXPARADIGM_DEBUG"):
                raise
            return _interrupted(command, exc)
        except (InputError, TrainingAborted) as exc:
            if os.environ.get("JAXPARADIGM_DEBUG"):
                raise
            _print_error(command, exc)
            return 2 if isinstance(exc, InputError) else 3
        except Exception as exc:  # a bug keeps its traceback; an import cut short by Ctrl-C not
            if not raised_by_interrupt(exc) or os.environ.get("JAXPARADIGM_DEBUG"):
                raise
            return _interrupted(command, None)


def _interrupted(command: str | None, exc: KeyboardInterrupt | None) -> int:
    """``main``'s one line about a Ctrl-C (the interrupt's own text, else "interrupted"); 130."""
    interrupt_reported()  # a second Ctrl-C from here on is ignored
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    print(f"{line_start(command)}: {str(exc or '') or 'interrupted'}", file=sys.stderr, flush=True)
    return 130


def _print_error(command: str | None, exc: Exception) -> None:
    """Each line of the message on one stderr line (whitespace runs collapsed); on a terminal
    the line a progress bar may have left unfinished (a stopped worker's) is cleared first."""
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    head, *rest = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()] or [
        type(exc).__name__
    ]
    where = line_start(command)
    print(f"{where}: error: {head}", file=sys.stderr)
    for line in rest:
        print(f"  {line}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
