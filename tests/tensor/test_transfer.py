"""transfer_profile: measured host<->device figures (C2.3)."""

import jax
import numpy as np
import pytest

from jaxparadigm.tensor import transfer, transfer_profile


def test_profile_fields_are_consistent():
    """A real run: every time is positive and readiness never precedes the dispatch."""
    nbytes = 1 << 16
    prof = transfer_profile(nbytes)
    assert prof["nbytes"] == nbytes
    assert prof["repeats"] == 5
    assert prof["platform"] == jax.devices()[0].platform
    assert prof["device"] == str(jax.devices()[0])
    for key in ("h2d_dispatch_s", "h2d_ready_s", "d2h_dispatch_s", "d2h_s"):
        assert prof[key] > 0, key
    assert prof["h2d_dispatch_s"] <= prof["h2d_ready_s"]
    assert prof["d2h_dispatch_s"] <= prof["d2h_s"]
    assert 0 < prof["h2d_dispatch_fraction"] <= 1
    assert isinstance(prof["zero_copy_h2d"], bool)


class _ScriptedClock:
    """``perf_counter`` returning, per repeat r, the six instants t0..t5 the profile reads:
    device_put returns d[r] ms after t0 and is ready R[r] ms after t0; the device->host copy
    starts 100 ms later, copy_to_host_async returns a[r] ms and np.asarray D[r] ms after that."""

    d = [1.0, 9.0, 3.0, 2.0, 4.0]  # median 3 (mean 3.8)
    R = [10.0, 90.0, 30.0, 20.0, 40.0]  # median 30 (mean 38)
    a = [0.1, 0.9, 0.3, 0.2, 0.4]  # median 0.3
    D = [2.0, 8.0, 4.0, 3.0, 5.0]  # median 4 (mean 4.4)

    def __init__(self):
        ms = 1e-3
        self.times = []
        for r in range(5):
            base = 1.0 * r  # small bases: the intervals come out within 1e-14 of the script
            t3 = base + 100 * ms
            self.times += [base, base + self.d[r] * ms, base + self.R[r] * ms]
            self.times += [t3, t3 + self.a[r] * ms, t3 + self.D[r] * ms]

    def perf_counter(self):
        return self.times.pop(0)


def test_figures_are_medians_of_the_timed_intervals(monkeypatch):
    """With a scripted clock the figures are known in advance (hand-computed medians, not the
    formulas of the code): 65536 B in 30 ms is 2.1845e-3 GB/s, in 4 ms 16.384e-3 GB/s."""
    clock = _ScriptedClock()
    monkeypatch.setattr(transfer, "time", clock)
    prof = transfer_profile(65536)
    assert clock.times == []  # exactly six clock reads per repeat, five repeats
    assert prof["h2d_dispatch_s"] == pytest.approx(3e-3)
    assert prof["h2d_ready_s"] == pytest.approx(30e-3)
    assert prof["h2d_wait_s"] == pytest.approx(27e-3)
    assert prof["h2d_dispatch_fraction"] == pytest.approx(0.1)
    assert prof["h2d_gbps"] == pytest.approx(2.1845333333333333e-3, rel=1e-11)
    assert prof["d2h_dispatch_s"] == pytest.approx(0.3e-3)
    assert prof["d2h_s"] == pytest.approx(4e-3)
    assert prof["d2h_gbps"] == pytest.approx(16.384e-3, rel=1e-11)


def test_explicit_device():
    device = jax.devices()[-1]
    assert transfer_profile(4096, device)["device"] == str(device)


@pytest.mark.parametrize(
    "nbytes, device, error, pattern",
    [
        (0, None, ValueError, r"^nbytes: got 0, expected an int >= 1$"),
        (1.5, None, TypeError, r"^nbytes: got 1\.5, expected an int >= 1$"),
        (True, None, TypeError, r"^nbytes: got True, expected an int >= 1$"),
        (16, "cpu", TypeError, "jax.Device"),
    ],
)
def test_bad_input(nbytes, device, error, pattern):
    with pytest.raises(error, match=pattern):
        transfer_profile(nbytes, device)


# -- issue 17: what the profile transfers, and its checks, seen through a spy on jax.device_put ---


def _spy_device_put(monkeypatch, wrap=lambda arr: arr, corrupt=False):
    """Replace ``jax.device_put`` by one that records ``(dtype, shape, device)`` of each call,
    optionally damages the last byte it transfers, and wraps the array it returns."""
    real = jax.device_put
    calls = []

    def device_put(x, device=None):
        calls.append((x.dtype, x.shape, device))
        if corrupt:
            x = x.copy()
            x[-1] ^= 0xFF
        return wrap(real(x, device))

    monkeypatch.setattr(jax, "device_put", device_put)
    return calls


def test_transfers_nbytes_of_uint8_to_the_requested_device(monkeypatch):
    device = jax.devices()[-1]
    calls = _spy_device_put(monkeypatch)
    transfer_profile(1, device)  # one byte is a valid size
    assert calls == [(np.dtype(np.uint8), (1,), device)] * 6  # a warm-up and five timed copies


def test_zero_copy_flag_agrees_with_aliasing(monkeypatch):
    """Independent oracle, on the very buffers the profile used: a device array that *is* the host
    buffer sees a later host write. (Whether XLA:CPU aliases depends on the host buffer's
    alignment, so only the same buffers can be compared.)"""
    real = jax.device_put
    pairs = []

    def device_put(x, device=None):
        arr = real(x, device)
        pairs.append((x, arr))
        return arr

    monkeypatch.setattr(jax, "device_put", device_put)
    flag = transfer_profile(4096)["zero_copy_h2d"]
    aliased = []
    for host, arr in pairs[1:]:  # the five timed transfers, after the warm-up
        before = int(np.asarray(arr)[-1])
        host[-1] ^= 0xFF
        aliased.append(int(np.asarray(arr)[-1]) != before)
        host[-1] ^= 0xFF
    assert len(aliased) == 5
    assert flag is all(aliased)


class _NoPointer:
    """A device array whose raw buffer pointer cannot be read (backends without one)."""

    def __init__(self, arr):
        self._arr = arr

    def __getattr__(self, name):
        return getattr(self._arr, name)

    def unsafe_buffer_pointer(self):
        raise NotImplementedError("no raw pointers here")

    def __array__(self, dtype=None, copy=None):
        return np.array(self._arr, dtype=dtype, copy=copy)


def test_no_raw_pointer_counts_as_a_copy(monkeypatch):
    _spy_device_put(monkeypatch, wrap=_NoPointer)
    assert transfer_profile(64)["zero_copy_h2d"] is False


def test_damaged_device_to_host_copy_is_an_error(monkeypatch):
    _spy_device_put(monkeypatch, corrupt=True)
    with pytest.raises(RuntimeError) as info:
        transfer_profile(64)
    assert str(info.value) == "device->host copy returned different bytes"


def test_zero_intervals_give_fraction_one_and_infinite_rates(monkeypatch):
    class _StoppedClock:
        def perf_counter(self):
            return 5.0

    monkeypatch.setattr(transfer, "time", _StoppedClock())
    prof = transfer_profile(64)
    assert prof["h2d_dispatch_fraction"] == 1.0
    assert prof["h2d_gbps"] == float("inf") and prof["d2h_gbps"] == float("inf")
    assert prof["h2d_wait_s"] == 0.0


def test_bad_device_message_names_the_type():
    with pytest.raises(TypeError) as info:
        transfer_profile(16, "cpu")
    assert str(info.value) == "device must be a jax.Device or None, got str"


def test_device_to_host_read_is_a_real_copy(monkeypatch):
    """On CPU ``np.asarray`` of a device array can be a view of the device buffer, which would time
    no copy at all: each timed read must ask NumPy for a copy."""
    copies = []

    class _Recorder(_NoPointer):
        def unsafe_buffer_pointer(self):
            return self._arr.unsafe_buffer_pointer()

        def __array__(self, dtype=None, copy=None):
            copies.append(copy)
            return super().__array__(dtype, copy)

    _spy_device_put(monkeypatch, wrap=_Recorder)
    transfer_profile(64)
    assert copies == [True] * 5
