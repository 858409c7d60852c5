"""Mutation score of the core modules (issue 17), measured with mutmut one module at a time.

    python tools/mutation_score.py run [MODULE ...] [--max-children 1] [--fresh]
    python tools/mutation_score.py run MODULE --sample 200 [--seed 0]
    python tools/mutation_score.py report [MODULE ...] [--write]
    python tools/mutation_score.py run round-4 --rotate 4 --sample 2 --seed 39 --tag ci   (CI)
    python tools/mutation_score.py gate round-4 --rotate 4 --tag ci
    python tools/mutation_score.py run round-5 --rotate 2 --sample 3 --seed 39 --tag ci   (CI)
    python tools/mutation_score.py gate round-5 --rotate 2 --tag ci

``run`` gives each module its own mutmut workspace, ``.mutation/<module>/`` (git-ignored): links to
``jaxparadigm/`` and ``tests/``, a ``pyproject.toml`` whose ``[tool.mutmut]`` lists the files to
mutate and the module's own tests as the runner, and mutmut's cache ``mutants/``. mutmut runs
every mutant in a process forked from a server that has imported only third-party packages
(JAX is not fork-safe once its backend has started), against the tests that reached the mutated
function in a first "stats" run. Reruns are incremental: mutmut re-tests only the mutants of
functions whose source changed, and when the module's tests change, this script marks the
module's survivors "not checked" so they are tested again (``--fresh`` starts from nothing).

``report`` reads the caches and prints, per module, ``killed/total`` and the score

    score = (killed + timeout) / (mutants - equivalent - not checked)

(a timeout is a mutant that made its tests hang: detected; "not checked" are mutants an interrupted
run did not reach, which the table counts separately).

A module whose full run does not fit the time at hand (autodiff's rules, optim: thousands of
mutants at 3-8 s each) is measured on a **uniform random sample** instead: ``--sample N`` generates
every mutant, draws N of them with ``random.Random(seed)`` and has mutmut test exactly those. mutmut
otherwise runs the mutants with the cheapest tests first, so a stopped full run scores a biased
subset; a random sample scores an unbiased one, and the report gives its score with a 95% Wilson
interval ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``, z = 1.96, over the n sampled
mutants that are not equivalent. Samples are recorded apart from the full-run figures. Equivalent mutants, which no test can
kill because they do not change behaviour, are listed with a reason in
``tools/mutation_equivalents.py``; an entry counts only while the mutant still makes the
change recorded there. ``--write`` merges the measured modules into
``tools/mutation_results.json`` and rewrites the ``## mutation`` section of
``benchmarks/RESULTS.md`` from it. Modules with no workspace keep their last recorded figures.

This file is the command line and the run; its siblings hold the rest: ``mutation_targets.py``
(the modules and paths), ``mutation_workspace.py`` (workspaces, digests, verdicts, the sample),
``mutation_report.py`` (results, descriptions, the Markdown and JSON record).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling tool modules

from mutation_report import (  # noqa: E402
    markdown,
    module_result,
    sample_result,
    write_results,
)
from mutation_targets import GROUPS, MODULES, ROOT, WORKSPACES  # noqa: E402
from mutation_workspace import (  # noqa: E402
    _decided,
    _git_head,
    _survivors,
    _utc_now,
    all_mutants,
    draw_sample,
    prepare_workspace,
    recheck_survivors,
    sources_digest,
    tests_digest,
    wilson_interval,
)

__all__ = ["draw_sample", "gate", "main", "rotation", "run_module", "wilson_interval"]


def _mutmut_env(ws: Path) -> dict[str, str]:
    """The environment mutmut runs in: no PYTHONPATH, and a JAX compilation cache per workspace."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # Programs a mutant does not change are compiled once per workspace, not once per mutant
    # (the cache key is the HLO itself, so a mutant that changes a program misses it).
    env["JAX_COMPILATION_CACHE_DIR"] = str(ws / "jax-cache")
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    return env


def _call_mutmut(
    ws: Path, env: dict[str, str], log: Path, max_children: int, names: list[str]
) -> int:
    """``mutmut run`` in ``ws`` on ``names`` (all mutants when empty), output to ``log``."""
    mutmut = Path(sys.executable).parent / "mutmut"
    with log.open("w") as out:
        return subprocess.call(
            [str(mutmut), "run", "--max-children", str(max_children), *names],
            cwd=ws,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _run_record(digest: str, max_children: int) -> dict:
    """What ``last_run.json`` records of a run as it starts (commit, digests, load, time)."""
    return {
        "commit": _git_head(),
        "tests_digest": digest,
        "sources_digest": sources_digest(),
        "load_1min_at_start": round(os.getloadavg()[0], 1),
        "max_children": max_children,
        "started": _utc_now(),
    }


def _survivors_to_test(ws: Path, previous: dict) -> list[str]:
    """The survivors; for a sample, also its mutants mutmut reset to "not checked"."""
    names = _survivors(ws)
    if "sample" in previous:
        # A sample re-tests its survivors and the sampled mutants mutmut reset to "not checked"
        # because their function changed.
        names = sorted(set(names) | (set(previous["sample"]) - _decided(ws)))
    return names


def run_module(
    name: str,
    max_children: int,
    fresh: bool,
    survivors_only: bool = False,
    sample: int | None = None,
    seed: int = 0,
    tag: str = "sample",
) -> int:
    target = MODULES[name]
    ws = WORKSPACES / (name if sample is None and tag == "sample" else f"{name}.{tag}")
    if fresh and ws.exists():
        shutil.rmtree(ws)
    ws = prepare_workspace(ws.name, target)
    digest_file = ws / "tests.sha256"
    digest = tests_digest(target)
    env = _mutmut_env(ws)
    # mutmut re-tests the mutants named on its command line, and only those.
    previous = (
        json.loads((ws / "last_run.json").read_text()) if (ws / "last_run.json").exists() else {}
    )
    names = _survivors_to_test(ws, previous) if survivors_only else []
    population = None
    if sample is not None and not survivors_only:
        everything = all_mutants(ws, target, env)
        population = len(everything)
        names = draw_sample(everything, sample, seed)
        print(f"[{name}] random sample of {len(names)} of {population} mutants (seed {seed})")
    if survivors_only and not names:
        print(f"[{name}] no survivors to test again")
        return 0
    if not names and digest_file.exists() and digest_file.read_text() != digest:
        print(f"[{name}] tests changed: {recheck_survivors(ws)} survivors will be tested again")
    decided_before = _decided(ws)
    print(f"[{name}] mutmut run --max-children {max_children} in {ws.relative_to(ROOT)}")
    last = _run_record(digest, max_children)
    if population is not None:
        last.update(sample=names, population=population, seed=seed)
    elif survivors_only:  # the sample it re-tests stays
        last.update({k: previous[k] for k in ("sample", "population", "seed") if k in previous})
    # Written now too, so that ``report`` can read a sample while its run is still going.
    (ws / "last_run.json").write_text(json.dumps(last) + "\n")
    started = datetime.datetime.now()
    log = ws / "run.log"
    rc = _call_mutmut(ws, env, log, max_children, names)
    if rc != 0 and "failed to collect stats" in log.read_text(errors="replace"):
        # The stats run (the module's tests once, in mutmut's process) failed; with the
        # subprocess-heavy run-folder tests this happened 2 times in about 8 runs, and the next
        # run passed each time. Once more, said so; a second failure stands.
        print(f"[{name}] mutmut's stats run failed (see {log.name}); running it once more")
        shutil.copy(log, ws / "run.failed-stats.log")
        rc = _call_mutmut(ws, env, log, max_children, names)
    seconds = (datetime.datetime.now() - started).total_seconds()
    if rc == 0 and not names:  # a run on named mutants leaves the rest unchecked
        digest_file.write_text(digest)
    last.update(
        finished=_utc_now(),
        wall_s=round(seconds),
        tested=len(names) if names else len(_decided(ws) - decided_before),
        exit=rc,
    )
    (ws / "last_run.json").write_text(json.dumps(last) + "\n")
    print(f"[{name}] exit {rc} after {seconds:.0f} s (log: {log.relative_to(ROOT)})")
    return rc


def _commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


def rotation(names: list[str], k: int, commit: str) -> list[str]:
    """``k`` consecutive ``names`` (wrapping) from offset ``int(commit, 16) % len(names)``: each
    commit's CI run measures another window, and ``ceil(len / k)`` commits in a row whose offsets
    step through the list cover every module. No commit (not a git checkout): offset 0."""
    start = int(commit, 16) % len(names) if commit else 0
    return [names[(start + i) % len(names)] for i in range(min(k, len(names)))]


def group_modules(name: str, rotate: int | None) -> list[str]:
    """The modules ``name`` stands for: a group's (:data:`GROUPS`; with ``rotate``, this commit's
    window of it), else ``[name]``."""
    if name not in GROUPS:
        return [name]
    group = list(GROUPS[name])
    return group if rotate is None else rotation(group, rotate, _commit())


def gate(modules: list[str], tag: str) -> int:
    """1 if a module's sample in ``.mutation/MODULE.TAG`` has a survivor that is not a recorded
    equivalent, or a mutant without a verdict; else 0 (CI's full run, issue 39)."""
    failed = []
    for name in modules:
        r = sample_result(name, tag)
        if r is None:
            failed.append(name)
            print(f"[{name}] no sample in .mutation/{name}.{tag}: run it first")
            continue
        detected = r["killed"] + r["timeout"]
        print(
            f"[{name}] {detected} killed, {r['equivalent']} equivalent, {r['survived']} survived, "
            f"{r['not_checked'] + r['other']} without a verdict, of {r['mutants']} sampled"
        )
        for s in r["survivors"]:
            print(f"  survived: {s['file']}:{s['line']}  {s['mutated']}")
        if r["survived"] or r["not_checked"] or r["other"]:
            failed.append(name)
    if failed:
        print(f"mutation gate failed for {failed}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="mutate and test (incremental)")
    run.add_argument("modules", nargs="*", metavar="MODULE")
    run.add_argument("--max-children", type=int, default=1)
    run.add_argument("--fresh", action="store_true", help="drop the module's cache first")
    run.add_argument(
        "--survivors", action="store_true", help="test again only the survivors (after new tests)"
    )
    run.add_argument(
        "--sample", type=int, metavar="N", help="test a uniform random sample of N mutants"
    )
    run.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    tag_help = "workspace of the sample: .mutation/MODULE.TAG (default: sample)"
    rotate_help = (
        "with a group (round-4, round-5): only K of its modules, K consecutive ones (in the "
        "group's order, wrapping) "
        "from an offset set by the commit (HEAD's hash mod the module count)"
    )
    run.add_argument("--tag", default="sample", help=tag_help)
    run.add_argument("--rotate", type=int, metavar="K", help=rotate_help)
    gate_cmd = sub.add_parser(
        "gate", help="exit 1 unless every sampled mutant was killed or is a recorded equivalent"
    )
    gate_cmd.add_argument("modules", nargs="*", metavar="MODULE")
    gate_cmd.add_argument("--tag", default="sample", help=tag_help)
    gate_cmd.add_argument("--rotate", type=int, metavar="K", help=rotate_help)
    rep = sub.add_parser("report", help="print (and with --write record) the figures")
    rep.add_argument("modules", nargs="*", metavar="MODULE")
    rep.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    rotate = getattr(args, "rotate", None)
    if rotate is not None and rotate < 1:
        parser.error(f"--rotate must be a positive number of modules, got {rotate}")
    modules = [n for m in args.modules for n in group_modules(m, rotate)]
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        parser.error(
            f"unknown module(s) {unknown}; expected some of {list(MODULES)} or a group: round-4 "
            "(the modules added or rewritten since 0a67870), round-5 (added since b953ab2)"
        )
    modules = modules or list(MODULES)
    if args.command == "gate":
        return gate(modules, args.tag)
    if args.command == "run":
        if args.sample is not None and args.sample < 1:
            parser.error(f"--sample must be a positive number of mutants, got {args.sample}")
        failed = [
            m
            for m in modules
            if run_module(
                m, args.max_children, args.fresh, args.survivors, args.sample, args.seed, args.tag
            )
            != 0
        ]
        if failed:
            print(f"mutmut failed for {failed}: see .mutation/<module>/run.log")
        return 1 if failed else 0
    measured = {m: r for m in modules if (r := module_result(m)) is not None}
    sampled = {m: r for m in modules if (r := sample_result(m)) is not None}
    print(markdown(measured, sampled))
    if args.write:
        write_results(measured, sampled)
    return 0


if __name__ == "__main__":
    sys.exit(main())
