"""Optional PyTorch side of the claims: ``torch_or_none()`` imports torch when the ``crosscheck`` extra
is installed, and returns None otherwise (experiments then record only the JAX side)."""

from __future__ import annotations

import importlib
import os


def torch_or_none():
    """The ``torch`` module, or None when it is not importable or ``JAXPARADIGM_NO_TORCH=1``."""
    if os.environ.get("JAXPARADIGM_NO_TORCH"):
        return None
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None
