"""mutmut workspaces of ``mutation_score.py`` (issue 17): one per module under ``.mutation/``, the
digests that say when its verdicts are stale, the verdicts read back, and the random sample."""

from __future__ import annotations

import datetime
import fnmatch
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from mutation_targets import (
    _NO_TESTS,
    _SURVIVED,
    PLUGIN,
    PRELOAD,
    ROOT,
    WORKSPACES,
    Target,
)

# Folders some tests read by a path relative to the repository root (configs/default.yaml,
# the benchmark scripts some tests load).
DATA_DIRS = ("configs", "benchmarks")


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
            f"also_copy = {_toml_list([f'{PLUGIN}.py', *DATA_DIRS])}",
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
    for folder in DATA_DIRS:  # tests open some files by paths relative to the repository root
        _link(ws / folder, ROOT / folder)
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


def _equivalents() -> dict[str, tuple[str, str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from mutation_equivalents import EQUIVALENT

    return EQUIVALENT


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
