"""Command line: parses arguments and calls the library; nothing else lives here. Usage::

    jaxparadigm run CONFIG [key.path=value ...]     run an experiment config (train, retrieval, ...)
        [--num-processes N [--devices-per-process K]]  as N local jax.distributed processes
        [--cpu-devices N|auto]                       N CPU devices (JAXPARADIGM_CPU_DEVICES)
    jaxparadigm claims [--only ID ...] [--json] [--report DIR] [--config FILE] [claims.key=value ...]
    jaxparadigm search "query" [--corpus FILE|pydoc] [--top-k 5]
    jaxparadigm search "query" --index DIR [--top-k 5] [--dtype float32|bfloat16|int8] [--approx]
                       [--stream]
    jaxparadigm index build PATH... --out DIR [--chunk-tokens N] [--overlap 32] [--strict]
                       [--cpu-devices N|auto]
    jaxparadigm index add PATH... --index DIR [--strict] [--cpu-devices N|auto]
    jaxparadigm index info DIR
    jaxparadigm serve --index DIR [--host 127.0.0.1] [--port 8765]   HTTP search until Ctrl-C
    jaxparadigm bench NAME [args ...]                run benchmarks/NAME_bench.py (source checkout)
    jaxparadigm --version

Exit status: 0 done; 2 bad input (:class:`~jaxparadigm.errors.InputError`, e.g. a config
problem: one stderr line per problem naming the key path or file); 3 a training run gave up
(:class:`~jaxparadigm.errors.TrainingAborted`: one line with the step, counts and last finite
loss). Any other exception is a bug and keeps its traceback. ``JAXPARADIGM_DEBUG=1`` shows the
traceback of input errors too.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import warnings
from pathlib import Path

from jaxparadigm import __version__
from jaxparadigm.errors import InputError, TrainingAborted

DESCRIPTION = """\
jaxparadigm: five deep-learning concepts rebuilt in JAX and checked against oracles.

commands:
  run CONFIG [key=value ...]   train or evaluate what a YAML config describes (configs/*.yaml);
                               writes runs/NAME/report.md (rerun the same name to resume)
  claims                       run the article's claims as experiments and print the verdicts
  search "QUERY"               keyword vs semantic search over pydoc (or --index DIR: your files)
  index build|add|info         build, extend or describe a searchable index of your documents
  serve --index DIR            keep an index loaded and answer HTTP searches on 127.0.0.1
  bench NAME                   run a benchmark (tensor, autodiff, optim, retrieval, train, index)

Run `jaxparadigm COMMAND --help` for a command's options."""

EPILOG = """\
exit status: 0 done; 2 bad input (one stderr line per problem); 3 a training run gave up.
JAXPARADIGM_DEBUG=1 shows the traceback of input errors; TQDM_DISABLE=1 (or run --no-progress)
turns progress output off."""

#: Where a source checkout keeps its benchmark scripts: ``<repo>/benchmarks`` beside the package
#: (this file is ``<repo>/jaxparadigm/app/cli.py``); absent from an installed wheel.
BENCHMARKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks"

#: Benchmarks of a source checkout (benchmarks/NAME_bench.py), for `bench --help`.
BENCHES = {
    "tensor": "strided views vs copies, host<->device transfers",
    "autodiff": "our reverse/forward mode vs jax.grad: run time, compile time, graph growth",
    "optim": "our Adam and clip+schedule chain vs optax (and torch when installed); --cpu-devices",
    "retrieval": "MiniLM encode throughput vs sentence-transformers (if there); --cpu-devices",
    "train": "train-step throughput; --sharding modes; --num-processes groups; --cpu-devices",
    "index": "persistent-index search vs FAISS (faiss-cpu if installed), build and encode rates",
    "search": "exact search per dtype as fractions of measured read bandwidth and peak FLOP/s",
}


def _cmd_run(args: argparse.Namespace) -> int:
    if not args.no_progress:
        return _run(args)
    before = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # tqdm's convention; inherited by launched workers
    try:
        return _run(args)
    finally:
        if before is None:
            del os.environ["TQDM_DISABLE"]
        else:
            os.environ["TQDM_DISABLE"] = before


def _run(args: argparse.Namespace) -> int:
    from jaxparadigm.app.cpu_devices import cpu_request, prepare_cpu_devices
    from jaxparadigm.build import finished_run_for
    from jaxparadigm.config import load_config

    request = cpu_request(args.cpu_devices, os.environ)  # a bad value fails before anything loads
    if args.devices_per_process is not None and args.num_processes is None:
        raise InputError("--devices-per-process: given without --num-processes")
    if args.devices_per_process is not None and args.cpu_devices is not None:
        raise InputError(
            f"--cpu-devices {args.cpu_devices}: given with --devices-per-process "
            f"{args.devices_per_process}; expected one of them (with --num-processes both set "
            "each worker's CPU devices)"
        )
    cfg = load_config(args.config, args.overrides)
    done = finished_run_for(cfg)
    if done is not None:  # one line, nothing started, nothing written
        print(done)
        return 0
    if args.num_processes is not None:  # workers print the report line (process 0's terminal)
        from jaxparadigm.app.train_launch import launch

        per_process = args.devices_per_process  # else --cpu-devices / JAXPARADIGM_CPU_DEVICES
        if per_process is None and request.explicit:
            per_process = request.devices
        launch(
            args.config,
            args.overrides,
            num_processes=args.num_processes,
            devices_per_process=per_process,
        )
        return 0
    cfg, notes = prepare_cpu_devices(request, args.config, args.overrides, cfg)
    for note in notes:
        print(f"jaxparadigm run: {note}", file=sys.stderr)
    from jaxparadigm.app.tasks import TASKS  # the tasks' libraries load only for ``run``

    report = TASKS[cfg.task](cfg)
    print(f"report: {report}")
    return 0


def _cmd_claims(args: argparse.Namespace) -> int:
    from jaxparadigm import claims
    from jaxparadigm.config import config_from_dict, load_config

    if args.update_readme and not Path(args.update_readme).is_file():
        raise InputError(f"--update-readme {args.update_readme!r}: no such file")
    if args.report and Path(args.report).exists() and not Path(args.report).is_dir():
        raise InputError(f"--report {args.report!r}: is a file, expected a directory")
    if args.config:
        cfg = load_config(args.config, args.overrides)
    else:  # the article's numbers, plus any claims.* overrides
        cfg = config_from_dict({"name": "claims"}, args.overrides)
    verdicts = claims.run_claims(only=args.only or None, config=cfg.claims)
    if args.json:
        print(json.dumps(claims.verdicts_to_json(verdicts), indent=2))
    else:
        print(claims.format_table(verdicts))
    if args.report:
        print(f"report: {claims.write_report(verdicts, args.report)}", file=sys.stderr)
    if args.update_readme:
        print(f"updated: {claims.update_readme(verdicts, args.update_readme)}", file=sys.stderr)
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from jaxparadigm.app.search_command_output import format_search

    if args.index:
        from jaxparadigm.app.index_command_output import index_search_text

        kw = {"dtype": args.dtype, "approx": args.approx, "stream": args.stream}
        out = index_search_text(args.query, args.index, args.top_k, **kw)
    else:
        out = format_search(args.query, corpus=args.corpus, top_k=args.top_k)
    return _print_result(out)  # warnings (e.g. an all-[UNK] query) were printed by main()


def _index_devices(args: argparse.Namespace) -> int | None:
    """``index build|add``: the CPU devices the encoder spreads over, chosen before JAX starts
    (``--cpu-devices`` / ``JAXPARADIGM_CPU_DEVICES`` / the default ``auto``); notes to stderr."""
    from jaxparadigm.app.cpu_devices import cpu_request, prepare_command_devices

    request = cpu_request(args.cpu_devices, os.environ)  # a bad value fails before anything loads
    count, notes = prepare_command_devices(request)
    for note in notes:
        print(f"jaxparadigm index {args.index_command}: {note}", file=sys.stderr)
    return count


def _cmd_index(args: argparse.Namespace) -> int:
    if args.index_command in ("build", "add"):
        devices = _index_devices(args)  # before index_command_output starts JAX's backend
    from jaxparadigm.app import index_command_output

    progress = not getattr(args, "no_progress", True)
    if args.index_command == "build":
        kw = {"chunk_tokens": args.chunk_tokens, "overlap": args.overlap}
        kw |= {"shard_rows": args.shard_rows, "batch_size": args.batch_size, "strict": args.strict}
        out = index_command_output.index_build_text(
            args.paths, args.out, progress=progress, devices=devices, **kw
        )
    elif args.index_command == "add":
        out = index_command_output.index_add_text(
            args.paths, args.index, progress=progress, strict=args.strict, devices=devices
        )
    else:
        out = index_command_output.index_info_text(args.index_dir)
    return _print_result(out)


INDEX_FILE_TYPES = """File types: .txt and .py (the text as is), .md .markdown .rst (link-reference lines and lists
of bare links left out), .html .htm (readable text: markup, scripts, styles and navigation left
out), .jsonl (one document a line, its "text" field). Folders are read recursively (hidden entries
skipped); a file named directly with another suffix is read as text. Files that cannot be used
(not UTF-8, bad JSONL lines, unreadable, empty, duplicates, dangling symlinks, other types) are
skipped and listed at the end by reason; --strict fails instead. A build or add holds DIR/lock:
a second writer is refused."""


def _print_result(text: str) -> int:
    """Print ``text``; a reader that went away (``| head``, ``| true``) ends the command quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more to flush at exit
        os.close(devnull)
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by it
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from jaxparadigm.retrieval.serve_command import serve_index

    serve_index(args.index, host=args.host, port=args.port)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    root = BENCHMARKS_DIR
    script = root / f"{args.name}_bench.py"
    if not root.is_dir():
        raise InputError(
            f"bench {args.name}: the benchmarks are scripts of a source checkout, not part of the "
            f"installed package (no {root}); clone the repository and run `jaxparadigm bench "
            f"{args.name}` from an editable install (pip install -e .)"
        )
    if not script.is_file():
        have = sorted(p.name[: -len("_bench.py")] for p in root.glob("*_bench.py"))
        raise InputError(
            f"bench name {args.name!r}: no {script} (benchmarks live in a source checkout); "
            f"expected one of {', '.join(have) or '(none found)'}"
        )
    sys.argv = [str(script), *args.bench_args]
    runpy.run_path(str(script), run_name="__main__")
    return 0


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
        "zero1 or fsdp)",
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
        "--no-progress",
        action="store_true",
        help="no progress bar or progress lines (same as TQDM_DISABLE=1; a bar is only drawn on "
        "a terminal, a log file gets a line per tenth of the run)",
    )
    p.set_defaults(func=_cmd_run)


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
    p.set_defaults(func=_cmd_claims)


def _add_search(sub) -> None:
    """``jaxparadigm search QUERY``: keyword vs semantic search over a corpus or an index."""
    p = sub.add_parser(
        "search",
        help="keyword vs semantic search over a corpus",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("query", help='what to look for, in words (e.g. "how do I open a file")')
    p.add_argument("--corpus", default="pydoc", help="'pydoc' or a text file, one document a line")
    p.add_argument("--top-k", type=int, default=5, help="results per ranking")
    p.add_argument("--index", metavar="DIR", help="search an index built by `index build`")
    p.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "bfloat16", "int8"],
        help="with --index: the embeddings' search copy (bfloat16/int8: less memory, the best "
        "candidates rescored in float32)",
    )
    p.add_argument("--approx", action="store_true", help="lax.approx_max_k per block")
    p.add_argument("--stream", action="store_true", help="read shards per search (low memory)")
    p.set_defaults(func=_cmd_search)


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
    i = isub.add_parser("info", help="print an index's manifest")
    i.add_argument("index_dir", metavar="DIR")
    p.set_defaults(func=_cmd_index)


def _add_serve(sub) -> None:
    """``jaxparadigm serve --index DIR``: an index over HTTP."""
    p = sub.add_parser(
        "serve",
        help="serve an index over HTTP until Ctrl-C",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Load an index built by `jaxparadigm index build` once and answer "
        'POST /search {"query": "...", "k": 5} with {"hits": [[row, cosine], ...], "passages": '
        '[{"source", "start", "end", "text"}, ...]}, traced with OpenTelemetry; repeated '
        "queries cost milliseconds. Ctrl-C (or SIGTERM) stops it.",
    )
    p.add_argument("--index", required=True, metavar="DIR", help="an index directory")
    p.add_argument("--host", default="127.0.0.1", help="bind address (loopback only)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (0: a free one)")
    p.set_defaults(func=_cmd_serve)


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
    p.set_defaults(func=_cmd_bench)


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
    """The console script: parse ``argv``, run the subcommand; exit 0, 2 (input error), 3 (gave up)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "run" and not any(e.startswith("-") for e in extra):
        args.overrides += extra  # overrides after an option: run CONFIG --num-processes 2 a=b
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        with warnings.catch_warnings():  # restores showwarning on exit
            warnings.showwarning = lambda message, *_, **__: print(
                f"jaxparadigm {args.command}: warning: {' '.join(str(message).split())}",
                file=sys.stderr,
            )
            return args.func(args)
    except (InputError, TrainingAborted) as exc:
        if os.environ.get("JAXPARADIGM_DEBUG"):
            raise
        _print_error(args.command, exc)
        return 2 if isinstance(exc, InputError) else 3


def _print_error(command: str, exc: Exception) -> None:
    """Each line of the message on one stderr line (whitespace runs collapsed); on a terminal
    the line a progress bar may have left unfinished (a stopped worker's) is cleared first."""
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    head, *rest = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()] or [
        type(exc).__name__
    ]
    print(f"jaxparadigm {command}: error: {head}", file=sys.stderr)
    for line in rest:
        print(f"  {line}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
