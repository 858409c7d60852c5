"""The config's sections: frozen dataclasses with typed, bounded fields and defaults.

Each field's type hint is its rule (``Annotated[int, Bounds(ge=1)]``, ``Literal[...]``), applied by
:func:`jaxparadigm.config.schema.build`; defaults are the values a short CPU run should use.
Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from jaxparadigm.config.schema import Bounds, Length

INT32_MAX = 2**31 - 1  # the step counters are int32
StorageDtype = Literal["float32", "bfloat16", "float16"]  # optimiser-state storage dtypes

Count = Annotated[int, Bounds(ge=1, le=INT32_MAX)]  # a positive step count / interval
StepIndex = Annotated[int, Bounds(ge=0, le=INT32_MAX - 1)]  # a 0-based data step
Seed = Annotated[int, Bounds(ge=0, le=2**32 - 1)]  # PRNGKey(2**32) would equal PRNGKey(0)
Rate = Annotated[float, Bounds(ge=0.0, lt=1.0)]  # decay rates, dropout
NonNegative = Annotated[float, Bounds(ge=0.0)]
Positive = Annotated[float, Bounds(gt=0.0)]

# ---------------------------------------------------------------------------------------------
# Sections. Defaults are the values a short CPU run should use.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleConfig:
    """Learning-rate schedule; the peak value is ``optim.learning_rate`` (C4.3)."""

    name: Literal[
        "constant", "linear", "polynomial", "cosine_decay", "warmup_cosine_decay", "linear_lr"
    ] = "constant"
    warmup_steps: Annotated[int, Bounds(ge=0, le=INT32_MAX)] = 0
    decay_steps: Count = 1000
    end_value: NonNegative = 0.0
    power: Positive = 1.0
    alpha: Annotated[float, Bounds(ge=0.0, le=1.0)] = 0.0
    start_factor: Annotated[float, Bounds(gt=0.0, le=1.0)] = 1.0 / 3.0
    end_factor: Annotated[float, Bounds(ge=0.0, le=1.0)] = 1.0
    total_iters: Count = 5


@dataclass(frozen=True)
class ClipConfig:
    """Gradient clipping style (C4.4): optax/TF global norm, torch-style, per-leaf, or none."""

    style: Literal["none", "global", "torch", "tf", "per_leaf"] = "global"
    max_norm: Positive = 1.0


@dataclass(frozen=True)
class LossScaleConfig:
    """Dynamic loss scaling for float16 training (C4.2)."""

    enabled: bool = False
    init_scale: Annotated[float, Bounds(ge=1.0)] = 2.0**15
    growth_interval: Count = 2000


@dataclass(frozen=True)
class OptimConfig:
    """Optimiser chain: clip -> scale_by_adam (or sgd) -> schedule -> weight decay (C4.1-C4.4)."""

    name: Literal["adam", "adamw", "sgd", "adam_torch"] = "adam"
    learning_rate: NonNegative = 1e-3
    b1: Rate = 0.9
    b2: Rate = 0.999
    eps: Positive = 1e-8
    momentum: Rate = 0.0
    nesterov: bool = False
    weight_decay: NonNegative = 0.0
    mu_dtype: StorageDtype | None = None
    nu_dtype: StorageDtype | None = None
    clip: ClipConfig = field(default_factory=ClipConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    loss_scale: LossScaleConfig = field(default_factory=LossScaleConfig)


@dataclass(frozen=True)
class ModelConfig:
    """Model: an MLP classifier/regressor or a small decoder-only transformer LM."""

    kind: Literal["mlp", "transformer"] = "mlp"
    hidden: tuple[Annotated[int, Bounds(ge=1)], ...] = (64, 64)
    num_outputs: Annotated[int, Bounds(ge=1)] = 2
    vocab_size: Annotated[int, Bounds(ge=1)] = 256
    d_model: Annotated[int, Bounds(ge=1)] = 64
    num_layers: Annotated[int, Bounds(ge=1)] = 2
    num_heads: Annotated[int, Bounds(ge=1)] = 4
    context: Annotated[int, Bounds(ge=1)] = 64
    tie_embeddings: bool = True
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    dropout: Rate = 0.0


@dataclass(frozen=True)
class DataConfig:
    """Data source: synthetic sets or the byte-level ``pydoc_data.topics`` corpus (no downloads)."""

    kind: Literal["spirals", "regression", "pydoc_chars"] = "spirals"
    n_samples: Annotated[int, Bounds(ge=2)] = 2048
    noise: NonNegative = 0.1
    seq_len: Annotated[int, Bounds(ge=1, le=4096)] = 64
    batch_size: Annotated[int, Bounds(ge=1)] = 64
    val_fraction: Annotated[float, Bounds(gt=0.0, lt=1.0)] = 0.1
    seed: Seed = 0


@dataclass(frozen=True)
class GuardConfig:
    """Skip non-finite steps; roll back after ``max_bad_steps`` consecutive bad steps (C5.1).

    Give-up rule: a rollback that would be number ``max_rollbacks + 1``, or would lower the
    learning-rate scale below ``min_lr_scale``, ends the run with ``TrainingAborted`` instead (so
    the scale never reaches 0)."""

    enabled: bool = True
    max_bad_steps: Annotated[int, Bounds(ge=1)] = 3
    lr_decay_on_rollback: Annotated[float, Bounds(gt=0.0, le=1.0)] = 0.5
    max_rollbacks: Annotated[int, Bounds(ge=0)] = 10
    min_lr_scale: Annotated[float, Bounds(ge=1e-30, le=1.0)] = 1e-3


@dataclass(frozen=True)
class CheckpointConfig:
    """Signed orbax checkpoints every ``every`` steps (0 disables), keeping the last ``keep``.

    ``resume``: continue from the newest checkpoint in the run directory (false: start afresh and
    delete the run's old checkpoints)."""

    every: Annotated[int, Bounds(ge=0, le=INT32_MAX)] = 0
    keep: Annotated[int, Bounds(ge=1)] = 3
    resume: bool = True


@dataclass(frozen=True)
class FaultsConfig:
    """Fault injection for drills of the guard, rollback and resume (C5.1); off by default.

    ``nan_batch``/``inf_batch``: data steps whose float batch fields become NaN/Inf;
    ``nan_grads``/``inf_grads``: data steps whose gradients become NaN/Inf (inside the jitted
    step); ``kill_at``: the process sends itself SIGKILL before running this data step."""

    nan_batch: tuple[StepIndex, ...] = ()
    inf_batch: tuple[StepIndex, ...] = ()
    nan_grads: tuple[StepIndex, ...] = ()
    inf_grads: tuple[StepIndex, ...] = ()
    kill_at: StepIndex | None = None


@dataclass(frozen=True)
class ShardingConfig:
    """Placement over all devices of all processes (C4.1, C5.2; ``jaxparadigm.train.sharding``).

    ``none``: one device; ``data``: state replicated, batch split; ``zero1``: optimiser state split
    too; ``fsdp``: parameters and optimiser state split. A leaf with fewer than ``min_size``
    elements (or no dimension divisible by the device count) stays replicated."""

    mode: Literal["none", "data", "zero1", "fsdp"] = "none"
    min_size: Annotated[int, Bounds(ge=1)] = 1024


@dataclass(frozen=True)
class DistributedConfig:
    """Multi-process setup for ``jax.distributed.initialize`` (``jaxparadigm.train.distributed``).

    Used when ``coordinator_address`` is set here or ``JAXPARADIGM_COORDINATOR_ADDRESS`` in the
    environment (``jaxparadigm run --num-processes N`` sets it). A peer silent for
    ``heartbeat_timeout_s`` seconds ends the run; joining gives up after
    ``initialization_timeout_s``; shutdown waits at most ``shutdown_timeout_s`` for the others."""

    coordinator_address: str | None = None
    num_processes: Annotated[int, Bounds(ge=1)] = 1
    process_id: Annotated[int, Bounds(ge=0)] = 0
    initialization_timeout_s: Annotated[int, Bounds(ge=1)] = 300
    heartbeat_timeout_s: Annotated[int, Bounds(ge=1)] = 100
    shutdown_timeout_s: Annotated[int, Bounds(ge=1)] = 300


@dataclass(frozen=True)
class TrainConfig:
    """Train loop settings."""

    steps: Count = 200
    eval_every: Count = 50
    log_every: Count = 10
    seed: Seed = 0
    plots: bool = True
    grad: Literal["jax", "jaxparadigm"] = "jax"  # value_and_grad: jax's, or our autodiff engine
    guard: GuardConfig = field(default_factory=GuardConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    sharding: ShardingConfig = field(default_factory=ShardingConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    faults: FaultsConfig = field(default_factory=FaultsConfig)


@dataclass(frozen=True)
class MixedPrecisionConfig:
    """Compare Adam's second-moment storage dtypes on one task (C4.2)."""

    nu_dtypes: Annotated[tuple[StorageDtype, ...], Length(ge=1)] = (
        "float32",
        "bfloat16",
        "float16",
    )
    loss_scaling: bool = True


@dataclass(frozen=True)
class OverflowConfig:
    """Evaluate a schedule around ``center`` with naive vs saturating int32 counters (C4.3)."""

    center: Annotated[int, Bounds(ge=1, le=INT32_MAX)] = INT32_MAX
    window: Annotated[int, Bounds(ge=1)] = 64


@dataclass(frozen=True)
class RetrievalConfig:
    """Keyword vs semantic retrieval evaluation (C1.1, C1.2)."""

    corpus: str = "pydoc"
    top_k: Annotated[int, Bounds(ge=1)] = 5
    batch_size: Annotated[int, Bounds(ge=1)] = 32
    model_path: str | None = None
    chunk_words: Annotated[int, Bounds(ge=1)] = 100  # pydoc topics are cut into passages
    topics: tuple[str, ...] = ()  # evaluate on these pydoc topics only (empty: all 79)


@dataclass(frozen=True)
class ServiceReadinessConfig:
    """C5.2: the readiness bar (defaults: the article's numbers) and the bounded load that measures it.

    ``p99_ms``/``qps``/``trace_completeness`` are the thresholds; ``qps_backends`` are the JAX backends
    the QPS bar is applied to (the article gives no hardware: on others a QPS miss is conditional).
    The load: ``requests`` sent by ``concurrency`` clients, stopped after ``duration_s``; a share
    ``malformed_fraction`` is malformed and ``timeout_fraction`` asks for a server delay longer than the
    client's ``timeout_s``.
    """

    p99_ms: float = 350.0
    qps: float = 12_000.0
    trace_completeness: float = 0.9997
    qps_backends: tuple[str, ...] = ("gpu", "tpu")
    requests: int = 240
    concurrency: int = 4
    duration_s: float = 120.0
    malformed_fraction: float = 0.05
    timeout_fraction: float = 0.02
    timeout_s: float = 2.0


@dataclass(frozen=True)
class ClaimsConfig:
    """Settings of the claims ledger (``jaxparadigm claims --config FILE claims.c5_2.p99_ms=500``)."""

    c5_2: ServiceReadinessConfig = field(default_factory=ServiceReadinessConfig)


@dataclass(frozen=True)
class Config:
    """A whole experiment. ``name`` is required; ``task`` selects what ``jaxparadigm run`` does."""

    name: str
    task: Literal["train", "mixed_precision", "overflow", "retrieval"] = "train"
    out_dir: str = "runs"
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    mixed_precision: MixedPrecisionConfig = field(default_factory=MixedPrecisionConfig)
    overflow: OverflowConfig = field(default_factory=OverflowConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    claims: ClaimsConfig = field(default_factory=ClaimsConfig)
