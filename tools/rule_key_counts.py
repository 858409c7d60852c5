"""Count the key spellings used to register autodiff rules, and the zero-rule lists (issue 33).

Rerunnable against any checkout: it measures the ``jaxparadigm`` that Python imports, so

    PYTHONPATH=/work/main python tools/rule_key_counts.py     # before (main, read-only)
    PYTHONPATH=$PWD python tools/rule_key_counts.py           # after (this worktree)

Two independent counts:

* **dynamic**: every call of ``RuleTable.register`` made while ``jaxparadigm.autodiff`` is
  imported is seen through ``sys.setprofile``; each key passed is classified by its type
  (``str`` or a jax ``Primitive`` object), separately for the first key and for aliases, and
  the rule file that made the call is recorded;
* **static**: every ``register_vjp/register_jvp/register_forward(...)`` call in the package's
  ``autodiff`` sources, its first argument classified by syntax: a string literal, a
  ``<primitive>.name`` attribute, an attribute naming a primitive object (``P.sin_p``), or a
  loop variable (its values show in the dynamic count).

Zero-rule lists: the registration call sites (file:line) whose rule is a zero rule (a VJP named
``_zero*`` or a JVP built by ``zero_rule``); the call sites inside one ``for`` loop are one list. Also printed:
the primitives with a zero rule in one table and not the other.
"""

from __future__ import annotations

import ast
import collections
import pathlib
import sys
from typing import Any

_SEEN: list[dict[str, Any]] = []


def _key_kind(key: Any) -> str:
    if isinstance(key, str):
        return "str"
    if hasattr(key, "bind") and hasattr(key, "name"):
        return "Primitive"
    return type(key).__name__


def _profile(frame, event, arg):
    """Record each ``RuleTable.register(self, key, *aliases)`` call and where it came from."""
    if event != "call" or frame.f_code.co_name != "register":
        return
    if not frame.f_code.co_filename.endswith("registry.py"):
        return
    local = frame.f_locals
    table = local.get("self")
    if table is None or not hasattr(table, "kind"):
        return
    first = local[frame.f_code.co_varnames[1]]
    caller = frame.f_back
    while caller is not None and caller.f_code.co_filename.endswith("registry.py"):
        caller = caller.f_back
    where = "?" if caller is None else f"{caller.f_code.co_filename}:{caller.f_lineno}"
    _SEEN.append(
        {
            "table": table.kind,
            "first": first,
            "aliases": tuple(local.get("aliases", ())),
            "at": where,
        }
    )


def _dynamic() -> tuple[dict, Any]:
    sys.setprofile(_profile)
    try:
        import jaxparadigm.autodiff  # noqa: F401  (registers every rule)
    finally:
        sys.setprofile(None)
    import jaxparadigm.autodiff.registry as registry

    return registry, jaxparadigm


def _static(root: pathlib.Path) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", "")
            if name not in ("register_vjp", "register_jvp", "register_forward"):
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                kind = "string literal"
            elif isinstance(arg, ast.Attribute) and arg.attr == "name":
                kind = "<primitive>.name"
            elif isinstance(arg, ast.Attribute):
                kind = "primitive object"
            else:
                kind = f"variable ({type(arg).__name__})"
            counts[(name, kind)] += 1
    return counts


def _enclosing(path: pathlib.Path, line: int) -> int:
    """The first line of the innermost ``for`` loop around ``line`` (the line itself if none):
    the registrations one loop makes from one list count as one list."""
    best = line
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.For) and node.lineno <= line <= (node.end_lineno or line):
            if best == line or node.lineno > best:
                best = node.lineno
    return best


def _is_zero(kind: str, rule: Any) -> bool:
    name = getattr(rule, "__name__", "")
    return name.startswith("_zero") if kind == "VJP" else name.endswith("_zero_jvp")


def main() -> None:
    registry, package = _dynamic()
    root = pathlib.Path(package.__file__).parent / "autodiff"
    print(f"jaxparadigm imported from {pathlib.Path(package.__file__).parent}")
    print(f"registered: VJP {len(registry.VJP_RULES)}, JVP {len(registry.JVP_RULES)}")

    print("\ndynamic: keys passed to RuleTable.register while importing jaxparadigm.autodiff")
    first: collections.Counter = collections.Counter()
    alias: collections.Counter = collections.Counter()
    for call in _SEEN:
        first[(call["table"], _key_kind(call["first"]))] += 1
        for a in call["aliases"]:
            alias[(call["table"], _key_kind(a))] += 1
    for (table, kind), n in sorted(first.items()):
        print(f"  first key  {table:8s} {kind:10s} {n:4d}")
    for (table, kind), n in sorted(alias.items()):
        print(f"  alias      {table:8s} {kind:10s} {n:4d}")
    spellings = {kind for (_, kind) in first}
    print(f"  first-key types: {len(spellings)} ({', '.join(sorted(spellings))})")
    legacy = sorted({a for c in _SEEN for a in c["aliases"] if isinstance(a, str)})
    print(f"  string aliases: {legacy}")

    print("\nstatic: register_* call sites in the autodiff sources, by first argument")
    static = _static(root)
    for (fn, kind), n in sorted(static.items()):
        print(f"  {fn:16s} {kind:18s} {n:4d}")
    spelled = sorted({kind for _, kind in static if not kind.startswith("variable")})
    print(f"  spellings (variables aside): {len(spelled)} ({', '.join(spelled)})")

    print("\nzero-rule lists (call sites registering a zero rule)")
    zero_sites: dict[str, set] = collections.defaultdict(set)
    zero_names: dict[str, set] = {"VJP": set(), "JVP": set()}
    for kind, table in (("VJP", registry.VJP_RULES), ("JVP", registry.JVP_RULES)):
        for name, rule in table.rules.items():
            if _is_zero(kind, rule):
                zero_names[kind].add(name)
    for call in _SEEN:
        if call["table"] not in zero_names:
            continue
        names = [call["first"], *call["aliases"]]
        names = [n if isinstance(n, str) else n.name for n in names]
        if any(n in zero_names[call["table"]] for n in names):
            path, line = call["at"].rsplit(":", 1)
            rel = pathlib.Path(path).relative_to(root.parent.parent)
            zero_sites[str(rel)].add((call["table"], int(line)))
    n_lists = 0
    for path, sites in sorted(zero_sites.items()):
        lines = sorted({(t, ln) for t, ln in sites})
        loops = {_enclosing(root.parent.parent / path, ln) for _, ln in lines}
        n_lists += len(loops)
        print(f"  {path}: {', '.join(f'{t}@{ln}' for t, ln in lines)} ({len(loops)} list(s))")
    print(f"  zero-rule lists (distinct loops or call sites): {n_lists}")
    print(f"  zero VJP {len(zero_names['VJP'])}, zero JVP {len(zero_names['JVP'])}")
    print(f"  zero JVP, no zero VJP: {sorted(zero_names['JVP'] - zero_names['VJP'])}")
    print(f"  zero VJP, no zero JVP: {sorted(zero_names['VJP'] - zero_names['JVP'])}")


if __name__ == "__main__":
    main()
