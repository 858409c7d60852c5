"""Test-session setup: CPU only, with 4 forced host devices so chex's ``with_pmap`` variants and
sharding tests have several devices. Must run before JAX initialises its backend."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count=4").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", False)
