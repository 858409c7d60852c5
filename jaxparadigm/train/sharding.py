"""Where the train state and the batch live: ``data``, ``zero1``, ``fsdp`` and ``fsdp_tensor``
placement (C4.1, C5.2).

``data``, ``zero1`` and ``fsdp`` use a 1-D mesh ``Mesh(devices, ("data",))`` over every device of
every process (ordered by process, so process ``p`` holds rows ``[p B/P, (p+1) B/P)`` of each
global batch ``B``). The batch is always split along its leading axis (``PartitionSpec("data")``);
the modes differ in what else is split::

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

``fsdp_tensor`` uses a 2-D mesh ``(fsdp, tensor)`` of ``F x T`` devices (``T`` =
``train.sharding.tensor``, ``F = n / T``; a tensor group is ``T`` consecutive devices, so it lies
within one process when ``T`` divides a process's device count). A parameter with logical axis
names (:mod:`jaxparadigm.models.partitioning`) is laid out by the rules table ``RULES`` (model
width over ``fsdp``; attention heads, MLP hidden units and the vocabulary over ``tensor``); one
without names by the rule above over all ``n`` devices (its dimension split over both axes,
``PartitionSpec(("fsdp", "tensor"))``); a leaf under ``min_size`` elements is replicated. The
optimiser state keeps its parameters' shardings: every subtree of the optimiser state shaped like
the parameters (``mu``, ``nu``) gets the parameters' shardings, its other leaves the rule. The
forward pass gathers the parameters over ``fsdp`` only (they stay split over ``tensor``: each
device computes its heads and hidden units); the gradients are reduce-scattered back to the
parameters' layout; the batch is split over ``fsdp``, and activations are laid out by their names
(``models.partitioning.constrain`` under the step's rules).

We only *declare* shardings (``NamedSharding`` for the jitted step's outputs, and
``with_sharding_constraint`` on the parameters used by the forward pass and on the gradients); the
communication is XLA's SPMD partitioner's, on JAX's own runtime (``jax.distributed`` across
processes). Per-device memory is computed from each array's sharding (``bytes_per_device``) and
the compiled step's collectives are counted in its HLO text (``collective_stats``): both in
:mod:`jaxparadigm.train.placement_figures`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxparadigm.common.numbers import is_int
from jaxparadigm.models.partitioning import RULES, logical_spec
from jaxparadigm.train.placement_figures import (  # noqa: F401 (re-exported: the placement's names)
    COLLECTIVES,
    bytes_per_device,
    collective_stats,
    layout_figures,
)

__all__ = [
    "COLLECTIVES",
    "DATA_AXIS",
    "FSDP_AXIS",
    "MODES",
    "TENSOR_AXIS",
    "StepLayout",
    "bytes_per_device",
    "collective_stats",
    "data_mesh",
    "layout_figures",
    "leaf_spec",
    "mesh_for",
    "place",
    "release",
    "replicate",
    "shapes_of",
    "shard_batch",
    "step_layout",
    "to_host",
    "tree_shardings",
]

#: The 1-D mesh's axis: batch rows, and the split dimension of sharded leaves, lie along it.
DATA_AXIS = "data"
#: The 2-D mesh's first axis (``fsdp_tensor``): batch rows, parameters split by the model width.
FSDP_AXIS = "fsdp"
#: The 2-D mesh's second axis (``fsdp_tensor``): attention heads and MLP hidden units.
TENSOR_AXIS = "tensor"
#: ``train.sharding.mode`` values: one device, replicated state, + split optimiser state, + split
#: params, + a second (tensor) axis.
MODES = ("none", "data", "zero1", "fsdp", "fsdp_tensor")


def _ordered(devices: Sequence[jax.Device] | None) -> list[jax.Device]:
    """``devices`` (default: all devices of all processes) ordered by process index, then id."""
    if devices is None:
        devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    devices = list(devices)
    if not devices:
        raise ValueError("devices: got an empty list, expected at least one device")
    return devices


def data_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh with axis ``"data"`` over ``devices`` (default: all devices of all processes,
    ordered by process index, then device id) (C5.2)."""
    return Mesh(np.array(_ordered(devices)), (DATA_AXIS,))


def mesh_for(mode: str, tensor: int = 1, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """The mesh of ``mode``: :func:`data_mesh` for ``data``/``zero1``/``fsdp``; for
    ``fsdp_tensor`` ``Mesh(devices.reshape(n / tensor, tensor), ("fsdp", "tensor"))`` (devices
    ordered as :func:`data_mesh`'s). ``ValueError`` naming ``tensor`` when it does not divide the
    device count (C5.2)."""
    if mode not in MODES[1:]:
        raise ValueError(f"mode: got {mode!r}, expected one of {', '.join(MODES[1:])}")
    if mode != "fsdp_tensor":
        return data_mesh(devices)
    found = _ordered(devices)
    if not is_int(tensor) or tensor < 1 or len(found) % tensor:
        raise ValueError(
            f"train.sharding.tensor: got {tensor!r}, expected a divisor of the {len(found)} "
            "devices (the fsdp axis takes the remaining devices / tensor)"
        )
    grid = np.array(found).reshape(len(found) // tensor, tensor)
    return Mesh(grid, (FSDP_AXIS, TENSOR_AXIS))


def leaf_spec(
    shape: Sequence[int], n: int, min_size: int = 1, axis: str | tuple[str, ...] = DATA_AXIS
) -> PartitionSpec:
    """The sharding rule for one leaf (see the module docstring) (C4.1).

    ``PartitionSpec()`` (replicated) when the leaf has fewer than ``min_size`` elements or no
    dimension divisible by ``n``; else ``axis`` (``"data"``, or a tuple of mesh axes whose sizes
    multiply to ``n``) on the largest divisible dimension (the first among equals).
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
    return PartitionSpec(*([None] * d), axis)


def tree_shardings(tree: Any, mesh: Mesh, min_size: int = 1) -> Any:
    """``NamedSharding`` per leaf of ``tree``, by :func:`leaf_spec` on ``mesh``'s data axis
    (C4.1)."""
    n = mesh.shape[DATA_AXIS]
    return jax.tree_util.tree_map(
        lambda x: NamedSharding(mesh, leaf_spec(np.shape(x), n, min_size)), tree
    )


class StepLayout(NamedTuple):
    """The shardings a sharded train step declares (C4.1, C5.2).

    ``state``: per leaf of the train state (the step's input and output); ``gathered``: the
    parameters as the forward pass uses them (replicated, or split over ``tensor`` only: an
    all-gather when they are split); ``grads``: the gradients before the optimiser (split like
    the optimiser state, or replicated); ``batch``: the batch (split on axis 0);
    ``replicated``: scalars and metrics; ``rules``: the logical axis rules activations are laid
    out by (``fsdp_tensor``), or None.
    """

    mode: str
    mesh: Mesh
    state: Any
    gathered: Any
    grads: Any
    batch: NamedSharding
    replicated: NamedSharding
    rules: tuple | None = None


def step_layout(
    state: Any, mesh: Mesh, mode: str, min_size: int = 1024, names: Any = None
) -> StepLayout:
    """The :class:`StepLayout` of ``mode`` (``data``, ``zero1``, ``fsdp`` on a :func:`data_mesh`;
    ``fsdp_tensor`` on a :func:`mesh_for` 2-D mesh) for a ``TrainState`` (of arrays or
    ``ShapeDtypeStruct`` s). ``names``: the parameters' logical axis names
    (``models.partitioning.logical_names``; read by ``fsdp_tensor`` only, None: no names).

    See the module docstring; ``min_size`` is the rule's replication threshold (C4.1).
    """
    if mode not in MODES[1:]:
        raise ValueError(f"mode: got {mode!r}, expected one of {', '.join(MODES[1:])}")
    rep = NamedSharding(mesh, PartitionSpec())
    replicated = lambda tree: jax.tree_util.tree_map(lambda _: rep, tree)
    if mode == "fsdp_tensor":
        return _fsdp_tensor_layout(state, mesh, min_size, names)
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


def _fsdp_tensor_layout(state: Any, mesh: Mesh, min_size: int, names: Any) -> StepLayout:
    """``fsdp_tensor``'s :class:`StepLayout` (module docstring): parameters by their names (the
    rule over both axes without names), the optimiser state like its parameters."""
    if tuple(mesh.axis_names) != (FSDP_AXIS, TENSOR_AXIS):
        raise ValueError(
            f"mesh: got axes {tuple(mesh.axis_names)}, expected {(FSDP_AXIS, TENSOR_AXIS)} for "
            "mode 'fsdp_tensor' (mesh_for)"
        )
    both = (FSDP_AXIS, TENSOR_AXIS)
    rule = lambda x: NamedSharding(mesh, leaf_spec(np.shape(x), mesh.size, min_size, both))
    pairs, treedef = jax.tree_util.tree_flatten_with_path(state.params)
    found = _names_per_leaf(names, len(pairs))
    specs = []
    for (path, x), leaf_names in zip(pairs, found, strict=True):
        if leaf_names is None or int(np.prod(np.shape(x))) < min_size:
            specs.append(rule(x).spec)
            continue
        where = f"params{jax.tree_util.keystr(path)}"
        specs.append(logical_spec(leaf_names, np.shape(x), RULES, dict(mesh.shape), where))
    unflatten = lambda leaves: jax.tree_util.tree_unflatten(treedef, leaves)
    params = unflatten([NamedSharding(mesh, p) for p in specs])
    gathered = unflatten([NamedSharding(mesh, _without_fsdp(p)) for p in specs])
    structure: Any = treedef  # (jaxlib's PyTreeDef has no type information)
    is_params = lambda x: jax.tree_util.tree_structure(x) == structure
    opt_state = jax.tree_util.tree_map(
        lambda x: params if is_params(x) else rule(x), state.opt_state, is_leaf=is_params
    )
    rep = NamedSharding(mesh, PartitionSpec())
    state_sh = jax.tree_util.tree_map(lambda _: rep, state)
    return StepLayout(
        mode="fsdp_tensor",
        mesh=mesh,
        state=state_sh._replace(params=params, opt_state=opt_state),
        gathered=gathered,
        grads=params,
        batch=NamedSharding(mesh, PartitionSpec(FSDP_AXIS)),
        replicated=rep,
        rules=RULES,
    )


def _names_per_leaf(names: Any, count: int) -> list:
    """The parameters' logical names (a tree of tuples / None shaped like the parameters) as one
    entry per parameter leaf, in leaf order; ``[None] * count`` without names."""
    if names is None:
        return [None] * count
    found = jax.tree_util.tree_leaves(names, is_leaf=lambda x: x is None or isinstance(x, tuple))
    if len(found) != count:
        raise ValueError(
            f"names: got {len(found)} entries, expected one per parameter ({count}): the "
            "logical names of the model these parameters come from (logical_names)"
        )
    return found


def _without_fsdp(spec: PartitionSpec) -> PartitionSpec:
    """``spec`` with its ``fsdp`` entries (and any entry over both axes) unsplit: the parameter
    as the forward pass of ``fsdp_tensor`` uses it (still split over ``tensor``)."""
    return PartitionSpec(*(a if a == TENSOR_AXIS else None for a in spec))


def to_host(tree: Any) -> Any:
    """Every leaf as a numpy array of its *global* value, a copy of its own (C5.2).

    A leaf this process cannot see whole (split over other processes' devices) is gathered with
    ``multihost_utils.process_allgather`` -- a collective: every process must call this together.
    The result never aliases device memory (on the CPU backend ``jax.device_get`` of a leaf on
    one device may return a view of its buffer: kept, e.g. as a rollback snapshot, it would hold
    a device's copy of that leaf alive after the state moved on).
    """

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
            return np.array(multihost_utils.process_allgather(x, tiled=True))
        return np.array(jax.device_get(x))

    return jax.tree_util.tree_map(one, tree)


def shapes_of(tree: Any) -> Any:
    """Each array leaf of ``tree`` as a ``jax.ShapeDtypeStruct`` with its sharding: a template
    that holds no memory (a checkpoint restore or a placement reads into it) (C4.1)."""
    return jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), tree
    )


def release(tree: Any) -> None:
    """Free the device buffers of every array leaf of ``tree`` now (``jax.Array.delete``): the
    state a rollback or a resume replaces, so that the two never coexist on a device (C4.1)."""
    for x in jax.tree_util.tree_leaves(tree):
        if isinstance(x, jax.Array) and not x.is_deleted():
            x.delete()


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
    """This process's rows of a global batch, split along axis 0 over ``mesh``'s batch axis
    (``"data"``, or ``"fsdp"`` of the 2-D mesh: devices of one tensor group hold the same rows)
    (C5.2).

    Each leaf of ``batch`` holds this process's ``B / P`` rows (all ``B`` rows in a single
    process); the result is the global ``[B, ...]`` array. Raises ``ValueError`` when the rows
    cannot be split evenly over this process's parts of the batch axis.
    """
    axis = DATA_AXIS if DATA_AXIS in mesh.axis_names else FSDP_AXIS
    sharding = NamedSharding(mesh, PartitionSpec(axis))
    along = list(mesh.axis_names).index(axis)
    local = len(
        {
            index[along]
            for index, d in np.ndenumerate(mesh.devices)
            if d.process_index == jax.process_index()
        }
    )
    for path, leaf in jax.tree_util.tree_flatten_with_path(batch)[0]:
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] % local:
            raise ValueError(
                f"batch{jax.tree_util.keystr(path)}: got shape {np.shape(leaf)}, expected a "
                f"leading (batch) dimension divisible by this process's {local} part(s) of the "
                f"mesh's {axis!r} axis"
            )
    return jax.tree_util.tree_map(
        lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), batch
    )
