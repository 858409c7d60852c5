"""What the API pages under docs/api/ document, read from their ``automodule`` directives (no Sphinx).

Shared by test_api_reference.py (the sources) and test_built_site.py (the built HTML).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
PACKAGE = ROOT / "jaxparadigm"
DIRECTIVE = re.compile(r"^\.\. automodule:: (?P<module>\S+)\n(?P<options>(?:[ ]{3}:.*\n)*)", re.M)


def directives() -> dict[str, set[str]]:
    """``{module: {option names}}`` for every ``automodule`` directive of docs/api/*.rst."""
    found: dict[str, set[str]] = {}
    for page in sorted(API.glob("*.rst")):
        for m in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            options = set(re.findall(r"^[ ]{3}:([\w-]+):", m["options"], flags=re.M))
            assert m["module"] not in found, f"{m['module']} has two automodule directives"
            found[m["module"]] = options
    return found


def autodata_names() -> set[str]:
    """Full names given an explicit ``autodata`` (or ``py:data``) directive (autodoc's automodule skips module data
    that has no doc comment, even with ``:undoc-members:``)."""
    names = set()
    for page in API.glob("*.rst"):
        text = page.read_text(encoding="utf-8")
        names |= {m[1] for m in re.finditer(r"^\.\. autodata:: (\S+)$", text, flags=re.M)}
        # a hand-written entry: ``.. py:data:: NAME`` followed by its ``:module: M`` option
        names |= {
            f"{m[2]}.{m[1]}"
            for m in re.finditer(r"^\.\. py:data:: (\w+)\n   :module: (\S+)$", text, flags=re.M)
        }
    return names


def doc_comment_names(module) -> set[str]:
    """Module data names documented by a ``#:`` comment right above their assignment, which
    automodule renders (``SIGNED_KEYS`` in train.checkpoint); no ``autodata`` is needed for them."""
    source = inspect.getsource(module)
    return set(re.findall(r"^#:.*\n(?:#:.*\n)*(\w+)\s*[:=]", source, flags=re.M))


def packages() -> list[str]:
    return sorted(
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in init.parts
    )


def public_names(module) -> list[str]:
    """``__all__``, or the public classes and functions defined in the module itself."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and obj.__module__ == module.__name__
    ]


def own_docstring(obj) -> str:
    """A class's own docstring (not a NamedTuple/dataclass placeholder); a callable's ``__doc__``."""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__") or ""
        placeholder = re.fullmatch(rf"{re.escape(obj.__name__)}\(.*\)", doc.strip(), flags=re.S)
        return "" if placeholder else doc.strip()
    return (getattr(obj, "__doc__", None) or "").strip()


def needs_docstring(obj) -> bool:
    """Classes and functions need a docstring; data (constants, type aliases) is shown by value
    through an ``autodata`` directive."""
    if inspect.isclass(obj):
        return True
    if getattr(obj, "__origin__", None) is not None:  # typing alias such as Callable[[Any], Any]
        return False
    return callable(obj)
