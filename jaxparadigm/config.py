"""Typed, frozen experiment configs loaded from YAML (the project's one config loader).

A config file is UTF-8 YAML read with a strict ``yaml.SafeLoader`` (a key given twice in one
mapping is refused, naming both lines) and converted, field by field, into the frozen dataclasses
below. Conversion is strict and reports *every* problem at once, in the style of pydantic's error
list: one :class:`~jaxparadigm.errors.ConfigError` whose message has one line per problem (unknown
keys first, each with a did-you-mean suggestion), each naming the dotted key path (e.g.
``optim.schedule.warmup_steps``), the value found and what was expected. A single problem is one
line.

* ``int`` accepts only integers (not ``True``, not ``1.5``); ``float`` accepts finite integers and
  floats (YAML's ``1e-3`` without a dot is read as a string by PyYAML and is accepted when it
  parses as a float); ``bool`` accepts only ``true``/``false``; ``Literal`` fields accept only the
  listed values; ``tuple[...]`` accepts a YAML list.
* ``Annotated[int, Bounds(ge=1)]`` bounds a number; ``Length(ge=1)`` bounds a list's length.
* After the fields, the relations between them are checked (``data.batch_size`` against
  ``data.n_samples``, ``name`` is a plain directory name, ``out_dir`` is a directory ...).

Overrides ``key.path=value`` (from the CLI) are applied to the raw mapping before conversion, the
value itself parsed as YAML so ``optim.learning_rate=3e-4`` and ``model.hidden=[8,8]`` work.
Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, Union

import yaml

from jaxparadigm.errors import ConfigError

INT32_MAX = 2**31 - 1  # the step counters are int32
StorageDtype = Literal["float32", "bfloat16", "float16"]  # optimiser-state storage dtypes


@dataclass(frozen=True)
class Bounds:
    """``Annotated`` metadata: the allowed range of a number field (``ge``/``gt``/``le``/``lt``)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def admits(self, x: float) -> bool:
        """Whether ``x`` lies within every given bound."""
        return (
            (self.ge is None or x >= self.ge)
            and (self.gt is None or x > self.gt)
            and (self.le is None or x <= self.le)
            and (self.lt is None or x < self.lt)
        )

    def describe(self) -> str:
        """``in [0, 1)``, ``>= 1``, ``> 0`` ..."""
        num = lambda x: str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"
        low = (f"[{num(self.ge)}" if self.ge is not None else None) or (
            f"({num(self.gt)}" if self.gt is not None else None
        )
        high = (f"{num(self.le)}]" if self.le is not None else None) or (
            f"{num(self.lt)})" if self.lt is not None else None
        )
        if low and high:
            return f"in {low}, {high}"
        if low:
            return (">= " if low[0] == "[" else "> ") + low[1:]
        return ("<= " if high[-1] == "]" else "< ") + high[:-1]


@dataclass(frozen=True)
class Length(Bounds):
    """``Annotated`` metadata: the allowed number of items of a list field."""


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
    """``none`` (one device) or ``data`` (data-parallel over all local devices)."""

    mode: Literal["none", "data"] = "none"


@dataclass(frozen=True)
class DistributedConfig:
    """Multi-host setup passed to ``jax.distributed.initialize`` when ``coordinator_address`` is set."""

    coordinator_address: str | None = None
    num_processes: Annotated[int, Bounds(ge=1)] = 1
    process_id: Annotated[int, Bounds(ge=0)] = 0


@dataclass(frozen=True)
class TrainConfig:
    """Train loop settings."""

    steps: Count = 200
    eval_every: Count = 50
    log_every: Count = 10
    seed: Seed = 0
    plots: bool = True
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


# ---------------------------------------------------------------------------------------------
# Conversion: every problem is collected, then raised together.
# ---------------------------------------------------------------------------------------------


class Problem(NamedTuple):
    """One config problem: the dotted key path and what is wrong with it."""

    path: str
    message: str
    unknown_key: bool = False

    def __str__(self) -> str:
        return f"config key '{self.path}': {self.message}"


def _problems_error(problems: list[Problem], source: str | None = None) -> ConfigError:
    """One ConfigError listing ``problems``, unknown keys first (a single problem: one line)."""
    ordered = sorted(problems, key=lambda p: not p.unknown_key)  # stable
    if len(ordered) == 1:
        err = ConfigError(str(ordered[0]))
    else:
        where = f"config file {source!r}" if source else "the config"
        head = f"{len(ordered)} problems in {where}:"
        err = ConfigError("\n".join([head, *(f"  - {p}" for p in ordered)]))
    err.problems = ordered
    return err


_INVALID = object()  # a conversion that failed (its problem is recorded)


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _type_name(typing.get_args(tp)[0])
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = " or ".join(_type_name(a) for a in args)
        return f"{inner} or null" if len(args) < len(typing.get_args(tp)) else inner
    if origin is tuple:
        return f"list of {_type_name(typing.get_args(tp)[0])}"
    if dataclasses.is_dataclass(tp):
        return f"mapping ({tp.__name__})"
    if tp is float:
        return "finite float"
    return getattr(tp, "__name__", str(tp))


def _fail(path: str, value: Any, tp: Any) -> Problem:
    return Problem(path, f"got {value!r} ({type(value).__name__}), expected {_type_name(tp)}")


def _scalar(value: Any, tp: Any) -> Any:
    """``value`` converted to the scalar type ``tp``, or _INVALID."""
    if tp is bool:
        return value if isinstance(value, bool) else _INVALID
    if tp is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _INVALID
    if tp is float:
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return _INVALID
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            x = float(value)
            return x if math.isfinite(x) else _INVALID
        return _INVALID
    if tp is str:
        return value if isinstance(value, str) else _INVALID
    raise TypeError(f"unsupported config field type {tp!r}")  # programming error


def _annotated(value: Any, tp: Any, path: str, problems: list[Problem]) -> Any:
    base, *marks = typing.get_args(tp)
    out = _convert(value, base, path, problems)
    if out is _INVALID:
        return out
    for mark in marks:
        if isinstance(mark, Length) and not mark.admits(len(out)):
            problems.append(
                Problem(
                    path, f"got {len(out)} item(s), expected a number of items {mark.describe()}"
                )
            )
            return _INVALID
        if type(mark) is Bounds and not mark.admits(out):
            kind = "an int" if base is int else "a float"
            problems.append(Problem(path, f"got {value!r}, expected {kind} {mark.describe()}"))
            return _INVALID
    return out


def _union(value: Any, tp: Any, path: str, problems: list[Problem]) -> Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if value is None:
        if len(args) < len(typing.get_args(tp)):
            return None
        problems.append(_fail(path, value, tp))
        return _INVALID
    if len(args) == 1:  # ``X | None``: X's own message is the precise one
        return _convert(value, args[0], path, problems)
    for arg in args:
        out = _convert(value, arg, path, [])
        if out is not _INVALID:
            return out
    problems.append(_fail(path, value, tp))
    return _INVALID


def _convert(value: Any, tp: Any, path: str, problems: list[Problem]) -> Any:
    """``value`` as type ``tp``; on failure records the problem(s) and returns ``_INVALID``."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path, problems)
    if origin is Annotated:
        return _annotated(value, tp, path, problems)
    if origin in (Union, types.UnionType):
        return _union(value, tp, path, problems)
    if origin is Literal:
        if value in typing.get_args(tp) and not isinstance(value, bool):
            return value
    elif origin is tuple:
        if isinstance(value, (list, tuple)):
            elem = typing.get_args(tp)[0]
            items = [_convert(v, elem, f"{path}[{i}]", problems) for i, v in enumerate(value)]
            return _INVALID if any(x is _INVALID for x in items) else tuple(items)
    else:
        out = _scalar(value, tp)
        if out is not _INVALID:
            return out
    problems.append(_fail(path, value, tp))
    return _INVALID


def _unknown_key(key: str, fields: Sequence[str], prefix: str) -> Problem:
    path = f"{prefix}.{key}" if prefix else key
    close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6)
    if close:
        hint = f"did you mean '{prefix + '.' if prefix else ''}{close[0]}'?"
    else:
        hint = f"expected one of {', '.join(sorted(fields))}"
    return Problem(path, f"unknown key; {hint}", unknown_key=True)


def _build(cls: type, raw: Any, prefix: str, problems: list[Problem]) -> Any:
    if not isinstance(raw, Mapping):
        problems.append(
            Problem(
                prefix or "<root>",
                f"got {raw!r} ({type(raw).__name__}), expected a mapping ({cls.__name__})",
            )
        )
        return _INVALID
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    problems.extend(_unknown_key(str(k), list(fields), prefix) for k in raw if str(k) not in fields)
    kwargs, ok = {}, True
    for name, f in fields.items():
        path = f"{prefix}.{name}" if prefix else name
        if name in raw:
            kwargs[name] = _convert(raw[name], hints[name], path, problems)
            ok = ok and kwargs[name] is not _INVALID
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            problems.append(Problem(path, f"required key is missing ({_type_name(hints[name])})"))
            ok = False
    ok = ok and all(str(k) in fields for k in raw)
    return cls(**kwargs) if ok else _INVALID


# ---------------------------------------------------------------------------------------------
# Relations between fields (checked once every field is valid on its own).
# ---------------------------------------------------------------------------------------------


def _check_name(cfg: Config) -> Iterator[Problem]:
    n = cfg.name
    if not n or n in (".", "..") or any(c in n for c in "/\\\0") or n != n.strip():
        yield Problem(
            "name",
            f"got {n!r}, expected a plain directory name (not empty, no '/', '\\', "
            "surrounding spaces, '.' or '..'): the run writes into out_dir/name",
        )


def _check_out_dir(cfg: Config) -> Iterator[Problem]:
    run_dir = Path(cfg.out_dir) / cfg.name
    for p in (run_dir, *run_dir.parents):
        if p.exists():
            if not p.is_dir():
                key = "out_dir" if p != run_dir else "name"
                value = cfg.out_dir if key == "out_dir" else cfg.name
                yield Problem(key, f"got {value!r}, but {str(p)!r} is a file, not a directory")
            return


def _check_data(cfg: Config) -> Iterator[Problem]:
    d = cfg.data
    if d.kind == "pydoc_chars":
        return
    n_val = max(d.batch_size, round(d.val_fraction * d.n_samples))
    if 2 * d.batch_size > d.n_samples:
        yield Problem(
            "data.batch_size",
            f"got {d.batch_size}, expected <= data.n_samples // 2 = {d.n_samples // 2} "
            "(one batch to train on and one to validate)",
        )
    elif d.n_samples - n_val < d.batch_size:
        yield Problem(
            "data.val_fraction",
            f"got {d.val_fraction:g}, which leaves {d.n_samples - n_val} training rows of "
            f"data.n_samples={d.n_samples}, fewer than one batch (data.batch_size="
            f"{d.batch_size}); expected at most {1 - d.batch_size / d.n_samples:.3g}",
        )


def _check_schedule(cfg: Config) -> Iterator[Problem]:
    sc = cfg.optim.schedule
    if sc.name == "warmup_cosine_decay" and sc.decay_steps <= sc.warmup_steps:
        yield Problem(
            "optim.schedule.decay_steps",
            f"got {sc.decay_steps}, expected > optim.schedule.warmup_steps "
            f"({sc.warmup_steps}) for warmup_cosine_decay",
        )
    if sc.name == "linear_lr" and sc.warmup_steps != 0:
        yield Problem(
            "optim.schedule.warmup_steps",
            f"got {sc.warmup_steps}, expected 0: linear_lr has its own warmup "
            "(start_factor, total_iters)",
        )


def _check_train(cfg: Config) -> Iterator[Problem]:
    t = cfg.train
    if t.distributed.process_id >= t.distributed.num_processes:
        yield Problem(
            "train.distributed.process_id",
            f"got {t.distributed.process_id}, expected < train.distributed.num_processes "
            f"({t.distributed.num_processes})",
        )
    f = t.faults
    for key in ("nan_batch", "inf_batch", "nan_grads", "inf_grads", "kill_at"):
        value = getattr(f, key)
        late = [s for s in (value if isinstance(value, tuple) else [value]) if s is not None]
        late = [s for s in late if s >= t.steps]
        if late:
            yield Problem(
                f"train.faults.{key}",
                f"got step {late[0]}, expected a data step < train.steps ({t.steps})",
            )
    if (f.nan_batch or f.inf_batch) and cfg.data.kind == "pydoc_chars":
        yield Problem(
            f"train.faults.{'nan_batch' if f.nan_batch else 'inf_batch'}",
            "data.kind 'pydoc_chars' has only integer fields (tokens) to poison; use "
            "train.faults.nan_grads / inf_grads",
        )


# Each takes a field-valid Config and yields its problems. Add a check here for a new relation.
RELATIONS: tuple[Callable[[Config], Iterator[Problem]], ...] = (
    _check_name,
    _check_out_dir,
    _check_data,
    _check_schedule,
    _check_train,
)


# ---------------------------------------------------------------------------------------------
# YAML, overrides, files.
# ---------------------------------------------------------------------------------------------


class DuplicateKeyError(yaml.YAMLError):
    """A YAML mapping names the same key twice."""


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: SafeLoader reports it
                break
            if first is not None:
                raise DuplicateKeyError(f"duplicate key {key!r} at lines {first} and {line}")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def apply_override(raw: dict, override: str) -> dict:
    """Return a copy of ``raw`` with ``key.path=value`` set (value parsed as YAML)."""
    if "=" not in override:
        raise ConfigError(f"override {override!r}: expected the form key.path=value")
    key, _, text = override.partition("=")
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"override {override!r}: empty component in key path {key!r}")
    try:
        value = _parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"override {override!r}: value is not valid YAML ({_one_line(exc)})"
        ) from None
    out = dict(raw)
    node = out
    for i, part in enumerate(parts[:-1]):
        child = node.get(part, {})
        if not isinstance(child, Mapping):
            raise ConfigError(
                f"config key '{'.'.join(parts[: i + 1])}': cannot set a sub-key of a "
                f"non-mapping value {child!r}"
            )
        node[part] = dict(child)
        node = node[part]
    node[parts[-1]] = value
    return out


def config_from_dict(
    raw: Mapping[str, Any], overrides: Sequence[str] = (), *, source: str | None = None
) -> Config:
    """Build a :class:`Config` from a mapping, after applying ``key.path=value`` overrides.

    Raises one :class:`ConfigError` listing every problem (``source`` names the file in it).
    """
    data = dict(raw)
    for override in overrides:
        data = apply_override(data, override)
    problems: list[Problem] = []
    cfg = _build(Config, data, "", problems)
    if cfg is not _INVALID:
        for check in RELATIONS:
            problems.extend(check(cfg))
    if problems:
        raise _problems_error(problems, source)
    return cfg


def _read_text(path: str | os.PathLike) -> str:
    name = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {name!r}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {name!r}: is a directory, expected a YAML file") from None
    except PermissionError:
        raise ConfigError(f"config file {name!r}: not readable (permission denied)") from None
    except OSError as exc:
        raise ConfigError(f"config file {name!r}: cannot be read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {name!r}: not a UTF-8 text file (byte 0x{data[exc.start]:02x} at "
            f"offset {exc.start}); expected YAML"
        ) from None


def load_config(path: str | os.PathLike, overrides: Sequence[str] = ()) -> Config:
    """Load a YAML config file (strict safe loader) into a frozen :class:`Config`.

    Every failure is a :class:`ConfigError` naming the file or the key path.
    """
    name = os.fspath(path)
    try:
        raw = _parse_yaml(_read_text(path))
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {name!r}: invalid YAML ({_one_line(exc)})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"config file {name!r}: top level is {type(raw).__name__}, expected a mapping"
        )
    return config_from_dict(raw, overrides, source=name)


def to_dict(cfg: Any) -> dict:
    """The config as plain Python data (tuples become lists), e.g. for reports and signatures."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(dataclasses.asdict(cfg))
