"""Config -> objects: the one bridge between :mod:`jaxparadigm.config` and the libraries (C5.1).

Each function maps a config (or a section of it) onto what a library takes: the optax chain and
its schedule (:func:`jaxparadigm.optim.chain_for`, which reads ``cfg.optim`` structurally), the
loss scaler, the NNX model sized to the data, this process's dataset, and the typed
:class:`~jaxparadigm.train.settings.TrainSettings` of a run. :func:`train_from_config` chains them
into one training run: ``train(build_model(...), dataset_for(cfg), chain_for(cfg.optim),
train_settings(cfg))``. The rules between a config and the run's machine (model against data,
sharding against devices) come from :mod:`jaxparadigm.config.relations` and raise
:class:`~jaxparadigm.errors.ConfigError` here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
import optax
from flax import nnx

from jaxparadigm.config import Config, config_from_dict
from jaxparadigm.config.relations import devices_problem, model_data_problem, processes_problem
from jaxparadigm.config.sections import ModelConfig, OptimConfig
from jaxparadigm.errors import ConfigError
from jaxparadigm.models.mlp import MLP
from jaxparadigm.models.transformer import TransformerLM
from jaxparadigm.optim import DynamicLossScale, chain_for, dynamic_loss_scale, schedule_for
from jaxparadigm.train.checkpoint_signature import signed_config
from jaxparadigm.train.completion import finished_run
from jaxparadigm.train.data import Dataset, build_dataset
from jaxparadigm.train.distributed import initialize_distributed, process_shard
from jaxparadigm.train.faults import fault_plan
from jaxparadigm.train.initial_state import model_in_layout
from jaxparadigm.train.settings import TrainSettings
from jaxparadigm.train.train_loop import TrainResult, check_run_arguments, train

__all__ = [
    "build_model",
    "dataset_for",
    "finished_run_for",
    "join_run",
    "loss_scale_for",
    "run_dir_for",
    "train_from_config",
    "train_settings",
]


def _raise_if(problem: str | None) -> None:
    """Raise ``ConfigError(problem)`` unless ``problem`` is None."""
    if problem is not None:
        raise ConfigError(problem)


def run_dir_for(cfg: Config) -> Path:
    """``<cfg.out_dir>/<cfg.name>``."""
    return Path(cfg.out_dir) / cfg.name


def join_run(cfg: Config) -> bool:
    """Join the distributed run of ``cfg.train.distributed`` (or the environment's), before any
    JAX op; return whether it is a multi-process run (C5.2). The one place a run sets up
    ``jax.distributed`` (:func:`train_from_config` calls it only when it builds the dataset)."""
    return initialize_distributed(cfg.train.distributed)


def dataset_for(cfg: Config) -> Dataset:
    """This process's :class:`Dataset` of ``cfg.data`` (its rows of every global batch) (C5.2).

    A ``data.batch_size`` the devices of a sharded run cannot split evenly (``devices_problem``)
    is a :class:`ConfigError`. Call after :func:`join_run`.
    """
    _raise_if(devices_problem(cfg, jax.device_count()))
    return build_dataset(cfg.data, shard=process_shard())


def build_model(model_cfg: ModelConfig, dataset: Dataset, seed: int) -> nnx.Module:
    """The NNX model a ``ModelConfig`` describes, sized to ``dataset`` (C5.1).

    A model that does not fit the data (``model_data_problem``) raises :class:`ConfigError`
    naming the ``model.*`` key.
    """
    m = model_cfg
    _raise_if(model_data_problem(m, dataset.kind, dataset.in_features))
    rngs = nnx.Rngs(seed)
    if m.kind == "mlp":
        return MLP(dataset.in_features, m.hidden, m.num_outputs, dtype=m.dtype, rngs=rngs)
    return TransformerLM(
        m.vocab_size,
        m.d_model,
        m.num_layers,
        m.num_heads,
        m.context,
        tie_embeddings=m.tie_embeddings,
        dropout=m.dropout,
        dtype=m.dtype,
        rngs=rngs,
    )


def finished_run_for(cfg: Config) -> str | None:
    """The notice of :func:`jaxparadigm.train.completion.finished_run` for the run of ``cfg``:
    only a ``train`` task with checkpoints on (``train.checkpoint.every > 0``) and resumed can be
    finished already; None otherwise (C5.1)."""
    c = cfg.train.checkpoint
    if cfg.task != "train" or c.every <= 0 or not c.resume:
        return None
    return finished_run(run_dir_for(cfg), cfg.name, cfg.train.steps, signed_config(cfg))


def loss_scale_for(optim_cfg: OptimConfig) -> DynamicLossScale | None:
    """The ``DynamicLossScale`` of ``optim.loss_scale`` (C4.2), or None when it is off."""
    ls = optim_cfg.loss_scale
    if not ls.enabled:
        return None
    return dynamic_loss_scale(init_scale=ls.init_scale, growth_interval=ls.growth_interval)


def train_settings(cfg: Config, run_dir: str | Path | None = None) -> TrainSettings:
    """The typed settings of a run of ``cfg`` (``run_dir`` defaults to :func:`run_dir_for`)."""
    t = cfg.train  # its guard/checkpoint/sharding sections ARE the library's settings types
    return TrainSettings(
        name=cfg.name,
        run_dir=Path(run_dir) if run_dir is not None else run_dir_for(cfg),
        steps=t.steps,
        batch_size=cfg.data.batch_size,
        seed=t.seed,
        eval_every=t.eval_every,
        log_every=t.log_every,
        grad=t.grad,
        plots=t.plots,
        guard=t.guard,
        checkpoint=t.checkpoint,
        sharding=t.sharding,
        faults=fault_plan(t.faults),
        signed=signed_config(cfg),
    )


def _config(cfg: Config | Mapping[str, Any]) -> Config:
    """``cfg`` itself, or the :class:`Config` the config loader builds from a mapping (one
    ``ConfigError`` listing every problem, as for a YAML file); ``TypeError`` for anything else."""
    if isinstance(cfg, Config):
        return cfg
    if isinstance(cfg, Mapping):
        return config_from_dict(cfg, source="train_from_config(cfg=...)")
    raise TypeError(
        f"cfg: got {type(cfg).__name__}, expected a jaxparadigm.config.Config or a mapping of "
        "its fields (a config file: jaxparadigm.config.load_config(path))"
    )


def _check_parts(dataset: Any, tx: Any, run_dir: Any) -> None:
    """``dataset`` None or a Dataset, ``tx`` None or an optax transformation, ``run_dir`` None,
    a str or a path: one ``TypeError`` naming the first that is not."""
    for name, value, ok, what in (
        ("dataset", dataset, isinstance(dataset, Dataset), "a jaxparadigm.train.Dataset"),
        ("tx", tx, isinstance(tx, optax.GradientTransformation), "an optax transformation"),
        ("run_dir", run_dir, isinstance(run_dir, (str, os.PathLike)), "a str or a path"),
    ):
        if value is not None and not ok:
            raise TypeError(
                f"{name}: got {type(value).__name__} {value!r:.80}, expected None or {what}"
            )


def train_from_config(
    cfg: Config | Mapping[str, Any],
    *,
    dataset: Dataset | None = None,
    tx: optax.GradientTransformation | None = None,
    lr_fn: Callable | None = None,
    run_dir: str | Path | None = None,
    stop_at: int | None = None,
    batch_transform: Callable[[int, dict], dict] | None = None,
    progress: bool = True,
    write_plots: bool | None = None,
    plot: Callable | None = None,
) -> TrainResult:
    """Train the model of ``cfg`` for ``cfg.train.steps`` steps (C5.1, C5.2).

    ``cfg`` is a :class:`Config` or a mapping of its fields (built by the config loader, every
    problem in one ``ConfigError``). Every argument is checked before anything runs (one
    ``TypeError``/``ValueError`` naming it). Without ``dataset``: joins the distributed run
    (:func:`join_run`) and builds the dataset; with it, the caller has done both
    (``join_run(cfg)``, then ``dataset_for(cfg)``), so the run is set up once. Then builds the
    model with its parameters in the run's layout (``initial_state.model_in_layout``),
    ``tx``/``lr_fn`` (default ``chain_for(cfg.optim)`` / ``schedule_for(cfg.optim)``), the loss
    scaler and the settings, then calls :func:`jaxparadigm.train.train_loop.train` (whose
    ``stop_at``, ``batch_transform``, ``progress``, ``write_plots``, ``plot`` these are).
    """
    cfg = _config(cfg)
    _check_parts(dataset, tx, run_dir)
    check_run_arguments(
        stop_at,
        batch_transform,
        lr_fn=lr_fn,
        progress=progress,
        write_plots=write_plots,
        plot=plot,
    )
    if dataset is None:
        join_run(cfg)
    _raise_if(processes_problem(cfg, jax.process_count()))
    if dataset is None:
        dataset = dataset_for(cfg)
    make = lambda: build_model(cfg.model, dataset, cfg.train.seed)
    return train(
        model_in_layout(make, cfg.train.sharding),  # its parameters born laid out
        dataset,
        tx if tx is not None else chain_for(cfg.optim),
        train_settings(cfg, run_dir),
        lr_fn=lr_fn if lr_fn is not None else schedule_for(cfg.optim),
        loss_scale=loss_scale_for(cfg.optim),
        stop_at=stop_at,
        batch_transform=batch_transform,
        progress=progress,
        write_plots=write_plots,
        plot=plot,
    )
