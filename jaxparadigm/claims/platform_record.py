"""The platform a claim was measured on, as evidence (every claim ID; C2.3 and C5.2 quote it).

``platform_record()`` -> a dict of ``cpu_model``, ``cpu_count``, ``usable_cores``, ``backend``,
``device_kind``, ``device_count`` and ``versions`` (python, jax, jaxlib, optax, flax, numpy,
torch). A package that is not installed (or torch under ``JAXPARADIGM_NO_TORCH``) is recorded as
``"not measured"``. Summaries that depend on hardware name it through :func:`describe_platform`,
never through typed-in prose.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform as _platform
import sys
from typing import Any

import jax

from jaxparadigm.claims.torch_side import NOT_MEASURED, torch_or_none


@functools.cache
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _platform.processor() or _platform.machine() or NOT_MEASURED


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return NOT_MEASURED


def platform_record() -> dict[str, Any]:
    """CPU model, core counts, JAX backend and device, and library versions of this process."""
    devices = jax.devices()
    torch = torch_or_none()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count() or 0,
        "usable_cores": usable,
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "versions": {
            "python": sys.version.split()[0],
            "jax": jax.__version__,
            "jaxlib": _version("jaxlib"),
            "optax": _version("optax"),
            "flax": _version("flax"),
            "numpy": _version("numpy"),
            "torch": NOT_MEASURED if torch is None else str(torch.__version__),
        },
    }


def describe_platform(record: dict[str, Any]) -> str:
    """One phrase naming the measured platform, e.g. ``cpu backend (AMD EPYC, 2 usable cores)``."""
    return (
        f"{record['backend']} backend ({record['device_kind']} device; CPU {record['cpu_model']}, "
        f"{record['usable_cores']} usable cores)"
    )
