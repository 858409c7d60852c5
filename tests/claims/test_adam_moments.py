"""C4.2's evidence: underflow of Adam's ``nu`` by storage dtype, read from the library's report
(moved from tests/optim/test_adam.py with the claim's wording, issue 33)."""

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxparadigm.claims.evidence.adam_moments import nu_storage_evidence
from jaxparadigm.optim import scale_by_adam


def _one_step(nu_dtype):
    params = {"w": jnp.zeros((1000,), jnp.float32)}
    grads = {"w": jnp.asarray(np.linspace(1e-5, 1e-3, 1000), jnp.float32)}
    tx = scale_by_adam(nu_dtype=nu_dtype)
    _, state = tx.update(grads, tx.init(params))
    return (state, optax.EmptyState())


def test_float16_nu_underflows_and_bfloat16_does_not():
    # (1 - 0.999) * g^2 ranges over 1e-13 .. 1e-9: below float16's smallest subnormal (6e-8).
    ev = {
        dtype: nu_storage_evidence(_one_step(dtype)) for dtype in ("float32", "bfloat16", "float16")
    }
    assert ev["float16"]["nu_underflow_fraction"] == 1.0
    assert ev["bfloat16"]["nu_underflow_fraction"] == 0.0
    assert ev["float32"]["nu_underflow_fraction"] == 0.0
    assert ev["float16"]["nu_bytes"] == 2000
    assert ev["float32"]["nu_bytes"] == 4000
    assert ev["bfloat16"]["nu_bytes"] == 2000
    assert ev["float16"]["mu_dtype"] == "float32"


def test_partial_underflow_is_the_fraction_below_float16_range():
    """Half the gradients large enough for float16, half far below: exactly half underflow."""
    params = {"w": jnp.zeros((8,), jnp.float32)}
    grads = {"w": jnp.asarray([1.0, 0.5, 0.1, 0.05, 1e-6, 2e-6, 3e-6, 4e-6], jnp.float32)}
    tx = scale_by_adam(nu_dtype="float16")
    _, state = tx.update(grads, tx.init(params))
    assert nu_storage_evidence(state) == {
        "mu_dtype": "float32",
        "nu_bytes": 16,
        "nu_underflow_fraction": 0.5,
    }


def test_needs_one_adam_state():
    with pytest.raises(ValueError, match="found 0"):
        nu_storage_evidence(optax.EmptyState())
