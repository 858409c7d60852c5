"""Joining a multi-process run on JAX's own runtime, ``jax.distributed`` (C5.2).

Every process of a run calls :func:`initialize_distributed` before any JAX computation; it calls

    jax.distributed.initialize(coordinator_address, num_processes, process_id,
                               initialization_timeout, heartbeat_timeout_seconds,
                               shutdown_timeout_seconds)

with CPU collectives set to gloo (``jax_cpu_collectives_implementation``), after which
``jax.devices()`` lists the devices of all processes. Where the three values come from (the first
source that names a coordinator wins, :func:`distributed_spec`):

1. the config: ``train.distributed.coordinator_address`` (``host:port``), ``num_processes``,
   ``process_id``;
2. the environment: ``JAXPARADIGM_COORDINATOR_ADDRESS`` (set by ``jaxparadigm run --num-processes
   N``, or by a cluster script), with the count from ``JAXPARADIGM_NUM_PROCESSES``, else SLURM's
   ``SLURM_NTASKS``; and the id from ``JAXPARADIGM_PROCESS_ID``, else SLURM's ``SLURM_PROCID``,
   else a Kubernetes Indexed Job's ``JOB_COMPLETION_INDEX``;
3. neither: one process, nothing to initialise.

The address is checked first (``host:port``, port in [1, 65535]; :func:`parse_coordinator_address`)
and process 0 checks that the port is free (:func:`check_port_free`): both are one-line input errors
rather than JAX's late failures.

Failure is bounded: a process whose peer stops sending heartbeats for ``heartbeat_timeout_s``
seconds is terminated by JAX's coordination service ("another task died"), so no process of a
broken group hangs; joining gives up after ``initialization_timeout_s``.
"""

from __future__ import annotations

import errno
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, ClassVar, NamedTuple

import jax
from jax.experimental import multihost_utils

from jaxparadigm.errors import InputError
from jaxparadigm.fields import Bounds, check_fields

__all__ = [
    "ENV_COORDINATOR",
    "ENV_NUM_PROCESSES",
    "ENV_PROCESS_ID",
    "DistributedSpec",
    "check_port_free",
    "distributed_spec",
    "initialize_distributed",
    "on_primary",
    "parse_coordinator_address",
    "process_shard",
]

#: ``host:port`` of process 0's coordinator; set, it makes this process join a group.
ENV_COORDINATOR = "JAXPARADIGM_COORDINATOR_ADDRESS"
#: The process count (fallback: SLURM's ``SLURM_NTASKS``).
ENV_NUM_PROCESSES = "JAXPARADIGM_NUM_PROCESSES"
#: This process's id (fallbacks: ``SLURM_PROCID``, Kubernetes' ``JOB_COMPLETION_INDEX``).
ENV_PROCESS_ID = "JAXPARADIGM_PROCESS_ID"
_COUNT_VARS = (ENV_NUM_PROCESSES, "SLURM_NTASKS")
_ID_VARS = (ENV_PROCESS_ID, "SLURM_PROCID", "JOB_COMPLETION_INDEX")


class DistributedSpec(NamedTuple):
    """Coordinator ``host:port``, process count, this process's id, and where they came from."""

    coordinator_address: str
    num_processes: int
    process_id: int
    source: str  # "config" or "environment"


_ADDRESS = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})")


def parse_coordinator_address(address: object, where: str) -> tuple[str, int]:
    """``(host, port)`` of a coordinator address ``host:port`` (``[v6]:port`` for IPv6), the port
    in ``[1, 65535]`` (C5.2); :class:`~jaxparadigm.errors.InputError` naming ``where`` (the config
    key or environment variable) otherwise -- JAX itself fails late on these (an IndexError, a C++
    abort after the init timeout, or a silently wrapped port)."""
    text = address if isinstance(address, str) else None
    match = _ADDRESS.fullmatch(text) if text is not None else None
    if match is None or not 1 <= int(match.group(2)) <= 65535:
        shown = repr(address) if len(repr(address)) <= 80 else repr(address)[:77] + "..."
        raise InputError(
            f"{where}: got {shown}, expected host:port with a port in [1, 65535] "
            "(e.g. 127.0.0.1:12355 or [::1]:12355)"
        )
    return match.group(1), int(match.group(2))


def check_port_free(host: str, port: int, where: str) -> None:
    """Refuse (:class:`~jaxparadigm.errors.InputError`, one line naming ``where``) a coordinator
    port another process listens on: the coordinator would fail to bind it deep inside JAX (a
    runtime error, an abort or a crash). Probes by binding the address the coordinator will bind
    (the host for a loopback address, all addresses otherwise), with ``SO_REUSEADDR`` as gRPC does.
    """
    loopback = host in ("127.0.0.1", "localhost", "[::1]")
    v6 = host.startswith("[")
    bind_host = host.strip("[]") if loopback else ("::" if v6 else "")
    with socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((bind_host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return  # not ours to judge (e.g. an address of another machine): JAX reports it
            raise InputError(
                f"{where}: port {port} is already in use on this machine; expected a free port "
                "for process 0's coordinator (choose another port, or stop what listens on it)"
            ) from None


def _env_int(environ: Mapping[str, str], names: tuple[str, ...], minimum: int) -> int | None:
    for name in names:
        text = environ.get(name)
        if text is None or text == "":
            continue
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise InputError(
                f"environment variable {name}: got {text!r}, expected an integer >= {minimum}"
            )
        return value
    return None


@dataclass(frozen=True)
class DistributedSettings:
    """Multi-process setup for ``jax.distributed.initialize`` (the config's ``train.distributed``).

    Used when ``coordinator_address`` is set here or ``JAXPARADIGM_COORDINATOR_ADDRESS`` in the
    environment (``jaxparadigm run --num-processes N`` sets it). A peer silent for
    ``heartbeat_timeout_s`` seconds ends the run; joining gives up after
    ``initialization_timeout_s``; shutdown waits at most ``shutdown_timeout_s`` for the others
    (C5.2)."""

    PATH: ClassVar[str] = "train.distributed"

    coordinator_address: str | None = None
    num_processes: Annotated[int, Bounds(ge=1)] = 1
    process_id: Annotated[int, Bounds(ge=0)] = 0
    initialization_timeout_s: Annotated[int, Bounds(ge=1)] = 300
    heartbeat_timeout_s: Annotated[int, Bounds(ge=1)] = 100
    shutdown_timeout_s: Annotated[int, Bounds(ge=1)] = 300

    def __post_init__(self) -> None:
        check_fields(self)


def distributed_spec(
    distributed_cfg: DistributedSettings, environ: Mapping[str, str] | None = None
) -> DistributedSpec | None:
    """Where this process joins a run (see the module docstring), or None for a single process.

    Raises :class:`~jaxparadigm.errors.InputError` naming the variable for a missing or
    malformed count or id, or an id outside ``[0, count)``.
    """
    c = distributed_cfg
    environ = os.environ if environ is None else environ
    if c.coordinator_address is not None:
        spec = DistributedSpec(c.coordinator_address, c.num_processes, c.process_id, "config")
    elif environ.get(ENV_COORDINATOR):
        count = _env_int(environ, _COUNT_VARS, 1)
        pid = _env_int(environ, _ID_VARS, 0)
        for value, names in ((count, _COUNT_VARS), (pid, _ID_VARS)):
            if value is None:
                raise InputError(
                    f"environment variable {ENV_COORDINATOR} is set, but none of "
                    f"{', '.join(names)} is: expected the process "
                    f"{'count' if names is _COUNT_VARS else 'id'} from one of them"
                )
        assert count is not None and pid is not None  # the loop above raised otherwise
        spec = DistributedSpec(environ[ENV_COORDINATOR], count, pid, "environment")
    else:
        return None
    parse_coordinator_address(spec.coordinator_address, _address_key(spec.source))
    if not 0 <= spec.process_id < spec.num_processes:
        where = "train.distributed.process_id" if spec.source == "config" else "process id"
        raise InputError(
            f"{where}: got {spec.process_id}, expected 0 <= id < num_processes="
            f"{spec.num_processes} (from the {spec.source})"
        )
    return spec


def _address_key(source: str) -> str:
    if source == "config":
        return "train.distributed.coordinator_address"
    return f"environment variable {ENV_COORDINATOR}"


def initialize_distributed(
    distributed_cfg: DistributedSettings, environ: Mapping[str, str] | None = None
) -> bool:
    """Join the run described by the config or environment; return whether this is a multi-process
    run (C5.2). Idempotent: a second call in the same process does nothing more.

    Must run before any JAX computation in the process.
    """
    if jax.distributed.is_initialized():
        return True
    spec = distributed_spec(distributed_cfg, environ)
    if spec is None:
        return False
    c = distributed_cfg
    host, port = parse_coordinator_address(spec.coordinator_address, _address_key(spec.source))
    if spec.process_id == 0:  # process 0 hosts the coordinator: its port must be free
        check_port_free(host, port, _address_key(spec.source))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    loopback = host in ("127.0.0.1", "localhost", "[::1]")
    jax.distributed.initialize(
        coordinator_address=spec.coordinator_address,
        # a local run's coordinator listens on the loopback address only (default: all addresses)
        coordinator_bind_address=spec.coordinator_address if loopback else None,
        num_processes=spec.num_processes,
        process_id=spec.process_id,
        initialization_timeout=c.initialization_timeout_s,
        heartbeat_timeout_seconds=c.heartbeat_timeout_s,
        shutdown_timeout_seconds=c.shutdown_timeout_s,
    )
    return True


def process_shard() -> tuple[int, int]:
    """``(jax.process_index(), jax.process_count())``: this process's share of each batch (C5.2)."""
    return jax.process_index(), jax.process_count()


def on_primary(fn: Callable[[], object], barrier: str) -> None:
    """``fn()`` on process 0 only (a file operation on a shared run directory), then every process
    waits at the barrier named ``barrier`` (none in a single process) (C5.2)."""
    if jax.process_index() == 0:
        fn()
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(f"jaxparadigm:{barrier}")
