"""Test-session setup: CPU only, with 4 forced host devices so chex's ``with_pmap`` variants and
sharding tests have several devices. Must run before JAX initialises its backend."""

import os
import sys
from pathlib import Path

# Test modules import each other as ``tests.<area>.<module>``: put this checkout's root first on
# sys.path, so that ``tests`` (and ``jaxparadigm``) resolve to it from any working directory and
# under any ``--import-mode``.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count=4").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", False)
