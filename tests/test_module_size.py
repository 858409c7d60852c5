"""The redesign's size rules (issue 33): every module of ``jaxparadigm/`` has at most 400 lines,
and at most 3 functions of the package are longer than 60 lines, each allowed below with a reason.

Sizes are measured with ``ast`` (a function spans its ``def`` line to its last line, docstring and
nested functions included; a nested function counts on its own too). A module or function over
its limit that is not listed fails; so do a listed size that grew, and an allow-list of more than 3
functions. Entries that shrank below the limit are fine (they can be dropped when noticed).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jaxparadigm"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_LONG_FUNCTIONS = 3

# Modules over the limit: none since issue 33's branches split app/cli.py (463 lines on b953ab2),
# retrieval/sentence_encoder.py (432) and autodiff/graph.py (405).
OVER_SIZE_MODULES: dict[str, int] = {}

# Functions over 60 lines, with their current length and why they stay whole.
LONG_FUNCTIONS: dict[str, tuple[int, str]] = {
    "retrieval/dense/vector_search.py:_placement_search": (
        76,
        "one jitted three-stage exact top-k (block scan, group top-k, rescoring); most of its "
        "length is the docstring's exactness argument, and the stages share the closure's "
        "static block/group sizes",
    ),
}


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def module_sizes() -> dict[str, int]:
    return {_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()}


def function_spans(source: str) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function and method in ``source``, nested ones included."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def long_functions() -> dict[str, int]:
    found = {}
    for path in _modules():
        for name, lines in function_spans(path.read_text(encoding="utf-8")):
            if lines > MAX_FUNCTION_LINES:
                found[f"{_name(path)}:{name}"] = lines
    return found


def test_modules_have_at_most_400_lines():
    sizes = module_sizes()
    assert len(sizes) > 100, "the package's modules were not found"
    over = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    unlisted = {name: n for name, n in over.items() if name not in OVER_SIZE_MODULES}
    assert unlisted == {}, f"modules over {MAX_MODULE_LINES} lines: {unlisted}"
    grown = {name: n for name, n in over.items() if n > OVER_SIZE_MODULES[name]}
    assert grown == {}, f"allowed over-size modules grew: {grown} (allowed: {OVER_SIZE_MODULES})"


def test_at_most_3_functions_over_60_lines_each_with_a_reason():
    assert len(LONG_FUNCTIONS) <= MAX_LONG_FUNCTIONS
    assert all(len(reason) > 40 for _, reason in LONG_FUNCTIONS.values())
    found = long_functions()
    unlisted = {name: n for name, n in found.items() if name not in LONG_FUNCTIONS}
    assert unlisted == {}, f"functions over {MAX_FUNCTION_LINES} lines, not allowed: {unlisted}"
    grown = {name: n for name, n in found.items() if n > LONG_FUNCTIONS[name][0]}
    assert grown == {}, f"allowed long functions grew: {grown}"


def test_the_measures_see_what_they_should():
    """On a known source: a 61-line function counts, a 60-line one does not, methods and nested
    functions are seen; the package's modules are all found."""
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    source = (
        f"def long():\n{body}\n    return 0\n\ndef ok():\n{body}\n\n"
        "class C:\n    async def m(self):\n        def inner():\n            pass\n"
    )
    assert sorted(function_spans(source)) == [("inner", 2), ("long", 61), ("m", 3), ("ok", 60)]
    sizes = module_sizes()
    assert sizes["tensor/view.py"] <= MAX_MODULE_LINES
    assert sizes["__init__.py"] == len((PACKAGE / "__init__.py").read_text().splitlines())
