"""Optional PyTorch side of the claims (all claim IDs with a PyTorch snippet).

``torch_or_none()`` imports torch when the ``crosscheck`` extra is installed and returns None
otherwise, or when ``JAXPARADIGM_NO_TORCH`` is set to anything but ``""``/``"0"`` (so tests can
force the path without torch). Without torch, an experiment records each PyTorch field as
:data:`NOT_MEASURED`, never a value taken from our own model of PyTorch; the rules then decide only
on what was measured.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

NOT_MEASURED = "not measured"


def torch_disabled() -> bool:
    """True when ``JAXPARADIGM_NO_TORCH`` asks the claims to run without PyTorch."""
    return os.environ.get("JAXPARADIGM_NO_TORCH", "") not in ("", "0")


def torch_or_none() -> ModuleType | None:
    """The ``torch`` module, or None when it is not importable or :func:`torch_disabled`."""
    if torch_disabled():
        return None
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def measured(value: Any) -> bool:
    """False for the :data:`NOT_MEASURED` marker, True for any measured value."""
    return not (isinstance(value, str) and value == NOT_MEASURED)
