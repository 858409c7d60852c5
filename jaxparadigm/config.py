"""Typed, frozen experiment configs loaded from YAML (the project's one config loader).

A config file is UTF-8 YAML (a key given twice in one mapping is refused, naming both lines)
converted, field by field, into the frozen dataclasses below by :mod:`jaxparadigm.config_schema`:
strict types, ``Annotated`` bounds (``Bounds``, ``Length``), and *every* problem reported at once,
in the style of pydantic's error list: one :class:`~jaxparadigm.errors.ConfigError` with one line
per problem (unknown keys first, each with a did-you-mean suggestion), each naming the dotted key
path (e.g. ``optim.schedule.warmup_steps``), the value found and what was expected; a single
problem is one line. After the fields, the relations between them (:data:`RELATIONS`) are checked
(``data.batch_size`` against ``data.n_samples``, ``name`` is a plain directory name, ``out_dir`` is
a directory ...). A file that is a directory, unreadable or not UTF-8 is named in the error.

Overrides ``key.path=value`` (from the CLI) are applied to the raw mapping before conversion, the
value itself parsed as YAML so ``optim.learning_rate=3e-4`` and ``model.hidden=[8,8]`` work.
Serves C5.1 ("validate against a schema" starts with the config itself).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from jaxparadigm.config_schema import (
    INVALID,
    Bounds,
    Length,
    Problem,
    build,
    parse_yaml,
    problems_error,
    shown,
)
from jaxparadigm.errors import ConfigError

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


# ---------------------------------------------------------------------------------------------
# Relations between fields (checked once every field is valid on its own).
# ---------------------------------------------------------------------------------------------


NAME_MAX_BYTES = 255  # a file name's limit on Linux and macOS (NAME_MAX)


def _check_name(cfg: Config) -> Iterator[Problem]:
    n = cfg.name
    if not n or n in (".", "..") or any(c in n for c in "/\\\0") or n != n.strip():
        yield Problem(
            "name",
            f"got {shown(n)}, expected a plain directory name (not empty, no '/', '\\', "
            "surrounding spaces, '.' or '..'): the run writes into out_dir/name",
        )
    elif not n.isprintable():
        bad = next(c for c in n if not c.isprintable())
        yield Problem(
            "name",
            f"got {shown(n)}, which holds the unprintable character U+{ord(bad):04X}; expected a "
            "directory name of printable characters (no newline, tab or control characters)",
        )
    elif len(n.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES:
        yield Problem(
            "name",
            f"got {shown(n)} ({len(n.encode('utf-8', 'surrogatepass'))} bytes): too long, "
            f"expected at most {NAME_MAX_BYTES} bytes (a directory name's limit)",
        )


def _refusal_to_create(directory: Path) -> str | None:
    """None when a directory can be created inside ``directory``; else the OS's reason.

    A probe (create then remove an empty directory) rather than ``os.access``: root passes
    ``os.access`` on ``/proc`` or a read-only mount, where creating fails all the same."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".jaxparadigm-probe-", dir=directory))
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _out_dir_problem(out_dir: str) -> str | None:
    """Why ``out_dir`` cannot be a path on this system (empty, NUL, a lone surrogate, a
    component over NAME_MAX_BYTES), or None."""
    try:
        parts = [len(os.fsencode(x)) for x in Path(out_dir).parts]
    except UnicodeEncodeError as exc:
        return f"not encodable as a file name ({exc.reason})"
    if not out_dir or "\0" in out_dir:
        return "empty or holding a NUL character"
    if max(parts) > NAME_MAX_BYTES:
        return f"a component of {max(parts)} bytes (at most {NAME_MAX_BYTES})"
    return None


def _check_out_dir(cfg: Config) -> Iterator[Problem]:
    if (why := _out_dir_problem(cfg.out_dir)) is not None:
        yield Problem("out_dir", f"got {shown(cfg.out_dir)}, expected a directory path: {why}")
        return
    if any(True for _ in _check_name(cfg)):  # reported there; the path is not a run directory
        return
    run_dir = Path(cfg.out_dir) / cfg.name
    for p in (run_dir, *run_dir.parents):
        if p.exists():
            key = "out_dir" if p != run_dir else "name"
            value = cfg.out_dir if key == "out_dir" else cfg.name
            if not p.is_dir():
                yield Problem(
                    key, f"got {shown(value)}, but {shown(str(p))} is a file, not a directory"
                )
            elif (reason := _refusal_to_create(p)) is not None:
                yield Problem(
                    key,
                    f"got {shown(value)}, but {shown(str(p))} is not writable (creating a "
                    f"directory in it fails: {reason}); expected a directory the run can write into",
                )
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


YAML_ERROR_CHARS = (
    300  # a YAML error quoted in a ConfigError is cut here (an anchor name can be 1 MB)
)


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= YAML_ERROR_CHARS else text[: YAML_ERROR_CHARS - 3] + "..."


def apply_override(raw: dict, override: str) -> dict:
    """Return a copy of ``raw`` with ``key.path=value`` set (value parsed as YAML)."""
    if "=" not in override:
        raise ConfigError(f"override {shown(override)}: expected the form key.path=value")
    key, _, text = override.partition("=")
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"override {shown(override)}: empty component in key path {shown(key)}")
    try:
        value = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"override {shown(override)}: value is not valid YAML ({_one_line(exc)})"
        ) from None
    out = dict(raw)
    node = out
    for i, part in enumerate(parts[:-1]):
        child = node.get(part, {})
        if not isinstance(child, Mapping):
            raise ConfigError(
                f"config key '{'.'.join(parts[: i + 1])}': cannot set a sub-key of a "
                f"non-mapping value {shown(child)}"
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
    cfg = build(Config, data, "", problems)
    if cfg is not INVALID:
        for check in RELATIONS:
            problems.extend(check(cfg))
    if problems:
        raise problems_error(problems, source, _problems_origin(problems, overrides, source))
    return cfg


def _problems_origin(problems, overrides: Sequence[str], source: str | None) -> str | None:
    """Where ``problems`` come from: "the overrides (...)" when every problem's key path was set by
    an override (or lies under one), "config file X and its overrides" when some were, else None
    (the file)."""
    keys = [o.partition("=")[0].strip() for o in overrides]
    by_override = [
        any(p.path == k or p.path.startswith(k + ".") or k.startswith(p.path + ".") for k in keys)
        for p in problems
    ]
    if keys and all(by_override):
        return f"the overrides ({' '.join(overrides)})"
    if any(by_override):
        return f"config file {source!r} and its overrides" if source else "the config and overrides"
    return None


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
        raw = parse_yaml(_read_text(path))
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
