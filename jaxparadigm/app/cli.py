"""The handlers of the ``jaxparadigm`` subcommands (:data:`COMMANDS`): each takes the parsed
arguments, calls the libraries (through :mod:`jaxparadigm.build` or their public names) and
returns the exit status. The parser and ``main`` are :mod:`jaxparadigm.cli`.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
from collections.abc import Callable
from pathlib import Path

from jaxparadigm.app.search_flags import SEARCH_FLAGS, given_options, option_argv, search_options
from jaxparadigm.errors import GroupFailed, InputError

__all__ = ["BENCHMARKS_DIR", "COMMANDS"]

#: Where a source checkout keeps its benchmark scripts: ``<repo>/benchmarks`` beside the package
#: (this file is ``<repo>/jaxparadigm/app/cli.py``); absent from an installed wheel.
BENCHMARKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks"


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
    from jaxparadigm.app.cpu_devices import cpu_request, user_device_count
    from jaxparadigm.build import finished_run_for
    from jaxparadigm.config import read_config

    request = cpu_request(args.cpu_devices, os.environ)  # a bad value fails before anything loads
    user_device_count(os.environ)  # so does one in XLA_FLAGS / JAX_NUM_CPU_DEVICES
    if args.devices_per_process is not None and args.num_processes is None:
        raise InputError("--devices-per-process: given without --num-processes")
    if args.devices_per_process is not None and args.cpu_devices is not None:
        raise InputError(
            f"--cpu-devices {args.cpu_devices}: given with --devices-per-process "
            f"{args.devices_per_process}; expected one of them (with --num-processes both set "
            "each worker's CPU devices)"
        )
    loaded = read_config(args.config, args.overrides)  # the one read of the file in this process
    cfg = loaded.config
    done = finished_run_for(cfg)
    if done is not None:  # one line, nothing started, nothing written
        print(done)
        return 0
    from jaxparadigm.app.run_ownership import owned_run_folder  # refused / locked before JAX starts

    with owned_run_folder(cfg, overwrite=args.overwrite):
        return _run_owned(args, request, loaded)


def _run_owned(args: argparse.Namespace, request, loaded) -> int:
    """``jaxparadigm run`` once the run folder is held (:func:`_run`)."""
    from jaxparadigm.app.cpu_devices import prepare_cpu_devices

    cfg = loaded.config
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
            cfg=cfg,
        )
        return 0
    cfg, notes = prepare_cpu_devices(request, loaded)
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
    progress = not args.no_progress
    verdicts = claims.run_claims(only=args.only or None, progress=progress, config=cfg.claims)
    if args.json:
        print(json.dumps(claims.verdicts_to_json(verdicts), indent=2))
    else:
        print(claims.format_table(verdicts))
    if args.report:
        print(f"report: {claims.write_report(verdicts, args.report)}", file=sys.stderr)
    if args.update_readme:
        print(f"updated: {claims.update_readme(verdicts, args.update_readme)}", file=sys.stderr)
    return 0


def _group_problem(args: argparse.Namespace, command: str) -> str | None:
    """Why ``--num-processes`` cannot run this ``search``/``serve`` (other than its search
    options: :meth:`SearchOptions.for_process_group`), or None."""
    if args.devices_per_process is not None and args.num_processes is None:
        return "--devices-per-process: given without --num-processes"
    if command == "search" and not args.index:
        return "--num-processes: splits an index over processes; add --index DIR"
    return None


def _check_group_index(index: str, num_processes: object) -> None:
    """Every part of ``index`` the group's processes will hold, checked here before any starts
    (:func:`~jaxparadigm.retrieval.index.reader.check_parts`): a damaged shard or too few shards
    is one line naming it, exit status 2."""
    from jaxparadigm.app.train_launch import check_process_counts
    from jaxparadigm.retrieval.index.reader import check_parts

    check_process_counts(num_processes, None)
    assert isinstance(num_processes, int)  # checked just above
    check_parts(index, num_processes)


def _search_group(args: argparse.Namespace) -> int:
    """``search --num-processes N``: the same search as N workers (:mod:`.retrieval_launch`)."""
    from jaxparadigm.app.retrieval_launch import launch_group

    problem = _group_problem(args, "search")
    if problem:
        raise InputError(problem)
    search_options(args, args.num_processes)  # what a group cannot do: refused before it starts
    _check_group_index(args.index, args.num_processes)
    argv = ["--index", args.index, *option_argv(args), *["--json"] * args.json]
    launch_group(
        "search",
        [*argv, "--", args.query],
        num_processes=args.num_processes,
        devices_per_process=args.devices_per_process,
    )
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from jaxparadigm.app.search_command_output import format_search

    if args.num_processes is not None or args.devices_per_process is not None:
        return _search_group(args)
    if args.index:
        from jaxparadigm.app import index_command_output as output
        from jaxparadigm.app.retrieval_launch import join_group

        group = join_group()  # a worker of `search --num-processes N` (or of a cluster job)
        options = search_options(args, _process_count() if group else None)
        show = output.index_search_json if args.json else output.index_search_text
        out = show(args.query, args.index, options=options)
        if group and not _primary():
            return 0  # process 0 prints the group's answer
    elif args.json or len(given_options(args).keys() - {"k"}):
        fields = [f for f in given_options(args) if f != "k"]  # in SEARCH_FLAGS' order
        option = "--json" if args.json else SEARCH_FLAGS[fields[0]]
        raise InputError(f"{option}: searches an index; add --index DIR (built by `index build`)")
    else:
        top_k = {"top_k": args.k} if "k" in args else {}
        out = format_search(args.query, corpus=args.corpus, **top_k)
    return _print_result(out)  # warnings (e.g. an all-[UNK] query) were printed by main()


def _process_count() -> int:
    import jax

    return jax.process_count()


def _primary() -> bool:
    import jax

    return jax.process_index() == 0


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
            args.paths, args.out, progress=progress, devices=devices, ivf=args.ivf, **kw
        )
    elif args.index_command == "add":
        out = index_command_output.index_add_text(
            args.paths, args.index, progress=progress, strict=args.strict, devices=devices
        )
    elif args.index_command == "ivf":
        out = index_command_output.index_ivf_text(
            args.index_dir, args.lists, seed=args.seed, iters=args.iters
        )
    else:
        out = index_command_output.index_info_text(args.index_dir, skipped=args.skipped)
    return _print_result(out)


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
    from jaxparadigm.retrieval.service.request_batcher import check_batching

    # before the model loads, in the options' names
    check_batching(args.max_batch, args.max_wait_ms, ("--batch-size", "--batch-wait-ms"))
    if args.num_processes is not None or args.devices_per_process is not None:
        return _serve_group(args)
    from jaxparadigm.app.retrieval_launch import join_group

    group = join_group()  # a worker of `serve --num-processes N` (or of a cluster job)
    from jaxparadigm.app.serve_command import follow_index, serve_index

    options = search_options(args, _process_count() if group else None)
    if group and not _primary():
        follow_index(args.index, options=options.opening())
        return 0
    try:
        serve_index(
            args.index,
            host=args.host,
            port=args.port,
            options=options,
            max_batch=args.max_batch,
            max_wait_ms=args.max_wait_ms,
        )
    except GroupFailed as exc:
        if not group:
            raise
        # JAX's shutdown would wait for the dead process (heartbeat timeout) and then abort
        print(f"jaxparadigm serve: error: {exc}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(3)
    return 0


def _serve_group(args: argparse.Namespace) -> int:
    """``serve --num-processes N``: process 0 serves HTTP, the others hold their shards."""
    from jaxparadigm.app.retrieval_launch import SERVE_LEAD_GRACE_S, launch_group

    problem = _group_problem(args, "serve")
    if problem:
        raise InputError(problem)
    search_options(args, args.num_processes)  # what a group cannot do: refused before it starts
    _check_group_index(args.index, args.num_processes)
    argv = ["--index", args.index, "--host", args.host, "--port", str(args.port)]
    argv += option_argv(args)
    argv += ["--batch-size", str(args.max_batch), "--batch-wait-ms", str(args.max_wait_ms)]
    launch_group(
        "serve",
        argv,
        num_processes=args.num_processes,
        devices_per_process=args.devices_per_process,
        lead_grace_s=SERVE_LEAD_GRACE_S,
    )
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


#: subcommand -> its handler (``jaxparadigm.cli.main`` calls ``COMMANDS[args.command](args)``).
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _cmd_run,
    "claims": _cmd_claims,
    "search": _cmd_search,
    "index": _cmd_index,
    "serve": _cmd_serve,
    "bench": _cmd_bench,
}
