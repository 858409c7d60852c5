"""jaxparadigm.train: the training engine of chapter 5 (C5.1 engineering checks, C5.2 throughput).

Modules (import from them directly; this package import stays cheap):

* ``data``        synthetic sets, the ``pydoc_data.topics`` byte corpus, stateless batching,
                  ``validate_batch`` (schema) and ``drift_report`` (PSI/KS)
* ``step``        ``TrainState`` and the one jitted, donating train step (guarded, loss-scaled)
* ``guard``       skip non-finite steps; roll back after K in a row with a lower learning rate
* ``rollback``    the guard's host side: restore the last good state, or give up (TrainingAborted)
* ``faults``      fault injection from ``train.faults`` (NaN/Inf batches or gradients, SIGKILL)
* ``checkpoint``  atomic orbax checkpoints, keep last k, verified restore (``checkpoint_signature``:
                  what is signed, sha256/HMAC)
* ``metrics``     the metrics.jsonl writer (truncated to the resumed step) and the step clock
* ``sharding``    data-parallel ``Mesh``/``NamedSharding`` placement; multi-host initialisation
* ``settings``    ``TrainSettings``: the typed, plain-valued settings of one run
* ``loop``        ``train(model, dataset, tx, settings)``: progress bar, eval, metrics.jsonl,
                  resume, rollback (per-step stages in ``run_steps``); a config is mapped onto
                  these by ``jaxparadigm.build`` (``train_from_config``)
* ``launch``      a local group of worker processes on ``jax.distributed``

``validate_batch`` (from ``validation``: numpy and ml_dtypes only) and ``train`` (from ``loop``,
imported on first use, so ``import jaxparadigm.train`` stays cheap) are also exported here.
"""

from typing import Any

from jaxparadigm.train.validation import validate_batch

__all__ = ["train", "validate_batch"]


def __getattr__(name: str) -> Any:
    """``jaxparadigm.train.train``: :func:`jaxparadigm.train.loop.train`, loaded on first use."""
    if name == "train":
        from jaxparadigm.train.loop import train

        return train
    raise AttributeError(f"module 'jaxparadigm.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names plus the lazily loaded ``train`` (so autodoc and ``dir`` list it)."""
    return sorted({*globals(), "train"})
