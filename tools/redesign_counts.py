#!/usr/bin/env python3
"""Counts of issue 33's redesign, measured on a checkout (rerun it on any commit):

* config-file reads per ``jaxparadigm run`` process: a tiny training config is run for real in a
  subprocess (``jaxparadigm.cli.main``) with an audit hook (:func:`sys.addaudithook`) that counts
  every ``open`` of the YAML file; once plainly and once with ``--cpu-devices 2`` (the path that
  adds ``train.sharding.mode=data`` to the config);
* ``jax.distributed`` set-up calls in that process (calls of ``initialize_distributed``, counted
  by wrapping it where it is defined before the command runs);
* modules of ``jaxparadigm/`` over 400 lines, and functions over 60 lines.

Usage (from a checkout; ``--root`` another checkout, e.g. main, to compare)::

    python tools/redesign_counts.py [--root DIR]

The subprocess imports ``jaxparadigm`` from ``--root`` (PYTHONPATH). Takes about a minute on 2 CPUs.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

MODULE_LINES = 400
FUNCTION_LINES = 60

CONFIG = """\
name: counts
task: train
out_dir: {out}
model: {{kind: mlp, hidden: [8], num_outputs: 2}}
data: {{kind: spirals, n_samples: 64, batch_size: 8}}
train: {{steps: 2, eval_every: 2, log_every: 1, plots: false}}
"""

CHILD = textwrap.dedent(
    """
    import atexit, json, os, sys
    target = os.path.realpath(sys.argv[1])
    counts = {"config_reads": 0, "distributed_setups": 0}

    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            try:
                if os.path.realpath(os.fsdecode(args[0])) == target:
                    counts["config_reads"] += 1
            except (TypeError, ValueError):
                pass

    sys.addaudithook(hook)
    import jaxparadigm.train.distributed as dist

    real = dist.initialize_distributed

    def counted(*a, **k):
        counts["distributed_setups"] += 1
        return real(*a, **k)

    dist.initialize_distributed = counted
    for mod in list(sys.modules.values()):  # modules that imported the name before the patch
        if getattr(mod, "initialize_distributed", None) is real:
            mod.initialize_distributed = counted
    import importlib
    for name in ("jaxparadigm.build", "jaxparadigm.app.train_task"):
        mod = importlib.import_module(name)
        if getattr(mod, "initialize_distributed", None) is real:
            mod.initialize_distributed = counted
    atexit.register(lambda: print("COUNTS " + json.dumps(counts)))
    from jaxparadigm.cli import main
    code = main(["run", sys.argv[1], "--no-progress", *sys.argv[2:]])
    sys.stdout.flush()
    raise SystemExit(code)
    """
)


def run_counts(root: Path, extra: list[str]) -> dict:
    """Config reads and distributed set-ups of one ``jaxparadigm run`` process of ``root``."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "counts.yaml"
        config.write_text(CONFIG.format(out=Path(tmp) / "runs"))
        env = {**os.environ, "PYTHONPATH": str(root), "JAX_PLATFORMS": "cpu"}
        env.pop("XLA_FLAGS", None)
        env.pop("JAXPARADIGM_CPU_DEVICES", None)
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(config), *extra],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp,
            timeout=600,
        )
    line = [x for x in proc.stdout.splitlines() if x.startswith("COUNTS ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(line[-1][len("COUNTS ") :])


def long_modules(root: Path) -> list[tuple[str, int]]:
    """``(path, lines)`` of every module of ``root/jaxparadigm`` over MODULE_LINES lines."""
    out = []
    for path in sorted((root / "jaxparadigm").rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MODULE_LINES:
            out.append((str(path.relative_to(root)), n))
    return out


def long_functions(root: Path) -> list[tuple[str, int]]:
    """``(path:function, lines)`` of every function of ``root/jaxparadigm`` over FUNCTION_LINES."""
    out = []
    for path in sorted((root / "jaxparadigm").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES:
                    out.append((f"{path.relative_to(root)}:{node.name}", n))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    root = args.root.resolve()
    print(f"checkout: {root}")
    for label, extra in (("run", []), ("run --cpu-devices 2", ["--cpu-devices", "2"])):
        c = run_counts(root, extra)
        print(
            f"{label}: config-file reads per process {c['config_reads']}, "
            f"jax.distributed set-up calls {c['distributed_setups']}"
        )
    mods = long_modules(root)
    print(f"modules > {MODULE_LINES} lines: {len(mods)}")
    for name, n in mods:
        print(f"  {name}: {n}")
    funcs = long_functions(root)
    print(f"functions > {FUNCTION_LINES} lines: {len(funcs)}")
    for name, n in funcs:
        print(f"  {name}: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
