"""Sphinx configuration: MyST notebooks executed at build time (myst-nb), furo, autodoc + napoleon.

``make docs`` builds into docs/_build/html with the execution cache (jupyter-cache, under
docs/_build/.jupyter_cache, keyed on each notebook's source); ``make docs-check`` re-executes every
notebook (``-D nb_execution_mode=force``). A cell error fails the build (nb_execution_raise_on_error).
"""

from __future__ import annotations

import os
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
nb_execution_mode = "cache"
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache")
nb_execution_timeout = 600  # per cell: the claims report runs the whole ledger in one cell
nb_execution_raise_on_error = True  # a cell error fails the build
nb_execution_show_tb = True
nb_merge_streams = True
nb_render_markdown_format = "myst"  # text/markdown outputs (verdict tables) may hold tables

# --- API reference -------------------------------------------------------------------------------
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": False}
autodoc_typehints = "description"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# --- HTML ----------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"jaxparadigm {release}"
html_static_path = ["_static"]
html_css_files = ["jaxparadigm.css"]
