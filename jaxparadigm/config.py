"""Typed, frozen experiment configs loaded from YAML (the project's one config loader).

A config file is YAML read with ``yaml.safe_load`` and converted, field by field, into the frozen
dataclasses below. Conversion is strict:

* an unknown key, a value of the wrong type, or a missing required key raises one ``ValueError``
  that names the dotted key path (e.g. ``optim.schedule.warmup_steps``), the value found and the
  type expected;
* ``int`` accepts only integers (not ``True``, not ``1.5``); ``float`` accepts integers and floats
  (YAML's ``1e-3`` without a dot is read as a string by PyYAML and is accepted when it parses as a
  float); ``bool`` accepts only ``true``/``false``; ``Literal`` fields accept only the listed values;
  ``tuple[int, ...]`` accepts a YAML list.

Overrides ``key.path=value`` (from the CLI) are applied to the raw mapping before conversion, the
value itself parsed with ``yaml.safe_load`` so ``optim.learning_rate=3e-4`` and ``model.hidden=[8,8]``
work. Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import yaml

StorageDtype = Literal["float32", "bfloat16", "float16"]  # optimiser-state storage dtypes

# ---------------------------------------------------------------------------------------------
# Sections. Defaults are the values a short CPU run should use.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleConfig:
    """Learning-rate schedule; the peak value is ``optim.learning_rate`` (C4.3)."""

    name: Literal[
        "constant", "linear", "polynomial", "cosine_decay", "warmup_cosine_decay", "linear_lr"
    ] = "constant"
    warmup_steps: int = 0
    decay_steps: int = 1000
    end_value: float = 0.0
    power: float = 1.0
    alpha: float = 0.0
    start_factor: float = 1.0 / 3.0
    end_factor: float = 1.0
    total_iters: int = 5


@dataclass(frozen=True)
class ClipConfig:
    """Gradient clipping style (C4.4): optax/TF global norm, torch-style, per-leaf, or none."""

    style: Literal["none", "global", "torch", "tf", "per_leaf"] = "global"
    max_norm: float = 1.0


@dataclass(frozen=True)
class LossScaleConfig:
    """Dynamic loss scaling for float16 training (C4.2)."""

    enabled: bool = False
    init_scale: float = 2.0**15
    growth_interval: int = 2000


@dataclass(frozen=True)
class OptimConfig:
    """Optimiser chain: clip -> scale_by_adam (or sgd) -> schedule -> weight decay (C4.1-C4.4)."""

    name: Literal["adam", "adamw", "sgd", "adam_torch"] = "adam"
    learning_rate: float = 1e-3
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    momentum: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0
    mu_dtype: StorageDtype | None = None
    nu_dtype: StorageDtype | None = None
    clip: ClipConfig = field(default_factory=ClipConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    loss_scale: LossScaleConfig = field(default_factory=LossScaleConfig)


@dataclass(frozen=True)
class ModelConfig:
    """Model: an MLP classifier/regressor or a small decoder-only transformer LM."""

    kind: Literal["mlp", "transformer"] = "mlp"
    hidden: tuple[int, ...] = (64, 64)
    num_outputs: int = 2
    vocab_size: int = 256
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    context: int = 64
    tie_embeddings: bool = True
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    dropout: float = 0.0


@dataclass(frozen=True)
class DataConfig:
    """Data source: synthetic sets or the byte-level ``pydoc_data.topics`` corpus (no downloads)."""

    kind: Literal["spirals", "regression", "pydoc_chars"] = "spirals"
    n_samples: int = 2048
    noise: float = 0.1
    seq_len: int = 64
    batch_size: int = 64
    val_fraction: float = 0.1
    seed: int = 0


@dataclass(frozen=True)
class GuardConfig:
    """Skip non-finite steps; roll back after ``max_bad_steps`` consecutive bad steps (C5.1)."""

    enabled: bool = True
    max_bad_steps: int = 3
    lr_decay_on_rollback: float = 0.5


@dataclass(frozen=True)
class CheckpointConfig:
    """Signed orbax checkpoints every ``every`` steps (0 disables), keeping the last ``keep``.

    ``resume``: continue from the newest checkpoint in the run directory (false: start afresh and
    delete the run's old checkpoints)."""

    every: int = 0
    keep: int = 3
    resume: bool = True


@dataclass(frozen=True)
class ShardingConfig:
    """``none`` (one device) or ``data`` (data-parallel over all local devices)."""

    mode: Literal["none", "data"] = "none"


@dataclass(frozen=True)
class DistributedConfig:
    """Multi-host setup passed to ``jax.distributed.initialize`` when ``coordinator_address`` is set."""

    coordinator_address: str | None = None
    num_processes: int = 1
    process_id: int = 0


@dataclass(frozen=True)
class TrainConfig:
    """Train loop settings."""

    steps: int = 200
    eval_every: int = 50
    log_every: int = 10
    seed: int = 0
    plots: bool = True
    grad: Literal["jax", "jaxparadigm"] = "jax"  # value_and_grad: jax's, or our autodiff engine
    guard: GuardConfig = field(default_factory=GuardConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    sharding: ShardingConfig = field(default_factory=ShardingConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)


@dataclass(frozen=True)
class MixedPrecisionConfig:
    """Compare Adam's second-moment storage dtypes on one task (C4.2)."""

    nu_dtypes: tuple[StorageDtype, ...] = ("float32", "bfloat16", "float16")
    loss_scaling: bool = True


@dataclass(frozen=True)
class OverflowConfig:
    """Evaluate a schedule around ``center`` with naive vs saturating int32 counters (C4.3)."""

    center: int = 2**31 - 1
    window: int = 64


@dataclass(frozen=True)
class RetrievalConfig:
    """Keyword vs semantic retrieval evaluation (C1.1, C1.2)."""

    corpus: str = "pydoc"
    top_k: int = 5
    batch_size: int = 32
    model_path: str | None = None
    chunk_words: int = 100  # pydoc topics are cut into passages of this many words
    topics: tuple[str, ...] = ()  # evaluate on these pydoc topics only (empty: all 79)


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


# ---------------------------------------------------------------------------------------------
# Conversion.
# ---------------------------------------------------------------------------------------------

_MISSING = object()


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = " or ".join(_type_name(a) for a in args)
        return f"{inner} or null" if len(args) < len(typing.get_args(tp)) else inner
    if origin is tuple:
        args = typing.get_args(tp)
        return f"list of {_type_name(args[0])}"
    if dataclasses.is_dataclass(tp):
        return f"mapping ({tp.__name__})"
    return getattr(tp, "__name__", str(tp))


def _fail(path: str, value: Any, tp: Any) -> ValueError:
    return ValueError(
        f"config key '{path}': got {value!r} ({type(value).__name__}), expected {_type_name(tp)}"
    )


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    if origin is Literal:
        if value in typing.get_args(tp) and not isinstance(value, bool):
            return value
        raise _fail(path, value, tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise _fail(path, value, tp)
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, path)
            except ValueError:
                continue
        raise _fail(path, value, tp)
    if origin is tuple:
        (elem, *rest) = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise _fail(path, value, tp)
        return tuple(_convert(v, elem, f"{path}[{i}]") for i, v in enumerate(value))
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _fail(path, value, tp)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _fail(path, value, tp)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise _fail(path, value, tp)
    if tp is str:
        if isinstance(value, str):
            return value
        raise _fail(path, value, tp)
    raise TypeError(f"config key '{path}': unsupported field type {tp!r}")  # programming error


def _build(cls: type, raw: Any, prefix: str) -> Any:
    where = prefix or "<root>"
    if not isinstance(raw, Mapping):
        raise ValueError(
            f"config key '{where}': got {raw!r} ({type(raw).__name__}), "
            f"expected a mapping ({cls.__name__})"
        )
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(map(str, raw)) - set(fields))
    if unknown:
        key = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise ValueError(
            f"config key '{key}': unknown key; expected one of {', '.join(sorted(fields))}"
        )
    kwargs = {}
    for name, f in fields.items():
        path = f"{prefix}.{name}" if prefix else name
        if name in raw:
            kwargs[name] = _convert(raw[name], hints[name], path)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(
                f"config key '{path}': required key is missing ({_type_name(hints[name])})"
            )
    return cls(**kwargs)


def apply_override(raw: dict, override: str) -> dict:
    """Return a copy of ``raw`` with ``key.path=value`` set (value parsed by ``yaml.safe_load``)."""
    if "=" not in override:
        raise ValueError(f"override {override!r}: expected the form key.path=value")
    key, _, text = override.partition("=")
    parts = key.strip().split(".")
    if not all(parts):
        raise ValueError(f"override {override!r}: empty component in key path {key!r}")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"override {override!r}: value is not valid YAML ({exc})") from None
    out = dict(raw)
    node = out
    for i, part in enumerate(parts[:-1]):
        child = node.get(part, {})
        if not isinstance(child, Mapping):
            raise ValueError(
                f"config key '{'.'.join(parts[: i + 1])}': cannot set a sub-key of a "
                f"non-mapping value {child!r}"
            )
        node[part] = dict(child)
        node = node[part]
    node[parts[-1]] = value
    return out


def config_from_dict(raw: Mapping[str, Any], overrides: Sequence[str] = ()) -> Config:
    """Build a :class:`Config` from a mapping, after applying ``key.path=value`` overrides."""
    data = dict(raw)
    for override in overrides:
        data = apply_override(data, override)
    return _build(Config, data, "")


def load_config(path: str | os.PathLike, overrides: Sequence[str] = ()) -> Config:
    """Load a YAML config file (``yaml.safe_load`` only) into a frozen :class:`Config`."""
    try:
        with open(path, encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
    except FileNotFoundError:
        raise ValueError(f"config file {os.fspath(path)!r}: no such file") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"config file {os.fspath(path)!r}: invalid YAML ({exc})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ValueError(
            f"config file {os.fspath(path)!r}: top level is {type(raw).__name__}, expected a mapping"
        )
    return config_from_dict(raw, overrides)


def to_dict(cfg: Any) -> dict:
    """The config as plain Python data (tuples become lists), e.g. for reports and signatures."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(dataclasses.asdict(cfg))
