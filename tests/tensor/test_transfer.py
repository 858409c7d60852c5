"""transfer_profile: measured host<->device figures (C2.3)."""

import jax
import pytest

from jaxparadigm.tensor import transfer_profile


def test_profile_fields_are_consistent():
    nbytes = 1 << 16
    prof = transfer_profile(nbytes)
    assert prof["nbytes"] == nbytes
    assert prof["platform"] == jax.devices()[0].platform
    for key in ("h2d_dispatch_s", "h2d_ready_s", "d2h_dispatch_s", "d2h_s"):
        assert prof[key] > 0, key
    assert prof["h2d_dispatch_s"] <= prof["h2d_ready_s"]
    assert prof["d2h_dispatch_s"] <= prof["d2h_s"]
    assert prof["h2d_wait_s"] == pytest.approx(prof["h2d_ready_s"] - prof["h2d_dispatch_s"])
    assert prof["h2d_gbps"] == pytest.approx(nbytes / prof["h2d_ready_s"] / 1e9)
    assert prof["d2h_gbps"] == pytest.approx(nbytes / prof["d2h_s"] / 1e9)
    assert 0 < prof["h2d_dispatch_fraction"] <= 1
    assert isinstance(prof["zero_copy_h2d"], bool)


def test_explicit_device():
    device = jax.devices()[-1]
    assert transfer_profile(4096, device)["device"] == str(device)


@pytest.mark.parametrize(
    "nbytes, device, error, pattern",
    [
        (0, None, ValueError, "nbytes must be > 0"),
        (1.5, None, TypeError, "nbytes must be an int"),
        (True, None, TypeError, "nbytes must be an int"),
        (16, "cpu", TypeError, "jax.Device"),
    ],
)
def test_bad_input(nbytes, device, error, pattern):
    with pytest.raises(error, match=pattern):
        transfer_profile(nbytes, device)
