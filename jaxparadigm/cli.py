"""Command line: parses arguments and calls the library; nothing else lives here.

    jaxparadigm run CONFIG [key.path=value ...]     run an experiment config (train, retrieval, ...)
    jaxparadigm claims [--only ID ...] [--json] [--report DIR] [--config FILE] [claims.key=value ...]
    jaxparadigm search "query" [--corpus FILE|pydoc] [--top-k 5]
    jaxparadigm bench NAME [args ...]                run benchmarks/NAME_bench.py (source checkout)
    jaxparadigm --version

A bad config or bad input is printed as one line on stderr and exits with status 2 (set
``JAXPARADIGM_DEBUG=1`` to see the traceback instead).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import runpy
import sys
from pathlib import Path

from jaxparadigm import __version__

# task name -> "module:function"; each function takes a Config and returns the report's Path.
TASKS = {
    "train": "jaxparadigm.train.experiment:run_experiment",
    "mixed_precision": "jaxparadigm.train.experiment:run_experiment",
    "overflow": "jaxparadigm.train.experiment:run_experiment",
    "retrieval": "jaxparadigm.retrieval.evaluation:run_experiment",
}


def _call(target: str, *args, **kwargs):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


def _cmd_run(args: argparse.Namespace) -> int:
    from jaxparadigm.config import load_config

    cfg = load_config(args.config, args.overrides)
    report = _call(TASKS[cfg.task], cfg)
    print(f"report: {report}")
    return 0


def _cmd_claims(args: argparse.Namespace) -> int:
    from jaxparadigm import claims
    from jaxparadigm.config import config_from_dict, load_config

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
    import warnings

    from jaxparadigm.retrieval.evaluation import format_search

    with warnings.catch_warnings(record=True) as caught:  # each warning: one stderr line
        out = format_search(args.query, corpus=args.corpus, top_k=args.top_k)
    for w in caught:
        print(f"jaxparadigm search: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    print(out)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    root = Path(__file__).resolve().parent.parent / "benchmarks"
    script = root / f"{args.name}_bench.py"
    if not script.is_file():
        have = sorted(p.name[: -len("_bench.py")] for p in root.glob("*_bench.py"))
        raise ValueError(
            f"bench name {args.name!r}: no {script} (benchmarks live in a source checkout); "
            f"expected one of {', '.join(have) or '(none found)'}"
        )
    sys.argv = [str(script), *args.bench_args]
    runpy.run_path(str(script), run_name="__main__")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxparadigm", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"jaxparadigm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run an experiment config")
    p.add_argument("config", help="YAML config file, e.g. configs/default.yaml")
    p.add_argument("overrides", nargs="*", help="key.path=value overrides")
    p.set_defaults(func=_cmd_run)

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

    p = sub.add_parser("search", help="keyword vs semantic search over a corpus")
    p.add_argument("query")
    p.add_argument("--corpus", default="pydoc", help="'pydoc' or a text file, one document a line")
    p.add_argument("--top-k", type=int, default=5)
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser("bench", help="run benchmarks/NAME_bench.py")
    p.add_argument("name", help="e.g. optim, tensor, autodiff, retrieval, train")
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        if os.environ.get("JAXPARADIGM_DEBUG"):
            raise
        msg = " ".join(str(exc).split())
        print(f"jaxparadigm {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
