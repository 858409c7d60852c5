"""Linear-algebra VJPs derived from JVP rules (``transpose_jvp``) at a dtype boundary (issue 39):
complex inputs, whose linearization must run on complex zeros (a float32 zero tangent would drop
the imaginary part of every cotangent). jax's own VJP is the oracle.

Each case killed a one-line mutant of ``autodiff/rules/linalg.py`` that the earlier tests let
through (``make mutation MODULE=autodiff.rules.linalg``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxparadigm.autodiff import vjp


def _complex(shape, seed):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), jnp.complex64)


@pytest.mark.parametrize(
    "name, f",
    [
        ("qr", lambda a: jnp.linalg.qr(a)[1]),
        ("svd_values", lambda a: jnp.linalg.svd(a, compute_uv=False).astype(jnp.complex64)),
        ("eigh_values", lambda a: jnp.linalg.eigh(a + a.conj().T)[0].astype(jnp.complex64)),
    ],
    ids=["qr", "svd_values", "eigh_values"],
)
def test_complex_vjps_through_the_transposed_jvp_equal_jax(name, f):
    a = _complex((3, 3), 7)
    out, pull = vjp(f, a)
    ref_out, ref_pull = jax.vjp(f, a)
    ct = _complex(np.shape(ref_out), 8)
    (ours,), (ref,) = pull(ct), ref_pull(ct)
    assert ours.dtype == ref.dtype == jnp.complex64
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)
    assert np.abs(np.imag(ref)).max() > 1e-3  # the imaginary part is there to be lost
