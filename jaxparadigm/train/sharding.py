"""Where the train state and the batch live: ``data``, ``zero1`` and ``fsdp`` placement (C4.1, C5.2).

A 1-D mesh ``Mesh(devices, ("data",))`` over every device of every process (ordered by process,
so process ``p`` holds rows ``[p B/P, (p+1) B/P)`` of each global batch ``B``). The batch is always
split along its leading axis (``PartitionSpec("data")``); the modes differ in what else is split::

    mode    params        optimiser state (Adam mu, nu)    gradients        collectives XLA inserts
    data    replicated    replicated                       replicated       all-reduce(grads)
    zero1   replicated    split by the rule                split by rule    reduce-scatter(grads),
                                                                            all-gather(params')
    fsdp    split         split by the rule                split by rule    all-gather(params) in
            by the rule                                                     forward/backward,
                                                                            reduce-scatter(grads)

The rule (:func:`leaf_spec`, after big_vision's ``shardings.fsdp``), for a leaf of shape ``s`` on
``n`` devices: if ``prod(s) < min_size`` elements, or no dimension is divisible by ``n``, the leaf
is replicated (``PartitionSpec()``); otherwise dimension ::

    d = argmax_i { s_i : s_i % n == 0 }          (ties: the first such i)

is split (``PartitionSpec(None, .., "data", .., None)`` with ``"data"`` at ``d``). Scalars
(counters, RNG, scales, guard) are always replicated. The rule depends on the shape only, so Adam's
``mu``/``nu`` are split exactly like their parameter.

We only *declare* shardings (``NamedSharding`` for the jitted step's outputs, and
``with_sharding_constraint`` on the parameters used by the forward pass and on the gradients); the
communication is XLA's SPMD partitioner's, on JAX's own runtime (``jax.distributed`` across
processes). Per-device memory is measured from each array's ``addressable_shards``
(:func:`bytes_per_device`) and the compiled step's collectives are counted in its HLO text
(:func:`collective_stats`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = [
    "COLLECTIVES",
    "DATA_AXIS",
    "MODES",
    "StepLayout",
    "bytes_per_device",
    "collective_stats",
    "data_mesh",
    "layout_figures",
    "leaf_spec",
    "place",
    "replicate",
    "shard_batch",
    "step_layout",
    "to_host",
    "tree_shardings",
]

#: The one mesh axis: batch rows, and the split dimension of sharded leaves, lie along it.
DATA_AXIS = "data"
#: ``train.sharding.mode`` values: one device, replicated state, + split optimiser state, + split params.
MODES = ("none", "data", "zero1", "fsdp")
#: HLO collective ops counted in a compiled step (``collective_stats``).
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "collective-permute", "all-to-all")


def data_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh with axis ``"data"`` over ``devices`` (default: all devices of all processes,
    ordered by process index, then device id) (C5.2)."""
    if devices is None:
        devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    devices = list(devices)
    if not devices:
        raise ValueError("devices: got an empty list, expected at least one device")
    return Mesh(np.array(devices), (DATA_AXIS,))


def leaf_spec(shape: Sequence[int], n: int, min_size: int = 1) -> PartitionSpec:
    """The sharding rule for one leaf (see the module docstring) (C4.1).

    ``PartitionSpec()`` (replicated) when the leaf has fewer than ``min_size`` elements or no
    dimension divisible by ``n``; else ``"data"`` on the largest divisible dimension (the first
    among equals).
    """
    shape = tuple(int(s) for s in shape)
    if n < 1:
        raise ValueError(f"n: got {n}, expected a device count >= 1")
    if not shape or int(np.prod(shape)) < min_size:
        return PartitionSpec()
    divisible = [i for i, s in enumerate(shape) if s % n == 0]
    if not divisible:
        return PartitionSpec()
    d = max(divisible, key=lambda i: (shape[i], -i))
    return PartitionSpec(*([None] * d), DATA_AXIS)


def tree_shardings(tree: Any, mesh: Mesh, min_size: int = 1) -> Any:
    """``NamedSharding`` per leaf of ``tree`` by :func:`leaf_spec` on ``mesh``'s data axis (C4.1)."""
    n = mesh.shape[DATA_AXIS]
    return jax.tree_util.tree_map(
        lambda x: NamedSharding(mesh, leaf_spec(np.shape(x), n, min_size)), tree
    )


class StepLayout(NamedTuple):
    """The shardings a sharded train step declares (C4.1, C5.2).

    ``state``: per leaf of the train state (the step's input and output); ``gathered``: the
    parameters as the forward pass uses them (replicated: an all-gather when they are split);
    ``grads``: the gradients before the optimiser (split like the optimiser state, or replicated);
    ``batch``: the batch (split on axis 0); ``replicated``: scalars and metrics.
    """

    mode: str
    mesh: Mesh
    state: Any
    gathered: Any
    grads: Any
    batch: NamedSharding
    replicated: NamedSharding


def step_layout(state: Any, mesh: Mesh, mode: str, min_size: int = 1024) -> StepLayout:
    """The :class:`StepLayout` of ``mode`` (``data``, ``zero1`` or ``fsdp``) for a ``TrainState``.

    See the module docstring's table; ``min_size`` is the rule's replication threshold (C4.1).
    """
    if mode not in MODES[1:]:
        raise ValueError(f"mode: got {mode!r}, expected one of {', '.join(MODES[1:])}")
    rep = NamedSharding(mesh, PartitionSpec())
    replicated = lambda tree: jax.tree_util.tree_map(lambda _: rep, tree)
    split = lambda tree: tree_shardings(tree, mesh, min_size)
    params = split(state.params) if mode == "fsdp" else replicated(state.params)
    opt_state = replicated(state.opt_state) if mode == "data" else split(state.opt_state)
    state_sh = replicated(state)._replace(params=params, opt_state=opt_state)
    grads = replicated(state.params) if mode == "data" else split(state.params)
    return StepLayout(
        mode=mode,
        mesh=mesh,
        state=state_sh,
        gathered=replicated(state.params),
        grads=grads,
        batch=NamedSharding(mesh, PartitionSpec(DATA_AXIS)),
        replicated=rep,
    )


def to_host(tree: Any) -> Any:
    """Every leaf as a numpy array of its *global* value (C5.2).

    A leaf this process cannot see whole (split over other processes' devices) is gathered with
    ``multihost_utils.process_allgather`` -- a collective: every process must call this together.
    """

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree_util.tree_map(one, tree)


def place(tree: Any, shardings: Any) -> Any:
    """Host values of ``tree`` (the same on every process) placed with ``shardings`` (a tree of
    ``Sharding``, one per leaf): each device gets its slice, ``make_array_from_callback`` (C5.2)."""

    def one(x, sharding):
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])

    return jax.tree_util.tree_map(one, tree, shardings)


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Place every leaf of ``tree`` on all devices of ``mesh`` (``PartitionSpec()``) (C5.2)."""
    rep = NamedSharding(mesh, PartitionSpec())
    return place(tree, jax.tree_util.tree_map(lambda _: rep, tree))


def shard_batch(batch: Any, mesh: Mesh) -> Any:
    """This process's rows of a global batch, split along axis 0 over ``mesh`` (C5.2).

    Each leaf of ``batch`` holds this process's ``B / P`` rows (all ``B`` rows in a single
    process); the result is the global ``[B, ...]`` array. Raises ``ValueError`` when the rows
    cannot be split evenly over this process's devices.
    """
    sharding = NamedSharding(mesh, PartitionSpec(DATA_AXIS))
    local = sum(d.process_index == jax.process_index() for d in mesh.devices.flat)
    for path, leaf in jax.tree_util.tree_flatten_with_path(batch)[0]:
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] % local:
            raise ValueError(
                f"batch{jax.tree_util.keystr(path)}: got shape {np.shape(leaf)}, expected a "
                f"leading (batch) dimension divisible by this process's {local} devices of the mesh"
            )
    return jax.tree_util.tree_map(
        lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), batch
    )


def bytes_per_device(tree: Any) -> dict[int, int]:
    """``{device id: bytes}`` held by this process's devices for the leaves of ``tree``, summed
    over each array's ``addressable_shards`` (C4.1: what a device really stores)."""
    out: dict[int, int] = {}
    for x in jax.tree_util.tree_leaves(tree):
        for shard in x.addressable_shards:
            out[shard.device.id] = out.get(shard.device.id, 0) + shard.data.nbytes
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


def layout_figures(layout: StepLayout, state: Any, hlo_text: str) -> dict:
    """What a sharded run measured (C4.1, C5.2): mode, devices, processes, the largest per-device
    bytes of ``params`` and ``opt_state`` over this process's devices (from ``addressable_shards``)
    next to their unsplit totals, and :func:`collective_stats` of the compiled step."""
    per_device = lambda tree: max(bytes_per_device(tree).values(), default=0)
    total = lambda tree: sum(x.nbytes for x in jax.tree_util.tree_leaves(tree))
    return {
        "mode": layout.mode,
        "devices": int(layout.mesh.size),
        "processes": jax.process_count(),
        "params_bytes_per_device": per_device(state.params),
        "opt_state_bytes_per_device": per_device(state.opt_state),
        "params_bytes_total": total(state.params),
        "opt_state_bytes_total": total(state.opt_state),
        "collectives": collective_stats(hlo_text),
    }
