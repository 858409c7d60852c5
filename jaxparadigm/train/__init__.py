"""jaxparadigm.train: the training engine of chapter 5 (C5.1 engineering checks, C5.2 throughput).

Modules (import from them directly; this package import stays cheap):

* ``data``        synthetic sets, the ``pydoc_data.topics`` byte corpus, stateless batching,
                  ``validate_batch`` (schema) and ``drift_report`` (PSI/KS)
* ``train_step``  ``TrainState`` and the one jitted, donating train step (guarded, loss-scaled)
* ``guard``       skip non-finite steps; roll back after K in a row with a lower learning rate
* ``rollback``    the guard's host side: restore the last good state, or give up (TrainingAborted)
* ``faults``      fault injection from ``train.faults`` (NaN/Inf batches or gradients, SIGKILL)
* ``checkpoint``  atomic orbax checkpoints, keep last k, verified restore (``checkpoint_signature``:
                  what is signed, sha256/HMAC)
* ``metrics``     the metrics.jsonl writer (truncated to the resumed step) and the step clock
* ``sharding``    where the state and batch live: ``data``/``zero1``/``fsdp`` on a 1-D mesh,
                  ``fsdp_tensor`` on a 2-D ``(fsdp, tensor)`` mesh by logical axis names
                  (``placement_figures``: bytes per device, collectives of the compiled step)
* ``initial_state`` a run's first state (and a model) made directly in its layout
* ``live_buffers`` the distinct live bytes each device holds, sampled during a run
* ``settings``    ``TrainSettings`` and the frozen, checked settings types of one run
                  (``GuardSettings``, ``CheckpointSettings``, ``ShardingSettings``;
                  ``DataSettings``, ``DistributedSettings``, ``FaultsSettings`` live with their
                  code)
* ``train_loop``  ``train(model, dataset, tx, settings)``: progress bar, eval, metrics.jsonl,
                  resume, rollback (per-step stages in ``step_stages``); a config is mapped onto
                  these by ``jaxparadigm.build`` (``train_from_config``)
* ``launch``      a local group of worker processes on ``jax.distributed``

``validate_batch`` (from ``validation``: numpy and ml_dtypes only) is imported here; the other
public names, what ``jaxparadigm.build`` and ``jaxparadigm.app`` use (:data:`_PUBLIC`), are loaded
from their module on first use, so ``import jaxparadigm.train`` stays cheap.
"""

import importlib
from typing import Any

from jaxparadigm.train.validation import validate_batch as validate_batch

#: public name -> the module of this package that defines it (loaded on first use).
_PUBLIC = {
    "train": "train_loop",
    "TrainResult": "train_loop",
    "check_run_arguments": "train_loop",
    "TrainSettings": "settings",
    "GuardSettings": "settings",
    "CheckpointSettings": "settings",
    "ShardingSettings": "settings",
    "DataSettings": "data",
    "DistributedSettings": "distributed",
    "FaultsSettings": "faults",
    "Dataset": "data",
    "build_dataset": "data",
    "drift_report": "data",
    "fault_plan": "faults",
    "ENV_COORDINATOR": "distributed",
    "initialize_distributed": "distributed",
    "process_shard": "distributed",
    "SIGNED_KEYS": "checkpoint_signature",
    "signed_config": "checkpoint_signature",
    "state_signature": "checkpoint_signature",
    "finished_run": "completion",
    "launch_workers": "launch",
}

__all__ = sorted([*_PUBLIC, "validate_batch"])


def __getattr__(name: str) -> Any:
    """A name of :data:`_PUBLIC`, loaded from its module on first use."""
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"jaxparadigm.train.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module 'jaxparadigm.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names plus the lazily loaded public ones (so autodoc and ``dir`` list them)."""
    return sorted({*globals(), *_PUBLIC})
