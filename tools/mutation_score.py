"""Mutation score of the core modules (issue 17), measured with mutmut one module at a time.

    python tools/mutation_score.py run [MODULE ...] [--max-children 1] [--fresh]
    python tools/mutation_score.py run MODULE --sample 200 [--seed 0]
    python tools/mutation_score.py report [MODULE ...] [--write]

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
"""

from __future__ import annotations

import argparse
import ast
import datetime
import fnmatch
import hashlib
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKSPACES = ROOT / ".mutation"
RESULTS_JSON = ROOT / "tools" / "mutation_results.json"
RESULTS_MD = ROOT / "benchmarks" / "RESULTS.md"
PLUGIN = "mutation_pytest_plugin"
# Imported by the fork server before it forks a process per mutant (none of them starts a JAX
# backend on import; torch is skipped where it is not installed). Not the package under test:
# code that runs at import (rule factories) must run in the mutant's own process, with the mutant
# active (importing jaxparadigm costs ~0.2 s).
PRELOAD = (
    "numpy",
    "ml_dtypes",
    "jax",
    "jax.numpy",
    "chex",
    "optax",
    "pytest",
    "hypothesis",
    "absl.testing.absltest",
    "absl.testing.parameterized",
    "torch",
)


@dataclass(frozen=True)
class Target:
    """One module of the core: the files mutmut mutates (globs) and the tests that run them."""

    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()  # test ids left out of the runner (each with its reason)


MODULES: dict[str, Target] = {
    "tensor": Target(("jaxparadigm/tensor/*.py",), ("tests/tensor",)),
    "autodiff": Target(
        (
            "jaxparadigm/autodiff/*_rules.py",
            "jaxparadigm/autodiff/registry.py",
            "jaxparadigm/autodiff/graph.py",
            "jaxparadigm/autodiff/reverse_mode.py",
        ),
        ("tests/autodiff",),
    ),
    "optim": Target(("jaxparadigm/optim/*.py",), ("tests/optim",)),
    "train.guard": Target(("jaxparadigm/train/guard.py",), ("tests/train/test_guard.py",)),
    "train.checkpoint": Target(
        ("jaxparadigm/train/checkpoint.py",),
        ("tests/train/test_checkpoint.py", "tests/train/test_checkpoint_damage.py"),
        # SIGKILLs a child process mid-save: under mutmut's in-process stats run its child
        # imports the trampolined package and the test failed ("2.orbax-checkpoint-tmp" not
        # cleaned on open; it passes under plain pytest), so mutmut refused to start.
        deselect=(
            "tests/train/test_checkpoint.py::"
            "test_sigkill_during_save_leaves_last_complete_checkpoint",
        ),
    ),
    "train.validation": Target(
        ("jaxparadigm/train/validation.py",), ("tests/train/test_validation.py",)
    ),
    "retrieval.ranking_metrics": Target(
        ("jaxparadigm/retrieval/ranking_metrics.py",), ("tests/retrieval/test_ranking_metrics.py",)
    ),
}

# mutmut's exit-code verdicts (mutmut.stats.status_by_exit_code), folded to what the table reports.
_KILLED = {1, 3}
_TIMEOUT = {36, -24, 24, 152, 255}
_SURVIVED = {0}
_NO_TESTS = {5, 33}
_SKIPPED = {34}


def _toml_list(values) -> str:
    return "[" + ", ".join(json.dumps(str(v)) for v in values) + "]"


def _mutmut_config(target: Target) -> str:
    return "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["jaxparadigm"]',
            f"only_mutate = {_toml_list(target.mutate)}",
            "pytest_add_cli_args_test_selection = "
            + _toml_list([*target.tests, *(f"--deselect={t}" for t in target.deselect)]),
            f'pytest_add_cli_args = ["-p", "{PLUGIN}"]',
            f'also_copy = ["{PLUGIN}.py"]',
            'process_isolation = "forkserver"',
            'forkserver_warmup = "import"',
            'preload_modules_file = "preload.txt"',
            "use_git_change_detection = false",
            "",
        ]
    )


def _link(path: Path, target: Path) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(os.path.relpath(target, path.parent))


def prepare_workspace(name: str, target: Target) -> Path:
    """(Re)write ``.mutation/<name>/`` around mutmut's cache, which it keeps."""
    ws = WORKSPACES / name
    ws.mkdir(parents=True, exist_ok=True)
    _link(ws / "jaxparadigm", ROOT / "jaxparadigm")
    _link(ws / "tests", ROOT / "tests")
    _link(ws / f"{PLUGIN}.py", ROOT / "tools" / f"{PLUGIN}.py")
    (ws / "preload.txt").write_text("\n".join(PRELOAD) + "\n")
    pyproject = (ROOT / "pyproject.toml").read_text() + _mutmut_config(target)
    if not (ws / "pyproject.toml").exists() or (ws / "pyproject.toml").read_text() != pyproject:
        (ws / "pyproject.toml").write_text(pyproject)
    _drop_stale_copies(ws)
    return ws


def _drop_stale_copies(ws: Path) -> None:
    """mutmut copies ``tests/`` over its old copy and keeps copies of deleted sources: remove the
    copied tests (copied afresh on every run) and copies whose source no longer exists."""
    shutil.rmtree(ws / "mutants" / "tests", ignore_errors=True)
    package = ws / "mutants" / "jaxparadigm"
    if not package.is_dir():
        return
    for path in sorted(package.rglob("*"), reverse=True):
        rel = path.relative_to(ws / "mutants")
        source = ROOT / str(rel).removesuffix(".meta").removesuffix(".spans")
        if path.is_dir():
            if not source.is_dir():
                shutil.rmtree(path)
        elif not source.exists() and "__pycache__" not in rel.parts:
            path.unlink()


def _test_files(target: Target) -> list[Path]:
    """The module's tests plus every conftest.py on their way up to ``tests/``."""
    files: set[Path] = set()
    for entry in target.tests:
        path = ROOT / entry
        files |= set(path.rglob("*.py")) if path.is_dir() else {path}
        for parent in path.parents:
            if parent == ROOT:
                break
            if (parent / "conftest.py").exists():
                files.add(parent / "conftest.py")
    return sorted(files)


def _digest(paths) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def tests_digest(target: Target) -> str:
    return _digest(_test_files(target))


def sources_digest() -> str:
    """Every source of the package: a mutant's tests run the whole package, mutated or not."""
    return _digest(sorted((ROOT / "jaxparadigm").rglob("*.py")))


def _meta_files(ws: Path):
    yield from sorted((ws / "mutants").rglob("*.py.meta"))


def _target_verdicts(ws: Path, target: Target):
    """``(source, {mutant name: exit code or None})`` for each file of ``target`` in the cache."""
    for meta_path in _meta_files(ws):
        source = str(meta_path.relative_to(ws / "mutants"))[: -len(".meta")]
        if any(fnmatch.fnmatch(source, pattern) for pattern in target.mutate):
            yield source, json.loads(meta_path.read_text())["exit_code_by_key"]


def _decided(ws: Path) -> set[str]:
    """Mutants with a verdict in the cache."""
    return {
        key
        for meta_path in _meta_files(ws)
        for key, code in json.loads(meta_path.read_text())["exit_code_by_key"].items()
        if code is not None
    }


def recheck_survivors(ws: Path) -> int:
    """Mark survived and no-test mutants "not checked", so mutmut tests them again."""
    count = 0
    for meta_path in _meta_files(ws):
        meta = json.loads(meta_path.read_text())
        codes = meta.get("exit_code_by_key", {})
        reset = [k for k, v in codes.items() if v in _SURVIVED | _NO_TESTS]
        for key in reset:
            codes[key] = None
        if reset:
            meta_path.write_text(json.dumps(meta, indent=4))
            count += len(reset)
    return count


def _survivors(ws: Path) -> list[str]:
    """Survived and no-test mutants, less those listed as equivalent (no test can kill them)."""
    equivalent = _equivalents()
    return sorted(
        key
        for meta_path in _meta_files(ws)
        for key, code in json.loads(meta_path.read_text())["exit_code_by_key"].items()
        if code in _SURVIVED | _NO_TESTS and key not in equivalent
    )


_GENERATE = """
import os
import mutmut.__main__ as m
m.set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
m.copy_src_dir()
m.copy_also_copy_files()
m.setup_source_paths()
m.store_lines_covered_by_tests()
m.create_mutants(1)
"""


def all_mutants(ws: Path, target: Target, env: dict) -> list[str]:
    """Generate every mutant of the module (no test runs) and return their names, sorted."""
    with (ws / "generate.log").open("w") as log:
        subprocess.run(
            [sys.executable, "-c", _GENERATE], cwd=ws, env=env, stdout=log, stderr=log, check=True
        )
    return sorted(name for _, verdicts in _target_verdicts(ws, target) for name in verdicts)


def draw_sample(names: list[str], size: int, seed: int) -> list[str]:
    """``size`` names drawn uniformly without replacement (all of them if there are fewer)."""
    return sorted(random.Random(seed).sample(sorted(names), min(size, len(names))))


def wilson_interval(detected: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``detected / n`` (in percent)."""
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    p = detected / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)
    return 100.0 * max(lo, 0.0), 100.0 * min(hi, 1.0)  # 0 and n detected round to -1e-15, 1+1e-15


def run_module(
    name: str,
    max_children: int,
    fresh: bool,
    survivors_only: bool = False,
    sample: int | None = None,
    seed: int = 0,
) -> int:
    target = MODULES[name]
    ws = WORKSPACES / (name if sample is None else f"{name}.sample")
    if fresh and ws.exists():
        shutil.rmtree(ws)
    ws = prepare_workspace(ws.name, target)
    digest_file = ws / "tests.sha256"
    digest = tests_digest(target)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # Programs a mutant does not change are compiled once per workspace, not once per mutant
    # (the cache key is the HLO itself, so a mutant that changes a program misses it).
    env["JAX_COMPILATION_CACHE_DIR"] = str(ws / "jax-cache")
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    # mutmut re-tests the mutants named on its command line, and only those.
    previous = (
        json.loads((ws / "last_run.json").read_text()) if (ws / "last_run.json").exists() else {}
    )
    names = _survivors(ws) if survivors_only else []
    if survivors_only and "sample" in previous:
        # A sample re-tests its survivors and the sampled mutants mutmut reset to "not checked"
        # because their function changed.
        names = sorted(set(names) | (set(previous["sample"]) - _decided(ws)))
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
    mutmut = Path(sys.executable).parent / "mutmut"
    print(f"[{name}] mutmut run --max-children {max_children} in {ws.relative_to(ROOT)}")
    last = {
        "commit": _git_head(),
        "tests_digest": digest,
        "sources_digest": sources_digest(),
        "load_1min_at_start": round(os.getloadavg()[0], 1),
        "max_children": max_children,
        "started": _utc_now(),
    }
    if population is not None:
        last.update(sample=names, population=population, seed=seed)
    elif survivors_only:  # the sample it re-tests stays
        last.update({k: previous[k] for k in ("sample", "population", "seed") if k in previous})
    # Written now too, so that ``report`` can read a sample while its run is still going.
    (ws / "last_run.json").write_text(json.dumps(last) + "\n")
    started = datetime.datetime.now()
    log = ws / "run.log"
    with log.open("w") as out:
        rc = subprocess.call(
            [str(mutmut), "run", "--max-children", str(max_children), *names],
            cwd=ws,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
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


# ---------------------------------------------------------------------------------------- report


def _equivalents() -> dict[str, tuple[str, str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from mutation_equivalents import EQUIVALENT

    return EQUIVALENT


def _function_span(source_path: Path, mutant_name: str) -> tuple[int, int]:
    """First and last line of the function a mutant belongs to (``x_f`` or ``xǁClassǁf``)."""
    func = mutant_name.rpartition(".")[2].partition("__mutmut_")[0]
    cls, fname = None, func[2:]
    if func.startswith("xǁ"):
        _, cls, fname = func.split("ǁ")
    tree = ast.parse(source_path.read_text())
    scope = tree.body
    if cls is not None:
        scope = next(n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    node = next(
        n
        for n in scope
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == fname
    )
    return node.lineno, node.end_lineno


def describe(ws: Path, source: str, mutant_name: str) -> dict:
    """The mutant as ``{name, file, line, change}``: the changed line before -> after."""
    from mutmut.configuration import reset_config
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    cwd = os.getcwd()
    os.chdir(ws)
    try:
        reset_config()
        diff = get_diff_for_mutant(mutant_name, path=source).splitlines()
    finally:
        os.chdir(cwd)
        reset_config()
    old = [ln[1:].strip() for ln in diff if ln.startswith("-") and not ln.startswith("---")]
    new = [ln[1:].strip() for ln in diff if ln.startswith("+") and not ln.startswith("+++")]
    first, last = _function_span(ROOT / source, mutant_name)
    lines = (ROOT / source).read_text().splitlines()
    # The diff numbers lines from the function's ``def`` (line 1): the first removed line of the
    # first hunk is the changed one (a search by text would pick an identical earlier line).
    line = None
    for i, text in enumerate(diff):
        if text.startswith("@@"):
            n = first + int(text.split()[1].lstrip("-").split(",")[0]) - 1
            for body in diff[i + 1 :]:
                if body.startswith("-"):
                    line = n
                    break
                n += 1
            break
    if line is None or not old or lines[line - 1].strip() != old[0]:
        line = next(
            (i for i in range(first, last + 1) if old and lines[i - 1].strip() == old[0]), first
        )
    return {
        "name": mutant_name,
        "file": source,
        "line": line,
        "change": " / ".join(old) + "  ->  " + " / ".join(new),
        "mutated": " / ".join(new),
    }


def sample_result(name: str) -> dict | None:
    """Figures for one module's random sample (``run --sample``), or None if never sampled.

    Only the sampled mutants count: the score is over those with a verdict, less equivalents, and
    ``interval`` is its 95% Wilson interval, the range the module's full score lies in.
    """
    ws = WORKSPACES / f"{name}.sample"
    last = ws / "last_run.json"
    if not last.exists() or "sample" not in (run := json.loads(last.read_text())):
        return None
    result = module_result(name, ws=ws, keys=set(run["sample"]))
    detected = result["killed"] + result["timeout"]
    n = result["mutants"] - result["equivalent"] - result["not_checked"]
    result["population"] = run["population"]
    result["interval"] = [round(v, 1) for v in wilson_interval(detected, n)] if n else None
    return result


def module_result(name: str, ws: Path | None = None, keys: set[str] | None = None) -> dict | None:
    """Figures for one module from its workspace's mutmut cache, or None if never run.

    ``keys`` restricts the count to those mutants (a random sample); ``ws`` is the workspace.
    """
    ws = WORKSPACES / name if ws is None else ws
    if not (ws / "mutants").is_dir():
        return None
    target = MODULES[name]
    equivalent = _equivalents()
    counts = dict(mutants=0, killed=0, timeout=0, no_tests=0, not_checked=0, other=0)
    survivors, equivalents, unclear = [], [], []
    for source, verdicts in _target_verdicts(ws, target):
        for key, code in verdicts.items():
            if keys is not None and key not in keys:
                continue
            if code in _SKIPPED:
                continue
            counts["mutants"] += 1
            if code in _KILLED:
                counts["killed"] += 1
            elif code in _TIMEOUT:
                counts["timeout"] += 1
            elif code is None:
                counts["not_checked"] += 1
            elif code in _SURVIVED | _NO_TESTS:
                desc = describe(ws, source, key)
                desc["verdict"] = "survived" if code in _SURVIVED else "no tests"
                recorded = equivalent.get(key)
                if recorded is not None and recorded[0] == desc["mutated"]:
                    equivalents.append({**desc, "reason": recorded[1]})
                else:
                    survivors.append(desc)
            else:  # suspicious, segfault, interrupted: neither a kill nor a survivor
                counts["other"] += 1
                unclear.append({"name": key, "file": source, "exit_code": code})
    counts["no_tests"] = sum(s["verdict"] == "no tests" for s in survivors)
    # Over the mutants with a verdict: a partial run scores what it tested (the table says how
    # many are not checked yet).
    denominator = counts["mutants"] - len(equivalents) - counts["not_checked"]
    detected = counts["killed"] + counts["timeout"]
    last = ws / "last_run.json"
    run = json.loads(last.read_text()) if last.exists() else None
    return {
        **counts,
        "equivalent": len(equivalents),
        "survived": len(survivors),
        "score": round(100.0 * detected / denominator, 1) if denominator else None,
        "survivors": survivors,
        "equivalents": equivalents,
        "unclear": unclear,
        "mutate": list(target.mutate),
        "tests": list(target.tests),
        "last_run": run,
        "stale": _stale(run, target),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }


def _stale(run: dict | None, target: Target) -> str | None:
    """Why the cached verdicts may not hold for the code and tests as they are now."""
    if not run or "tests_digest" not in run:
        return "no run recorded by this script"
    changed = [
        what
        for what, now, then in (
            ("tests", tests_digest(target), run["tests_digest"]),
            ("sources", sources_digest(), run["sources_digest"]),
        )
        if now != then
    ]
    return f"{' and '.join(changed)} changed since the last run" if changed else None


def _git_head() -> str:
    """The commit measured, ``+changes`` when the working tree differs from it."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "jaxparadigm", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head + ("+changes" if dirty else "")


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _last_run_text(r: dict) -> str:
    last = r["last_run"]
    if last and "finished" not in last and "started" in last:
        return f"**run in progress** (started {last['started']})"
    if not last or "finished" not in last:
        return "no run recorded by this script"
    workers = f"{last['max_children']} worker{'s' if last['max_children'] > 1 else ''}"
    text = (
        f"{last['finished']} at {last['commit']} ({r['machine']}, load {last['load_1min_at_start']}"
        f"): tested {last['tested']} mutants in {last['wall_s']} s, {workers}"
    )
    return text + (f"; **stale: {r['stale']}**" if r["stale"] else "")


def markdown(results: dict[str, dict], samples: dict[str, dict] | None = None) -> str:
    samples = samples or {}
    out = [
        "## mutation",
        "",
        "Mutation score of the core (issue 17): `make mutation` (all modules) or",
        "`make mutation MODULE=tensor`, i.e. `tools/mutation_score.py run` then `report --write`;",
        "mutmut 3 mutates one module at a time and runs each mutant against the module's own tests.",
        "Score = (killed + timeout) / (mutants - equivalent - not checked); mutmut files a mutant whose test",
        "process exits abnormally (exit 255: here a test module that no longer imports under the mutant)",
        "as a timeout, and both count as detected. Equivalent mutants, with the reason",
        "no test can kill them, are listed in `tools/mutation_equivalents.py`; every other",
        "survivor is listed below. A module's figures are its cache after the run named in its row",
        "(a run re-tests only what changed, so it may test few mutants). A module with mutants",
        "'not checked' had its run stopped before the end: its score covers the checked ones only,",
        "and mutmut runs the mutants with the cheapest tests first, so the unchecked ones belong to",
        "the functions most tests reach. Runs before 2026-12-01 10:20 UTC had the fork server import",
        "the package, so a mutant of code run at import (rule factories) was never active: it could",
        "only survive, never be wrongly killed; later runs import the package in each mutant's process.",
        "",
        "| module | mutated files | tests | killed/total | timeout | equivalent | survived | score | last run |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in MODULES:
        r = results.get(name)
        if r is None:
            out.append(f"| {name} | | | not measured yet | | | | | |")
            continue
        pending = f" ({r['not_checked']} not checked)" if r["not_checked"] else ""
        score = "n/a" if r["score"] is None else f"{r['score']:.1f}%"
        out.append(
            f"| {name} | {', '.join(f'`{m}`' for m in r['mutate'])} | "
            f"{', '.join(f'`{t}`' for t in r['tests'])} | "
            f"{r['killed'] + r['timeout']}/{r['mutants']}{pending} | {r['timeout']} | "
            f"{r['equivalent']} | {r['survived']} | {score} | {_last_run_text(r)} |"
        )
    out += _sample_table(samples)
    for title, table in (("", results), (" (random sample)", samples)):
        for name in MODULES:
            r = table.get(name)
            if not r or not (r["survivors"] or r["equivalents"] or r["unclear"]):
                continue
            out += ["", f"### {name}{title}: mutants not killed", ""]
            for s in r["survivors"]:
                out.append(f"- {s['verdict']}: `{s['file']}:{s['line']}` `{s['change']}`")
            for s in r["equivalents"]:
                out.append(
                    f"- equivalent: `{s['file']}:{s['line']}` `{s['change']}`: {s['reason']}"
                )
            for s in r["unclear"]:
                out.append(f"- exit code {s['exit_code']}: `{s['name']}`")
    return "\n".join(out) + "\n"


def _sample_table(samples: dict[str, dict]) -> list[str]:
    if not samples:
        return []
    out = [
        "",
        "Random samples (`run MODULE --sample N --seed S`): N mutants drawn uniformly from all of the",
        "module's mutants and tested; the score is over the sampled ones (less equivalents) and the",
        "95% Wilson interval is where the module's full score lies.",
        "",
        "| module | sampled/mutants | killed/sampled | timeout | equivalent | survived | score (95% interval) | run |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in MODULES:
        r = samples.get(name)
        if r is None:
            continue
        sampled = r["mutants"]
        pending = f" ({r['not_checked']} not checked)" if r["not_checked"] else ""
        if r["score"] is None:
            score = "n/a"
        else:
            lo, hi = r["interval"]
            score = f"{r['score']:.1f}% ({lo:.1f}-{hi:.1f}%)"
        seed = r["last_run"].get("seed") if r["last_run"] else None
        out.append(
            f"| {name} | {sampled}/{r['population']} (seed {seed}) | "
            f"{r['killed'] + r['timeout']}/{sampled}{pending} | {r['timeout']} | "
            f"{r['equivalent']} | {r['survived']} | {score} | {_last_run_text(r)} |"
        )
    return out


def write_results(measured: dict[str, dict], sampled: dict[str, dict]) -> None:
    """Merge into the JSON record (full runs by module, samples under ``"samples"``), rewrite
    the ``## mutation`` section of RESULTS.md from it."""
    results = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    samples = results.pop("samples", {})
    results.update(measured)
    # The sample's names are not kept: seed and population redraw it at the recorded commit.
    samples.update(
        {
            name: {**r, "last_run": {k: v for k, v in r["last_run"].items() if k != "sample"}}
            for name, r in sampled.items()
        }
    )
    results = {name: results[name] for name in MODULES if name in results}
    samples = {name: samples[name] for name in MODULES if name in samples}
    RESULTS_JSON.write_text(
        json.dumps({**results, "samples": samples}, indent=2, ensure_ascii=False) + "\n"
    )
    section = markdown(results, samples)
    text = RESULTS_MD.read_text()
    start = text.find("\n## mutation\n")
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[: start + 1] + section + (text[end:] if end != -1 else "")
    RESULTS_MD.write_text(text)


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
    rep = sub.add_parser("report", help="print (and with --write record) the figures")
    rep.add_argument("modules", nargs="*", metavar="MODULE")
    rep.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; expected some of {list(MODULES)}")
    modules = args.modules or list(MODULES)
    if args.command == "run":
        if args.sample is not None and args.sample < 1:
            parser.error(f"--sample must be a positive number of mutants, got {args.sample}")
        failed = [
            m
            for m in modules
            if run_module(m, args.max_children, args.fresh, args.survivors, args.sample, args.seed)
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
