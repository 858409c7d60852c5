"""The API reference documents every public name (issue 16): checked on the .rst sources, no Sphinx.

Rule: every package of ``jaxparadigm`` (a directory with ``__init__.py``) has an ``automodule``
directive under docs/api/, and every module given one is rendered with ``:members:`` and
``:undoc-members:``, so autodoc renders each name of its ``__all__`` (public classes and functions
defined in it when it has none). Each such function or class must carry its own docstring (a
formula, semantics, claim ID); data (a constant, a type alias) needs an explicit ``autodata``
directive, which automodule does not render by itself, unless a ``#:`` doc comment above its
assignment documents it (automodule renders those); a submodule in ``__all__`` needs its own
``automodule``; every API page is in the reference's toctree. test_built_site.py then checks that
the built pages really hold an entry for every one of these names.
"""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from tests.docs.api_pages import (
    API,
    DIRECTIVE,
    autodata_names,
    directives,
    doc_comment_names,
    needs_docstring,
    own_docstring,
    packages,
    public_names,
)


def test_the_directive_parser_reads_every_api_page():
    pages = sorted(API.glob("*.rst"))
    assert pages, f"no API pages under {API}"
    for page in pages:
        assert DIRECTIVE.search(page.read_text(encoding="utf-8")), f"{page.name}: no automodule"


def test_every_package_has_an_api_page():
    documented = directives()
    missing = [p for p in packages() if p not in documented]
    assert not missing, f"packages without an automodule directive in docs/api/: {missing}"


@pytest.mark.parametrize("module_name", sorted(directives()))
def test_every_public_name_is_rendered_with_a_docstring(module_name):
    options = directives()[module_name]
    assert {"members", "undoc-members"} <= options, (
        f"automodule {module_name}: needs :members: and :undoc-members: so autodoc renders every "
        f"public name; has {sorted(options)}"
    )
    module = importlib.import_module(module_name)
    undocumented, submodules, data = [], [], []
    for name in public_names(module):
        obj = getattr(module, name)
        if inspect.ismodule(obj):  # autodoc skips submodules: they need their own directive
            if obj.__name__ not in directives():
                submodules.append(obj.__name__)
        elif not needs_docstring(obj):
            if f"{module_name}.{name}" not in autodata_names() and name not in doc_comment_names(
                module
            ):
                data.append(name)
        elif not own_docstring(obj):
            undocumented.append(name)
    assert not submodules, f"{module_name}.__all__ has submodules without an API page: {submodules}"
    assert not undocumented, f"{module_name}: public names without a docstring: {undocumented}"
    assert not data, f"{module_name}: data names without an `.. autodata::` directive: {data}"


def test_every_api_page_is_in_the_toctree():
    index = (API / "index.md").read_text(encoding="utf-8")
    toctree = re.search(r"```\{toctree\}\n(.*?)```", index, flags=re.S)
    assert toctree is not None, "docs/api/index.md has no toctree"
    entries = {line.strip() for line in toctree[1].splitlines() if line and line[0] not in ":"}
    assert entries == {p.stem for p in API.glob("*.rst")}


def test_an_undocumented_name_is_caught():
    """The rule fails a function with no docstring and a NamedTuple with only its placeholder."""
    from typing import NamedTuple

    def bare(x):
        return x

    class State(NamedTuple):
        count: int

    class Documented(NamedTuple):
        """A state."""

        count: int

    assert needs_docstring(bare) and not own_docstring(bare)
    assert needs_docstring(State) and not own_docstring(State)
    assert own_docstring(Documented) == "A state."
