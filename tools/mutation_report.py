"""The figures of ``mutation_score.py`` (issue 17): per-module results read from the workspaces,
the surviving and equivalent mutants described, the Markdown section of benchmarks/RESULTS.md and
its JSON record."""

from __future__ import annotations

import ast
import json
import os
import platform
from pathlib import Path

from mutation_targets import (
    _KILLED,
    _NO_TESTS,
    _SKIPPED,
    _SURVIVED,
    _TIMEOUT,
    MODULES,
    RESULTS_JSON,
    RESULTS_MD,
    ROOT,
    WORKSPACES,
    Target,
)
from mutation_workspace import (
    _equivalents,
    _target_verdicts,
    sources_digest,
    tests_digest,
    wilson_interval,
)


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


def sample_result(name: str, tag: str = "sample") -> dict | None:
    """Figures for one module's random sample (``run --sample``), or None if never sampled.

    Only the sampled mutants count: the score is over those with a verdict, less equivalents, and
    ``interval`` is its 95% Wilson interval, the range the module's full score lies in.
    """
    ws = WORKSPACES / f"{name}.{tag}"
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
        "The modules added or rewritten since 0a67870 (issue 39, `round-4`) are measured on a",
        "random sample of 30 (seed 39) each: second table. CI's `make mutation-ci` re-tests the",
        "first 3 of those sampled mutants in a window of 4 modules that moves with the commit.",
        "",
        "| module | mutated files | tests | killed/total | timeout | equivalent | survived | score | last run |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in MODULES:
        r = results.get(name)
        if r is None and name in samples:  # measured on a sample only: see the second table
            continue
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
