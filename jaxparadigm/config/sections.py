"""The config's sections: frozen dataclasses with typed, bounded fields and defaults.

Each field's type hint is its rule (``Annotated[int, Bounds(ge=1)]``, ``Literal[...]``), applied by
:func:`jaxparadigm.config.schema.build`; defaults are the values a short CPU run should use. The
sections a library reads ARE that library's settings types (``optim`` is
:class:`~jaxparadigm.optim.OptimSettings`, ``train.guard`` :class:`~jaxparadigm.train.GuardSettings`
...), so their defaults and bounds are written once, in the library; the ``*Config`` names are
aliases of them. Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from jaxparadigm.fields import (  # noqa: F401 (the field rules, re-exported for the config)
    INT32_MAX,
    Bounds,
    Count,
    Length,
    NonNegative,
    Positive,
    Rate,
    Seed,
    StepIndex,
    StorageDtype,
)
from jaxparadigm.optim.chain_settings import (
    ClipSettings,
    LossScaleSettings,
    OptimSettings,
    ScheduleSettings,
)
from jaxparadigm.train.data import DataSettings
from jaxparadigm.train.distributed import DistributedSettings
from jaxparadigm.train.faults import FaultsSettings
from jaxparadigm.train.settings import CheckpointSettings, GuardSettings, ShardingSettings

# ---------------------------------------------------------------------------------------------
# The libraries' settings types ARE these sections (defaults and bounds written once, there).
# ---------------------------------------------------------------------------------------------

ScheduleConfig = ScheduleSettings
ClipConfig = ClipSettings
LossScaleConfig = LossScaleSettings
OptimConfig = OptimSettings
DataConfig = DataSettings
GuardConfig = GuardSettings
CheckpointConfig = CheckpointSettings
FaultsConfig = FaultsSettings
ShardingConfig = ShardingSettings
DistributedConfig = DistributedSettings

# ---------------------------------------------------------------------------------------------
# The application's own sections.
# ---------------------------------------------------------------------------------------------


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
class TrainConfig:
    """Train loop settings."""

    steps: Count = 200
    eval_every: Count = 50
    log_every: Count = 10
    seed: Seed = 0
    plots: bool = True
    grad: Literal["jax", "jaxparadigm"] = "jax"  # value_and_grad: jax's, or our autodiff engine
    guard: GuardSettings = field(default_factory=GuardSettings)
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)
    sharding: ShardingSettings = field(default_factory=ShardingSettings)
    distributed: DistributedSettings = field(default_factory=DistributedSettings)
    faults: FaultsSettings = field(default_factory=FaultsSettings)


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
    """C5.2: the readiness bar (defaults: the article's numbers) and the bounded load measuring it.

    ``p99_ms``/``qps``/``trace_completeness`` are the thresholds; ``qps_backends`` are the JAX
    backends the QPS bar is applied to (the article gives no hardware: on others a QPS miss is
    conditional). The load: ``requests`` sent by ``concurrency`` clients, stopped after
    ``duration_s``; a share ``malformed_fraction`` is malformed and ``timeout_fraction`` asks for a
    server delay longer than the client's ``timeout_s``.
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
    """Claims ledger settings (``jaxparadigm claims --config FILE claims.c5_2.p99_ms=500``)."""

    c5_2: ServiceReadinessConfig = field(default_factory=ServiceReadinessConfig)


@dataclass(frozen=True)
class Config:
    """A whole experiment. ``name`` is required; ``task`` selects what ``jaxparadigm run`` does."""

    name: str
    task: Literal["train", "mixed_precision", "overflow", "retrieval"] = "train"
    out_dir: str = "runs"
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataSettings = field(default_factory=DataSettings)
    optim: OptimSettings = field(default_factory=OptimSettings)
    train: TrainConfig = field(default_factory=TrainConfig)
    mixed_precision: MixedPrecisionConfig = field(default_factory=MixedPrecisionConfig)
    overflow: OverflowConfig = field(default_factory=OverflowConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    claims: ClaimsConfig = field(default_factory=ClaimsConfig)
