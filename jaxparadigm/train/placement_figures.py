"""What a sharded run's placement measures: bytes per device and the compiled step's collectives
(C4.1, C5.2; the layouts themselves are :mod:`jaxparadigm.train.sharding`'s).

:func:`bytes_per_device` reads each array's sharding (``shard_shape`` per addressable device: no
buffer is touched); :func:`collective_stats` counts the collective operations of a compiled
module's HLO text and the bytes of their results; :func:`layout_figures` puts both together for
a run's report.
"""

from __future__ import annotations

import re
from typing import Any

import jax
import numpy as np

__all__ = ["COLLECTIVES", "bytes_per_device", "collective_stats", "layout_figures"]

#: HLO collective ops counted in a compiled step (``collective_stats``).
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "collective-permute", "all-to-all")


def bytes_per_device(tree: Any) -> dict[int, int]:
    """``{device id: bytes}`` held by this process's devices for the leaves of ``tree``: each
    addressable device of a leaf's sharding stores one shard of ``sharding.shard_shape`` (C4.1:
    what a device really stores). Computed from the shardings: no buffer is touched (a shard
    view kept alive would stop the step from donating the buffer)."""
    out: dict[int, int] = {}
    for x in jax.tree_util.tree_leaves(tree):
        nbytes = int(np.prod(x.sharding.shard_shape(x.shape))) * x.dtype.itemsize
        for device in x.sharding.addressable_devices:
            out[device.id] = out.get(device.id, 0) + nbytes
    return out


_COLLECTIVE_RE = re.compile(r"\s(?P<op>" + "|".join(COLLECTIVES) + r")(?P<start>-start)?\(")
_ARRAY_RE = re.compile(r"\b(pred|[suf]\d+|bf16)\[([\d,]*)\]")
_ITEMSIZE = {"pred": 1, "bf16": 2}


def _shape_bytes(shape_text: str) -> int:
    """Bytes of an HLO result shape such as ``f32[256,32]{1,0}`` or a tuple of them."""
    total = 0
    for dtype, dims in _ARRAY_RE.findall(shape_text):
        itemsize = _ITEMSIZE.get(dtype) or int(dtype[1:]) // 8
        total += itemsize * int(np.prod([int(d) for d in dims.split(",") if d]))
    return total


def collective_stats(hlo_text: str) -> dict[str, dict[str, int]]:
    """``{op: {"count": n, "bytes": b}}`` for each collective (``all-gather``, ``reduce-scatter``,
    ``all-reduce``, ``collective-permute``, ``all-to-all``) in a compiled module's HLO text: the
    number of instructions (an async ``-start``/``-done`` pair counts once; a combined tuple
    all-reduce counts once) and the bytes of their results per device (not counted for async
    starts, whose result tuple also holds the operands) (C5.2)."""
    stats = {op: {"count": 0, "bytes": 0} for op in COLLECTIVES}
    for line in hlo_text.splitlines():
        match = _COLLECTIVE_RE.search(line)
        if match is None:
            continue
        stats[match["op"]]["count"] += 1
        head = line[: match.start()]
        if " = " in head and not match["start"]:  # an async start's tuple also holds operands
            stats[match["op"]]["bytes"] += _shape_bytes(head.split(" = ", 1)[1])
    return stats


def layout_figures(layout: Any, state: Any, hlo_text: str) -> dict:
    """What a sharded run measured (C4.1, C5.2) for its ``StepLayout``: mode, devices, the mesh
    (axis -> size), processes, the largest per-device bytes of ``params`` and ``opt_state`` over
    this process's devices (:func:`bytes_per_device`) next to their unsplit totals, and
    :func:`collective_stats` of the compiled step."""
    per_device = lambda tree: max(bytes_per_device(tree).values(), default=0)
    total = lambda tree: sum(x.nbytes for x in jax.tree_util.tree_leaves(tree))
    return {
        "mode": layout.mode,
        "devices": int(layout.mesh.size),
        "mesh": {str(k): int(v) for k, v in layout.mesh.shape.items()},
        "processes": jax.process_count(),
        "params_bytes_per_device": per_device(state.params),
        "opt_state_bytes_per_device": per_device(state.opt_state),
        "params_bytes_total": total(state.params),
        "opt_state_bytes_total": total(state.opt_state),
        "collectives": collective_stats(hlo_text),
    }
