#!/usr/bin/env python3
"""The one-product redesign's counts, measured on a source tree (rerun it on any checkout).

    python tools/product_counts.py [--root DIR ...]     # default: this checkout
    python tools/product_counts.py --root /tmp/old --root .   # before -> after, side by side

Each count is read from the files of ``DIR`` (nothing is imported or run):

* ``retrieval modules``: ``.py`` files directly in ``jaxparadigm/retrieval/`` (``__init__``
  included; sub-packages not counted);
* ``number-check helpers``: functions named as checks of a number (``check_int``, ``require_*``,
  ``as_int``, ``_check_positive``, ``check_nprobe`` ...: a check verb and a number word) that test
  a value's type (``isinstance`` against ``int``/``float``/``numbers.*``/``np.integer`` ..., or
  a call of ``is_int``/``is_real``/``operator.index``) and raise; ``families``: the modules
  they live in. ``inline number checks``: other functions that test
  a value with ``isinstance`` and raise a message saying what number was expected (``expected
  an int``, ``a float``, ``>= ``, ``in [`` ...);
* ``progress classes``: classes whose name ends in ``Progress``, plus modules that import
  ``tqdm`` themselves (a raw bar outside the progress module);
* ``locks``: functions that call ``fcntl.flock``;
* ``README lines``; ``"issue N" in jaxparadigm/`` (case-insensitive ``issue`` + number);
  ``lines > 100 characters in jaxparadigm/``.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

_EXPECTED = re.compile(
    r"expected (an int|a float|a number|a positive|an integer|a non-negative|a finite|.*>= |.*in \[)"
)
_ISSUE = re.compile(r"\bissues? \d+", re.IGNORECASE)


def _strings(node: ast.AST) -> str:
    return " ".join(
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )


def _raises_number_message(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Raise) and node.exc is not None:
            if _EXPECTED.search(_strings(node.exc)):
                return True
    return False


def _tests_type(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
        for n in ast.walk(fn)
    )


_HELPER_NAME = re.compile(
    r"^_?(check|require|as|ensure|validate)_\w*"
    r"(int|float|number|positive|n|param|nprobe|ranks|batching|size|counts?|k|range)$"
)
_TYPE_TESTS = {"is_int", "is_real", "index"}
_NUMBER_TYPES = {"int", "float", "Integral", "Real", "Number", "integer", "floating", "number"}


def _tests_number_type(fn: ast.AST) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance":
            names = {x.id for x in ast.walk(n.args[1]) if isinstance(x, ast.Name)} | {
                x.attr for x in ast.walk(n.args[1]) if isinstance(x, ast.Attribute)
            }
            if names & _NUMBER_TYPES:
                return True
        if isinstance(n, ast.Call):
            called = getattr(n.func, "id", None) or getattr(n.func, "attr", None)
            if called in _TYPE_TESTS:
                return True
    return False


def _raises(fn: ast.AST) -> bool:
    return any(isinstance(n, ast.Raise) and n.exc is not None for n in ast.walk(fn))


def _calls_flock(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "flock"
        for n in ast.walk(fn)
    )


def _own_body(fn: ast.AST) -> ast.AST:
    """``fn`` without its nested functions (a nested helper counts on its own)."""
    clone = ast.FunctionDef(name="_", args=fn.args, body=[], decorator_list=[], lineno=0)
    clone.body = [s for s in fn.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))]
    return clone


def counts(root: Path) -> dict:
    pkg = root / "jaxparadigm"
    files = sorted(pkg.rglob("*.py"))
    checks, inline, locks, progress, raw_tqdm = [], [], [], [], []
    issue_refs = long_lines = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        issue_refs += len(_ISSUE.findall(text))
        long_lines += sum(len(line) > 100 for line in text.splitlines())
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = _own_body(node)
                if _HELPER_NAME.match(node.name) and _tests_number_type(body) and _raises(body):
                    checks.append(f"{rel}:{node.name}")
                elif _raises_number_message(body) and _tests_type(body):
                    inline.append(f"{rel}:{node.name}")
                if _calls_flock(body):
                    locks.append(f"{rel}:{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.endswith("Progress"):
                progress.append(f"{rel}:{node.name}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if any(n == "tqdm" or n.startswith("tqdm.") for n in names):
                    raw_tqdm.append(rel)
    progress_home = {p.split(":")[0] for p in progress}
    raw = sorted(set(raw_tqdm) - progress_home)
    readme = root / "README.md"
    return {
        "retrieval modules": len(list((pkg / "retrieval").glob("*.py"))),
        "number-check helpers": len(checks),
        "number-check families (modules)": len({c.split(":")[0] for c in checks}),
        "inline number checks": len(inline),
        "progress classes": len(progress),
        "raw tqdm outside a progress module": len(raw),
        "locks (functions calling flock)": len(locks),
        "README lines": len(readme.read_text(encoding="utf-8").splitlines()),
        "'issue N' in jaxparadigm/": issue_refs,
        "lines > 100 characters in jaxparadigm/": long_lines,
        "_detail": {
            "checks": checks,
            "inline": inline,
            "progress": progress,
            "raw_tqdm": raw,
            "locks": locks,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", action="append", type=Path, help="a source tree (repeatable)")
    parser.add_argument("--detail", action="store_true", help="list what each count found")
    args = parser.parse_args()
    roots = args.root or [Path(__file__).resolve().parents[1]]
    results = [counts(r) for r in roots]
    keys = [k for k in results[0] if not k.startswith("_")]
    width = max(map(len, keys))
    print(f"{'':{width}}  " + "  ".join(f"{str(r)[-24:]:>24}" for r in roots))
    for k in keys:
        print(f"{k:{width}}  " + "  ".join(f"{res[k]:>24}" for res in results))
    if args.detail:
        for r, res in zip(roots, results, strict=True):
            print(f"\n{r}:")
            for name, items in res["_detail"].items():
                print(f"  {name}: {len(items)}")
                for item in items:
                    print(f"    {item}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
