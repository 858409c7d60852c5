"""The ``jaxparadigm`` console script: :mod:`jaxparadigm.app.cli` (``main``, ``build_parser``)."""

from jaxparadigm.app.cli import build_parser, main

__all__ = ["build_parser", "main"]
