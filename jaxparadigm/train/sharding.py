"""Data-parallel placement with ``jax.sharding`` (C5.2: throughput that scales with devices).

A 1-D mesh ``Mesh(devices, ("data",))``: the train state is replicated (``PartitionSpec()``), each
batch is split along its leading axis (``PartitionSpec("data")``). The jitted step is unchanged:
XLA's SPMD partitioner inserts the gradient all-reduce, so ``loss`` and ``params`` match a
single-device run up to float summation order.

Multi-host: set ``train.distributed.coordinator_address`` (``host:port``), ``num_processes`` and
``process_id`` in the config; :func:`initialize_distributed` then calls
``jax.distributed.initialize`` before any array is created, and ``jax.devices()`` spans all hosts.
(Not exercised here: one machine.)
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["data_mesh", "initialize_distributed", "replicate", "shard_batch"]

DATA_AXIS = "data"


def data_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh over ``devices`` (default: all devices) with axis name ``"data"`` (C5.2)."""
    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise ValueError("devices: got an empty list, expected at least one device")
    return Mesh(np.array(devices), (DATA_AXIS,))


def replicate(tree, mesh: Mesh):
    """Place every leaf of ``tree`` on all devices of ``mesh`` (``PartitionSpec()``) (C5.2)."""
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def shard_batch(batch, mesh: Mesh):
    """Split every leaf of ``batch`` along axis 0 across ``mesh``'s ``"data"`` axis (C5.2).

    Raises ``ValueError`` when a leading dimension is not divisible by the number of devices.
    """
    n = mesh.shape[DATA_AXIS]
    for path, leaf in jax.tree_util.tree_flatten_with_path(batch)[0]:
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] % n:
            raise ValueError(
                f"batch{jax.tree_util.keystr(path)}: got shape {np.shape(leaf)}, expected a "
                f"leading (batch) dimension divisible by the {n} devices of the mesh"
            )
    return jax.device_put(batch, NamedSharding(mesh, PartitionSpec(DATA_AXIS)))


def initialize_distributed(distributed_cfg) -> bool:
    """Call ``jax.distributed.initialize`` when ``coordinator_address`` is set; return whether it did.

    Serves C5.2 (multi-host data parallelism). Must run before any JAX computation.
    """
    c = distributed_cfg
    if c.coordinator_address is None:
        return False
    if not 0 <= c.process_id < c.num_processes:
        raise ValueError(
            f"train.distributed.process_id: got {c.process_id}, expected 0 <= id < "
            f"num_processes={c.num_processes}"
        )
    jax.distributed.initialize(
        coordinator_address=c.coordinator_address,
        num_processes=c.num_processes,
        process_id=c.process_id,
    )
    return True
