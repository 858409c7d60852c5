"""Sphinx configuration: MyST notebooks executed at build time (myst-nb), furo, autodoc + napoleon.

``make docs`` builds into docs/_build/html with the execution cache (jupyter-cache): a notebook is
re-executed when its code cells change, and every notebook when a ``.py`` file of ``jaxparadigm/``
or ``docs/_support/`` changes (the cache lives in a folder named by a digest of those sources).
``make docs-check`` re-executes every notebook (``-D nb_execution_mode=force``). A cell error fails
the build (nb_execution_raise_on_error).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

# This checkout's package first (autodoc here, and every notebook kernel through PYTHONPATH), then the
# notebooks' shared support code (docs/_support: the ledger's verdict table).
sys.path[:0] = [str(ROOT), str(DOCS / "_support")]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), str(DOCS / "_support"), *filter(None, [os.environ.get("PYTHONPATH")])]
)

import jaxparadigm  # noqa: E402

project = "jaxparadigm"
author = "jaxparadigm developers"
copyright = "jaxparadigm developers"
release = version = jaxparadigm.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]

exclude_patterns = ["_build", "_support", ".gitignore", "**.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# --- MyST and notebook execution -----------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3


def _sources_digest() -> str:
    """sha256 (16 hex digits) over the paths and bytes of the library's and docs/_support's .py files."""
    digest = hashlib.sha256()
    for path in sorted([*(ROOT / "jaxparadigm").rglob("*.py"), *(DOCS / "_support").rglob("*.py")]):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_CACHES = DOCS / "_build" / ".jupyter_cache"
_CACHE = _CACHES / _sources_digest()
for _stale in _CACHES.glob("*"):  # caches of other library sources can never be hit again
    if _stale != _CACHE:
        shutil.rmtree(_stale, ignore_errors=True)

nb_execution_mode = "cache"
nb_execution_cache_path = str(_CACHE)
nb_execution_timeout = 600  # per cell: the claims report runs the whole ledger in one cell
nb_execution_raise_on_error = True  # a cell error fails the build
nb_execution_show_tb = True
nb_merge_streams = True
nb_render_markdown_format = "myst"  # text/markdown outputs (verdict tables) may hold tables

# --- API reference -------------------------------------------------------------------------------
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": False}
autodoc_typehints = "description"
# A class the package re-exports (``jaxparadigm.retrieval.SearchOptions``) has two entries, the
# package's and its module's, identical; an annotation naming it unqualified resolves to either.
# "ref.python" is only that warning ("more than one target found"), never a missing target.
suppress_warnings = ["ref.python"]
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# --- HTML ----------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"jaxparadigm {release}"
html_static_path = ["_static"]
html_css_files = ["jaxparadigm.css"]
