"""What each device really holds while a run goes: distinct live buffer bytes, sampled (C4.1, C5.2).

One sample reads every live ``jax.Array`` of this process (``jax.live_arrays()``) and counts,
per device ``d``,

    bytes(d) = sum of nbytes(b) over the distinct buffers b on device d

where a multi-device array contributes its addressable shards and a single-device array its one
buffer. JAX hands out single-device views of a sharded array's own buffers (``addressable_shards``,
``device_get``, a shard's ``.data``): they share the buffer's device and ``unsafe_buffer_pointer``
and are counted once (a buffer is the pair: CPU devices can alias one host buffer, still held once
by each). A single-device array whose buffer is no shard of a multi-device array is a *copy*
(:attr:`Sample.copies` lists those of at least ``min_copy_bytes``): on a sharded run, an unsharded
copy of a parameter or a moment held beside the layout.

:class:`LiveBufferSampler` takes samples (a) with ``packages`` set, at every return of a Python
function of those packages (e.g. ``("jaxparadigm", "orbax")``: each stage of the loop, each
checkpoint save and its writer threads, each evaluation), in the thread that entered it and in
threads started inside it: deterministic points; and (b) from a background thread every
``interval_s``, which also sees the middle of a jitted call, but races with it: an array donated
while a sample reads the live list leaves its single-device views behind, listed as copies for
that one sample. It keeps the peak of each device and the sample of the busiest device's peak.
Intermediate buffers of a compiled program (activations) are XLA's and not ``jax.Array`` s: not
counted.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

import jax

from jaxparadigm.common.numbers import check_float, check_int

__all__ = ["LiveBufferSampler", "Sample", "live_sample"]


class Sample(NamedTuple):
    """One reading: ``{device id: distinct bytes}``, the copies seen, and where it was taken."""

    per_device: dict[int, int]
    copies: list[tuple[int, tuple[int, ...], str]]  # (device id, shape, dtype) per copy
    where: str

    @property
    def busiest(self) -> int:
        """The largest per-device byte count of the sample (0 when nothing is live)."""
        return max(self.per_device.values(), default=0)


def _buffers(arrays: Iterable[jax.Array]) -> tuple[dict, list]:
    """``({(device id, pointer): nbytes} of multi-device arrays' shards, [single-device arrays
    as (device id, pointer, nbytes, shape, dtype)])``; deleted (donated) arrays are skipped. A
    buffer is keyed by its device and its address: CPU devices may share one host buffer (a
    ``device_put`` of a NumPy array can alias it), which is still held once per device."""
    owned: dict[tuple[int, int], int] = {}
    single: list[tuple[int, int, int, tuple[int, ...], str]] = []
    for a in arrays:
        try:
            if a.is_deleted():
                continue
            if len(a.sharding.device_set) == 1:
                device: Any = next(iter(a.sharding.device_set))
                single.append(
                    (device.id, a.unsafe_buffer_pointer(), a.nbytes, a.shape, str(a.dtype))
                )
                continue
            for shard in a.addressable_shards:
                owned[(shard.device.id, shard.data.unsafe_buffer_pointer())] = shard.data.nbytes
        except RuntimeError:  # deleted between the check and the read (another thread donated)
            continue
    return owned, single


def live_sample(where: str = "", min_copy_bytes: int = 1024) -> Sample:
    """One :class:`Sample` of this process's live arrays (module docstring's count)."""
    owned, single = _buffers(jax.live_arrays())
    per_device: dict[int, int] = {}
    seen = dict(owned)
    copies = []
    for device, pointer, nbytes, shape, dtype in single:
        if (device, pointer) in seen:
            continue
        seen[(device, pointer)] = nbytes
        if nbytes >= min_copy_bytes:
            copies.append((device, tuple(shape), dtype))
    for (device, _), nbytes in seen.items():
        per_device[device] = per_device.get(device, 0) + nbytes
    return Sample(per_device, sorted(copies), where)


def _within(module: str, packages: tuple[str, ...], function: str | None = None) -> bool:
    """Whether ``module`` is one of ``packages`` or inside one; an entry ``"module:name"`` takes
    only the functions called ``name`` of that module (``function`` None: any)."""
    for p in packages:
        where, _, name = p.partition(":")
        if (module == where or module.startswith(f"{where}.")) and (
            not name or function is None or name == function
        ):
            return True
    return False


def _running(thread: int, packages: tuple[str, ...]) -> str:
    """The innermost function ``thread`` runs (of ``packages`` when one is on its stack)."""
    frame = sys._current_frames().get(thread)
    first = frame
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if _within(module, packages):
            return f"{module}.{frame.f_code.co_name}"
        frame = frame.f_back
    return "?" if first is None else f"{first.f_globals.get('__name__', '')}.{first.f_code.co_name}"


class LiveBufferSampler:
    """Samples live buffers during a block (``with LiveBufferSampler(...) as s:``) (C4.1).

    ``interval_s``: the background thread's period (None: no thread); ``packages``: sample at
    every return of a function whose module is one of these packages or below, or, for an entry
    ``"module:name"``, of the functions ``name`` of that module (``()``: no hook). After
    the block: :attr:`peak` (``{device: largest bytes}``), :attr:`busiest` (the sample holding
    the largest single-device figure), :attr:`samples` (how many were taken) and
    :attr:`copies` (every distinct copy ``(device, shape, dtype)`` seen, with the first place).
    """

    def __init__(
        self,
        interval_s: float | None = None,
        packages: tuple[str, ...] = ("jaxparadigm",),
        min_copy_bytes: int = 1024,
    ) -> None:
        if interval_s is not None:
            interval_s = check_float(
                "interval_s", interval_s, 0, lo_open=True, error=ValueError, expected="seconds"
            )
        min_copy_bytes = check_int("min_copy_bytes", min_copy_bytes, 0, error=ValueError)
        if isinstance(packages, str) or not all(isinstance(p, str) for p in packages):
            raise TypeError(f"packages: got {packages!r}, expected a tuple of package names")
        self.interval_s, self.packages, self.min_copy_bytes = interval_s, packages, min_copy_bytes
        self.peak: dict[int, int] = {}
        self.busiest = Sample({}, [], "")
        self.copies: dict[tuple[int, tuple[int, ...], str], str] = {}
        self.samples = 0
        self.places: dict[str, int] = {}  # samples taken per place
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._inside = threading.local()

    def take(self, where: str) -> Sample:
        """Take one sample now and fold it into the figures."""
        sample = live_sample(where, self.min_copy_bytes)
        with self._lock:
            self.samples += 1
            self.places[where] = self.places.get(where, 0) + 1
            for device, nbytes in sample.per_device.items():
                self.peak[device] = max(self.peak.get(device, 0), nbytes)
            if sample.busiest > self.busiest.busiest:
                self.busiest = sample
            for copy in sample.copies:
                self.copies.setdefault(copy, where)
        return sample

    def _loop(self, main: int) -> None:
        while not self._stop.wait(self.interval_s):
            self.take(f"thread during {_running(main, self.packages)}")

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "return" or getattr(self._inside, "busy", False):
            return
        module = frame.f_globals.get("__name__", "")
        if not _within(module, self.packages, frame.f_code.co_name):
            return
        self._inside.busy = True  # no samples of the sampler's own calls
        try:
            self.take(f"{module}.{frame.f_code.co_name}")
        finally:
            self._inside.busy = False

    def __enter__(self) -> LiveBufferSampler:
        if self.packages:
            sys.setprofile(self._profile)
            threading.setprofile(self._profile)
        if self.interval_s is not None:
            main = threading.get_ident()
            self._thread = threading.Thread(target=self._loop, args=(main,), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.packages:
            sys.setprofile(None)
            threading.setprofile(None)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        time.sleep(0)  # let the thread's last sample land before the figures are read

    def figures(self) -> dict:
        """The peak per device, the busiest sample (bytes, where, copies) and every copy seen."""
        return {
            "samples": self.samples,
            "peak_per_device": {str(k): v for k, v in sorted(self.peak.items())},
            "busiest_bytes": self.busiest.busiest,
            "busiest_where": self.busiest.where,
            "busiest_per_device": {str(k): v for k, v in sorted(self.busiest.per_device.items())},
            "copies": [
                {"device": d, "shape": list(s), "dtype": t, "first_seen": w}
                for (d, s, t), w in sorted(self.copies.items())
            ],
        }
