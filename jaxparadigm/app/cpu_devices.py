"""How many CPU (host) devices a ``jaxparadigm run`` (or ``index build|add``) process asks XLA
for, chosen before JAX starts (C5.2).

Why: one XLA:CPU device runs a small training step's elementwise loops one at a time (XLA splits
only loops of more than ~512 KB, into ``ceil(sqrt(cores))`` parts), so a 2-core machine keeps a
core idle where PyTorch eager uses both. ``N`` host devices with the batch split over them (the
``data`` layout of :mod:`jaxparadigm.train.sharding`) run ``N`` programs at once.

The request, first that is set::

    --cpu-devices N|auto   (jaxparadigm run, index build, index add)
    JAXPARADIGM_CPU_DEVICES=N|auto   (environment)
    DEFAULT_CPU_DEVICES    (this module)

``auto`` is this process's usable cores (``len(os.sched_getaffinity(0))``). A count is ASCII
digits ``0-9`` only (``²`` or ``٣`` pass ``str.isdigit()`` but are refused: XLA reads ASCII), with
surrounding ASCII whitespace (space, tab, newline, CR, FF, VT) ignored, in
``1..MAX_CPU_DEVICES`` (1024): above that a request is refused with one line (exit status 2), not
handed to XLA, whose flag is an ``int32`` (``99999999999`` fails XLA's fatal check). 1024 is
well above any CPU host's cores (a device per core is ``auto``) and cheap to start: 1,024 devices
started in 4.8 s and 330 MB on the 2-core test machine. The same check reads every source:
``--cpu-devices``, ``JAXPARADIGM_CPU_DEVICES``, ``JAX_NUM_CPU_DEVICES`` and the flag in
``XLA_FLAGS`` (whose flags are split at ASCII whitespace, as XLA splits them). It is applied by
appending ``--xla_force_host_platform_device_count=N`` (and :data:`CPU_XLA_FLAGS`) to
``XLA_FLAGS``, which XLA reads when JAX starts its CPU backend. Rules, in order:

1. a count the user gave XLA or JAX (``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``,
   or ``JAX_NUM_CPU_DEVICES``) wins: nothing changes, and a different explicit request is
   reported in a note;
2. in a process of a multi-process group the default does not apply (``--devices-per-process``
   sets the workers' count);
3. task ``train`` with ``N > 1`` devices and no ``train.sharding.mode`` in the config or its
   overrides trains with ``train.sharding.mode=data``; a ``data.batch_size`` that ``N`` does not
   divide is an error for an explicit ``N``, and lowers ``auto`` (or the default) to the largest
   divisor of the batch size not above ``N``;
4. JAX's backend already running in this process (a library caller) cannot change: an explicit
   request for another count is an error, the default is left unapplied with a note.

``index build|add`` have no config: rules 1 and 4 only (:func:`prepare_command_devices`), and the
encoder sends its micro-batches to the devices in turn, as in ``run``'s retrieval task
(:mod:`jaxparadigm.app.encoder_devices`; measured by benchmarks/index_build_devices.py: ``index
build docs``, 1,809 passages, median 101.5 s wall on two devices vs 146.2 s on one, 1.44x,
benchmarks/RESULTS.md).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, MutableMapping
from typing import NamedTuple

from jaxparadigm.config import Config, LoadedConfig
from jaxparadigm.errors import InputError, short_repr

__all__ = [
    "CPU_XLA_FLAGS",
    "DEFAULT_CPU_DEVICES",
    "MAX_CPU_DEVICES",
    "DEVICE_COUNT_FLAG",
    "ENV_CPU_DEVICES",
    "CpuPlan",
    "CpuRequest",
    "apply_cpu_plan",
    "cpu_request",
    "parse_cpu_devices",
    "plan_cpu_devices",
    "prepare_command_devices",
    "prepare_cpu_devices",
    "running_cpu_devices",
    "usable_cores",
    "user_device_count",
    "with_cpu_devices",
    "xla_flags",
]

#: The count a run gets when neither ``--cpu-devices`` nor ``JAXPARADIGM_CPU_DEVICES`` is given:
#: an int >= 1 or ``"auto"`` (one device per usable core). Decided by measurement
#: (benchmarks/RESULTS.md, quiet 2-core AMD EPYC): the charlm step ran at 0.61x torch eager on one
#: device and 1.09x on two (``bench train --cpu-devices 1,2 --full``).
DEFAULT_CPU_DEVICES: int | str = "auto"
#: The environment variable read by ``jaxparadigm run`` (values as ``--cpu-devices``).
ENV_CPU_DEVICES = "JAXPARADIGM_CPU_DEVICES"
#: The XLA flag that sets the number of host (CPU) devices.
DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
#: JAX's own setting of the CPU device count (``jax_num_cpu_devices``); it beats the XLA flag.
ENV_JAX_CPU_DEVICES = "JAX_NUM_CPU_DEVICES"
#: Further XLA:CPU flags applied with the count. None: the YNNPACK / XNNPACK / oneDNN fusion options
#: and the multi-output fusion were measured on search, Adam and the charlm step and none was
#: faster (benchmarks/RESULTS.md, "XLA:CPU options").
CPU_XLA_FLAGS: tuple[str, ...] = ()

#: The largest device count accepted from any source (module docstring: why 1024).
MAX_CPU_DEVICES = 1024

_EXPECTED = "expected an integer >= 1 or 'auto' (one device per usable core"
#: ASCII whitespace: what is stripped around a count, and where ``XLA_FLAGS`` is split.
_ASCII_SPACE = " \t\n\r\f\v"
_ASCII_COUNT = re.compile(r"[0-9]+")


def usable_cores() -> int:
    """The cores this process may run on: ``len(os.sched_getaffinity(0))`` where the OS has it
    (a ``taskset`` or container limit counts), else ``os.cpu_count()``, at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def parse_cpu_devices(value: object, where: str, *, allow_auto: bool = True) -> int:
    """The device count of ``value``: an integer in ``1..MAX_CPU_DEVICES`` (an int, or ASCII
    digits with surrounding ASCII whitespace) or, where ``allow_auto``, ``"auto"``
    (:func:`usable_cores`); anything else is one :class:`InputError` naming ``where`` and the
    value (C5.2). JAX's and XLA's own variables take no ``auto`` (their own parsers refuse it)."""
    if isinstance(value, bool):
        raise InputError(f"{where}: got {value!r}, {_EXPECTED}: {usable_cores()} here)")
    text = str(value).strip(_ASCII_SPACE)
    if text.lower() == "auto" and allow_auto:
        return usable_cores()
    if _ASCII_COUNT.fullmatch(text) is None or not text.strip("0"):
        raise InputError(f"{where}: got {short_repr(value)}, {_EXPECTED}: {usable_cores()} here)")
    if len(text.lstrip("0")) > len(str(MAX_CPU_DEVICES)) or int(text) > MAX_CPU_DEVICES:
        raise InputError(
            f"{where}: got {short_repr(value)}, expected at most {MAX_CPU_DEVICES} CPU devices "
            f"(MAX_CPU_DEVICES; 'auto' is one per usable core: {usable_cores()} here)"
        )
    return int(text)


def xla_flags(text: str) -> list[str]:
    """The flags of an ``XLA_FLAGS`` value, split at ASCII whitespace as XLA splits them (a
    non-ASCII space stays inside its flag, where the count check then refuses it)."""
    return [flag for flag in re.split(f"[{re.escape(_ASCII_SPACE)}]+", text) if flag]


class CpuRequest(NamedTuple):
    """A requested device count, where it came from (``--cpu-devices``,
    ``JAXPARADIGM_CPU_DEVICES`` or ``DEFAULT_CPU_DEVICES``) and the value as given (``"2"``,
    ``"auto"``)."""

    devices: int
    source: str
    text: str

    @property
    def explicit(self) -> bool:
        """Whether the user asked (option or environment) rather than the default."""
        return self.source != "DEFAULT_CPU_DEVICES"

    @property
    def exact(self) -> bool:
        """Whether the count must be honoured as given: an explicit number, not ``auto``."""
        return self.explicit and self.text.strip().lower() != "auto"

    def __str__(self) -> str:
        sep = "=" if self.source != "--cpu-devices" else " "
        return f"{self.source}{sep}{self.text}"


def cpu_request(option: str | None, environ: Mapping[str, str]) -> CpuRequest:
    """The request of ``--cpu-devices`` (``option``), else of ``JAXPARADIGM_CPU_DEVICES`` in
    ``environ``, else :data:`DEFAULT_CPU_DEVICES`; a bad value is an :class:`InputError`."""
    if option is not None:
        return CpuRequest(parse_cpu_devices(option, "--cpu-devices"), "--cpu-devices", option)
    if environ.get(ENV_CPU_DEVICES, "").strip(_ASCII_SPACE):
        text = environ[ENV_CPU_DEVICES]
        return CpuRequest(
            parse_cpu_devices(text, f"environment variable {ENV_CPU_DEVICES}"),
            ENV_CPU_DEVICES,
            text,
        )
    text = str(DEFAULT_CPU_DEVICES)
    return CpuRequest(parse_cpu_devices(text, "DEFAULT_CPU_DEVICES"), "DEFAULT_CPU_DEVICES", text)


def user_device_count(environ: Mapping[str, str]) -> tuple[str, int] | None:
    """``(where, count)`` of a CPU device count the user already set (``JAX_NUM_CPU_DEVICES``,
    which JAX prefers, else the last ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``),
    or None. A malformed value is named in an :class:`InputError`."""
    if environ.get(ENV_JAX_CPU_DEVICES, "").strip(_ASCII_SPACE) not in ("", "-1"):
        text = environ[ENV_JAX_CPU_DEVICES]
        return ENV_JAX_CPU_DEVICES, parse_cpu_devices(text, ENV_JAX_CPU_DEVICES, allow_auto=False)
    found = None
    for flag in xla_flags(environ.get("XLA_FLAGS", "")):
        name, _, value = flag.partition("=")
        if name == DEVICE_COUNT_FLAG:
            found = (
                f"XLA_FLAGS {DEVICE_COUNT_FLAG}",
                parse_cpu_devices(value, f"XLA_FLAGS {name}", allow_auto=False),
            )
    return found


def running_cpu_devices() -> int | None:
    """The CPU device count of JAX's backend if it already runs in this process, else None
    (JAX not imported, or imported with no backend started: the count can still be chosen)."""
    if "jax" not in sys.modules:
        return None
    from jax._src import xla_bridge  # backends_are_initialized has no public name in jax 0.10

    if not xla_bridge.backends_are_initialized():
        return None
    import jax

    try:
        return len(jax.local_devices(backend="cpu"))
    except RuntimeError:  # no CPU backend (JAX_PLATFORMS without cpu)
        return None


class CpuPlan(NamedTuple):
    """What a run does: ``devices`` CPU devices asked of XLA (None: left to the user's setting or a
    running backend), ``data_layout``: train with ``train.sharding.mode=data``; ``notes``: lines
    for stderr."""

    devices: int | None
    data_layout: bool
    notes: tuple[str, ...]


def plan_cpu_devices(
    request: CpuRequest,
    cfg: Config | None,
    *,
    mode_set: bool,
    single_process: bool,
    user_count: tuple[str, int] | None = None,
    running: int | None = None,
) -> CpuPlan:
    """The :class:`CpuPlan` of ``request`` for ``cfg`` by the module docstring's four rules
    (``cfg`` None: a command without a config, rule 3 does not apply; ``mode_set``: the config or
    its overrides set ``train.sharding.mode``; ``user_count``: from :func:`user_device_count`;
    ``running``: from :func:`running_cpu_devices`) (C5.2)."""
    if user_count is not None:
        where, count = user_count
        differs = request.explicit and request.devices != count
        note = f"{request}: not applied, {where} already sets {count} (the user's setting wins)"
        return CpuPlan(None, False, (note,) if differs else ())
    if not single_process and not request.explicit:
        return CpuPlan(None, False, ())
    n, notes = request.devices, []
    promote = cfg is not None and n > 1 and cfg.task == "train" and single_process and not mode_set
    batch = cfg.data.batch_size if cfg is not None else 1
    if promote and batch % n:
        if request.exact:
            raise InputError(
                f"{request}: data.batch_size={batch} cannot be split over {n} devices (a run of "
                f"several CPU devices splits the batch, train.sharding.mode=data); expected a "
                f"divisor of {batch}, or set train.sharding.mode=none"
            )
        lower = max(d for d in range(1, n + 1) if batch % d == 0)
        notes.append(
            f"{request}: {lower} CPU devices, not {n}: data.batch_size={batch} splits "
            f"evenly over {lower}"
        )
        n, promote = lower, lower > 1
    if running is not None and running != n:
        if request.explicit:
            raise InputError(
                f"{request}: JAX already runs in this process with {running} CPU device(s), and "
                "the count is chosen before JAX starts; expected a new process (the command line)"
            )
        return CpuPlan(
            None,
            False,
            (*notes, f"{request}: not applied, JAX already runs with {running} CPU device(s)"),
        )
    if promote:
        notes.append(
            f"{n} CPU devices ({request}): train.sharding.mode=data, the batch split "
            "over them (set train.sharding.mode to choose another layout)"
        )
    return CpuPlan(n, promote, tuple(notes))


def with_cpu_devices(environ: Mapping[str, str], count: int) -> dict[str, str]:
    """A copy of ``environ`` whose ``XLA_FLAGS`` ask for ``count`` CPU devices (and
    :data:`CPU_XLA_FLAGS`): an earlier count flag and ``JAX_NUM_CPU_DEVICES`` are dropped, other
    flags kept. For a child process (the benchmarks' workers)."""
    env = {k: v for k, v in environ.items() if k != ENV_JAX_CPU_DEVICES}
    flags = [
        f for f in xla_flags(env.get("XLA_FLAGS", "")) if f.partition("=")[0] != DEVICE_COUNT_FLAG
    ]
    extra = [f for f in CPU_XLA_FLAGS if f not in flags]
    env["XLA_FLAGS"] = " ".join([*flags, f"{DEVICE_COUNT_FLAG}={count}", *extra])
    return env


def apply_cpu_plan(plan: CpuPlan, environ: MutableMapping[str, str]) -> None:
    """Set ``environ["XLA_FLAGS"]`` for ``plan.devices`` devices (nothing when it is None or JAX's
    backend already runs with that count)."""
    if plan.devices is not None and running_cpu_devices() is None:
        environ["XLA_FLAGS"] = with_cpu_devices(environ, plan.devices)["XLA_FLAGS"]


def prepare_cpu_devices(
    request: CpuRequest,
    loaded: LoadedConfig,
    environ: MutableMapping[str, str] | None = None,
) -> tuple[Config, tuple[str, ...]]:
    """``jaxparadigm run``'s step before JAX starts: plan (:func:`plan_cpu_devices`), apply
    (:func:`apply_cpu_plan`), and ``(cfg, notes)`` with ``train.sharding.mode=data`` added when the
    plan says so and JAX's default backend is the CPU (C5.2). ``loaded`` is the config file read
    once (:func:`jaxparadigm.config.read_config`): whether the user set the mode is asked of it,
    and the added override re-checks its mapping, so the file is not read again."""
    cfg = loaded.config
    from jaxparadigm.train import ENV_COORDINATOR  # imports JAX (no backend yet)

    environ = os.environ if environ is None else environ
    single = cfg.train.distributed.coordinator_address is None and not environ.get(ENV_COORDINATOR)
    plan = plan_cpu_devices(
        request,
        cfg,
        mode_set=loaded.sets("train.sharding.mode"),
        single_process=single,
        user_count=user_device_count(environ),
        running=running_cpu_devices(),
    )
    apply_cpu_plan(plan, environ)
    if not plan.data_layout:
        return cfg, plan.notes
    import jax  # a single process: starting the backend here changes nothing for the run

    if jax.default_backend() != "cpu":
        note = f"{request}: the run is on {jax.default_backend()}, its layout is the config's"
        return cfg, (note,)
    return loaded.with_overrides("train.sharding.mode=data"), plan.notes


def prepare_command_devices(
    request: CpuRequest, environ: MutableMapping[str, str] | None = None
) -> tuple[int | None, tuple[str, ...]]:
    """``index build|add``'s step before JAX starts: rules 1 and 4 of the module docstring, applied.

    Returns ``(count, notes)``: how many CPU devices the command spreads its work over: the
    request, or the user's own ``XLA_FLAGS`` / ``JAX_NUM_CPU_DEVICES`` count that wins over it;
    None (one device, the library's default) when JAX already runs in this process and nobody
    asked for a count (a library caller or a test: its devices are not the command's)."""
    environ = os.environ if environ is None else environ
    user, running = user_device_count(environ), running_cpu_devices()
    plan = plan_cpu_devices(
        request, None, mode_set=False, single_process=True, user_count=user, running=running
    )
    apply_cpu_plan(plan, environ)
    if running is not None and not request.explicit:
        return None, plan.notes
    count = plan.devices if plan.devices is not None else (user[1] if user else None)
    return count, plan.notes
