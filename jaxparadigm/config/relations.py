"""Every rule between config fields (checked once each field is valid on its own).

:data:`RELATIONS` lists the checks :func:`jaxparadigm.config.config_from_dict` runs on a
field-valid :class:`~jaxparadigm.config.sections.Config`; each yields
:class:`~jaxparadigm.config.schema.Problem` s. The rules that need the run's machine (the device
and process counts) are functions called by :mod:`jaxparadigm.build`. Serves C5.1.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from jaxparadigm.config.schema import Problem, shown
from jaxparadigm.config.sections import Config, ModelConfig

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
            f"got {shown(n)}: {len(n.encode('utf-8', 'surrogatepass'))} bytes, too long; "
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
                    f"directory in it fails: {reason}); "
                    "expected a directory the run can write into",
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
    sh = t.sharding
    if sh.tensor != 1 and sh.mode != "fsdp_tensor":
        yield Problem(
            "train.sharding.tensor",
            f"got {sh.tensor}, read only by train.sharding.mode=fsdp_tensor (the mode is "
            f"{sh.mode!r}); expected 1, or mode fsdp_tensor",
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
# Rules checked when the config is built into objects (jaxparadigm.build): the model against the
# data, and the placement against the devices and processes of this run.
# ---------------------------------------------------------------------------------------------

#: The number of outputs (classes, targets, byte values) of each data kind.
DATA_OUTPUTS = {"spirals": 2, "regression": 1, "pydoc_chars": 256}


def model_data_problem(model: ModelConfig, data_kind: str, seq_len: int) -> str | None:
    """Why ``model`` (a ModelConfig) cannot be trained on data of ``data_kind`` (``seq_len``: its
    sequence length, for ``pydoc_chars``), or None.

    An MLP needs a synthetic set and ``num_outputs`` equal to its outputs; a transformer needs
    ``pydoc_chars``, ``vocab_size >= 256`` (bytes), ``context >= data.seq_len`` and
    ``num_heads`` dividing ``d_model``. The text names the ``model.*`` key (C5.1)."""
    m = model
    if m.kind == "mlp":
        if data_kind == "pydoc_chars":
            return "model.kind: got 'mlp', expected 'transformer' for data pydoc_chars"
        outputs = DATA_OUTPUTS[data_kind]
        if m.num_outputs != outputs:
            return (
                f"model.num_outputs: got {m.num_outputs}, expected {outputs} "
                f"for data kind {data_kind!r}"
            )
        return None
    if data_kind != "pydoc_chars":
        return f"model.kind: got 'transformer', expected 'mlp' for data {data_kind!r}"
    if m.vocab_size < 256:
        return f"model.vocab_size: got {m.vocab_size}, expected >= 256 (bytes)"
    if m.context < seq_len:
        return f"model.context: got {m.context}, expected >= data.seq_len={seq_len}"
    if m.d_model % m.num_heads:
        return (
            f"model.num_heads: got {m.num_heads}, expected a divisor of model.d_model={m.d_model}"
        )
    return None


def processes_problem(cfg: Config, process_count: int) -> str | None:
    """Why ``cfg.train.sharding.mode`` cannot run over ``process_count`` processes, or None:
    mode ``none`` (one device) needs a single process (C5.2)."""
    if cfg.train.sharding.mode == "none" and process_count > 1:
        return (
            f"train.sharding.mode: got 'none', expected data, zero1, fsdp or fsdp_tensor in a "
            f"run of {process_count} processes"
        )
    return None


def _tensor_widths(model: ModelConfig) -> list[tuple[str, int]]:
    """``(key, width)`` of every dimension ``fsdp_tensor`` splits over the tensor axis: a
    transformer's heads and MLP hidden width (4 d_model), an MLP's hidden widths."""
    if model.kind == "transformer":
        return [("model.num_heads", model.num_heads), ("4 * model.d_model", 4 * model.d_model)]
    return [(f"model.hidden[{i}]", w) for i, w in enumerate(model.hidden)]


def devices_problem(cfg: Config, device_count: int) -> str | None:
    """Why ``cfg.train.sharding`` cannot lay the run out over ``device_count`` devices, or None
    (C5.2): ``data.batch_size`` must split over the batch axis (all devices; the ``fsdp`` axis of
    ``fsdp_tensor``), and ``fsdp_tensor``'s ``train.sharding.tensor`` must divide the device
    count and every width it splits (:func:`_tensor_widths`)."""
    sh = cfg.train.sharding
    mode, tensor = sh.mode, sh.tensor
    if mode == "fsdp_tensor":
        mesh = f"the mesh fsdp={device_count // tensor} x tensor={tensor}"
        if device_count % tensor:
            return (
                f"train.sharding.tensor: got {tensor}, expected a divisor of the {device_count} "
                "devices (the fsdp axis takes devices / tensor)"
            )
        for key, width in _tensor_widths(cfg.model):
            if width % tensor:
                return (
                    f"train.sharding.tensor: got {tensor}, expected a divisor of {key}={width} "
                    f"(split over the tensor axis of {mesh})"
                )
        if cfg.data.batch_size % (device_count // tensor):
            return (
                f"data.batch_size: got {cfg.data.batch_size}, expected a multiple of "
                f"{device_count // tensor}, the fsdp axis of {mesh} (train.sharding.mode="
                "'fsdp_tensor')"
            )
        return None
    if mode != "none" and cfg.data.batch_size % device_count:
        return (
            f"data.batch_size: got {cfg.data.batch_size}, expected a multiple of the "
            f"{device_count} devices for train.sharding.mode={mode!r}"
        )
    return None


def launch_problem(cfg: Config) -> str | None:
    """Why ``cfg`` cannot run as a local group of processes (``--num-processes``), or None: only
    task ``train``, no configured coordinator address, a sharded ``train.sharding.mode`` (C5.2)."""
    if cfg.task != "train":
        return (
            f"task: got {cfg.task!r}, expected 'train' with --num-processes (the only task that "
            "runs over several processes)"
        )
    if cfg.train.distributed.coordinator_address is not None:
        return (
            f"train.distributed.coordinator_address: got "
            f"{cfg.train.distributed.coordinator_address!r}, expected none with --num-processes "
            "(it starts its own group with a coordinator on 127.0.0.1; a configured address "
            "would give every worker process id 0): remove the key or run without --num-processes"
        )
    if cfg.train.sharding.mode == "none":
        return (
            "train.sharding.mode: got 'none', expected data, zero1, fsdp or fsdp_tensor with "
            "--num-processes (e.g. add train.sharding.mode=fsdp)"
        )
    return None
