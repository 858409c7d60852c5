"""Measure host<->device transfers and where the host actually waits (claim C2.3).

JAX dispatch is asynchronous: ``jax.device_put`` (like every jitted call) enqueues the work and
returns an ``Array`` whose buffer may still be filling. The host blocks only at a sync point:

* ``x.block_until_ready()`` / ``jax.block_until_ready(tree)``;
* any device->host read: ``np.asarray(x)``, ``jax.device_get``, ``x.item()``, ``float(x)``,
  ``int(x)``, ``bool(x)`` (so Python ``if``/``while`` on an array value), ``print``/``repr`` of
  values, ``x.tolist()``;
* ``x.copy_to_host_async()`` starts the device->host copy without waiting; the next read waits;
* donating or deleting a buffer still in use waits for the producers that use it.

``transfer_profile`` times the dispatch (the call returning) separately from readiness, for both
directions, and reports medians in seconds and GB/s.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxparadigm.common.numbers import check_int

_REPEATS = 5


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def _checked_arguments(nbytes: int, device: Any) -> tuple[int, jax.Device]:
    """``(int(nbytes), device)`` with ``device=None`` read as the first device; TypeError /
    ValueError naming the argument otherwise."""
    nbytes = check_int("nbytes", nbytes, 1, error=ValueError, type_error=TypeError)
    if device is None:
        device = jax.devices()[0]
    elif not isinstance(device, jax.Device):
        raise TypeError(f"device must be a jax.Device or None, got {type(device).__name__}")
    return int(nbytes), device


class _Timings(NamedTuple):
    """Per-repeat intervals in seconds, and whether each device buffer aliased the host one."""

    dispatch: list[float]
    ready: list[float]
    d2h_dispatch: list[float]
    d2h: list[float]
    zero_copy: list[bool]


def _aliases(arr: jax.Array, host: np.ndarray) -> bool:
    """True when the device buffer is ``host``'s memory itself (no copy was made)."""
    try:
        return arr.unsafe_buffer_pointer() == host.ctypes.data
    except Exception:  # backends without raw pointers: certainly a copy
        return False


def _time_round_trips(host: np.ndarray, device: jax.Device) -> _Timings:
    """``_REPEATS`` host->device->host round trips of ``host``, each interval timed."""
    jax.device_put(host, device).block_until_ready()  # warm up the transfer path
    t = _Timings([], [], [], [], [])
    for _ in range(_REPEATS):
        t0 = time.perf_counter()
        arr = jax.device_put(host, device)
        t1 = time.perf_counter()
        arr.block_until_ready()
        t2 = time.perf_counter()
        t.dispatch.append(t1 - t0)
        t.ready.append(t2 - t0)
        t.zero_copy.append(_aliases(arr, host))
        t3 = time.perf_counter()
        arr.copy_to_host_async()
        t4 = time.perf_counter()
        back = np.array(arr, copy=True)
        t5 = time.perf_counter()
        t.d2h_dispatch.append(t4 - t3)
        t.d2h.append(t5 - t3)
        if back.nbytes != host.nbytes or back[-1] != host[-1]:
            raise RuntimeError("device->host copy returned different bytes")
        del arr, back
    return t


def transfer_profile(nbytes: int, device: Any = None) -> dict[str, Any]:
    """Median host->device and device->host times for ``nbytes`` bytes (C2.3).

    Host->device: ``h2d_dispatch_s`` = time for ``jax.device_put`` to return,
    ``h2d_ready_s`` = time until ``block_until_ready`` returns (dispatch included); the copy is
    asynchronous when the dispatch is a small fraction of the ready time. Device->host:
    ``d2h_dispatch_s`` = ``copy_to_host_async()`` returning, ``d2h_s`` = until ``np.asarray`` holds
    the bytes. ``*_gbps = nbytes / seconds / 1e9``. ``zero_copy_h2d`` is True when the device
    buffer is the host buffer itself (possible on CPU), in which case nothing was copied.
    """
    nbytes, device = _checked_arguments(nbytes, device)
    host = (np.arange(nbytes, dtype=np.int64) % 251).astype(np.uint8)
    t = _time_round_trips(host, device)
    h2d_ready = _median(t.ready)
    h2d_dispatch = _median(t.dispatch)
    d2h_s = _median(t.d2h)
    return {
        "device": str(device),
        "platform": device.platform,
        "nbytes": nbytes,
        "repeats": _REPEATS,
        "h2d_dispatch_s": h2d_dispatch,
        "h2d_ready_s": h2d_ready,
        "h2d_wait_s": max(h2d_ready - h2d_dispatch, 0.0),
        "h2d_dispatch_fraction": h2d_dispatch / h2d_ready if h2d_ready > 0 else 1.0,
        "h2d_gbps": nbytes / h2d_ready / 1e9 if h2d_ready > 0 else float("inf"),
        "d2h_dispatch_s": _median(t.d2h_dispatch),
        "d2h_s": d2h_s,
        "d2h_gbps": nbytes / d2h_s / 1e9 if d2h_s > 0 else float("inf"),
        "zero_copy_h2d": all(t.zero_copy),
    }
